// Dot-product and activation-quantizer kernels on the shapes that decide decode speed,
// for every instruction-set path this CPU runs (ref, avx2, avx512, neon, neon-dotprod), one thread.
//
// The figure to read is bytes_per_second: weight bytes streamed per second (for the
// quantizers, float input bytes). The Q8_0 640 x 262,144 output projection (178 MB)
// does not fit in any cache, so it measures the kernel against DRAM bandwidth
// (~33 GB/s for one thread on the reference machine); the
// 640 x 2,048 Q5_0 matrix (1.4 MB) stays in L2/L3 and measures the kernel itself.
// The matrix/ and prefill/ entries (16 and 128 tokens) read tokens/s.
//
// Weights are a few quantized random rows repeated: speed does not depend on values.

#include <benchmark/benchmark.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "base/cpu_features.h"
#include "quant/kernels/dispatch.h"
#include "quant/panel_layout.h"
#include "quant/quant.h"
#include "quant/type_traits.h"

namespace tokenmill::quant {
namespace {

using gguf::TensorType;

struct Shape {
  TensorType type;
  int64_t n_cols;  // elements per weight row (the dot-product length)
  int64_t n_rows;
  const char* what;
};

// Decode shapes of the default model (gemma-3-270m layout) and of a 1B Llama.
constexpr Shape kShapes[] = {
    {TensorType::kQ8_0, 640, 262144, "output"},  // tied embedding / output projection
    {TensorType::kQ5_0, 640, 2048, "ffn_up"},    // Q/K and FFN gate/up
    {TensorType::kQ4_0, 640, 2048, "ffn_up"},
    {TensorType::kF16, 640, 2048, "ffn_up"},
    {TensorType::kQ4_K, 2048, 8192, "1b_ffn_up"},
    {TensorType::kQ5_K, 2048, 8192, "1b_ffn_up"},
    {TensorType::kQ6_K, 2048, 8192, "1b_ffn_up"},
    {TensorType::kQ3_K, 2048, 8192, "1b_ffn_up"},
    {TensorType::kQ2_K, 2048, 8192, "1b_ffn_up"},
    {TensorType::kIQ4_XS, 2048, 8192, "1b_ffn_up"},
    {TensorType::kIQ3_S, 2048, 8192, "1b_ffn_up"},
    {TensorType::kIQ2_XS, 2048, 8192, "1b_ffn_up"},
    {TensorType::kIQ3_XXS, 2048, 8192, "1b_ffn_up"},
    {TensorType::kIQ2_XXS, 2048, 8192, "1b_ffn_up"},
    {TensorType::kTQ2_0, 2048, 8192, "1b_ffn_up"},
};

struct Path {
  const char* name;
  bool available;
  const SimdKernels* (*kernels)(const TypeTraits&);  // nullptr for the reference
};

std::vector<float> random_floats(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist(0.0f, 1.0f);
  std::vector<float> v(n);
  for (float& x : v) x = dist(rng);
  return v;
}

// [n_rows, row_bytes]: kDistinctRows quantized random rows, repeated.
std::vector<uint8_t> make_weights(const Shape& shape) {
  constexpr int64_t kDistinctRows = 16;
  const size_t row_bytes = row_size(shape.type, shape.n_cols);
  std::vector<uint8_t> distinct(kDistinctRows * row_bytes);
  for (int64_t r = 0; r < kDistinctRows; ++r) {
    const std::vector<float> x = random_floats(static_cast<size_t>(shape.n_cols), static_cast<uint32_t>(r));
    quantize_row_ref(shape.type, x.data(), distinct.data() + r * row_bytes, shape.n_cols);
  }
  std::vector<uint8_t> weights(static_cast<size_t>(shape.n_rows) * row_bytes);
  for (int64_t r = 0; r < shape.n_rows; ++r) {
    std::memcpy(weights.data() + r * row_bytes, distinct.data() + (r % kDistinctRows) * row_bytes, row_bytes);
  }
  return weights;
}

// n_tokens random activation rows in the type the shape's weights are dotted with.
std::vector<uint8_t> make_activations(const Shape& shape, int64_t n_tokens) {
  const TensorType type = type_traits(shape.type).vec_dot_type;
  const size_t row_bytes = row_size(type, shape.n_cols);
  std::vector<uint8_t> activations(static_cast<size_t>(n_tokens) * row_bytes);
  for (int64_t t = 0; t < n_tokens; ++t) {
    const std::vector<float> x = random_floats(static_cast<size_t>(shape.n_cols), 1000 + static_cast<uint32_t>(t));
    quantize_row_ref(type, x.data(), activations.data() + t * row_bytes, shape.n_cols);
  }
  return activations;
}

// One matrix-vector product per iteration: every weight row dotted with one activation
// row, through the set's matrix kernel when it has one (as the engine runs it), else one
// vec_dot per row.
void bench_vec_dot(benchmark::State& state, const Shape& shape, VecDotFn vec_dot, VecDotMatrixFn matrix) {
  const TypeTraits& traits = type_traits(shape.type);
  const std::vector<uint8_t> weights = make_weights(shape);
  const size_t row_bytes = row_size(shape.type, shape.n_cols);
  std::vector<uint8_t> activations(row_size(traits.vec_dot_type, shape.n_cols));
  const std::vector<float> x = random_floats(static_cast<size_t>(shape.n_cols), 99);
  quantize_row_ref(traits.vec_dot_type, x.data(), activations.data(), shape.n_cols);
  std::vector<float> out(static_cast<size_t>(shape.n_rows));
  for (auto _ : state) {
    if (matrix != nullptr) {
      matrix(shape.n_cols, weights.data(), row_bytes, shape.n_rows, activations.data(), activations.size(), 1,
             out.data(), shape.n_rows);
    } else {
      for (int64_t r = 0; r < shape.n_rows; ++r) {
        out[r] = vec_dot(shape.n_cols, weights.data() + r * row_bytes, activations.data());
      }
    }
    benchmark::DoNotOptimize(out.data());
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(state.iterations() * static_cast<int64_t>(weights.size()));
}

// Prefill and batched decode as the engine runs them on weights in their file layout:
// every weight row against n_tokens activation rows through the set's DotKernel (its
// matrix kernel, else its row kernel over blocks of tokens that stay in L2).
void bench_matrix(benchmark::State& state, const Shape& shape, DotKernel kernel, int64_t n_tokens) {
  const TypeTraits& traits = type_traits(shape.type);
  const std::vector<uint8_t> weights = make_weights(shape);
  const size_t row_bytes = row_size(shape.type, shape.n_cols);
  const size_t input_row_bytes = row_size(traits.vec_dot_type, shape.n_cols);
  const std::vector<uint8_t> activations = make_activations(shape, n_tokens);
  std::vector<float> out(static_cast<size_t>(shape.n_rows * n_tokens));
  for (auto _ : state) {
    kernel.dot_matrix(shape.n_cols, weights.data(), row_bytes, shape.n_rows, activations.data(), input_row_bytes,
                      n_tokens, out.data(), shape.n_rows);
    benchmark::DoNotOptimize(out.data());
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(state.iterations() * static_cast<int64_t>(weights.size()));
  state.counters["tokens/s"] =
      benchmark::Counter(static_cast<double>(n_tokens), benchmark::Counter::kIsIterationInvariantRate);
}

// The same products on the weights repacked into panels (quant/panel_layout.h), as the
// engine runs them after loading, through the set's panel kernel.
void bench_panels(benchmark::State& state, const Shape& shape, VecDotPanelsFn panels, int64_t n_tokens) {
  const TypeTraits& traits = type_traits(shape.type);
  const std::vector<uint8_t> rows = make_weights(shape);
  const size_t row_bytes = row_size(shape.type, shape.n_cols);
  std::vector<uint8_t> weights(rows.size());
  pack_panels(shape.type, rows.data(), shape.n_rows, row_bytes, weights.data());
  const size_t input_row_bytes = row_size(traits.vec_dot_type, shape.n_cols);
  const std::vector<uint8_t> activations = make_activations(shape, n_tokens);
  std::vector<float> out(static_cast<size_t>(shape.n_rows * n_tokens));
  for (auto _ : state) {
    panels(shape.n_cols, weights.data(), shape.n_rows, activations.data(), input_row_bytes, n_tokens, out.data(),
           shape.n_rows, nullptr);
    benchmark::DoNotOptimize(out.data());
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(state.iterations() * static_cast<int64_t>(weights.size()));
  state.counters["tokens/s"] =
      benchmark::Counter(static_cast<double>(n_tokens), benchmark::Counter::kIsIterationInvariantRate);
}

void bench_quantize(benchmark::State& state, TensorType type, int64_t n, QuantizeRowFn quantize_row) {
  const std::vector<float> x = random_floats(static_cast<size_t>(n), 7);
  std::vector<uint8_t> out(row_size(type, n));
  for (auto _ : state) {
    quantize_row(x.data(), out.data(), n);
    benchmark::DoNotOptimize(out.data());
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(state.iterations() * n * static_cast<int64_t>(sizeof(float)));
}

void register_all() {
  const CpuFeatures cpu = detect_cpu_features();
  const Path paths[] = {
      {"ref", true, nullptr},
      {"avx2", cpu.has_avx2_kernels(), [](const TypeTraits& t) { return &t.avx2; }},
      {"avx512", cpu.has_avx512_kernels(), [](const TypeTraits& t) { return &t.avx512; }},
      {"neon", cpu.has_neon_kernels(), [](const TypeTraits& t) { return &t.neon; }},
      {"neon-dotprod", cpu.has_neon_kernels() && cpu.dotprod, [](const TypeTraits& t) { return &t.neon_dotprod; }},
  };
  std::printf("cpu: %s\n", cpu.to_string().c_str());
  for (const Path& path : paths) {
    if (!path.available) std::printf("%s: skipped, CPU lacks it\n", path.name);
  }

  for (const Shape& shape : kShapes) {
    const TypeTraits& traits = type_traits(shape.type);
    for (const Path& path : paths) {
      if (!path.available) continue;
      const VecDotFn vec_dot = path.kernels ? path.kernels(traits)->vec_dot : traits.vec_dot_ref;
      const VecDotMatrixFn matrix = path.kernels ? path.kernels(traits)->vec_dot_matrix : nullptr;
      if (vec_dot == nullptr) continue;
      const std::string name = "vec_dot/" + std::string(traits.name) + "/" + std::to_string(shape.n_cols) + "x" +
                               std::to_string(shape.n_rows) + "_" + shape.what + "/" + path.name;
      benchmark::RegisterBenchmark(name.c_str(), bench_vec_dot, shape, vec_dot, matrix)->Unit(benchmark::kMillisecond);
    }
  }

  // Batched decode (16 sequences) and prefill tiles: the shapes above against 16 tokens.
  constexpr int64_t kBatchTokens = 16;
  for (const Shape& shape : kShapes) {
    const TypeTraits& traits = type_traits(shape.type);
    for (const Path& path : paths) {
      if (!path.available || path.kernels == nullptr || path.kernels(traits)->vec_dot_matrix == nullptr) continue;
      const std::string name = "matrix/" + std::string(traits.name) + "/" + std::to_string(shape.n_cols) + "x" +
                               std::to_string(shape.n_rows) + "x" + std::to_string(kBatchTokens) + "tok/" + path.name;
      const SimdKernels& k = *path.kernels(traits);
      const DotKernel kernel{.vec_dot = k.vec_dot, .vec_dot_matrix = k.vec_dot_matrix, .isa = path.name};
      benchmark::RegisterBenchmark(name.c_str(), bench_matrix, shape, kernel, kBatchTokens)
          ->Unit(benchmark::kMillisecond);
    }
  }

  // Prefill on the file layout, 128 tokens.
  constexpr int64_t kPrefillTokens = 128;
  for (const Shape& shape : kShapes) {
    const TypeTraits& traits = type_traits(shape.type);
    for (const Path& path : paths) {
      if (!path.available || path.kernels == nullptr || path.kernels(traits)->vec_dot == nullptr) continue;
      const SimdKernels& k = *path.kernels(traits);
      const DotKernel kernel{.vec_dot = k.vec_dot, .vec_dot_rows = k.vec_dot_rows, .vec_dot_matrix = k.vec_dot_matrix,
                             .isa = path.name};
      const std::string name = "prefill/" + std::string(traits.name) + "/" + std::to_string(shape.n_cols) + "x" +
                               std::to_string(shape.n_rows) + "x" + std::to_string(kPrefillTokens) + "tok/" + path.name;
      benchmark::RegisterBenchmark(name.c_str(), bench_matrix, shape, kernel, kPrefillTokens)
          ->Unit(benchmark::kMillisecond);
    }
  }

  // Repacked panels, one token (decode) and 16.
  for (const Shape& shape : kShapes) {
    const TypeTraits& traits = type_traits(shape.type);
    if (!has_panel_layout(shape.type) || shape.n_rows % kPanelRows != 0) continue;
    for (const Path& path : paths) {
      if (!path.available || path.kernels == nullptr || path.kernels(traits)->vec_dot_panels == nullptr) continue;
      for (const int64_t n_tokens : {int64_t{1}, kBatchTokens}) {
        const std::string name = "panels/" + std::string(traits.name) + "/" + std::to_string(shape.n_cols) + "x" +
                                 std::to_string(shape.n_rows) + "x" + std::to_string(n_tokens) + "tok/" + path.name;
        benchmark::RegisterBenchmark(name.c_str(), bench_panels, shape, path.kernels(traits)->vec_dot_panels,
                                     n_tokens)
            ->Unit(benchmark::kMillisecond);
      }
    }
  }

  for (TensorType type : {TensorType::kQ8_0, TensorType::kQ8_K}) {
    const TypeTraits& traits = type_traits(type);
    constexpr int64_t kWidth = 2048;
    for (const Path& path : paths) {
      if (!path.available) continue;
      const QuantizeRowFn quantize_row = path.kernels ? path.kernels(traits)->quantize_row : traits.quantize_row_ref;
      if (quantize_row == nullptr) continue;
      const std::string name = "quantize/" + std::string(traits.name) + "/" + std::to_string(kWidth) + "/" + path.name;
      benchmark::RegisterBenchmark(name.c_str(), bench_quantize, type, kWidth, quantize_row);
    }
  }
}

}  // namespace
}  // namespace tokenmill::quant

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  tokenmill::quant::register_all();
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
