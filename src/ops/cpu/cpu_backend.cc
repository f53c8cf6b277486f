#include "ops/cpu/cpu_backend.h"

#include <algorithm>
#include <atomic>
#include <cassert>
#include <cmath>
#include <limits>
#include <mutex>
#include <utility>
#include <vector>

#include "base/cpu_features.h"
#include "base/first_max.h"
#include "base/half.h"
#include "ops/cpu/attention_kernels.h"
#include "ops/cpu/elementwise.h"
#include "quant/kernels/dispatch.h"
#include "quant/panel_layout.h"
#include "quant/quant.h"

namespace tokenmill::ops {

namespace {

// Matmul work is split into about this many pieces per thread, of at least this many rows.
// Each piece is a kernel call that starts its weight stream anew and stages the tokens
// again, so pieces are few and walked in order (ThreadPool::parallel_ranges); with more
// than one per thread, a thread done first takes the other's next piece whole and the
// other then waits for it. The cost: a thread the OS delays delays the matmul.
// (Measurements: docs/performance.md, Tuning constants.)
constexpr int64_t kMatmulPiecesPerThread = 1;
constexpr int64_t kMinMatmulPieceRows = 16;

// Greedy picks of at least this many tokens go through the matrix's screen (where the
// CPU runs one, quant/argmax_screen.h). Both passes read about as many bytes of weights:
// the screen wins where the exact kernels' arithmetic, not the memory, sets the pace.
constexpr int64_t kScreenMinTokens = 32;

}  // namespace

CpuBackend::CpuBackend(int n_threads) : pool_(std::make_shared<ThreadPool>(n_threads)) {}

CpuBackend::CpuBackend(std::shared_ptr<ThreadPool> pool) : pool_(std::move(pool)) {}

void CpuBackend::for_each_parallel(size_t n, const std::function<void(size_t)>& fn) {
  pool_->parallel_chunks(n, fn);  // runs one part inline, none for n == 0
}

void CpuBackend::matmul(const WeightMatrix& w, const float* x, int64_t n_tokens, float* y) {
  const MatmulProduct product{&w, y};
  run_products({&product, 1}, x, n_tokens, nullptr);
}

bool CpuBackend::can_screen(const WeightMatrix& w) {
  return w.panels && quant::screen_supported(w.type, w.n_cols) && quant::screen_runs_here();
}

int64_t CpuBackend::argmax_extra_bytes(const WeightMatrix& w) const {
  return can_screen(w) ? quant::screen_bytes(w.n_rows, w.n_cols) : 0;
}

void CpuBackend::matmul_argmax(const WeightMatrix& w, const float* x, int64_t n_tokens, float* y, int32_t* argmax) {
  if (y == nullptr && n_tokens >= kScreenMinTokens && can_screen(w) && argmax_by_screen(w, x, n_tokens, argmax)) {
    return;
  }
  if (y == nullptr && !w.panels) {  // no fold: the results are scanned, so they are stored
    argmax_results_.resize(static_cast<size_t>(n_tokens * w.n_rows));
    y = argmax_results_.data();
  }
  const MatmulProduct product{&w, y};
  run_products({&product, 1}, x, n_tokens, argmax);
}

void CpuBackend::matmul_shared_input(std::span<const MatmulProduct> products, const float* x, int64_t n_tokens) {
  // One pass needs one activation type and one kind of row unit (panels or row groups).
  auto same_pass = [&](const MatmulProduct& p) {
    const WeightMatrix& first = *products.front().w;
    return p.w->n_cols == first.n_cols && p.w->panels == first.panels &&
           quant::type_traits(p.w->type).vec_dot_type == quant::type_traits(first.type).vec_dot_type;
  };
  if (!products.empty() && std::all_of(products.begin(), products.end(), same_pass)) {
    run_products(products, x, n_tokens, nullptr);
    return;
  }
  for (const MatmulProduct& p : products) matmul(*p.w, x, n_tokens, p.y);
}

void CpuBackend::run_products(std::span<const MatmulProduct> products, const float* x, int64_t n_tokens,
                              int32_t* argmax) {
  assert(!products.empty() && (argmax == nullptr || products.size() == 1));
  const WeightMatrix& first = *products.front().w;
  const quant::TypeTraits& traits = quant::type_traits(first.type);
  const quant::QuantizeRowFn quantize_input = quant::best_quantize_activation(traits.vec_dot_type);
  const int64_t k = first.n_cols;
  const size_t input_row_bytes = quant::row_size(traits.vec_dot_type, k);
  quantized_input_.resize(static_cast<size_t>(n_tokens) * input_row_bytes);
  uint8_t* input = quantized_input_.data();  // [n_tokens, input_row_bytes]

  // Activations are converted once per call, not once per weight row or product.
  pool_->parallel_for(n_tokens, [&](int, size_t begin, size_t end) {
    for (size_t t = begin; t < end; ++t) quantize_input(x + t * k, input + t * input_row_bytes, k);
  });

  // The products' rows in units the kernels take whole: 16-row panels in the layout's own
  // kernel, 4-row groups (the row kernels' tile) otherwise. Unit u of the pass is unit
  // u - unit_begin[i] of product i.
  const bool panels = first.panels;
  const int64_t unit_rows = panels ? quant::kPanelRows : 4;
  std::vector<int64_t>& unit_begin = product_units_;
  unit_begin.assign(products.size() + 1, 0);
  for (size_t i = 0; i < products.size(); ++i) {
    const int64_t n_rows = products[i].w->n_rows;
    unit_begin[i + 1] = unit_begin[i] + (panels ? n_rows / quant::kPanelRows : (n_rows + 3) / 4);
  }
  const int64_t n_units = unit_begin.back();

  // The units are cut between the threads in contiguous regions of kMatmulPiecesPerThread
  // pieces each (ThreadPool::parallel_ranges); each weight row is read (and unpacked) once
  // and dotted with every token's input row: y[t * n_rows + r] for all t. A piece that
  // spans products makes one kernel call per product.
  const int64_t n_pieces_wanted = std::max<int64_t>(1, pool_->n_threads() * kMatmulPiecesPerThread);
  const int64_t min_grain = panels ? 1 : kMinMatmulPieceRows / 4;
  const int64_t grain = std::max<int64_t>(min_grain, (n_units + n_pieces_wanted - 1) / n_pieces_wanted);
  std::mutex pieces_mutex;
  std::vector<std::pair<int64_t, std::vector<quant::RunningMax>>> pieces;  // argmax: (first row, maxima)
  pool_->parallel_ranges(static_cast<size_t>(n_units), static_cast<size_t>(grain), [&](size_t first_unit,
                                                                                      size_t last_unit) {
    for (size_t i = 0; i < products.size(); ++i) {
      const int64_t unit_lo = std::max<int64_t>(static_cast<int64_t>(first_unit), unit_begin[i]);
      const int64_t unit_hi = std::min<int64_t>(static_cast<int64_t>(last_unit), unit_begin[i + 1]);
      if (unit_lo >= unit_hi) continue;
      const WeightMatrix& w = *products[i].w;
      const int64_t begin = (unit_lo - unit_begin[i]) * unit_rows;
      const int64_t end = std::min(w.n_rows, (unit_hi - unit_begin[i]) * unit_rows);
      float* y = products[i].y != nullptr ? products[i].y + begin : nullptr;  // null: argmax only
      if (!panels) {
        quant::dot_kernel_for(w.type, n_tokens).dot_matrix(k, w.row(begin), w.row_bytes, end - begin, input, input_row_bytes,
                                                  n_tokens, y, w.n_rows);
        continue;
      }
      // The panel kernels fold each token's results into a running maximum per piece
      // when asked for the argmax.
      std::vector<quant::RunningMax> maxima;
      if (argmax != nullptr) {
        maxima.assign(static_cast<size_t>(n_tokens), {-std::numeric_limits<float>::infinity(), -1});
      }
      quant::panel_kernel_for(w.type, n_tokens)(k, w.data + static_cast<size_t>(begin) * w.row_bytes, end - begin, input,
                                       input_row_bytes, n_tokens, y, w.n_rows,
                                       argmax != nullptr ? maxima.data() : nullptr);
      if (argmax != nullptr) {
        std::lock_guard<std::mutex> lock(pieces_mutex);
        pieces.emplace_back(begin, std::move(maxima));
      }
    }
  });
  if (argmax == nullptr) return;
  const int64_t n_rows = first.n_rows;
  if (panels) {
    // Pieces in row order, a later one winning only with a strictly larger value: the
    // first row of the largest, as one scan would find it.
    std::sort(pieces.begin(), pieces.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
    for (int64_t t = 0; t < n_tokens; ++t) {
      quant::RunningMax best{-std::numeric_limits<float>::infinity(), -1};
      for (const auto& [first_row, maxima] : pieces) {
        const quant::RunningMax& m = maxima[static_cast<size_t>(t)];
        if (m.column >= 0 && m.value > best.value) best = {m.value, static_cast<int32_t>(first_row + m.column)};
      }
      argmax[t] = best.column >= 0 ? best.column : 0;
    }
    return;
  }
  // Kernels without a fold: one scan per token, the tokens split between the threads.
  const float* y = products.front().y;
  pool_->parallel_for(n_tokens, [&](int, size_t begin, size_t end) {
    first_max_index_rows(y + begin * static_cast<size_t>(n_rows), static_cast<int64_t>(end - begin), n_rows,
                         argmax + begin);
  });
}

void CpuBackend::get_rows(const WeightMatrix& table, std::span<const int32_t> ids, float* out) {
  for (size_t i = 0; i < ids.size(); ++i) {
    assert(ids[i] >= 0 && ids[i] < table.n_rows);
    if (table.panels) {
      quant::dequantize_panel_row(table.type, table.data, ids[i], table.n_cols, table.row_bytes, out + i * table.n_cols);
    } else {
      quant::dequantize_row(table.type, table.row(ids[i]), out + i * table.n_cols, table.n_cols);
    }
  }
}

namespace {

// Below this many values a row-wise op (RMS norm, RoPE) runs on the calling thread alone.
// Above it, rows are split between the threads: run alone, a batched step's norms and
// RoPEs leave the other thread waiting.
constexpr int64_t kParallelRows = 1 << 13;
// The vectorized RMS norm runs alone up to this many values: a few sequences' norms cost
// less than handing half to the pool. From a 16-sequence step's norms (16 x 640, and
// 64 x 256 for its per-head q / k norms) splitting pays, the pool's threads being awake
// within a step.
constexpr int64_t kParallelNormValues = 1 << 12;

}  // namespace

void CpuBackend::rms_norm(const float* x, const float* weight, int64_t n_rows, int64_t n_cols, float eps, float* y) {
  const bool avx2 = cpu_features().has_avx2_kernels();
  auto rows = [&](int64_t begin, int64_t end) {
#if defined(__x86_64__)
    if (avx2) {
      cpu::rms_norm_avx2(x + begin * n_cols, weight, end - begin, n_cols, eps, y + begin * n_cols);
      return;
    }
#endif
    for (int64_t r = begin; r < end; ++r) cpu::rms_norm_row(x + r * n_cols, weight, n_cols, eps, y + r * n_cols);
  };
  if (n_rows < 2 || n_rows * n_cols < (avx2 ? kParallelNormValues : kParallelRows)) {
    rows(0, n_rows);
    return;
  }
  pool_->parallel_for(static_cast<size_t>(n_rows), [&](int, size_t begin, size_t end) {
    rows(static_cast<int64_t>(begin), static_cast<int64_t>(end));
  });
}

const CpuBackend::RopeTable& CpuBackend::rope_table(std::span<const int32_t> positions, int32_t n_rot,
                                                     float freq_base, float freq_scale,
                                                     const float* freq_factors) {
  for (const RopeTable& table : rope_tables_) {
    if (table.freq_base == freq_base && table.freq_scale == freq_scale && table.n_rot == n_rot &&
        table.freq_factors == freq_factors &&
        std::equal(positions.begin(), positions.end(), table.positions.begin(), table.positions.end())) {
      return table;
    }
  }
  RopeTable& table = rope_tables_[next_rope_table_];
  next_rope_table_ = (next_rope_table_ + 1) % rope_tables_.size();
  table.freq_base = freq_base;
  table.freq_scale = freq_scale;
  table.freq_factors = freq_factors;
  table.n_rot = n_rot;
  table.positions.assign(positions.begin(), positions.end());
  const int32_t n_pairs = n_rot / 2;
  table.cos.resize(positions.size() * n_pairs);
  table.sin.resize(positions.size() * n_pairs);
  const float theta_scale = std::pow(freq_base, -2.0f / static_cast<float>(n_rot));
  for (size_t t = 0; t < positions.size(); ++t) {
    // theta_i = position * freq_base^(-2i/n_rot), built by repeated multiplication
    // in float as ggml does, so the angles agree to the last bit.
    float theta = static_cast<float>(positions[t]);
    for (int32_t i = 0; i < n_pairs; ++i) {
      // ggml divides by the pair's factor first, then scales: the same order, the same bits.
      const float angle = freq_factors != nullptr ? freq_scale * (theta / freq_factors[i]) : theta * freq_scale;
      table.cos[t * n_pairs + i] = std::cos(angle);
      table.sin[t * n_pairs + i] = std::sin(angle);
      theta *= theta_scale;
    }
  }
  return table;
}

void CpuBackend::rope(float* x, std::span<const int32_t> positions, int32_t n_heads, int32_t head_dim,
                      int32_t n_rot, float freq_base, float freq_scale, RopeStyle style, const float* freq_factors) {
  assert(n_rot >= 2 && n_rot <= head_dim && n_rot % 2 == 0);
  // q and k of a layer, and every layer with the same base, share one table (of the
  // rotated dimensions' pairs: values past n_rot are left as they are).
  const RopeTable& table = rope_table(positions, n_rot, freq_base, freq_scale, freq_factors);
  const int32_t n_pairs = n_rot / 2;
  auto tokens = [&](size_t begin, size_t end) {
    for (size_t t = begin; t < end; ++t) {
      const float* cos_t = table.cos.data() + t * n_pairs;
      const float* sin_t = table.sin.data() + t * n_pairs;
      for (int32_t h = 0; h < n_heads; ++h) {
        float* v = x + (t * n_heads + h) * static_cast<size_t>(head_dim);
        // NeoX pairs element i with i + n_rot/2; the original layout pairs 2i, 2i+1.
        // One loop per layout, so that each vectorizes.
        if (style == RopeStyle::kNeox) {
          float* lo = v;
          float* hi = v + n_pairs;
          for (int32_t i = 0; i < n_pairs; ++i) {
            const float x0 = lo[i], x1 = hi[i];
            lo[i] = x0 * cos_t[i] - x1 * sin_t[i];
            hi[i] = x0 * sin_t[i] + x1 * cos_t[i];
          }
        } else {
          for (int32_t i = 0; i < n_pairs; ++i) {
            const float x0 = v[2 * i], x1 = v[2 * i + 1];
            v[2 * i] = x0 * cos_t[i] - x1 * sin_t[i];
            v[2 * i + 1] = x0 * sin_t[i] + x1 * cos_t[i];
          }
        }
      }
    }
  };
  if (positions.size() < 2 || static_cast<int64_t>(positions.size()) * n_heads * head_dim < kParallelRows) {
    tokens(0, positions.size());
    return;
  }
  pool_->parallel_for(positions.size(), [&](int, size_t begin, size_t end) { tokens(begin, end); });
}

namespace {

// Below this many values an elementwise op runs on the calling thread alone: waking the
// pool costs more than it saves.
constexpr int64_t kParallelElementwise = 1 << 15;

}  // namespace

void CpuBackend::elementwise(int64_t n, const std::function<void(int64_t, int64_t)>& fn) {
  if (n < kParallelElementwise) {
    fn(0, n);
    return;
  }
  pool_->parallel_for(static_cast<size_t>(n), [&](int, size_t begin, size_t end) {
    fn(static_cast<int64_t>(begin), static_cast<int64_t>(end));
  });
}

void CpuBackend::geglu(const float* gate, const float* up, int64_t n, float* y) {
#if defined(__x86_64__)
  if (cpu_features().has_avx2_kernels()) {
    const float* table = cpu::gelu_f32_table();
    elementwise(n, [&](int64_t b, int64_t e) { cpu::geglu_avx2(gate + b, up + b, e - b, y + b, table); });
    return;
  }
#endif
  for (int64_t i = 0; i < n; ++i) y[i] = cpu::gelu_tanh(gate[i]) * up[i];
}

void CpuBackend::swiglu(const float* gate, const float* up, int64_t n, float* y) {
#if defined(__x86_64__)
  if (cpu_features().has_avx2_kernels()) {
    elementwise(n, [&](int64_t b, int64_t e) { cpu::swiglu_avx2(gate + b, up + b, e - b, y + b); });
    return;
  }
#endif
  for (int64_t i = 0; i < n; ++i) y[i] = cpu::silu(gate[i]) * up[i];
}

void CpuBackend::add(const float* a, const float* b, int64_t n, float* y) {
  for (int64_t i = 0; i < n; ++i) y[i] = a[i] + b[i];
}

void CpuBackend::add_bias(float* x, const float* bias, int64_t n_rows, int64_t n_cols) {
  for (int64_t r = 0; r < n_rows; ++r) {
    for (int64_t c = 0; c < n_cols; ++c) x[r * n_cols + c] += bias[c];
  }
}

void CpuBackend::scale(float* x, float factor, int64_t n) {
  for (int64_t i = 0; i < n; ++i) x[i] *= factor;
}

void CpuBackend::store_kv(KvStorage& kv, int32_t layer, const AttentionBatch& batch, const float* k, const float* v) {
  const int32_t block_size = kv.shape().block_size;
  const int64_t row = kv.shape().row_elements();
  [[maybe_unused]] const bool f16c = cpu_features().has_avx2_kernels();
  // Q8_0 rows are quantized as matmul inputs are (one scale per 32 values, the fastest
  // kernel this CPU runs: the same bits for a row whatever its batch).
  const quant::QuantizeRowFn quantize =
      kv.shape().type == KvType::kQ8_0 ? quant::best_quantize_activation(gguf::TensorType::kQ8_0) : nullptr;
  auto convert = [&](const float* src, uint8_t* dst) {
    if (quantize != nullptr) {
      quantize(src, dst, row);
#if defined(__x86_64__)
    } else if (f16c) {
      cpu::convert_to_f16_avx2(src, reinterpret_cast<uint16_t*>(dst), row);
#endif
    } else {
      auto* out = reinterpret_cast<uint16_t*>(dst);
      for (int64_t i = 0; i < row; ++i) out[i] = f32_to_f16(src[i]);
    }
  };
  for (size_t t = 0; t < batch.positions.size(); ++t) {
    const int32_t pos = batch.positions[t];
    const auto& table = batch.block_tables[batch.sequence_of_token[t]];
    assert(static_cast<size_t>(pos / block_size) < table.size());
    const int32_t block = table[pos / block_size];
    convert(k + t * row, kv.key_row(layer, block, pos % block_size));
    convert(v + t * row, kv.value_row(layer, block, pos % block_size));
  }
}

void CpuBackend::attention(const KvStorage& kv, const AttentionBatch& batch, const AttentionParams& params,
                           const float* q, float* out) {
  const int32_t block_size = kv.shape().block_size;
  const int32_t head_dim = params.head_dim;
  const int32_t group = params.n_heads / params.n_kv_heads;
  const int64_t q_row = static_cast<int64_t>(params.n_heads) * head_dim;
  const int64_t n_tokens = static_cast<int64_t>(batch.positions.size());
  // An item is one token's heads of one kv head (they share every key and value row).
  // With fewer items than threads (decode of a model with one kv head), the group is
  // split so that every thread has heads to run; the results do not change with the
  // split (attention_kernels.h).
  const int n_threads = pool_->n_threads();
  const int64_t n_groups = n_tokens * params.n_kv_heads;
  const int32_t n_splits =
      static_cast<int32_t>(std::min<int64_t>(group, std::max<int64_t>(1, (n_threads + n_groups - 1) / n_groups)));
  const int32_t heads_per_split = (group + n_splits - 1) / n_splits;
  const int64_t n_items = n_groups * n_splits;
  // The widest vector body this CPU runs, chosen once; the reference for other head sizes.
  static const auto widest = [] {
    for (const cpu::AttentionKernel& kernel : cpu::attention_kernels(cpu_features())) {
      if (kernel.runs_here) return kernel.attend;
    }
    return static_cast<void (*)(const cpu::HeadGroupAttention&)>(nullptr);
  }();
  const auto attend = widest != nullptr && head_dim % 16 == 0 ? widest : cpu::attend_head_group_ref;
  attention_scratch_.resize(n_threads);

  // Items are claimed one at a time by whichever thread is free (a causal batch's later
  // tokens see more keys, and a thread the OS delays - the server's I/O threads share the
  // cores - would otherwise hold the step back), the longest first: a causal batch's last
  // tokens, so they are not left for the end.
  std::atomic<int64_t> next_item{0};
  pool_->run_on_all([&](int part) {
    AttentionScratch& scratch = attention_scratch_[part];
    for (int64_t claimed = next_item.fetch_add(1, std::memory_order_relaxed); claimed < n_items;
         claimed = next_item.fetch_add(1, std::memory_order_relaxed)) {
      const int64_t item = n_items - 1 - claimed;
      const int64_t t = item / (params.n_kv_heads * n_splits);
      const int32_t kv_head = static_cast<int32_t>(item / n_splits % params.n_kv_heads);
      const int32_t first_head = kv_head * group + static_cast<int32_t>(item % n_splits) * heads_per_split;
      const int32_t n_heads = std::min(heads_per_split, (kv_head + 1) * group - first_head);
      if (n_heads <= 0) continue;
      const int32_t pos = batch.positions[t];
      const auto& table = batch.block_tables[batch.sequence_of_token[t]];
      const int32_t first = params.window > 0 ? std::max(0, pos - params.window + 1) : 0;
      const int32_t n_keys = pos - first + 1;

      scratch.keys.resize(n_keys);
      scratch.values.resize(n_keys);
      // A block's slots are consecutive rows: the storage is asked once per block.
      const int64_t head_offset = kv.shape().bytes_of(static_cast<int64_t>(kv_head) * head_dim);
      const int64_t row = kv.shape().row_bytes();
      for (int32_t j = 0; j < n_keys;) {
        const int32_t p = first + j;
        const int32_t slot = p % block_size;
        const int32_t n_slots = std::min(block_size - slot, n_keys - j);
        const uint8_t* keys = kv.key_row(params.layer, table[p / block_size], slot) + head_offset;
        const uint8_t* values = kv.value_row(params.layer, table[p / block_size], slot) + head_offset;
        for (int32_t s = 0; s < n_slots; ++s, ++j) {
          scratch.keys[j] = keys + s * row;
          scratch.values[j] = values + s * row;
        }
      }
      scratch.q.resize(static_cast<size_t>(n_heads) * head_dim);
      scratch.scores.resize(static_cast<size_t>(n_heads) * n_keys);

      cpu::HeadGroupAttention a;
      a.q = q + t * q_row + static_cast<int64_t>(first_head) * head_dim;
      a.n_heads = n_heads;
      a.head_dim = head_dim;
      a.keys = scratch.keys.data();
      a.values = scratch.values.data();
      a.kv_type = kv.shape().type;
      a.n_keys = n_keys;
      a.scale = params.scale;
      a.softcap = params.softcap;
      a.sinks = params.sinks != nullptr ? params.sinks + first_head : nullptr;
      a.out = out + t * q_row + static_cast<int64_t>(first_head) * head_dim;
      a.scratch_q = scratch.q.data();
      a.scratch_scores = scratch.scores.data();
      attend(a);
    }
  });
}

}  // namespace tokenmill::ops
