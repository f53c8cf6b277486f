// The decode attention kernel (one query token, four query heads sharing one kv head of
// 256 dims: the default model's shape) over keys and values laid out as the paged cache
// lays them out: 16-position blocks at random places in a large pool. One thread.
//
//   cold: items round-robin over a pool far larger than the caches, so every item's
//         rows come from memory (as in a 16-sequence decode step, whose KV cache is read
//         once per step);
//   hot:  the same 4 items again and again (their rows stay in L2/L3): the arithmetic.
//
// The figure to read is the time per item; bytes_per_second counts the K and V bytes.

#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "base/cpu_features.h"
#include "base/half.h"
#include "base/large_buffer.h"
#include "ops/cpu/attention_kernels.h"
#include "ops/kv_storage.h"
#include "ops/kv_type.h"

namespace tokenmill::ops::cpu {
namespace {

constexpr int32_t kHeadDim = 256;
constexpr int32_t kHeads = 4;
constexpr int32_t kBlockRows = 16;

using Kernel = void (*)(const HeadGroupAttention&);

// The kv head's row as the cache stores it (kv_storage.h).
KvShape row_shape(KvType type) {
  KvShape shape;
  shape.n_kv_heads = 1;
  shape.head_dim = kHeadDim;
  shape.type = type;
  return shape;
}

// One 16-row block: small F16 values, or Q8_0 blocks with scale 1/64 and random codes.
std::vector<uint8_t> block_image(KvType type, std::mt19937& rng) {
  const KvShape shape = row_shape(type);
  std::vector<uint8_t> block(static_cast<size_t>(kBlockRows * shape.row_bytes()));
  auto put_f16 = [&](size_t at, float x) {
    const uint16_t v = f32_to_f16(x);
    block[at] = static_cast<uint8_t>(v & 0xff);
    block[at + 1] = static_cast<uint8_t>(v >> 8);
  };
  if (type == KvType::kF16) {
    for (size_t i = 0; i < block.size(); i += 2) put_f16(i, static_cast<float>(static_cast<int>(rng() % 200) - 100) / 1000.0f);
  } else {
    for (size_t i = 0; i < block.size(); i += kKvQ8BlockBytes) {
      put_f16(i, 1.0f / 64.0f);
      for (int32_t c = 0; c < kKvQ8Block; ++c) block[i + 2 + c] = static_cast<uint8_t>(rng());
    }
  }
  return block;
}

// n_items items of n_keys keys, their blocks (keys, then values) shuffled over one pool.
struct Items {
  std::shared_ptr<uint8_t[]> pool;
  std::vector<std::vector<const uint8_t*>> keys, values;

  Items(KvType type, int32_t n_keys, int32_t n_items) {
    const int64_t row_bytes = row_shape(type).row_bytes();
    const int32_t blocks_per_item = (n_keys + kBlockRows - 1) / kBlockRows;
    const int64_t n_blocks = 2ll * blocks_per_item * n_items;
    std::mt19937 rng(1);
    const std::vector<uint8_t> image = block_image(type, rng);
    pool = allocate_large_buffer(static_cast<size_t>(n_blocks) * image.size());
    for (int64_t b = 0; b < n_blocks; ++b) std::memcpy(pool.get() + b * image.size(), image.data(), image.size());
    std::vector<int64_t> order(static_cast<size_t>(n_blocks));
    for (int64_t b = 0; b < n_blocks; ++b) order[static_cast<size_t>(b)] = b;
    std::shuffle(order.begin(), order.end(), rng);
    keys.resize(static_cast<size_t>(n_items));
    values.resize(static_cast<size_t>(n_items));
    size_t next = 0;
    for (int32_t i = 0; i < n_items; ++i) {
      for (auto* rows : {&keys[static_cast<size_t>(i)], &values[static_cast<size_t>(i)]}) {
        for (int32_t b = 0; b < blocks_per_item; ++b) {
          const uint8_t* block = pool.get() + static_cast<size_t>(order[next++]) * image.size();
          for (int32_t r = 0; r < kBlockRows && static_cast<int32_t>(rows->size()) < n_keys; ++r) {
            rows->push_back(block + r * row_bytes);
          }
        }
      }
    }
  }
};

void bench_attention(benchmark::State& state, Kernel kernel, KvType type, int32_t n_keys, bool cold) {
  // ~0.5 GB of rows when cold: no cache keeps them between visits.
  const int64_t item_bytes = 2ll * n_keys * row_shape(type).row_bytes();
  const int32_t n_items = cold ? static_cast<int32_t>(std::max<int64_t>(64, (512ll << 20) / item_bytes)) : 4;
  const Items items(type, n_keys, n_items);
  std::vector<float> q(kHeads * kHeadDim, 0.01f), out(kHeads * kHeadDim), scratch_q(kHeads * kHeadDim),
      scores(static_cast<size_t>(kHeads) * n_keys);
  HeadGroupAttention a;
  a.q = q.data();
  a.n_heads = kHeads;
  a.head_dim = kHeadDim;
  a.kv_type = type;
  a.n_keys = n_keys;
  a.scale = 0.0625f;
  a.out = out.data();
  a.scratch_q = scratch_q.data();
  a.scratch_scores = scores.data();
  size_t i = 0;
  for (auto _ : state) {
    a.keys = items.keys[i].data();
    a.values = items.values[i].data();
    kernel(a);
    benchmark::DoNotOptimize(out.data());
    i = i + 1 == items.keys.size() ? 0 : i + 1;
  }
  state.SetBytesProcessed(state.iterations() * item_bytes);
}

void register_all() {
  const CpuFeatures cpu = detect_cpu_features();
  std::printf("cpu: %s\n", cpu.to_string().c_str());
  for (const AttentionKernel& path : attention_kernels(cpu)) {
    if (!path.runs_here) {
      std::printf("%s: skipped, CPU lacks it\n", path.isa);
      continue;
    }
    for (KvType type : {KvType::kF16, KvType::kQ8_0}) {
      for (int32_t n_keys : {64, 220, 1024}) {
        for (bool cold : {true, false}) {
          const std::string name = std::string("attention/") + kv_type_name(type) + "/" + std::to_string(n_keys) +
                                   "keys/" + (cold ? "cold" : "hot") + "/" + path.isa;
          benchmark::RegisterBenchmark(name.c_str(), bench_attention, path.attend, type, n_keys, cold)
              ->Unit(benchmark::kMicrosecond);
        }
      }
    }
  }
}

}  // namespace
}  // namespace tokenmill::ops::cpu

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  tokenmill::ops::cpu::register_all();
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
