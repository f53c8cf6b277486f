// AVX-512 (VNNI) dot products of the legacy weight formats Q4_0, Q5_0 and Q8_0 with a
// Q8_0 activation row. Same structure as legacy_avx2.cc, two blocks per 512-bit step:
//
//   byte lanes  0..31: levels of block b      (scale d_b     in float lanes 0..7)
//   byte lanes 32..63: levels of block b + 1  (scale d_{b+1} in float lanes 8..15)
//
// The signed x signed int8 products go through vpdpbusd (unsigned x signed) as
// |w| * (a with w's sign); an odd last block takes the 256-bit form of the same.

// GCC 12's AVX-512 headers seed some intrinsics with _mm512_undefined_*(), which
// -Wuninitialized then reports at every use: a known false positive.
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

#include <immintrin.h>

#include <cstddef>
#include <cstdint>

#include "quant/blocks.h"
#include "quant/kernels/simd_kernels.h"
#include "quant/kernels/x86_helpers.h"

namespace tokenmill::quant::avx512 {

namespace {

struct UnpackedBlock {
  __m256i levels;  // 32 signed levels in element order
  float d;
};

struct UnpackedPair {
  __m512i levels;  // block b in bytes 0..31, block b + 1 in bytes 32..63
  float d_0, d_1;
};

// Nibbles of two consecutive legacy blocks, each in element order (values 0..15).
__m512i unpack_nibbles_pair(const uint8_t* qs_0, const uint8_t* qs_1) {
  const __m256i packed = _mm256_set_m128i(load_128(qs_1), load_128(qs_0));
  // [lo_0, lo_1, hi_0, hi_1] in 128-bit lanes, reordered to [lo_0, hi_0, lo_1, hi_1].
  const __m512i both = combine_256(packed, _mm256_srli_epi16(packed, 4));
  const __m512i ordered = _mm512_shuffle_i64x2(both, both, _MM_SHUFFLE(3, 1, 2, 0));
  return _mm512_and_si512(ordered, _mm512_set1_epi8(0x0f));
}

UnpackedBlock unpack(const BlockQ8_0& block) { return {load_256(block.qs), half_to_float(block.d)}; }

UnpackedPair unpack_pair(const BlockQ8_0* blocks) {
  return {combine_256(load_256(blocks[0].qs), load_256(blocks[1].qs)), half_to_float(blocks[0].d),
          half_to_float(blocks[1].d)};
}

UnpackedBlock unpack(const BlockQ4_0& block) {
  return {_mm256_sub_epi8(unpack_legacy_nibbles(block.qs), _mm256_set1_epi8(8)), half_to_float(block.d)};
}

UnpackedPair unpack_pair(const BlockQ4_0* blocks) {
  const __m512i nibbles = unpack_nibbles_pair(blocks[0].qs, blocks[1].qs);
  return {_mm512_sub_epi8(nibbles, _mm512_set1_epi8(8)), half_to_float(blocks[0].d), half_to_float(blocks[1].d)};
}

// Q5_0: level = q - 16, i.e. the low nibble where bit 4 is set and the nibble - 16 where
// it is not. qh is exactly a byte mask of "bit 4 set" in element order.
UnpackedBlock unpack(const BlockQ5_0& block) {
  const __m256i nibbles = unpack_legacy_nibbles(block.qs);
  const __mmask32 bit4_clear = ~static_cast<__mmask32>(load_u32(block.qh));
  return {_mm256_mask_sub_epi8(nibbles, bit4_clear, nibbles, _mm256_set1_epi8(16)), half_to_float(block.d)};
}

UnpackedPair unpack_pair(const BlockQ5_0* blocks) {
  const __m512i nibbles = unpack_nibbles_pair(blocks[0].qs, blocks[1].qs);
  const __mmask64 bit4_set = static_cast<__mmask64>(load_u32(blocks[0].qh)) |
                             (static_cast<__mmask64>(load_u32(blocks[1].qh)) << 32);
  return {_mm512_mask_sub_epi8(nibbles, ~bit4_set, nibbles, _mm512_set1_epi8(16)), half_to_float(blocks[0].d),
          half_to_float(blocks[1].d)};
}

// Sums of products of signed bytes in groups of four. REQUIRES: a in [-127, 127].
__m512i dot_i8(__m512i w, __m512i a) {
  const __m512i a_signed = _mm512_mask_sub_epi8(a, _mm512_movepi8_mask(w), _mm512_setzero_si512(), a);
  return _mm512_dpbusd_epi32(_mm512_setzero_si512(), _mm512_abs_epi8(w), a_signed);
}

__m256i dot_i8(__m256i w, __m256i a) {
  const __m256i a_signed = _mm256_mask_sub_epi8(a, _mm256_movepi8_mask(w), _mm256_setzero_si256(), a);
  return _mm256_dpbusd_epi32(_mm256_setzero_si256(), _mm256_abs_epi8(w), a_signed);
}

template <typename Block, int kTokens>
void dot_tile(int64_t n_blocks, const Block* w, const uint8_t* a, size_t a_stride, float* out,
              int64_t out_stride) {
  __m512 acc[kTokens];
  for (int t = 0; t < kTokens; ++t) acc[t] = _mm512_setzero_ps();
  int64_t b = 0;
  for (; b + 2 <= n_blocks; b += 2) {
    const UnpackedPair weights = unpack_pair(w + b);
    for (int t = 0; t < kTokens; ++t) {
      const BlockQ8_0* y = reinterpret_cast<const BlockQ8_0*>(a + t * a_stride) + b;
      const __m512i isum = dot_i8(weights.levels, combine_256(load_256(y[0].qs), load_256(y[1].qs)));
      const __m512 d = broadcast_pair(weights.d_0 * half_to_float(y[0].d), weights.d_1 * half_to_float(y[1].d));
      acc[t] = _mm512_fmadd_ps(d, _mm512_cvtepi32_ps(isum), acc[t]);
    }
  }
  if (b < n_blocks) {
    const UnpackedBlock weights = unpack(w[b]);
    for (int t = 0; t < kTokens; ++t) {
      const BlockQ8_0& y = reinterpret_cast<const BlockQ8_0*>(a + t * a_stride)[b];
      const __m256 d = _mm256_set1_ps(weights.d * half_to_float(y.d));
      const __m256 last = _mm256_mul_ps(d, _mm256_cvtepi32_ps(dot_i8(weights.levels, load_256(y.qs))));
      acc[t] = _mm512_add_ps(acc[t], _mm512_zextps256_ps512(last));
    }
  }
  for (int t = 0; t < kTokens; ++t) out[t * out_stride] = _mm512_reduce_add_ps(acc[t]);
}

template <typename Block>
float dot_row(int64_t n, const void* w, const void* a) {
  float result;
  dot_tile<Block, 1>(n / kLegacyBlockSize, static_cast<const Block*>(w), static_cast<const uint8_t*>(a), 0,
                     &result, 0);
  return result;
}

// Four activation rows per tile: 4 accumulators plus the weight pair stay in registers.
constexpr int kTokenTile = 4;

template <typename Block>
void dot_rows(int64_t n, const void* w, const void* a, size_t a_stride, int64_t n_a_rows, float* out,
              int64_t out_stride) {
  const auto* weights = static_cast<const Block*>(w);
  const auto* activations = static_cast<const uint8_t*>(a);
  const int64_t n_blocks = n / kLegacyBlockSize;
  int64_t t = 0;
  for (; t + kTokenTile <= n_a_rows; t += kTokenTile) {
    dot_tile<Block, kTokenTile>(n_blocks, weights, activations + t * a_stride, a_stride, out + t * out_stride,
                                out_stride);
  }
  for (; t < n_a_rows; ++t) {
    dot_tile<Block, 1>(n_blocks, weights, activations + t * a_stride, a_stride, out + t * out_stride, out_stride);
  }
}

}  // namespace

float vec_dot_q4_0_q8_0(int64_t n, const void* w, const void* a) { return dot_row<BlockQ4_0>(n, w, a); }
float vec_dot_q5_0_q8_0(int64_t n, const void* w, const void* a) { return dot_row<BlockQ5_0>(n, w, a); }
float vec_dot_q8_0_q8_0(int64_t n, const void* w, const void* a) { return dot_row<BlockQ8_0>(n, w, a); }

void vec_dot_rows_q4_0_q8_0(int64_t n, const void* w, const void* a, size_t a_stride, int64_t n_a_rows,
                            float* out, int64_t out_stride) {
  dot_rows<BlockQ4_0>(n, w, a, a_stride, n_a_rows, out, out_stride);
}
void vec_dot_rows_q5_0_q8_0(int64_t n, const void* w, const void* a, size_t a_stride, int64_t n_a_rows,
                            float* out, int64_t out_stride) {
  dot_rows<BlockQ5_0>(n, w, a, a_stride, n_a_rows, out, out_stride);
}
void vec_dot_rows_q8_0_q8_0(int64_t n, const void* w, const void* a, size_t a_stride, int64_t n_a_rows,
                            float* out, int64_t out_stride) {
  dot_rows<BlockQ8_0>(n, w, a, a_stride, n_a_rows, out, out_stride);
}

}  // namespace tokenmill::quant::avx512
