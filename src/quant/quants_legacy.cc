// Reference quantize / dequantize for the 32-element block formats Q4_0 … Q8_1.
//
// The quantizers reproduce ggml's *_ref functions operation for operation (same float
// expressions, same truncation and rounding), so the bytes they write are identical:
//   _0 types: d = (value of largest magnitude) / -(2^(bits-1)); q = trunc(x/d + offset + 0.5)
//   _1 types: d = (max - min) / (2^bits - 1), m = min;          q = trunc((x - m)/d + 0.5)
//   Q8_0/Q8_1: d = amax / 127;                                  q = round half away (x/d)
// where "x/d" is always computed as x * (1/d), as ggml does.

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstring>

#include "base/half.h"
#include "quant/blocks.h"
#include "quant/kernels_ref.h"

namespace tokenmill::quant::ref {

namespace {

constexpr int kHalf = kLegacyBlockSize / 2;

// The element of largest magnitude, sign kept; the first one wins a tie.
float signed_absmax(const float* x) {
  float amax = 0.0f;
  float value = 0.0f;
  for (int j = 0; j < kLegacyBlockSize; ++j) {
    if (std::fabs(x[j]) > amax) {
      amax = std::fabs(x[j]);
      value = x[j];
    }
  }
  return value;
}

void min_max(const float* x, float* min, float* max) {
  *min = FLT_MAX;
  *max = -FLT_MAX;
  for (int j = 0; j < kLegacyBlockSize; ++j) {
    *min = std::min(*min, x[j]);
    *max = std::max(*max, x[j]);
  }
}

float inverse_or_zero(float d) { return d != 0.0f ? 1.0f / d : 0.0f; }

// Truncating conversion of a non-negative scaled value to a quant, capped at q_max.
int truncate_to_quant(float scaled, int q_max) {
  return std::min(q_max, static_cast<int>(scaled));
}

uint32_t load_u32(const uint8_t bytes[4]) {
  uint32_t value;
  std::memcpy(&value, bytes, sizeof value);
  return value;
}

void store_u32(uint8_t bytes[4], uint32_t value) { std::memcpy(bytes, &value, sizeof value); }

// Stores 32 levels level(0..31): the low nibbles paired (element j low, j + 16 high); with
// qh (the 5-bit formats) the fifth bit of element j as its bit j.
template <typename Level>
void store_nibbles(Level level, uint8_t qs[kHalf], uint8_t* qh) {
  uint32_t high_bits = 0;
  for (int j = 0; j < kHalf; ++j) {
    const int lo = level(j);
    const int hi = level(j + kHalf);
    qs[j] = static_cast<uint8_t>((lo & 0x0f) | ((hi & 0x0f) << 4));
    high_bits |= static_cast<uint32_t>(lo >> 4) << j;
    high_bits |= static_cast<uint32_t>(hi >> 4) << (j + kHalf);
  }
  if (qh != nullptr) store_u32(qh, high_bits);
}

template <typename Level>
void store_levels(Level level, BlockQ4_0& block) { store_nibbles(level, block.qs, nullptr); }
template <typename Level>
void store_levels(Level level, BlockQ4_1& block) { store_nibbles(level, block.qs, nullptr); }
template <typename Level>
void store_levels(Level level, BlockQ5_0& block) { store_nibbles(level, block.qs, block.qh); }
template <typename Level>
void store_levels(Level level, BlockQ5_1& block) { store_nibbles(level, block.qs, block.qh); }

// x ~= d * (level - 2^(bits - 1)), d = the signed value of largest magnitude / -2^(bits - 1)
// (Q4_0, Q5_0).
template <typename Block, int kBits>
void quantize_symmetric(const float* src, void* dst, int64_t n) {
  constexpr float kOffset = static_cast<float>(1 << (kBits - 1));
  auto* blocks = static_cast<Block*>(dst);
  for (int64_t b = 0; b < n / kLegacyBlockSize; ++b, src += kLegacyBlockSize) {
    const float d = signed_absmax(src) / -kOffset;
    const float inv_d = inverse_or_zero(d);
    blocks[b].d = f32_to_f16(d);
    store_levels([&](int j) { return truncate_to_quant(src[j] * inv_d + (kOffset + 0.5f), (1 << kBits) - 1); },
                 blocks[b]);
  }
}

// x ~= d * level + min over the block's range (Q4_1, Q5_1).
template <typename Block, int kBits>
void quantize_with_min(const float* src, void* dst, int64_t n) {
  auto* blocks = static_cast<Block*>(dst);
  for (int64_t b = 0; b < n / kLegacyBlockSize; ++b, src += kLegacyBlockSize) {
    float min, max;
    min_max(src, &min, &max);
    const float d = (max - min) / static_cast<float>((1 << kBits) - 1);
    const float inv_d = inverse_or_zero(d);
    blocks[b].d = f32_to_f16(d);
    blocks[b].m = f32_to_f16(min);
    store_levels([&](int j) { return truncate_to_quant((src[j] - min) * inv_d + 0.5f, (1 << kBits) - 1); },
                 blocks[b]);
  }
}

// Shared by Q8_0 and Q8_1: d and the 32 rounded quants; returns d.
float quantize_int8_block(const float* x, int8_t* qs) {
  float amax = 0.0f;
  for (int j = 0; j < kLegacyBlockSize; ++j) amax = std::max(amax, std::fabs(x[j]));
  const float d = amax / 127.0f;
  const float inv_d = inverse_or_zero(d);
  for (int j = 0; j < kLegacyBlockSize; ++j) qs[j] = static_cast<int8_t>(std::round(x[j] * inv_d));
  return d;
}

}  // namespace

// ---------------------------------------------------------------------------- quantize

void quantize_row_q4_0(const float* src, void* dst, int64_t n) { quantize_symmetric<BlockQ4_0, 4>(src, dst, n); }
void quantize_row_q4_1(const float* src, void* dst, int64_t n) { quantize_with_min<BlockQ4_1, 4>(src, dst, n); }
void quantize_row_q5_0(const float* src, void* dst, int64_t n) { quantize_symmetric<BlockQ5_0, 5>(src, dst, n); }
void quantize_row_q5_1(const float* src, void* dst, int64_t n) { quantize_with_min<BlockQ5_1, 5>(src, dst, n); }

void quantize_row_q8_0(const float* src, void* dst, int64_t n) {
  auto* blocks = static_cast<BlockQ8_0*>(dst);
  for (int64_t b = 0; b < n / kLegacyBlockSize; ++b, src += kLegacyBlockSize) {
    blocks[b].d = f32_to_f16(quantize_int8_block(src, blocks[b].qs));
  }
}

void quantize_row_q8_1(const float* src, void* dst, int64_t n) {
  auto* blocks = static_cast<BlockQ8_1*>(dst);
  for (int64_t b = 0; b < n / kLegacyBlockSize; ++b, src += kLegacyBlockSize) {
    const float d = quantize_int8_block(src, blocks[b].qs);
    int sum = 0;
    for (int j = 0; j < kLegacyBlockSize; ++j) sum += blocks[b].qs[j];
    blocks[b].d = f32_to_f16(d);
    blocks[b].s = f32_to_f16(static_cast<float>(sum) * d);
  }
}

// -------------------------------------------------------------------------- dequantize

void dequantize_row_q4_0(const void* src, float* dst, int64_t n) {
  const auto* blocks = static_cast<const BlockQ4_0*>(src);
  for (int64_t b = 0; b < n / kLegacyBlockSize; ++b, dst += kLegacyBlockSize) {
    const float d = f16_to_f32(blocks[b].d);
    for (int j = 0; j < kHalf; ++j) {
      dst[j] = static_cast<float>((blocks[b].qs[j] & 0x0f) - 8) * d;
      dst[j + kHalf] = static_cast<float>((blocks[b].qs[j] >> 4) - 8) * d;
    }
  }
}

void dequantize_row_q4_1(const void* src, float* dst, int64_t n) {
  const auto* blocks = static_cast<const BlockQ4_1*>(src);
  for (int64_t b = 0; b < n / kLegacyBlockSize; ++b, dst += kLegacyBlockSize) {
    const float d = f16_to_f32(blocks[b].d);
    const float m = f16_to_f32(blocks[b].m);
    for (int j = 0; j < kHalf; ++j) {
      dst[j] = static_cast<float>(blocks[b].qs[j] & 0x0f) * d + m;
      dst[j + kHalf] = static_cast<float>(blocks[b].qs[j] >> 4) * d + m;
    }
  }
}

void dequantize_row_q5_0(const void* src, float* dst, int64_t n) {
  const auto* blocks = static_cast<const BlockQ5_0*>(src);
  for (int64_t b = 0; b < n / kLegacyBlockSize; ++b, dst += kLegacyBlockSize) {
    const float d = f16_to_f32(blocks[b].d);
    const uint32_t high_bits = load_u32(blocks[b].qh);
    for (int j = 0; j < kHalf; ++j) {
      const int lo = (blocks[b].qs[j] & 0x0f) | (((high_bits >> j) & 1) << 4);
      const int hi = (blocks[b].qs[j] >> 4) | (((high_bits >> (j + kHalf)) & 1) << 4);
      dst[j] = static_cast<float>(lo - 16) * d;
      dst[j + kHalf] = static_cast<float>(hi - 16) * d;
    }
  }
}

void dequantize_row_q5_1(const void* src, float* dst, int64_t n) {
  const auto* blocks = static_cast<const BlockQ5_1*>(src);
  for (int64_t b = 0; b < n / kLegacyBlockSize; ++b, dst += kLegacyBlockSize) {
    const float d = f16_to_f32(blocks[b].d);
    const float m = f16_to_f32(blocks[b].m);
    const uint32_t high_bits = load_u32(blocks[b].qh);
    for (int j = 0; j < kHalf; ++j) {
      const int lo = (blocks[b].qs[j] & 0x0f) | (((high_bits >> j) & 1) << 4);
      const int hi = (blocks[b].qs[j] >> 4) | (((high_bits >> (j + kHalf)) & 1) << 4);
      dst[j] = static_cast<float>(lo) * d + m;
      dst[j + kHalf] = static_cast<float>(hi) * d + m;
    }
  }
}

void dequantize_row_q8_0(const void* src, float* dst, int64_t n) {
  const auto* blocks = static_cast<const BlockQ8_0*>(src);
  for (int64_t b = 0; b < n / kLegacyBlockSize; ++b, dst += kLegacyBlockSize) {
    const float d = f16_to_f32(blocks[b].d);
    for (int j = 0; j < kLegacyBlockSize; ++j) dst[j] = static_cast<float>(blocks[b].qs[j]) * d;
  }
}

void dequantize_row_q8_1(const void* src, float* dst, int64_t n) {
  const auto* blocks = static_cast<const BlockQ8_1*>(src);
  for (int64_t b = 0; b < n / kLegacyBlockSize; ++b, dst += kLegacyBlockSize) {
    const float d = f16_to_f32(blocks[b].d);
    for (int j = 0; j < kLegacyBlockSize; ++j) dst[j] = static_cast<float>(blocks[b].qs[j]) * d;
  }
}

}  // namespace tokenmill::quant::ref
