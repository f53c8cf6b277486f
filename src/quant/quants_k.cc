// Reference quantize / dequantize for the K-quants (Q2_K … Q6_K) and Q8_K.
//
// Each quantizer works in three steps, as ggml's *_ref ones do, and writes the same bytes:
//   1. fit a scale (and min) per sub-block with a search from scale_search.h;
//   2. quantize those sub-block scales against one f16 super-block scale (d, dmin);
//   3. re-derive every level from the *stored* scales, so rounding in step 2 is not
//      compounded, then pack the levels.
// Steps 2 and 3 are the store_* functions (k_quant_store.h), which the
// importance-weighted quantizers (quants_weighted.cc) share.

#include <algorithm>
#include <cmath>
#include <cstring>

#include "base/half.h"
#include "quant/blocks.h"
#include "quant/k_quant_store.h"
#include "quant/kernels_ref.h"
#include "quant/scale_search.h"

namespace tokenmill::quant::ref {

namespace {

constexpr int kQK = kSuperBlockSize;

// 6-bit scale and min of sub-block j (0..7) from the 12 packed bytes of Q4_K / Q5_K.
void unpack_scale_min_k4(int j, const uint8_t* packed, int* scale, int* min) {
  if (j < 4) {
    *scale = packed[j] & 63;
    *min = packed[j + 4] & 63;
  } else {
    *scale = (packed[j + 4] & 0x0f) | ((packed[j - 4] >> 6) << 4);
    *min = (packed[j + 4] >> 4) | ((packed[j] >> 6) << 4);
  }
}

void pack_scale_min_k4(int j, int scale, int min, uint8_t* packed) {
  if (j < 4) {
    packed[j] = static_cast<uint8_t>(scale);
    packed[j + 4] = static_cast<uint8_t>(min);
  } else {
    packed[j + 4] = static_cast<uint8_t>((scale & 0x0f) | ((min & 0x0f) << 4));
    packed[j - 4] |= static_cast<uint8_t>((scale >> 4) << 6);
    packed[j] |= static_cast<uint8_t>((min >> 4) << 6);
  }
}

// The 16 signed scales (-32..31) of a Q3_K block.
void unpack_scales_q3_K(const uint8_t* packed, int scales[16]) {
  for (int j = 0; j < 16; ++j) {
    const int low = j < 8 ? (packed[j] & 0x0f) : (packed[j - 8] >> 4);
    const int high = (packed[8 + j % 4] >> (2 * (j / 4))) & 3;
    scales[j] = (low | (high << 4)) - 32;
  }
}

// 2-bit planes of Q2_K / Q3_K: byte l of 32-byte chunk c holds levels of elements
// 128c + l, +32, +64, +96 at shifts 0, 2, 4, 6.
void pack_2bit_planes(const uint8_t* levels, uint8_t* qs) {
  for (int c = 0; c < kQK / 128; ++c) {
    const uint8_t* l = levels + 128 * c;
    for (int i = 0; i < 32; ++i) {
      qs[32 * c + i] =
          static_cast<uint8_t>(l[i] | (l[i + 32] << 2) | (l[i + 64] << 4) | (l[i + 96] << 6));
    }
  }
}

int level_2bit(const uint8_t* qs, int element) {
  const int chunk = element / 128, within = element % 128;
  return (qs[32 * chunk + within % 32] >> (2 * (within / 32))) & 3;
}

}  // namespace

// ------------------------------------------------------------- store (steps 2 and 3)

void store_q2_K(const float* x, const float scales[16], const float mins[16], uint8_t levels[256],
                BlockQ2_K& block) {
  constexpr float kScaleLevels = 15.0f;  // 4-bit sub-block scales and mins
  float max_scale = 0.0f, max_min = 0.0f;
  for (int j = 0; j < 16; ++j) {
    max_scale = std::max(max_scale, scales[j]);
    max_min = std::max(max_min, mins[j]);
  }
  if (max_scale > 0.0f) {
    const float inv = kScaleLevels / max_scale;
    for (int j = 0; j < 16; ++j) block.scales[j] = static_cast<uint8_t>(round_to_int(inv * scales[j]));
    block.d = f32_to_f16(max_scale / kScaleLevels);
  } else {
    for (int j = 0; j < 16; ++j) block.scales[j] = 0;
    block.d = f32_to_f16(0.0f);
  }
  if (max_min > 0.0f) {
    const float inv = kScaleLevels / max_min;
    for (int j = 0; j < 16; ++j) block.scales[j] |= static_cast<uint8_t>(round_to_int(inv * mins[j]) << 4);
    block.dmin = f32_to_f16(max_min / kScaleLevels);
  } else {
    block.dmin = f32_to_f16(0.0f);
  }

  const float d = f16_to_f32(block.d);
  const float dmin = f16_to_f32(block.dmin);
  for (int j = 0; j < 16; ++j) {
    const float group_d = d * static_cast<float>(block.scales[j] & 0x0f);
    if (group_d == 0.0f) continue;
    const float group_min = dmin * static_cast<float>(block.scales[j] >> 4);
    for (int i = 0; i < 16; ++i) {
      const int l = round_to_int((x[16 * j + i] + group_min) / group_d);
      levels[16 * j + i] = static_cast<uint8_t>(clamp_int(l, 0, 3));
    }
  }
  pack_2bit_planes(levels, block.qs);
}

void store_k16(const float* x, const float scales[16], int8_t levels[256], BlockQ3_K& block) {
  float max_scale = 0.0f, max_abs_scale = 0.0f;
  for (int j = 0; j < 16; ++j) {
    if (std::fabs(scales[j]) > max_abs_scale) {
      max_abs_scale = std::fabs(scales[j]);
      max_scale = scales[j];
    }
  }

  std::memset(block.scales, 0, sizeof block.scales);
  if (max_scale != 0.0f) {
    const float inv = -32.0f / max_scale;
    for (int j = 0; j < 16; ++j) {
      const int q = clamp_int(static_cast<int8_t>(round_to_int(inv * scales[j])), -32, 31) + 32;
      if (j < 8) {
        block.scales[j] = static_cast<uint8_t>(q & 0x0f);
      } else {
        block.scales[j - 8] |= static_cast<uint8_t>((q & 0x0f) << 4);
      }
      block.scales[8 + j % 4] |= static_cast<uint8_t>((q >> 4) << (2 * (j / 4)));
    }
    block.d = f32_to_f16(1.0f / inv);
  } else {
    block.d = f32_to_f16(0.0f);
  }

  int stored_scales[16];
  unpack_scales_q3_K(block.scales, stored_scales);
  const float d = f16_to_f32(block.d);
  for (int j = 0; j < 16; ++j) {
    const float group_d = d * static_cast<float>(stored_scales[j]);
    if (group_d == 0.0f) continue;
    for (int i = 0; i < 16; ++i) {
      const int l = round_to_int(x[16 * j + i] / group_d);
      levels[16 * j + i] = static_cast<int8_t>(clamp_int(l, -4, 3) + 4);
    }
  }

  // Levels are 0..7: bit 2 goes to hmask, bits 0-1 to the 2-bit planes.
  uint8_t low_levels[kQK];
  std::memset(block.hmask, 0, sizeof block.hmask);
  for (int i = 0; i < kQK; ++i) {
    if (levels[i] > 3) block.hmask[i % 32] |= static_cast<uint8_t>(1u << (i / 32));
    low_levels[i] = static_cast<uint8_t>(levels[i] & 3);
  }
  pack_2bit_planes(low_levels, block.qs);
}

namespace {

// Q4_K and Q5_K share steps 2 and 3 but for the level range: fills d, dmin, the packed
// scales and re-derives levels[256] in [0, n_max].
void store_scales_mins_k(const float* x, const float scales[8], const float mins[8], int n_max, uint16_t* d_out,
                         uint16_t* dmin_out, uint8_t* packed, uint8_t* levels) {
  float max_scale = 0.0f, max_min = 0.0f;
  for (int j = 0; j < 8; ++j) {
    max_scale = std::max(max_scale, scales[j]);
    max_min = std::max(max_min, mins[j]);
  }
  const float inv_scale = max_scale > 0.0f ? 63.0f / max_scale : 0.0f;
  const float inv_min = max_min > 0.0f ? 63.0f / max_min : 0.0f;
  std::memset(packed, 0, kKScaleBytes);
  for (int j = 0; j < 8; ++j) {
    const int scale_q = std::min(63, static_cast<int>(static_cast<uint8_t>(round_to_int(inv_scale * scales[j]))));
    const int min_q = std::min(63, static_cast<int>(static_cast<uint8_t>(round_to_int(inv_min * mins[j]))));
    pack_scale_min_k4(j, scale_q, min_q, packed);
  }
  *d_out = f32_to_f16(max_scale / 63.0f);
  *dmin_out = f32_to_f16(max_min / 63.0f);

  const float d = f16_to_f32(*d_out);
  const float dmin = f16_to_f32(*dmin_out);
  for (int j = 0; j < 8; ++j) {
    int scale_q, min_q;
    unpack_scale_min_k4(j, packed, &scale_q, &min_q);
    const float group_d = d * static_cast<float>(scale_q);
    if (group_d == 0.0f) continue;  // keep the levels of the search
    const float group_min = dmin * static_cast<float>(min_q);
    for (int i = 0; i < 32; ++i) {
      const int l = round_to_int((x[32 * j + i] + group_min) / group_d);
      levels[32 * j + i] = static_cast<uint8_t>(clamp_int(l, 0, n_max));
    }
  }
}

// Step 1 of the reference Q4_K / Q5_K: per 32-element group, weights rms + |x|.
void fit_groups_k(const float* x, int n_max, float rmin, int n_steps, float scales[8], float mins[8],
                  uint8_t* levels) {
  float weights[32];
  uint8_t scratch[32];
  for (int j = 0; j < 8; ++j) {
    const float* group = x + 32 * j;
    float sum_x2 = 0.0f;
    for (int i = 0; i < 32; ++i) sum_x2 += group[i] * group[i];
    const float rms = std::sqrt(sum_x2 / 32.0f);
    // Large values matter more, but no value gets zero weight.
    for (int i = 0; i < 32; ++i) weights[i] = rms + std::fabs(group[i]);
    scales[j] = fit_scale_and_min(32, n_max, group, weights, levels + 32 * j, &mins[j], scratch, rmin, 0.1f,
                                  n_steps, false);
  }
}

}  // namespace

void store_k4(const float* x, const float scales[8], const float mins[8], uint8_t levels[256], BlockQ4_K& block) {
  store_scales_mins_k(x, scales, mins, 15, &block.d, &block.dmin, block.scales, levels);
  for (int c = 0; c < 4; ++c) {
    for (int i = 0; i < 32; ++i) {
      block.qs[32 * c + i] = static_cast<uint8_t>(levels[64 * c + i] | (levels[64 * c + 32 + i] << 4));
    }
  }
}

void store_k4(const float* x, const float scales[8], const float mins[8], uint8_t levels[256], BlockQ5_K& block) {
  store_scales_mins_k(x, scales, mins, 31, &block.d, &block.dmin, block.scales, levels);
  std::memset(block.qh, 0, sizeof block.qh);
  for (int c = 0; c < 4; ++c) {
    for (int i = 0; i < 32; ++i) {
      const int lo = levels[64 * c + i];
      const int hi = levels[64 * c + 32 + i];
      block.qs[32 * c + i] = static_cast<uint8_t>((lo & 0x0f) | ((hi & 0x0f) << 4));
      block.qh[i] |= static_cast<uint8_t>(((lo >> 4) << (2 * c)) | ((hi >> 4) << (2 * c + 1)));
    }
  }
}

void store_k16(const float* x, const float scales[16], int8_t levels[256], BlockQ6_K& block) {
  float max_scale = 0.0f, max_abs_scale = 0.0f;
  for (int j = 0; j < 16; ++j) {
    if (std::fabs(scales[j]) > max_abs_scale) {
      max_abs_scale = std::fabs(scales[j]);
      max_scale = scales[j];
    }
  }
  if (max_abs_scale < kGroupMaxEpsilon) {
    std::memset(&block, 0, sizeof block);
    return;
  }

  const float inv = -128.0f / max_scale;
  block.d = f32_to_f16(1.0f / inv);
  for (int j = 0; j < 16; ++j) {
    block.scales[j] = static_cast<int8_t>(std::min(127, round_to_int(inv * scales[j])));
  }
  const float d = f16_to_f32(block.d);
  for (int j = 0; j < 16; ++j) {
    const float group_d = d * static_cast<float>(block.scales[j]);
    if (group_d == 0.0f) continue;
    for (int i = 0; i < 16; ++i) {
      const int l = round_to_int(x[16 * j + i] / group_d);
      levels[16 * j + i] = static_cast<int8_t>(clamp_int(l, -32, 31) + 32);
    }
  }

  for (int half = 0; half < 2; ++half) {
    const int8_t* l = levels + 128 * half;
    uint8_t* ql = block.ql + 64 * half;
    uint8_t* qh = block.qh + 32 * half;
    for (int i = 0; i < 32; ++i) {
      ql[i] = static_cast<uint8_t>((l[i] & 0x0f) | ((l[i + 64] & 0x0f) << 4));
      ql[i + 32] = static_cast<uint8_t>((l[i + 32] & 0x0f) | ((l[i + 96] & 0x0f) << 4));
      qh[i] = static_cast<uint8_t>((l[i] >> 4) | ((l[i + 32] >> 4) << 2) | ((l[i + 64] >> 4) << 4) |
                                   ((l[i + 96] >> 4) << 6));
    }
  }
}

// ---------------------------------------------------------------------------- quantize

void quantize_row_q2_K(const float* src, void* dst, int64_t n) {
  auto* blocks = static_cast<BlockQ2_K*>(dst);
  for (int64_t b = 0; b < n / kQK; ++b, src += kQK) {
    uint8_t levels[kQK];
    uint8_t scratch[16];
    float weights[16], scales[16], mins[16];
    for (int j = 0; j < 16; ++j) {
      for (int i = 0; i < 16; ++i) weights[i] = std::fabs(src[16 * j + i]);
      scales[j] = fit_scale_and_min(16, 3, src + 16 * j, weights, levels + 16 * j, &mins[j], scratch, -0.5f, 0.1f,
                                    15, true);
    }
    store_q2_K(src, scales, mins, levels, blocks[b]);
  }
}

void quantize_row_q3_K(const float* src, void* dst, int64_t n) {
  auto* blocks = static_cast<BlockQ3_K*>(dst);
  for (int64_t b = 0; b < n / kQK; ++b, src += kQK) {
    int8_t levels[kQK];
    float scales[16];
    for (int j = 0; j < 16; ++j) scales[j] = fit_symmetric_scale_iterative(16, 4, src + 16 * j, levels + 16 * j);
    store_k16(src, scales, levels, blocks[b]);
  }
}

namespace {

// Q4_K / Q5_K: 8 groups of 32 fitted with a scale and a minimum each.
template <typename Block>
void quantize_row_k4(const float* src, void* dst, int64_t n, int n_max, float rmin, int n_steps) {
  auto* blocks = static_cast<Block*>(dst);
  for (int64_t b = 0; b < n / kQK; ++b, src += kQK) {
    uint8_t levels[kQK];
    float scales[8], mins[8];
    fit_groups_k(src, n_max, rmin, n_steps, scales, mins, levels);
    store_k4(src, scales, mins, levels, blocks[b]);
  }
}

}  // namespace

void quantize_row_q4_K(const float* src, void* dst, int64_t n) { quantize_row_k4<BlockQ4_K>(src, dst, n, 15, -1.0f, 20); }

void quantize_row_q5_K(const float* src, void* dst, int64_t n) { quantize_row_k4<BlockQ5_K>(src, dst, n, 31, -0.5f, 15); }

void quantize_row_q6_K(const float* src, void* dst, int64_t n) {
  auto* blocks = static_cast<BlockQ6_K*>(dst);
  for (int64_t b = 0; b < n / kQK; ++b, src += kQK) {
    int8_t levels[kQK];
    float scales[16];
    for (int j = 0; j < 16; ++j) scales[j] = fit_symmetric_scale(16, 32, src + 16 * j, levels + 16 * j, nullptr);
    store_k16(src, scales, levels, blocks[b]);
  }
}

void quantize_row_q8_K(const float* src, void* dst, int64_t n) {
  auto* blocks = static_cast<BlockQ8_K*>(dst);
  for (int64_t b = 0; b < n / kQK; ++b, src += kQK) {
    BlockQ8_K& block = blocks[b];
    float amax = 0.0f, max = 0.0f;
    for (int i = 0; i < kQK; ++i) {
      if (std::fabs(src[i]) > amax) {
        amax = std::fabs(src[i]);
        max = src[i];
      }
    }
    if (amax == 0.0f) {
      block.d = 0.0f;
      std::memset(block.qs, 0, sizeof block.qs);
      std::memset(block.bsums, 0, sizeof block.bsums);
      continue;
    }
    // -127 (not -128) so that every quant, negated, still fits in an int8.
    const float inv = -127.0f / max;
    for (int i = 0; i < kQK; ++i) block.qs[i] = static_cast<int8_t>(std::min(127, round_to_int(inv * src[i])));
    for (int j = 0; j < kQK / 16; ++j) {
      int sum = 0;
      for (int i = 0; i < 16; ++i) sum += block.qs[16 * j + i];
      block.bsums[j] = static_cast<int16_t>(sum);
    }
    block.d = 1.0f / inv;
  }
}

// -------------------------------------------------------------------------- dequantize

void dequantize_row_q2_K(const void* src, float* dst, int64_t n) {
  const auto* blocks = static_cast<const BlockQ2_K*>(src);
  for (int64_t b = 0; b < n / kQK; ++b, dst += kQK) {
    const BlockQ2_K& block = blocks[b];
    const float d = f16_to_f32(block.d);
    const float dmin = f16_to_f32(block.dmin);
    for (int j = 0; j < 16; ++j) {
      const float group_d = d * static_cast<float>(block.scales[j] & 0x0f);
      const float group_min = dmin * static_cast<float>(block.scales[j] >> 4);
      for (int i = 0; i < 16; ++i) {
        dst[16 * j + i] = group_d * static_cast<float>(level_2bit(block.qs, 16 * j + i)) - group_min;
      }
    }
  }
}

void dequantize_row_q3_K(const void* src, float* dst, int64_t n) {
  const auto* blocks = static_cast<const BlockQ3_K*>(src);
  for (int64_t b = 0; b < n / kQK; ++b, dst += kQK) {
    const BlockQ3_K& block = blocks[b];
    const float d = f16_to_f32(block.d);
    int scales[16];
    unpack_scales_q3_K(block.scales, scales);
    for (int j = 0; j < 16; ++j) {
      const float group_d = d * static_cast<float>(scales[j]);
      for (int i = 0; i < 16; ++i) {
        const int element = 16 * j + i;
        const bool high = (block.hmask[element % 32] >> (element / 32)) & 1;
        const int q = level_2bit(block.qs, element) - (high ? 0 : 4);
        dst[element] = group_d * static_cast<float>(q);
      }
    }
  }
}

namespace {

// Level i of sub-block j (0..15 / 0..31).
int k4_level(const BlockQ4_K& block, int j, int i) { return (block.qs[32 * (j / 2) + i] >> (4 * (j % 2))) & 0x0f; }
int k4_level(const BlockQ5_K& block, int j, int i) {
  return ((block.qs[32 * (j / 2) + i] >> (4 * (j % 2))) & 0x0f) | (((block.qh[i] >> j) & 1) << 4);
}

// x = d * scale_j * level - dmin * min_j over 8 sub-blocks of 32.
template <typename Block>
void dequantize_k4(const void* src, float* dst, int64_t n) {
  const auto* blocks = static_cast<const Block*>(src);
  for (int64_t b = 0; b < n / kQK; ++b, dst += kQK) {
    const Block& block = blocks[b];
    const float d = f16_to_f32(block.d);
    const float dmin = f16_to_f32(block.dmin);
    for (int j = 0; j < 8; ++j) {
      int scale_q, min_q;
      unpack_scale_min_k4(j, block.scales, &scale_q, &min_q);
      const float group_d = d * static_cast<float>(scale_q);
      const float group_min = dmin * static_cast<float>(min_q);
      for (int i = 0; i < 32; ++i) dst[32 * j + i] = group_d * static_cast<float>(k4_level(block, j, i)) - group_min;
    }
  }
}

}  // namespace

void dequantize_row_q4_K(const void* src, float* dst, int64_t n) { dequantize_k4<BlockQ4_K>(src, dst, n); }

void dequantize_row_q5_K(const void* src, float* dst, int64_t n) { dequantize_k4<BlockQ5_K>(src, dst, n); }

void dequantize_row_q6_K(const void* src, float* dst, int64_t n) {
  const auto* blocks = static_cast<const BlockQ6_K*>(src);
  for (int64_t b = 0; b < n / kQK; ++b, dst += kQK) {
    const BlockQ6_K& block = blocks[b];
    const float d = f16_to_f32(block.d);
    for (int half = 0; half < 2; ++half) {
      const uint8_t* ql = block.ql + 64 * half;
      const uint8_t* qh = block.qh + 32 * half;
      float* out = dst + 128 * half;
      for (int i = 0; i < 32; ++i) {
        // Quarter k of the half: low nibble from ql[i + 32 * (k % 2)], nibble k / 2.
        for (int k = 0; k < 4; ++k) {
          const int low = (ql[i + 32 * (k % 2)] >> (4 * (k / 2))) & 0x0f;
          const int q = (low | (((qh[i] >> (2 * k)) & 3) << 4)) - 32;
          const int element = 32 * k + i;
          const float group_d = d * static_cast<float>(block.scales[8 * half + element / 16]);
          out[element] = group_d * static_cast<float>(q);
        }
      }
    }
  }
}

void dequantize_row_q8_K(const void* src, float* dst, int64_t n) {
  const auto* blocks = static_cast<const BlockQ8_K*>(src);
  for (int64_t b = 0; b < n / kQK; ++b, dst += kQK) {
    for (int i = 0; i < kQK; ++i) dst[i] = blocks[b].d * static_cast<float>(blocks[b].qs[i]);
  }
}

}  // namespace tokenmill::quant::ref
