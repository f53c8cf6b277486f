// AVX2 dot products of the K-quant weight formats Q4_K, Q5_K and Q6_K with Q8_K activation
// rows, one weight row at a time (decode; kquants_panels_avx2.cc has the many-token
// matrices).
//
// Per super-block the integers of kquants_avx512.cc are computed exactly (T_lo, T_hi by
// the formats' sub-block order there, M; Q6_K's "- 32" goes into T_lo), then the float
// steps of kquant_rows.h, so every path, AVX2 or AVX-512, gives each (row, token) the
// same bits. Constant offsets (Q4_K's minimum, Q6_K's -32) are taken out through Q8_K's per-16 activation
// sums (bsums) instead of per quant.

#include <immintrin.h>

#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "quant/blocks.h"
#include "quant/kernels/kquant_rows.h"
#include "quant/kernels/simd_kernels.h"
#include "quant/kernels/x86_helpers.h"

namespace tokenmill::quant::avx2 {

namespace {

// Minimum term of Q4_K / Q5_K: sum_j bsums[j] * min[j / 2] over the 16 groups of 16.
__attribute__((always_inline)) inline int32_t k4_min_sum(__m128i scales_mins, const BlockQ8_K& y) {
  const __m128i mins_16 = _mm_cvtepu8_epi16(_mm_unpackhi_epi64(scales_mins, scales_mins));
  const __m256i mins_per_group = _mm256_set_m128i(_mm_unpackhi_epi16(mins_16, mins_16), _mm_unpacklo_epi16(mins_16, mins_16));
  return hsum_epi32(_mm256_madd_epi16(load_256(y.bsums), mins_per_group));
}

// Q4_K / Q5_K: chunk c (64 quants) holds sub-block 2c in `low` and 2c + 1 in `high`
// (codes 0..31); their scaled integer sums against the token, 8 int32 lanes.
// word_select picks scale word 2c, then 2c + 1, from scales_16 (sc_j as int16 in both
// 128-bit lanes), and is left at the next chunk's.
__attribute__((always_inline)) inline __m256i k4_chunk_sums(__m256i low, __m256i high, const BlockQ8_K& y, int c,
                                                            __m256i scales_16, __m256i& word_select) {
  const __m256i next_word = _mm256_set1_epi16(0x0202);
  const __m256i low_pairs = _mm256_maddubs_epi16(low, load_256(y.qs + 64 * c));
  const __m256i high_pairs = _mm256_maddubs_epi16(high, load_256(y.qs + 64 * c + 32));
  const __m256i low_scale = _mm256_shuffle_epi8(scales_16, word_select);
  word_select = _mm256_add_epi8(word_select, next_word);
  const __m256i high_scale = _mm256_shuffle_epi8(scales_16, word_select);
  word_select = _mm256_add_epi8(word_select, next_word);
  return _mm256_add_epi32(_mm256_madd_epi16(low_pairs, low_scale), _mm256_madd_epi16(high_pairs, high_scale));
}

// The integers of Q4_K (kFifthBits false) or Q5_K: Q4_K's nibbles, for Q5_K plus 16 where
// bit j of qh[l] is set (element 32j + l). T_lo is Q4_K's sub-blocks 0..3 (chunks 0, 1)
// and Q5_K's 0, 1, 4, 5 (chunks 0, 2): kquants_avx512.cc's split.
template <bool kFifthBits, typename Block>
SuperBlockSums k4_sums(const Block& x, const BlockQ8_K& y) {
  const __m256i low_nibble = _mm256_set1_epi8(0x0f);
  const __m256i bit_4 = _mm256_set1_epi8(0x10);
  const __m128i scales_mins = unpack_k4_scales(x.scales);  // bytes [sc0..7, mn0..7]
  const __m256i scales_16 = _mm256_broadcastsi128_si256(_mm_cvtepu8_epi16(scales_mins));
  __m256i word_select = _mm256_set1_epi16(0x0100);
  // Sub-block s takes its fifth bits from bit s of every qh byte: shift qh right one bit
  // per sub-block and move bit 0 to bit 4. (The 16-bit shifts bring bits of the
  // neighbouring byte in at the top; they reach bit 0 only after 8 shifts.)
  __m256i qh = _mm256_setzero_si256();
  if constexpr (kFifthBits) qh = load_256(x.qh);
  __m256i half[2] = {_mm256_setzero_si256(), _mm256_setzero_si256()};
  for (int c = 0; c < 4; ++c) {
    const __m256i packed = load_256(x.qs + 32 * c);
    __m256i low = _mm256_and_si256(packed, low_nibble);
    __m256i high = _mm256_and_si256(_mm256_srli_epi16(packed, 4), low_nibble);
    if constexpr (kFifthBits) {
      low = _mm256_or_si256(low, _mm256_and_si256(_mm256_slli_epi16(qh, 4), bit_4));
      qh = _mm256_srli_epi16(qh, 1);
      high = _mm256_or_si256(high, _mm256_and_si256(_mm256_slli_epi16(qh, 4), bit_4));
      qh = _mm256_srli_epi16(qh, 1);
    }
    __m256i& sums = half[kFifthBits ? c % 2 : c / 2];
    sums = _mm256_add_epi32(sums, k4_chunk_sums(low, high, y, c, scales_16, word_select));
  }
  return {hsum_epi32(half[0]), hsum_epi32(half[1]), k4_min_sum(scales_mins, y)};
}

// Q6_K: codes q in [0, 63], level q - 32; T_lo is the sub-blocks j with bit 1 of j clear
// (the even 32-element steps k below) and every -32 term.
SuperBlockSums sums_q6_K(const BlockQ6_K& x, const BlockQ8_K& y) {
  const __m256i low_nibble = _mm256_set1_epi8(0x0f);
  const __m256i bits_4_5 = _mm256_set1_epi8(0x30);
  const __m128i scales_i8 = load_128(x.scales);
  // The scales as int16, the even ones in the low 128-bit lane and the odd ones in the
  // high: word m of each lane picked by one vpshufb gives s_2m (x8) | s_2m+1 (x8).
  const __m256i scales_even_odd = _mm256_cvtepi8_epi16(
      _mm_shuffle_epi8(scales_i8, _mm_setr_epi8(0, 2, 4, 6, 8, 10, 12, 14, 1, 3, 5, 7, 9, 11, 13, 15)));
  // The -32 of every level: 32 * sum_j scale_j * bsums[j].
  const __m256i offset_products = _mm256_madd_epi16(load_256(y.bsums), _mm256_cvtepi8_epi16(scales_i8));
  __m256i half_sums[2] = {_mm256_setzero_si256(), _mm256_setzero_si256()};
#pragma GCC unroll 2
  for (int half = 0; half < 2; ++half) {
    const uint8_t* ql = x.ql + 64 * half;
    const __m256i qh = load_256(x.qh + 32 * half);
    const __m256i ql_0 = load_256(ql);
    const __m256i ql_1 = load_256(ql + 32);
    // Levels + 32 (0..63) of elements 32k .. 32k + 31 of this half (layout in blocks.h).
    const __m256i q[4] = {
        _mm256_or_si256(_mm256_and_si256(ql_0, low_nibble), _mm256_and_si256(_mm256_slli_epi16(qh, 4), bits_4_5)),
        _mm256_or_si256(_mm256_and_si256(ql_1, low_nibble), _mm256_and_si256(_mm256_slli_epi16(qh, 2), bits_4_5)),
        _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(ql_0, 4), low_nibble), _mm256_and_si256(qh, bits_4_5)),
        _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(ql_1, 4), low_nibble),
                        _mm256_and_si256(_mm256_srli_epi16(qh, 2), bits_4_5)),
    };
