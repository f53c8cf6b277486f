// AVX2 dot products of the 2- and 3-bit K-quant weight formats Q2_K and Q3_K with a Q8_K
// activation row.
//
// Both formats keep the low two bits of each quant in 32-byte chunks of 128 elements
// (blocks.h): shifting a chunk right by 2k and masking gives 32 consecutive elements,
// which are two sub-blocks of 16. maddubs turns them into 16 int16 pair sums (lanes
// 0..7 the first sub-block, 8..15 the second) and madd applies the two sub-block scales.
// Per super-block the integer sums are exact, as in the reference; only the float
// accumulation (FMA in 8 lanes) rounds in another order. Constant offsets (Q2_K's
// minimum, Q3_K's -4) go through Q8_K's per-16 activation sums (bsums).

#include <immintrin.h>

#include <cstdint>

#include "quant/blocks.h"
#include "quant/kernels/kquants_low_x86.h"
#include "quant/kernels/simd_kernels.h"
#include "quant/kernels/x86_helpers.h"

namespace tokenmill::quant::avx2 {

namespace {

// The 16 sub-block scales (bytes) as int16, sub-blocks 0, 2, .. 14 in the low 128-bit
// lane and 1, 3, .. 15 in the high one: the layout of a step's pair sums, whose lanes
// 0..7 belong to sub-block 2m and lanes 8..15 to 2m + 1. select_word(m) then spreads
// word m of each lane over the lane.
inline __m128i even_then_odd(__m128i bytes) {
  return _mm_shuffle_epi8(bytes, _mm_setr_epi8(0, 2, 4, 6, 8, 10, 12, 14, 1, 3, 5, 7, 9, 11, 13, 15));
}

// Element 32m + l of a Q3_K block takes bit m of hmask[l]: one 16-bit shift brings it to
// bit 2 of the same byte (bits that cross from the neighbouring byte land in bits 0-1 or
// in bits 10 - m .. 7, never in bit 2).
inline __m256i bit_m_to_bit_2(__m256i hmask, int m) {
  return m >= 2 ? _mm256_srli_epi16(hmask, m - 2) : _mm256_slli_epi16(hmask, 2 - m);
}

inline __m256i select_word(int m) { return _mm256_set1_epi16(static_cast<int16_t>((2 * m + 1) << 8 | 2 * m)); }

}  // namespace

float vec_dot_q2_K_q8_K(int64_t n, const void* w, const void* a) {
  const auto* x = static_cast<const BlockQ2_K*>(w);
  const auto* y = static_cast<const BlockQ8_K*>(a);
  const __m256i two_bits = _mm256_set1_epi8(3);
  const __m128i low_nibble = _mm_set1_epi8(0x0f);
  __m256 acc = _mm256_setzero_ps();
  __m256 acc_min = _mm256_setzero_ps();
  for (int64_t b = 0; b < n / kSuperBlockSize; ++b) {
    const float d = y[b].d * half_to_float(x[b].d);
    const float d_min = y[b].d * half_to_float(x[b].dmin);
    const __m128i packed_scales = load_128(x[b].scales);
    const __m128i scales = _mm_and_si128(packed_scales, low_nibble);
    const __m128i mins = _mm_and_si128(_mm_srli_epi16(packed_scales, 4), low_nibble);

    // Minimum term: sum_j bsums[j] * mn_j over the 16 sub-blocks.
    const __m256i min_products = _mm256_madd_epi16(load_256(y[b].bsums), _mm256_cvtepu8_epi16(mins));
    acc_min = _mm256_fmadd_ps(_mm256_set1_ps(d_min), _mm256_cvtepi32_ps(min_products), acc_min);

    const __m256i scales_16 = _mm256_cvtepu8_epi16(even_then_odd(scales));
    __m256i isum = _mm256_setzero_si256();
    for (int chunk = 0; chunk < 2; ++chunk) {
      const __m256i packed = load_256(x[b].qs + 32 * chunk);
      for (int k = 0; k < 4; ++k) {
        // Elements 32m .. 32m + 31 (m = 4 chunk + k): sub-blocks 2m and 2m + 1.
        const int m = 4 * chunk + k;
        const __m256i q = _mm256_and_si256(_mm256_srli_epi16(packed, 2 * k), two_bits);
        const __m256i pairs = _mm256_maddubs_epi16(q, load_256(y[b].qs + 32 * m));
        const __m256i pair_scales = _mm256_shuffle_epi8(scales_16, select_word(m));
        isum = _mm256_add_epi32(isum, _mm256_madd_epi16(pairs, pair_scales));
      }
    }
    acc = _mm256_fmadd_ps(_mm256_set1_ps(d), _mm256_cvtepi32_ps(isum), acc);
  }
  return hsum_ps(acc) - hsum_ps(acc_min);
}

float vec_dot_q3_K_q8_K(int64_t n, const void* w, const void* a) {
  const auto* x = static_cast<const BlockQ3_K*>(w);
  const auto* y = static_cast<const BlockQ8_K*>(a);
  const __m256i two_bits = _mm256_set1_epi8(3);
  const __m256i bit_2 = _mm256_set1_epi8(4);
  __m256 acc = _mm256_setzero_ps();
  for (int64_t b = 0; b < n / kSuperBlockSize; ++b) {
    const float d = y[b].d * half_to_float(x[b].d);
    const __m128i scales_i8 = unpack_q3_K_scales(x[b].scales);  // s_j - 32

    // Levels are q - 4 with q = low bits | hmask bit << 2 in [0, 7]: the dot products
    // below use q, and 4 * sum_j s_j * bsums[j] is taken off at the end.
    const __m256i offset_products = _mm256_madd_epi16(load_256(y[b].bsums), _mm256_cvtepi8_epi16(scales_i8));

    const __m256i hmask = load_256(x[b].hmask);
    const __m256i scales_16 = _mm256_cvtepi8_epi16(even_then_odd(scales_i8));
    __m256i isum = _mm256_setzero_si256();
    for (int chunk = 0; chunk < 2; ++chunk) {
      const __m256i packed = load_256(x[b].qs + 32 * chunk);
      for (int k = 0; k < 4; ++k) {
        const int m = 4 * chunk + k;
        const __m256i low = _mm256_and_si256(_mm256_srli_epi16(packed, 2 * k), two_bits);
        const __m256i high = _mm256_and_si256(bit_m_to_bit_2(hmask, m), bit_2);
        const __m256i q = _mm256_or_si256(low, high);
        const __m256i pairs = _mm256_maddubs_epi16(q, load_256(y[b].qs + 32 * m));
        const __m256i pair_scales = _mm256_shuffle_epi8(scales_16, select_word(m));
        isum = _mm256_add_epi32(isum, _mm256_madd_epi16(pairs, pair_scales));
      }
    }
    isum = _mm256_sub_epi32(isum, _mm256_slli_epi32(offset_products, 2));
    acc = _mm256_fmadd_ps(_mm256_set1_ps(d), _mm256_cvtepi32_ps(isum), acc);
  }
  return hsum_ps(acc);
}

}  // namespace tokenmill::quant::avx2
