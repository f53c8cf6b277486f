// Helpers shared by kquants_low_avx2.cc and kquants_low_avx512.cc (Q2_K and Q3_K) only.
// Internal linkage for the reason given in x86_helpers.h.
#pragma once

#include "quant/kernels/x86_helpers.h"

namespace tokenmill::quant {
namespace {

// Q3_K's sixteen 6-bit sub-block scales (layout in blocks.h) minus 32, as signed bytes
// s0 .. s15 in [-32, 31]. Read as three little-endian words w0 w1 w2 (bytes 0..11):
//   s0..3   = ( w0       & 0x0f..) | (( w2       & 0x03..) << 4)
//   s4..7   = ( w1       & 0x0f..) | (((w2 >> 2) & 0x03..) << 4)
//   s8..11  = ((w0 >> 4) & 0x0f..) | (((w2 >> 4) & 0x03..) << 4)
//   s12..15 = ((w1 >> 4) & 0x0f..) | (((w2 >> 6) & 0x03..) << 4)
// all four at once in the 32-bit lanes of one vector. The 16-byte load starts 4 bytes
// before the scales, because only d (2 bytes) follows them in a block.
// REQUIRES: the 4 bytes before `packed` are readable (in a block, the quants).
inline __m128i unpack_q3_K_scales(const uint8_t* packed) {
  const __m128i words = load_128(packed - 4);  // 32-bit lanes [-, w0, w1, w2]
  const __m128i low = _mm_srlv_epi32(_mm_shuffle_epi32(words, _MM_SHUFFLE(2, 1, 2, 1)), _mm_setr_epi32(0, 0, 4, 4));
  const __m128i high = _mm_srlv_epi32(_mm_shuffle_epi32(words, _MM_SHUFFLE(3, 3, 3, 3)), _mm_setr_epi32(0, 2, 4, 6));
  const __m128i scales = _mm_or_si128(_mm_and_si128(low, _mm_set1_epi8(0x0f)),
                                      _mm_slli_epi32(_mm_and_si128(high, _mm_set1_epi8(0x03)), 4));
  return _mm_sub_epi8(scales, _mm_set1_epi8(32));
}

}  // namespace
}  // namespace tokenmill::quant