#pragma GCC unroll 4
    for (int k = 0; k < 4; ++k) {
      // int16 lanes 0..7 cover group 2m, lanes 8..15 group 2m + 1 (m = 4 half + k).
      const int m = 4 * half + k;
      const __m256i pairs = _mm256_maddubs_epi16(q[k], load_256(y.qs + 128 * half + 32 * k));
      const __m256i scales = _mm256_shuffle_epi8(scales_even_odd, _mm256_set1_epi16(static_cast<int16_t>(0x0100 + 0x0202 * m)));
      half_sums[k % 2] = _mm256_add_epi32(half_sums[k % 2], _mm256_madd_epi16(pairs, scales));
    }
  }
  const __m256i t_lo = _mm256_sub_epi32(half_sums[0], _mm256_slli_epi32(offset_products, 5));
  const __m128i t = hsum2_epi32(t_lo, half_sums[1]);
  return {_mm_cvtsi128_si32(t), _mm_extract_epi32(t, 1), 0};
}

struct Sums {
  static SuperBlockSums of(const BlockQ4_K& x, const BlockQ8_K& y) { return k4_sums<false>(x, y); }
  static SuperBlockSums of(const BlockQ5_K& x, const BlockQ8_K& y) { return k4_sums<true>(x, y); }
  static SuperBlockSums of(const BlockQ6_K& x, const BlockQ8_K& y) { return sums_q6_K(x, y); }
  static float half(uint16_t h) { return half_to_float(h); }
};

constexpr int kPrefetchBytes = 4096;

}  // namespace

TM_DOT_ROWS_ENTRY(vec_dot_rows_q4_K_q8_K, kquant_rows<Sums, BlockQ4_K, kPrefetchBytes>)
TM_DOT_ROWS_ENTRY(vec_dot_rows_q5_K_q8_K, kquant_rows<Sums, BlockQ5_K, kPrefetchBytes>)
TM_DOT_ROWS_ENTRY(vec_dot_rows_q6_K_q8_K, kquant_rows<Sums, BlockQ6_K, kPrefetchBytes>)

}  // namespace tokenmill::quant::avx2
