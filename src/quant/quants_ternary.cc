// The ternary formats TQ1_0 and TQ2_0 (blocks.h): weights -1, 0, 1 under one f16 scale per
// 256. Quantization rounds x / max|x| to the nearest of the three (ties away from zero),
// as gguf-py and llama.cpp do, so that a file written by either is rewritten identically.
#include <cmath>
#include <cstring>

#include "base/half.h"
#include "quant/blocks.h"
#include "quant/kernels_ref.h"

namespace tokenmill::quant::ref {

namespace {

// The 256 trits (0, 1, 2 for -1, 0, 1) of a block, in weight order.
void block_trits(const BlockTQ1_0& x, uint8_t* t) {
  constexpr uint8_t kPow3[5] = {1, 3, 9, 27, 81};
  auto digit = [&](uint8_t byte, int k) {
    return static_cast<uint8_t>((static_cast<uint8_t>(byte * kPow3[k]) * 3) >> 8);
  };
  for (int k = 0; k < 5; ++k) {
    for (int j = 0; j < 32; ++j) t[32 * k + j] = digit(x.qs[j], k);
    for (int j = 0; j < 16; ++j) t[160 + 16 * k + j] = digit(x.qs[32 + j], k);
  }
  for (int k = 0; k < 4; ++k) {
    for (int j = 0; j < 4; ++j) t[240 + 4 * k + j] = digit(x.qh[j], k);
  }
}

// TQ2_0: trit i in bits 2l of byte 32c + j, for i = 128c + 32l + j.
void block_trits(const BlockTQ2_0& x, uint8_t* t) {
  for (int i = 0; i < kSuperBlockSize; ++i) t[i] = (x.qs[32 * (i / 128) + i % 32] >> (2 * (i % 128 / 32))) & 3;
}

// The block's scale max|x| and its trits round(x / max|x|) + 1.
uint16_t ternary_trits(const float* x, uint8_t* t) {
  float amax = 0.0f;
  for (int i = 0; i < kSuperBlockSize; ++i) amax = std::fmax(amax, std::fabs(x[i]));
  const float inverse = amax != 0.0f ? 1.0f / amax : 0.0f;
  for (int i = 0; i < kSuperBlockSize; ++i) {
    t[i] = static_cast<uint8_t>(static_cast<int>(std::round(x[i] * inverse)) + 1);
  }
  return f32_to_f16(amax);
}

// A byte holding the trits t[0..count) (count <= 5) as the fraction Σ t_k 3^-(k+1), rounded up
// to 1/256 steps, so that block_trits reads them back.
uint8_t pack_trits(const uint8_t* t, int count, int stride) {
  uint32_t value = 0;
  for (int k = 0; k < count; ++k) value = value * 3 + t[k * stride];
  for (int k = count; k < 5; ++k) value *= 3;
  return static_cast<uint8_t>((value * 256 + 242) / 243);
}

void store_trits(const uint8_t* t, BlockTQ1_0& out) {
  for (int j = 0; j < 32; ++j) out.qs[j] = pack_trits(t + j, 5, 32);
  for (int j = 0; j < 16; ++j) out.qs[32 + j] = pack_trits(t + 160 + j, 5, 16);
  for (int j = 0; j < 4; ++j) out.qh[j] = pack_trits(t + 240 + j, 4, 4);
}

void store_trits(const uint8_t* t, BlockTQ2_0& out) {
  std::memset(out.qs, 0, sizeof out.qs);
  for (int i = 0; i < kSuperBlockSize; ++i) {
    out.qs[32 * (i / 128) + i % 32] |= static_cast<uint8_t>(t[i] << (2 * (i % 128 / 32)));
  }
}

template <typename Block>
void dequantize_ternary(const void* src, float* y, int64_t n) {
  const auto* blocks = static_cast<const Block*>(src);
  for (int64_t b = 0; b < n / kSuperBlockSize; ++b, y += kSuperBlockSize) {
    uint8_t t[kSuperBlockSize];
    block_trits(blocks[b], t);
    const float d = f16_to_f32(blocks[b].d);
    for (int i = 0; i < kSuperBlockSize; ++i) y[i] = d * static_cast<float>(t[i] - 1);
  }
}

template <typename Block>
void quantize_ternary(const float* x, void* dst, int64_t n) {
  auto* blocks = static_cast<Block*>(dst);
  for (int64_t b = 0; b < n / kSuperBlockSize; ++b, x += kSuperBlockSize) {
    uint8_t t[kSuperBlockSize];
    blocks[b].d = ternary_trits(x, t);
    store_trits(t, blocks[b]);
  }
}

// Per block the exact integer sum, then sum += isum * (d_w * d_a).
template <typename Block>
float ternary_dot(int64_t n, const void* w, const void* a) {
  const auto* xs = static_cast<const Block*>(w);
  const auto* ys = static_cast<const BlockQ8_K*>(a);
  float sum = 0.0f;
  for (int64_t b = 0; b < n / kSuperBlockSize; ++b) {
    uint8_t t[kSuperBlockSize];
    block_trits(xs[b], t);
    int32_t isum = 0;
    for (int i = 0; i < kSuperBlockSize; ++i) isum += (t[i] - 1) * ys[b].qs[i];
    sum += static_cast<float>(isum) * (f16_to_f32(xs[b].d) * ys[b].d);
  }
  return sum;
}

}  // namespace

void dequantize_row_tq1_0(const void* src, float* y, int64_t n) { dequantize_ternary<BlockTQ1_0>(src, y, n); }
void quantize_row_tq1_0(const float* x, void* dst, int64_t n) { quantize_ternary<BlockTQ1_0>(x, dst, n); }
float vec_dot_tq1_0_q8_K(int64_t n, const void* w, const void* a) { return ternary_dot<BlockTQ1_0>(n, w, a); }

void dequantize_row_tq2_0(const void* src, float* y, int64_t n) { dequantize_ternary<BlockTQ2_0>(src, y, n); }
void quantize_row_tq2_0(const float* x, void* dst, int64_t n) { quantize_ternary<BlockTQ2_0>(x, dst, n); }
float vec_dot_tq2_0_q8_K(int64_t n, const void* w, const void* a) { return ternary_dot<BlockTQ2_0>(n, w, a); }

}  // namespace tokenmill::quant::ref
