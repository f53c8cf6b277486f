// Importance-weighted quantization. Every format's reference quantizer fits its scales
// with weights that only look at the values themselves (x^2, |x|, rms + |x|). Here the
// error of element j is weighted by
//     importance[j] * sqrt(sigma2 + x_j^2),   sigma2 = mean of x^2 over the row,
// where importance[j] = E[a_j^2] over calibration activations (imatrix_file.h): an error in
// a column that meets large activations costs more in the matmul's output. The second
// factor keeps the values' own magnitude in play, as ggml's *_impl quantizers do.
//
// Only step 1 (the per-group scale search) changes; the scales are then stored and the
// levels re-derived exactly as in the reference (k_quant_store.h), so the output is an
// ordinary block of the type that every kernel reads.

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "base/half.h"
#include "quant/blocks.h"
#include "quant/k_quant_store.h"
#include "quant/kernels_ref.h"
#include "quant/quant.h"
#include "quant/scale_search.h"

namespace tokenmill::quant {

namespace {

using gguf::TensorType;

constexpr int kQK = kSuperBlockSize;
constexpr int kQL = kLegacyBlockSize;

// weights[i] = importance[i] * sqrt(sigma2 + x[i]^2) for one block of n elements.
void error_weights(const float* x, const float* importance, float sigma2, int n, float* weights) {
  for (int i = 0; i < n; ++i) weights[i] = importance[i] * std::sqrt(sigma2 + x[i] * x[i]);
}

// ------------------------------------------------------------------- legacy (32 wide)

// Symmetric 32-element block: x ~= d * (q - n_max), q in [0, 2 n_max - 1].
float fit_symmetric_block(const float* x, const float* importance, float sigma2, int n_max, uint16_t* d_out,
                          int8_t* q) {
  float weights[kQL];
  error_weights(x, importance, sigma2, kQL, weights);
  const float scale = fit_symmetric_scale(kQL, n_max, x, q, weights);
  *d_out = f32_to_f16(scale);
  const float d = f16_to_f32(*d_out);
  if (d != 0.0f) {
    for (int i = 0; i < kQL; ++i) q[i] = static_cast<int8_t>(clamp_int(round_to_int(x[i] / d), -n_max, n_max - 1) + n_max);
  }
  return d;
}

// Asymmetric 32-element block: x ~= d * q + m, q in [0, n_max].
void fit_min_block(const float* x, const float* importance, float sigma2, int n_max, uint16_t* d_out,
                   uint16_t* m_out, uint8_t* q) {
  float weights[kQL];
  uint8_t scratch[kQL];
  error_weights(x, importance, sigma2, kQL, weights);
  float min = 0.0f;
  const float scale = fit_scale_and_min(kQL, n_max, x, weights, q, &min, scratch, -1.0f, 0.1f, 20, false);
  *d_out = f32_to_f16(scale);
  *m_out = f32_to_f16(-min);
  const float d = f16_to_f32(*d_out);
  const float m = f16_to_f32(*m_out);
  if (d != 0.0f) {
    for (int i = 0; i < kQL; ++i) q[i] = static_cast<uint8_t>(clamp_int(round_to_int((x[i] - m) / d), 0, n_max));
  }
}

void pack_nibbles(const uint8_t* q, uint8_t* qs) {
  for (int j = 0; j < kQL / 2; ++j) qs[j] = static_cast<uint8_t>((q[j] & 0x0f) | ((q[j + kQL / 2] & 0x0f) << 4));
}

void pack_fifth_bits(const uint8_t* q, uint8_t qh[4]) {
  uint32_t high_bits = 0;
  for (int j = 0; j < kQL; ++j) high_bits |= static_cast<uint32_t>((q[j] >> 4) & 1) << j;
  std::memcpy(qh, &high_bits, sizeof high_bits);
}

void quantize_q4_0(const float* x, BlockQ4_0* blocks, int64_t n, const float* importance, float sigma2) {
  for (int64_t b = 0; b < n / kQL; ++b, x += kQL, importance += kQL) {
    int8_t q[kQL];
    fit_symmetric_block(x, importance, sigma2, 8, &blocks[b].d, q);
    pack_nibbles(reinterpret_cast<const uint8_t*>(q), blocks[b].qs);
  }
}

void quantize_q5_0(const float* x, BlockQ5_0* blocks, int64_t n, const float* importance, float sigma2) {
  for (int64_t b = 0; b < n / kQL; ++b, x += kQL, importance += kQL) {
    int8_t q[kQL];
    fit_symmetric_block(x, importance, sigma2, 16, &blocks[b].d, q);
    pack_nibbles(reinterpret_cast<const uint8_t*>(q), blocks[b].qs);
    pack_fifth_bits(reinterpret_cast<const uint8_t*>(q), blocks[b].qh);
  }
}

void quantize_q4_1(const float* x, BlockQ4_1* blocks, int64_t n, const float* importance, float sigma2) {
  for (int64_t b = 0; b < n / kQL; ++b, x += kQL, importance += kQL) {
    uint8_t q[kQL];
    fit_min_block(x, importance, sigma2, 15, &blocks[b].d, &blocks[b].m, q);
    pack_nibbles(q, blocks[b].qs);
  }
}

void quantize_q5_1(const float* x, BlockQ5_1* blocks, int64_t n, const float* importance, float sigma2) {
  for (int64_t b = 0; b < n / kQL; ++b, x += kQL, importance += kQL) {
    uint8_t q[kQL];
    fit_min_block(x, importance, sigma2, 31, &blocks[b].d, &blocks[b].m, q);
    pack_nibbles(q, blocks[b].qs);
    pack_fifth_bits(q, blocks[b].qh);
  }
}

// ------------------------------------------------------------------ K-quants (256 wide)

void quantize_q2_K(const float* x, BlockQ2_K* blocks, int64_t n, const float* importance, float sigma2) {
  for (int64_t b = 0; b < n / kQK; ++b, x += kQK, importance += kQK) {
    uint8_t levels[kQK], scratch[16];
    float weights[16], scales[16], mins[16];
    for (int j = 0; j < 16; ++j) {
      error_weights(x + 16 * j, importance + 16 * j, sigma2, 16, weights);
      scales[j] = fit_scale_and_min(16, 3, x + 16 * j, weights, levels + 16 * j, &mins[j], scratch, -0.9f, 0.05f,
                                    36, false);
    }
    ref::store_q2_K(x, scales, mins, levels, blocks[b]);
  }
}

// Q3_K and Q6_K: 16 groups of 16, symmetric, levels in [-n_max, n_max).
template <typename Block>
void quantize_k16(const float* x, Block* blocks, int64_t n, const float* importance, float sigma2, int n_max) {
  for (int64_t b = 0; b < n / kQK; ++b, x += kQK, importance += kQK) {
    int8_t levels[kQK];
    float weights[16], scales[16];
    for (int j = 0; j < 16; ++j) {
      error_weights(x + 16 * j, importance + 16 * j, sigma2, 16, weights);
      scales[j] = fit_symmetric_scale(16, n_max, x + 16 * j, levels + 16 * j, weights);
    }
    ref::store_k16(x, scales, levels, blocks[b]);
  }
}

// Q4_K and Q5_K step 1: 8 groups of 32, asymmetric.
void fit_groups_k(const float* x, const float* importance, float sigma2, int n_max, float rmin, int n_steps,
                  float scales[8], float mins[8], uint8_t* levels) {
  float weights[32];
  uint8_t scratch[32];
  for (int j = 0; j < 8; ++j) {
    error_weights(x + 32 * j, importance + 32 * j, sigma2, 32, weights);
    scales[j] = fit_scale_and_min(32, n_max, x + 32 * j, weights, levels + 32 * j, &mins[j], scratch, rmin, 0.1f,
                                  n_steps, false);
  }
}

template <typename Block>
void quantize_k4(const float* x, Block* blocks, int64_t n, const float* importance, float sigma2, int n_max) {
  for (int64_t b = 0; b < n / kQK; ++b, x += kQK, importance += kQK) {
    uint8_t levels[kQK];
    float scales[8], mins[8];
    fit_groups_k(x, importance, sigma2, n_max, -0.9f, 20, scales, mins, levels);
    ref::store_k4(x, scales, mins, levels, blocks[b]);
  }
}

}  // namespace

bool supports_weighted_quantization(gguf::TensorType type) {
  switch (type) {
    case TensorType::kQ4_0:
    case TensorType::kQ4_1:
    case TensorType::kQ5_0:
    case TensorType::kQ5_1:
    case TensorType::kQ2_K:
    case TensorType::kQ3_K:
    case TensorType::kQ4_K:
    case TensorType::kQ5_K:
    case TensorType::kQ6_K:
    case TensorType::kIQ4_NL:
    case TensorType::kIQ4_XS:
    case TensorType::kMXFP4:
    case TensorType::kIQ2_XXS:
    case TensorType::kIQ2_XS:
    case TensorType::kIQ2_S:
    case TensorType::kIQ3_XXS:
    case TensorType::kIQ3_S:
    case TensorType::kIQ1_S:
    case TensorType::kIQ1_M:
      return true;
    default:
      return false;
  }
}

void quantize_row_weighted(gguf::TensorType type, const float* src, void* dst, int64_t n, const float* importance) {
  if (importance == nullptr || !supports_weighted_quantization(type)) {
    quantize_row_ref(type, src, dst, n);
    return;
  }
  const float sigma2 = mean_square(src, n);
  switch (type) {
    case TensorType::kQ4_0: quantize_q4_0(src, static_cast<BlockQ4_0*>(dst), n, importance, sigma2); break;
    case TensorType::kQ4_1: quantize_q4_1(src, static_cast<BlockQ4_1*>(dst), n, importance, sigma2); break;
    case TensorType::kQ5_0: quantize_q5_0(src, static_cast<BlockQ5_0*>(dst), n, importance, sigma2); break;
    case TensorType::kQ5_1: quantize_q5_1(src, static_cast<BlockQ5_1*>(dst), n, importance, sigma2); break;
    case TensorType::kQ2_K: quantize_q2_K(src, static_cast<BlockQ2_K*>(dst), n, importance, sigma2); break;
    case TensorType::kQ3_K: quantize_k16(src, static_cast<BlockQ3_K*>(dst), n, importance, sigma2, 4); break;
    case TensorType::kQ4_K: quantize_k4(src, static_cast<BlockQ4_K*>(dst), n, importance, sigma2, 15); break;
    case TensorType::kQ5_K: quantize_k4(src, static_cast<BlockQ5_K*>(dst), n, importance, sigma2, 31); break;
    case TensorType::kQ6_K: quantize_k16(src, static_cast<BlockQ6_K*>(dst), n, importance, sigma2, 32); break;
    case TensorType::kIQ4_NL: ref::quantize_row_iq4_nl_weighted(src, dst, n, importance); break;
    case TensorType::kIQ4_XS: ref::quantize_row_iq4_xs_weighted(src, dst, n, importance); break;
    case TensorType::kMXFP4: ref::quantize_row_mxfp4_weighted(src, dst, n, importance); break;
    case TensorType::kIQ2_XXS: ref::quantize_row_iq2_xxs_weighted(src, dst, n, importance); break;
    case TensorType::kIQ2_XS: ref::quantize_row_iq2_xs_weighted(src, dst, n, importance); break;
    case TensorType::kIQ2_S: ref::quantize_row_iq2_s_weighted(src, dst, n, importance); break;
    case TensorType::kIQ3_XXS: ref::quantize_row_iq3_xxs_weighted(src, dst, n, importance); break;
    case TensorType::kIQ3_S: ref::quantize_row_iq3_s_weighted(src, dst, n, importance); break;
    case TensorType::kIQ1_S: ref::quantize_row_iq1_s_weighted(src, dst, n, importance); break;
    case TensorType::kIQ1_M: ref::quantize_row_iq1_m_weighted(src, dst, n, importance); break;
    default: break;
  }
}

}  // namespace tokenmill::quant
