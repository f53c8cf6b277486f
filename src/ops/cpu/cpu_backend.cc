#include "ops/cpu/cpu_backend.h"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <limits>

#include "base/half.h"
#include "ops/cpu/elementwise.h"
#include "quant/kernels/dispatch.h"
#include "quant/quant.h"

namespace tokenmill::ops {

CpuBackend::CpuBackend(int n_threads) : pool_(n_threads) {}

void CpuBackend::matmul(const WeightMatrix& w, const float* x, int64_t n_tokens, float* y) {
  const quant::TypeTraits& traits = quant::type_traits(w.type);
  // The fastest kernels this CPU runs, chosen once per process (quant/kernels/dispatch.h).
  const quant::DotKernel& dot = quant::best_dot_kernel(w.type);
  const quant::QuantizeRowFn quantize_input = quant::best_quantize_activation(traits.vec_dot_type);
  const int64_t k = w.n_cols;
  const size_t input_row_bytes = quant::row_size(traits.vec_dot_type, k);
  quantized_input_.resize(static_cast<size_t>(n_tokens) * input_row_bytes);
  uint8_t* input = quantized_input_.data();  // [n_tokens, input_row_bytes]

  // Activations are converted once per matmul, not once per weight row.
  pool_.parallel_for(n_tokens, [&](int, size_t begin, size_t end) {
    for (size_t t = begin; t < end; ++t) quantize_input(x + t * k, input + t * input_row_bytes, k);
  });

  // Each weight row is read (and unpacked) once and dotted with every token's input row:
  // y[t * n_rows + r] for all t.
  const int64_t n_rows = w.n_rows;
  pool_.parallel_for(n_rows, [&](int, size_t begin, size_t end) {
    for (size_t r = begin; r < end; ++r) dot.dot_rows(k, w.row(r), input, input_row_bytes, n_tokens, y + r, n_rows);
  });
}

void CpuBackend::get_rows(const WeightMatrix& table, std::span<const int32_t> ids, float* out) {
  for (size_t i = 0; i < ids.size(); ++i) {
    assert(ids[i] >= 0 && ids[i] < table.n_rows);
    quant::dequantize_row(table.type, table.row(ids[i]), out + i * table.n_cols, table.n_cols);
  }
}

void CpuBackend::rms_norm(const float* x, const float* weight, int64_t n_rows, int64_t n_cols, float eps, float* y) {
  for (int64_t r = 0; r < n_rows; ++r) cpu::rms_norm_row(x + r * n_cols, weight, n_cols, eps, y + r * n_cols);
}

void CpuBackend::rope(float* x, std::span<const int32_t> positions, int32_t n_heads, int32_t head_dim,
                      float freq_base, float freq_scale, RopeStyle style) {
  const float theta_scale = std::pow(freq_base, -2.0f / static_cast<float>(head_dim));
  std::vector<float> cos_table(head_dim / 2), sin_table(head_dim / 2);
  for (size_t t = 0; t < positions.size(); ++t) {
    // theta_i = position * freq_base^(-2i/head_dim), built by repeated multiplication
    // in float as ggml does, so the angles agree to the last bit.
    float theta = static_cast<float>(positions[t]);
    for (int32_t i = 0; i < head_dim / 2; ++i) {
      const float angle = theta * freq_scale;
      cos_table[i] = std::cos(angle);
      sin_table[i] = std::sin(angle);
      theta *= theta_scale;
    }
    for (int32_t h = 0; h < n_heads; ++h) {
      float* v = x + (t * n_heads + h) * static_cast<size_t>(head_dim);
      for (int32_t i = 0; i < head_dim / 2; ++i) {
        // NeoX pairs element i with i + head_dim/2; the original layout pairs 2i, 2i+1.
        const int32_t a = style == RopeStyle::kNeox ? i : 2 * i;
        const int32_t b = style == RopeStyle::kNeox ? i + head_dim / 2 : 2 * i + 1;
        const float x0 = v[a], x1 = v[b];
        v[a] = x0 * cos_table[i] - x1 * sin_table[i];
        v[b] = x0 * sin_table[i] + x1 * cos_table[i];
      }
    }
  }
}

void CpuBackend::geglu(const float* gate, const float* up, int64_t n, float* y) {
  for (int64_t i = 0; i < n; ++i) y[i] = cpu::gelu_tanh(gate[i]) * up[i];
}

void CpuBackend::swiglu(const float* gate, const float* up, int64_t n, float* y) {
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
  for (size_t t = 0; t < batch.positions.size(); ++t) {
    const int32_t pos = batch.positions[t];
    const auto& table = batch.block_tables[batch.sequence_of_token[t]];
    assert(static_cast<size_t>(pos / block_size) < table.size());
    const int32_t block = table[pos / block_size];
    uint16_t* key_dst = kv.key_row(layer, block, pos % block_size);
    uint16_t* value_dst = kv.value_row(layer, block, pos % block_size);
    for (int64_t i = 0; i < row; ++i) {
      key_dst[i] = f32_to_f16(k[t * row + i]);
      value_dst[i] = f32_to_f16(v[t * row + i]);
    }
  }
}

void CpuBackend::attention(const KvStorage& kv, const AttentionBatch& batch, const AttentionParams& params,
                           const float* q, float* out) {
  const int32_t block_size = kv.shape().block_size;
  const int32_t head_dim = params.head_dim;
  const int32_t group = params.n_heads / params.n_kv_heads;
  const int64_t q_row = static_cast<int64_t>(params.n_heads) * head_dim;
  const size_t n_items = batch.positions.size() * params.n_heads;

  pool_.parallel_for(n_items, [&](int, size_t begin, size_t end) {
    std::vector<float> scores;
    std::vector<float> q16(head_dim);
    for (size_t item = begin; item < end; ++item) {
      const size_t t = item / params.n_heads;
      const int32_t h = static_cast<int32_t>(item % params.n_heads);
      const int32_t kv_head = h / group;
      const int32_t pos = batch.positions[t];
      const auto& table = batch.block_tables[batch.sequence_of_token[t]];
      const int32_t first = params.window > 0 ? std::max(0, pos - params.window + 1) : 0;
      const int32_t n_keys = pos - first + 1;

      // The query is rounded to F16 because the cache is F16 (as ggml converts it).
      const float* qh = q + t * q_row + static_cast<int64_t>(h) * head_dim;
      for (int32_t d = 0; d < head_dim; ++d) q16[d] = f16_to_f32(f32_to_f16(qh[d]));

      scores.resize(n_keys);
      float max_score = -std::numeric_limits<float>::infinity();
      for (int32_t j = 0; j < n_keys; ++j) {
        const int32_t p = first + j;
        const uint16_t* key = kv.key_row(params.layer, table[p / block_size], p % block_size) +
                              static_cast<int64_t>(kv_head) * head_dim;
        float dot = 0.0f;
        for (int32_t d = 0; d < head_dim; ++d) dot += q16[d] * f16_to_f32(key[d]);
        float s = dot * params.scale;
        if (params.softcap > 0.0f) s = params.softcap * std::tanh(s / params.softcap);
        scores[j] = s;
        max_score = std::max(max_score, s);
      }
      double sum = 0.0;
      for (int32_t j = 0; j < n_keys; ++j) {
        scores[j] = std::exp(scores[j] - max_score);
        sum += scores[j];
      }
      const float inv_sum = static_cast<float>(1.0 / sum);

      float* o = out + t * q_row + static_cast<int64_t>(h) * head_dim;
      std::fill(o, o + head_dim, 0.0f);
      for (int32_t j = 0; j < n_keys; ++j) {
        const int32_t p = first + j;
        // Probabilities are rounded to F16 before meeting the F16 values, as in ggml.
        const float weight = f16_to_f32(f32_to_f16(scores[j] * inv_sum));
        const uint16_t* value = kv.value_row(params.layer, table[p / block_size], p % block_size) +
                                static_cast<int64_t>(kv_head) * head_dim;
        for (int32_t d = 0; d < head_dim; ++d) o[d] += weight * f16_to_f32(value[d]);
      }
    }
  });
}

}  // namespace tokenmill::ops
