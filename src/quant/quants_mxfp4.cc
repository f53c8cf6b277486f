// MXFP4: 4-bit E2M1 codes under a power-of-two scale per block of 32 (blocks.h).
//
// Quantization is our own search: the exponent that puts the block's largest magnitude
// near the top level (12, doubled E2M1's 6), and its neighbours either side, each with
// every value at its nearest level; the exponent with the least weighted squared error
// wins. Weights are x^2 without an importance matrix, importance * sqrt(sigma2 + x^2)
// with one, as for the other weighted formats.
#include <cmath>
#include <cstring>

#include "base/half.h"
#include "quant/blocks.h"
#include "quant/kernels_ref.h"

namespace tokenmill::quant::ref {

const int8_t kMxfp4Levels[16] = {0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12};

namespace {

constexpr int kGroup = kLegacyBlockSize;

// The index of the level nearest to x / scale (the first on a tie), by the error of the
// scaled level itself, so that it is the nearest value the block can represent.
uint8_t nearest(float x, float scale) {
  uint8_t best = 0;
  float best_error = std::fabs(x);  // level 0
  for (uint8_t k = 1; k < 16; ++k) {
    const float error = std::fabs(scale * static_cast<float>(kMxfp4Levels[k]) - x);
    if (error < best_error) {
      best_error = error;
      best = k;
    }
  }
  return best;
}

void quantize_block(const float* x, const float* w, BlockMXFP4& block) {
  float amax = 0.0f;
  for (int i = 0; i < kGroup; ++i) amax = std::fmax(amax, std::fabs(x[i]));
  block.e = 0;
  std::memset(block.qs, 0, sizeof block.qs);
  if (!(amax > 0.0f) || !std::isfinite(amax)) return;
  // 2^(e - 128) * 12 >= amax > 2^(e - 128) * 6 at e = floor(log2(amax)) + 125.
  const int center = static_cast<int>(std::floor(std::log2(amax))) + 125;
  double best_error = -1.0;
  for (int e = center - 1; e <= center + 1; ++e) {
    if (e < 0 || e > 255) continue;
    const float scale = mxfp4_scale(static_cast<uint8_t>(e));
    uint8_t index[kGroup];
    double error = 0.0;
    for (int i = 0; i < kGroup; ++i) {
      index[i] = nearest(x[i], scale);
      const double diff = static_cast<double>(scale) * kMxfp4Levels[index[i]] - x[i];
      error += static_cast<double>(w[i]) * diff * diff;
    }
    if (best_error < 0.0 || error < best_error) {
      best_error = error;
      block.e = static_cast<uint8_t>(e);
      for (int j = 0; j < kGroup / 2; ++j) {
        block.qs[j] = static_cast<uint8_t>(index[j] | (index[j + kGroup / 2] << 4));
      }
    }
  }
}

void quantize_mxfp4(const float* x, BlockMXFP4* blocks, int64_t n, const float* importance) {
  double sum = 0.0;
  for (int64_t i = 0; importance != nullptr && i < n; ++i) sum += static_cast<double>(x[i]) * x[i];
  const float sigma2 = n > 0 ? static_cast<float>(sum / static_cast<double>(n)) : 0.0f;
  for (int64_t b = 0; b < n / kGroup; ++b, x += kGroup) {
    float w[kGroup];
    for (int i = 0; i < kGroup; ++i) {
      w[i] = importance != nullptr ? importance[b * kGroup + i] * std::sqrt(sigma2 + x[i] * x[i]) : x[i] * x[i];
    }
    quantize_block(x, w, blocks[b]);
  }
}

}  // namespace

void dequantize_row_mxfp4(const void* src, float* dst, int64_t n) {
  const auto* blocks = static_cast<const BlockMXFP4*>(src);
  for (int64_t b = 0; b < n / kGroup; ++b, dst += kGroup) {
    const float d = mxfp4_scale(blocks[b].e);
    for (int j = 0; j < kGroup / 2; ++j) {
      dst[j] = d * static_cast<float>(kMxfp4Levels[blocks[b].qs[j] & 0xf]);
      dst[j + kGroup / 2] = d * static_cast<float>(kMxfp4Levels[blocks[b].qs[j] >> 4]);
    }
  }
}

void quantize_row_mxfp4(const float* src, void* dst, int64_t n) {
  quantize_mxfp4(src, static_cast<BlockMXFP4*>(dst), n, nullptr);
}

void quantize_row_mxfp4_weighted(const float* src, void* dst, int64_t n, const float* importance) {
  quantize_mxfp4(src, static_cast<BlockMXFP4*>(dst), n, importance);
}

// IQ4_NL's float steps (kIq4NlLanes): block b's exact integer sum times d_w * d_a, fused
// into lane b % 8, the lanes summed pairwise at the end.
float vec_dot_mxfp4_q8_0(int64_t n, const void* w, const void* a) {
  const auto* x = static_cast<const BlockMXFP4*>(w);
  const auto* y = static_cast<const BlockQ8_0*>(a);
  float lanes[kIq4NlLanes] = {};
  for (int64_t b = 0; b < n / kGroup; ++b) {
    int32_t isum = 0;
    for (int j = 0; j < kGroup / 2; ++j) {
      isum += kMxfp4Levels[x[b].qs[j] & 0xf] * y[b].qs[j] + kMxfp4Levels[x[b].qs[j] >> 4] * y[b].qs[j + kGroup / 2];
    }
    const float d = mxfp4_scale(x[b].e) * f16_to_f32(y[b].d);
    lanes[b % kIq4NlLanes] = std::fma(d, static_cast<float>(isum), lanes[b % kIq4NlLanes]);
  }
  return sum_iq4_nl_lanes(lanes);
}

}  // namespace tokenmill::quant::ref
