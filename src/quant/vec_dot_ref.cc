// Reference dot products of a quantized weight row with a quantized activation row.
//
// Each block's integer part is exact (int32 sums of int8 x small-int products); only the
// combination with the float scales rounds. That combination follows ggml's generic
// (scalar) kernels expression for expression, including where the scale products are
// grouped and the order blocks are accumulated in, so our reference gives the same
// float as llama.cpp's scalar build.

#include <cstring>

#include "base/half.h"
#include "quant/blocks.h"
#include "quant/kernels_ref.h"

namespace tokenmill::quant::ref {

namespace {

constexpr int kHalf = kLegacyBlockSize / 2;
constexpr int kQK = kSuperBlockSize;

// ggml accumulates the K-quant sums in 8 float lanes: lane l collects the integer sum over
// elements with index % 8 == l, scaled per block, and the lanes are added at the end.
constexpr int kLanes = 8;

uint32_t load_u32(const uint8_t bytes[4]) {
  uint32_t value;
  std::memcpy(&value, bytes, sizeof value);
  return value;
}

// Integer dot product of 32 signed weight levels with the 32 quants of an activation block.
int32_t dot_32(const int levels[kLegacyBlockSize], const int8_t* a) {
  int32_t sum = 0;
  for (int j = 0; j < kLegacyBlockSize; ++j) sum += levels[j] * a[j];
  return sum;
}

void unpack_nibbles(const uint8_t* qs, int offset, int levels[kLegacyBlockSize]) {
  for (int j = 0; j < kHalf; ++j) {
    levels[j] = (qs[j] & 0x0f) - offset;
    levels[j + kHalf] = (qs[j] >> 4) - offset;
  }
}

void unpack_nibbles_5bit(const uint8_t* qs, const uint8_t* qh, int offset, int levels[kLegacyBlockSize]) {
  const uint32_t high_bits = load_u32(qh);
  for (int j = 0; j < kHalf; ++j) {
    levels[j] = ((qs[j] & 0x0f) | (((high_bits >> j) & 1) << 4)) - offset;
    levels[j + kHalf] = ((qs[j] >> 4) | (((high_bits >> (j + kHalf)) & 1) << 4)) - offset;
  }
}

// Per-lane integer sums sum_{i % 8 == l} scale(i) * w[i] * a[i] for one super-block,
// where scale(i) = scales[i / group_size].
void lane_sums(const int8_t* w_levels, const int8_t* a, const int* scales, int group_size,
               int32_t lanes[kLanes]) {
  for (int l = 0; l < kLanes; ++l) lanes[l] = 0;
  for (int i = 0; i < kQK; ++i) lanes[i % kLanes] += scales[i / group_size] * (w_levels[i] * a[i]);
}

// Adds d * lanes[l] into the running lane totals.
void accumulate_lanes(float d, const int32_t lanes[kLanes], float totals[kLanes]) {
  for (int l = 0; l < kLanes; ++l) totals[l] += d * static_cast<float>(lanes[l]);
}

// One super-block's scaled levels against its activations into the lane totals, by d_w * d_a.
void add_super_block(const int8_t* levels, const int* scales, int group_size, float d_w, const BlockQ8_K& y,
                     float totals[kLanes]) {
  int32_t lanes[kLanes];
  lane_sums(levels, y.qs, scales, group_size, lanes);
  accumulate_lanes(d_w * y.d, lanes, totals);
}

// sum + the lane totals, lane by lane.
float add_lanes(float sum, const float totals[kLanes]) {
  for (int l = 0; l < kLanes; ++l) sum += totals[l];
  return sum;
}

int level_2bit(const uint8_t* qs, int element) {
  const int chunk = element / 128, within = element % 128;
  return (qs[32 * chunk + within % 32] >> (2 * (within / 32))) & 3;
}

void unpack_scale_min_k4(int j, const uint8_t* packed, int* scale, int* min) {
  if (j < 4) {
    *scale = packed[j] & 63;
    *min = packed[j + 4] & 63;
  } else {
    *scale = (packed[j + 4] & 0x0f) | ((packed[j - 4] >> 6) << 4);
    *min = (packed[j + 4] >> 4) | ((packed[j] >> 6) << 4);
  }
}

// For Q4_K / Q5_K: sum_j bsums[j] * min(j / 2), the activation sums weighted by the mins.
int32_t weighted_min_sum(const BlockQ8_K& a, const int mins[8]) {
  int32_t sum = 0;
  for (int j = 0; j < kQK / 16; ++j) sum += a.bsums[j] * mins[j / 2];
  return sum;
}

// The 256 levels of a Q4_K / Q5_K super-block in element order: chunk c's 32 bytes hold
// elements 64c .. 64c + 31 in their low nibbles, the next 32 in their high ones; Q5_K adds
// bit 2c (or 2c + 1) of qh[i] as the fifth bit.
void k4_levels(const BlockQ4_K& x, int8_t levels[kQK]) {
  for (int c = 0; c < 4; ++c) {
    for (int i = 0; i < 32; ++i) {
      levels[64 * c + i] = static_cast<int8_t>(x.qs[32 * c + i] & 0x0f);
      levels[64 * c + 32 + i] = static_cast<int8_t>(x.qs[32 * c + i] >> 4);
    }
  }
}
void k4_levels(const BlockQ5_K& x, int8_t levels[kQK]) {
  for (int c = 0; c < 4; ++c) {
    for (int i = 0; i < 32; ++i) {
      const int qh = x.qh[i];
      levels[64 * c + i] = static_cast<int8_t>((x.qs[32 * c + i] & 0x0f) | (((qh >> (2 * c)) & 1) << 4));
      levels[64 * c + 32 + i] = static_cast<int8_t>((x.qs[32 * c + i] >> 4) | (((qh >> (2 * c + 1)) & 1) << 4));
    }
  }
}

// Q4_K and Q5_K: 8 sub-blocks with 6-bit scales and mins; the minimum terms are collected
// first and the lanes added last, as ggml does.
template <typename Block>
float k4_vec_dot(const Block* x, const BlockQ8_K* y, int64_t n) {
  float totals[kLanes] = {};
  float sum = 0.0f;
  for (int64_t b = 0; b < n / kQK; ++b) {
    int8_t levels[kQK];
    k4_levels(x[b], levels);
    int scales[8], mins[8];
    for (int j = 0; j < 8; ++j) unpack_scale_min_k4(j, x[b].scales, &scales[j], &mins[j]);
    add_super_block(levels, scales, 32, f16_to_f32(x[b].d), y[b], totals);
    const float d_min = f16_to_f32(x[b].dmin) * y[b].d;
    sum -= d_min * static_cast<float>(weighted_min_sum(y[b], mins));
  }
  return add_lanes(sum, totals);
}

}  // namespace

// --------------------------------------------------------------------- legacy x Q8_0/1

namespace {

// The signed levels of one legacy block.
void legacy_levels(const BlockQ4_0& x, int levels[kLegacyBlockSize]) { unpack_nibbles(x.qs, 8, levels); }
void legacy_levels(const BlockQ4_1& x, int levels[kLegacyBlockSize]) { unpack_nibbles(x.qs, 0, levels); }
void legacy_levels(const BlockQ5_0& x, int levels[kLegacyBlockSize]) { unpack_nibbles_5bit(x.qs, x.qh, 16, levels); }
void legacy_levels(const BlockQ5_1& x, int levels[kLegacyBlockSize]) { unpack_nibbles_5bit(x.qs, x.qh, 0, levels); }
void legacy_levels(const BlockQ8_0& x, int levels[kLegacyBlockSize]) {
  for (int j = 0; j < kLegacyBlockSize; ++j) levels[j] = x.qs[j];
}

// sum over blocks of block_term(x, y, the blocks' integer dot product), in block order.
template <typename Block, typename ActivationBlock, typename BlockTerm>
float legacy_dot(int64_t n, const void* w, const void* a, BlockTerm block_term) {
  const auto* x = static_cast<const Block*>(w);
  const auto* y = static_cast<const ActivationBlock*>(a);
  float sum = 0.0f;
  for (int64_t b = 0; b < n / kLegacyBlockSize; ++b) {
    int levels[kLegacyBlockSize];
    legacy_levels(x[b], levels);
    sum += block_term(x[b], y[b], static_cast<float>(dot_32(levels, y[b].qs)));
  }
  return sum;
}

// d_w * d_a * sum(q_w * q_a) + m_w * s_a, with s_a = d_a * sum(q_a).
template <typename Block>
float with_min(const Block& x, const BlockQ8_1& y, float isum) {
  return (f16_to_f32(x.d) * f16_to_f32(y.d)) * isum + f16_to_f32(x.m) * f16_to_f32(y.s);
}

}  // namespace

float vec_dot_q4_0_q8_0(int64_t n, const void* w, const void* a) {
  return legacy_dot<BlockQ4_0, BlockQ8_0>(n, w, a, [](const BlockQ4_0& x, const BlockQ8_0& y, float isum) {
    return isum * f16_to_f32(x.d) * f16_to_f32(y.d);
  });
}

float vec_dot_q4_1_q8_1(int64_t n, const void* w, const void* a) {
  return legacy_dot<BlockQ4_1, BlockQ8_1>(n, w, a, with_min<BlockQ4_1>);
}

float vec_dot_q5_0_q8_0(int64_t n, const void* w, const void* a) {
  return legacy_dot<BlockQ5_0, BlockQ8_0>(n, w, a, [](const BlockQ5_0& x, const BlockQ8_0& y, float isum) {
    return (f16_to_f32(x.d) * f16_to_f32(y.d)) * isum;
  });
}

float vec_dot_q5_1_q8_1(int64_t n, const void* w, const void* a) {
  return legacy_dot<BlockQ5_1, BlockQ8_1>(n, w, a, with_min<BlockQ5_1>);
}

float vec_dot_q8_0_q8_0(int64_t n, const void* w, const void* a) {
  return legacy_dot<BlockQ8_0, BlockQ8_0>(n, w, a, [](const BlockQ8_0& x, const BlockQ8_0& y, float isum) {
    return isum * (f16_to_f32(x.d) * f16_to_f32(y.d));
  });
}

// ------------------------------------------------------------------------ K x Q8_K

float vec_dot_q2_K_q8_K(int64_t n, const void* w, const void* a) {
  const auto* x = static_cast<const BlockQ2_K*>(w);
  const auto* y = static_cast<const BlockQ8_K*>(a);
  float sum = 0.0f;
  for (int64_t b = 0; b < n / kQK; ++b) {
    // Minimum term: sum over sub-blocks of mn_j * (sum of the activation quants in it).
    int32_t min_sum = 0;
    for (int j = 0; j < 16; ++j) min_sum += y[b].bsums[j] * (x[b].scales[j] >> 4);
    int32_t isum = 0;
    for (int j = 0; j < 16; ++j) {
      int32_t group = 0;
      for (int i = 0; i < 16; ++i) group += y[b].qs[16 * j + i] * level_2bit(x[b].qs, 16 * j + i);
      isum += (x[b].scales[j] & 0x0f) * group;
    }
    const float d_all = y[b].d * f16_to_f32(x[b].d);
    const float d_min = y[b].d * f16_to_f32(x[b].dmin);
    sum += d_all * static_cast<float>(isum) - d_min * static_cast<float>(min_sum);
  }
  return sum;
}

float vec_dot_q3_K_q8_K(int64_t n, const void* w, const void* a) {
  const auto* x = static_cast<const BlockQ3_K*>(w);
  const auto* y = static_cast<const BlockQ8_K*>(a);
  float totals[kLanes] = {};
  for (int64_t b = 0; b < n / kQK; ++b) {
    int8_t levels[kQK];
    for (int i = 0; i < kQK; ++i) {
      const bool high = (x[b].hmask[i % 32] >> (i / 32)) & 1;
      levels[i] = static_cast<int8_t>(level_2bit(x[b].qs, i) - (high ? 0 : 4));
    }
    int scales[16];
    for (int j = 0; j < 16; ++j) {
      const int low = j < 8 ? (x[b].scales[j] & 0x0f) : (x[b].scales[j - 8] >> 4);
      const int high = (x[b].scales[8 + j % 4] >> (2 * (j / 4))) & 3;
      scales[j] = (low | (high << 4)) - 32;
    }
    add_super_block(levels, scales, 16, f16_to_f32(x[b].d), y[b], totals);
  }
  return add_lanes(0.0f, totals);
}

float vec_dot_q4_K_q8_K(int64_t n, const void* w, const void* a) {
  return k4_vec_dot(static_cast<const BlockQ4_K*>(w), static_cast<const BlockQ8_K*>(a), n);
}

float vec_dot_q5_K_q8_K(int64_t n, const void* w, const void* a) {
  return k4_vec_dot(static_cast<const BlockQ5_K*>(w), static_cast<const BlockQ8_K*>(a), n);
}

float vec_dot_q6_K_q8_K(int64_t n, const void* w, const void* a) {
  const auto* x = static_cast<const BlockQ6_K*>(w);
  const auto* y = static_cast<const BlockQ8_K*>(a);
  float totals[kLanes] = {};
  for (int64_t b = 0; b < n / kQK; ++b) {
    int8_t levels[kQK];
    for (int half = 0; half < 2; ++half) {
      const uint8_t* ql = x[b].ql + 64 * half;
      const uint8_t* qh = x[b].qh + 32 * half;
      for (int i = 0; i < 32; ++i) {
        for (int k = 0; k < 4; ++k) {
          const int low = (ql[i + 32 * (k % 2)] >> (4 * (k / 2))) & 0x0f;
          levels[128 * half + 32 * k + i] =
              static_cast<int8_t>((low | (((qh[i] >> (2 * k)) & 3) << 4)) - 32);
        }
      }
    }
    int scales[16];
    for (int j = 0; j < 16; ++j) scales[j] = x[b].scales[j];
    add_super_block(levels, scales, 16, f16_to_f32(x[b].d), y[b], totals);
  }
  return add_lanes(0.0f, totals);
}

}  // namespace tokenmill::quant::ref
