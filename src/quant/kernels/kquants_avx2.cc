// AVX2 dot products of the K-quant weight formats Q4_K, Q5_K and Q6_K with a Q8_K activation
// row.
//
// Per super-block the integer sum sum_j scale_j * dot(levels_j, activations_j) is exact
// (int32), as in the reference; only its product with the float scale, accumulated with
// FMA in 8 lanes, rounds in a different order. Constant offsets (Q4_K's minimum, Q6_K's
// -32) are taken out through Q8_K's per-16 activation sums (bsums) instead of per quant.

#include <immintrin.h>

#include <cstdint>

#include "quant/blocks.h"
#include "quant/kernels/simd_kernels.h"
#include "quant/kernels/x86_helpers.h"

namespace tokenmill::quant::avx2 {

float vec_dot_q4_K_q8_K(int64_t n, const void* w, const void* a) {
  const auto* x = static_cast<const BlockQ4_K*>(w);
  const auto* y = static_cast<const BlockQ8_K*>(a);
  const __m256i low_nibble = _mm256_set1_epi8(0x0f);
  __m256 acc = _mm256_setzero_ps();
  __m256 acc_min = _mm256_setzero_ps();
  for (int64_t b = 0; b < n / kSuperBlockSize; ++b) {
    const float d = y[b].d * half_to_float(x[b].d);
    const float d_min = y[b].d * half_to_float(x[b].dmin);
    const __m128i scales_mins = unpack_k4_scales(x[b].scales);  // bytes [sc0..7, mn0..7]

    // Minimum term: sum_j bsums[j] * min[j / 2] over the 16 groups of 16.
    const __m128i mins_16 = _mm_cvtepu8_epi16(_mm_unpackhi_epi64(scales_mins, scales_mins));
    const __m256i mins_per_group = _mm256_set_m128i(_mm_unpackhi_epi16(mins_16, mins_16), _mm_unpacklo_epi16(mins_16, mins_16));
    const __m256i min_products = _mm256_madd_epi16(load_256(y[b].bsums), mins_per_group);
    acc_min = _mm256_fmadd_ps(_mm256_set1_ps(d_min), _mm256_cvtepi32_ps(min_products), acc_min);

    // Scale j as int16 in both 128-bit lanes; word_select picks word j into every lane.
    const __m256i scales_16 = _mm256_broadcastsi128_si256(_mm_cvtepu8_epi16(scales_mins));
    __m256i word_select = _mm256_set1_epi16(0x0100);
    const __m256i next_word = _mm256_set1_epi16(0x0202);

    // Chunk c holds sub-block 2c in its low nibbles and 2c + 1 in its high nibbles.
    __m256i isum = _mm256_setzero_si256();
    for (int c = 0; c < 4; ++c) {
      const __m256i packed = load_256(x[b].qs + 32 * c);
      const __m256i low = _mm256_and_si256(packed, low_nibble);
      const __m256i high = _mm256_and_si256(_mm256_srli_epi16(packed, 4), low_nibble);
      const __m256i low_pairs = _mm256_maddubs_epi16(low, load_256(y[b].qs + 64 * c));
      const __m256i high_pairs = _mm256_maddubs_epi16(high, load_256(y[b].qs + 64 * c + 32));
      const __m256i low_scale = _mm256_shuffle_epi8(scales_16, word_select);
      word_select = _mm256_add_epi8(word_select, next_word);
      const __m256i high_scale = _mm256_shuffle_epi8(scales_16, word_select);
      word_select = _mm256_add_epi8(word_select, next_word);
      isum = _mm256_add_epi32(isum, _mm256_madd_epi16(low_pairs, low_scale));
      isum = _mm256_add_epi32(isum, _mm256_madd_epi16(high_pairs, high_scale));
    }
    acc = _mm256_fmadd_ps(_mm256_set1_ps(d), _mm256_cvtepi32_ps(isum), acc);
  }
  return hsum_ps(acc) - hsum_ps(acc_min);
}

float vec_dot_q5_K_q8_K(int64_t n, const void* w, const void* a) {
  const auto* x = static_cast<const BlockQ5_K*>(w);
  const auto* y = static_cast<const BlockQ8_K*>(a);
  const __m256i low_nibble = _mm256_set1_epi8(0x0f);
  const __m256i bit_4 = _mm256_set1_epi8(0x10);
  __m256 acc = _mm256_setzero_ps();
  __m256 acc_min = _mm256_setzero_ps();
  for (int64_t b = 0; b < n / kSuperBlockSize; ++b) {
    const float d = y[b].d * half_to_float(x[b].d);
    const float d_min = y[b].d * half_to_float(x[b].dmin);
    const __m128i scales_mins = unpack_k4_scales(x[b].scales);  // bytes [sc0..7, mn0..7]

    const __m128i mins_16 = _mm_cvtepu8_epi16(_mm_unpackhi_epi64(scales_mins, scales_mins));
    const __m256i mins_per_group = _mm256_set_m128i(_mm_unpackhi_epi16(mins_16, mins_16), _mm_unpacklo_epi16(mins_16, mins_16));
    const __m256i min_products = _mm256_madd_epi16(load_256(y[b].bsums), mins_per_group);
    acc_min = _mm256_fmadd_ps(_mm256_set1_ps(d_min), _mm256_cvtepi32_ps(min_products), acc_min);

    const __m256i scales_16 = _mm256_broadcastsi128_si256(_mm_cvtepu8_epi16(scales_mins));
    __m256i word_select = _mm256_set1_epi16(0x0100);
    const __m256i next_word = _mm256_set1_epi16(0x0202);

    // Sub-block s takes its fifth bits from bit s of every qh byte: shift qh right one
    // bit per sub-block and move bit 0 to bit 4. (The 16-bit shifts bring bits of the
    // neighbouring byte in at the top; they reach bit 0 only after 8 shifts.)
    __m256i qh = load_256(x[b].qh);
    __m256i isum = _mm256_setzero_si256();
    for (int c = 0; c < 4; ++c) {
      const __m256i packed = load_256(x[b].qs + 32 * c);
      const __m256i low = _mm256_or_si256(_mm256_and_si256(packed, low_nibble),
                                          _mm256_and_si256(_mm256_slli_epi16(qh, 4), bit_4));
      qh = _mm256_srli_epi16(qh, 1);
      const __m256i high = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(packed, 4), low_nibble),
                                           _mm256_and_si256(_mm256_slli_epi16(qh, 4), bit_4));
      qh = _mm256_srli_epi16(qh, 1);
      const __m256i low_pairs = _mm256_maddubs_epi16(low, load_256(y[b].qs + 64 * c));
      const __m256i high_pairs = _mm256_maddubs_epi16(high, load_256(y[b].qs + 64 * c + 32));
      const __m256i low_scale = _mm256_shuffle_epi8(scales_16, word_select);
      word_select = _mm256_add_epi8(word_select, next_word);
      const __m256i high_scale = _mm256_shuffle_epi8(scales_16, word_select);
      word_select = _mm256_add_epi8(word_select, next_word);
      isum = _mm256_add_epi32(isum, _mm256_madd_epi16(low_pairs, low_scale));
      isum = _mm256_add_epi32(isum, _mm256_madd_epi16(high_pairs, high_scale));
    }
    acc = _mm256_fmadd_ps(_mm256_set1_ps(d), _mm256_cvtepi32_ps(isum), acc);
  }
  return hsum_ps(acc) - hsum_ps(acc_min);
}

float vec_dot_q6_K_q8_K(int64_t n, const void* w, const void* a) {
  const auto* x = static_cast<const BlockQ6_K*>(w);
  const auto* y = static_cast<const BlockQ8_K*>(a);
  const __m256i low_nibble = _mm256_set1_epi8(0x0f);
  const __m256i bits_4_5 = _mm256_set1_epi8(0x30);
  // Picks scale bytes s, s (x8) and s + 1 (x8) out of the 16 scales; step by 2.
  const __m128i first_pair = _mm_set_epi64x(0x0101010101010101, 0);
  __m256 acc = _mm256_setzero_ps();
  for (int64_t b = 0; b < n / kSuperBlockSize; ++b) {
    const float d = y[b].d * half_to_float(x[b].d);
    const __m128i scales_i8 = load_128(x[b].scales);

    // The -32 of every level: 32 * sum_j scale_j * bsums[j].
    const __m256i offset_products = _mm256_madd_epi16(load_256(y[b].bsums), _mm256_cvtepi8_epi16(scales_i8));

    __m256i isum = _mm256_setzero_si256();
    __m128i pair_select = first_pair;
    for (int half = 0; half < 2; ++half) {
      const uint8_t* ql = x[b].ql + 64 * half;
      const __m256i qh = load_256(x[b].qh + 32 * half);
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
      for (int k = 0; k < 4; ++k) {
        // int16 lanes 0..7 cover group 2m, lanes 8..15 group 2m + 1 (m = 4 half + k).
        const __m256i pairs = _mm256_maddubs_epi16(q[k], load_256(y[b].qs + 128 * half + 32 * k));
        const __m256i scales = _mm256_cvtepi8_epi16(_mm_shuffle_epi8(scales_i8, pair_select));
        isum = _mm256_add_epi32(isum, _mm256_madd_epi16(pairs, scales));
        pair_select = _mm_add_epi8(pair_select, _mm_set1_epi8(2));
      }
    }
    isum = _mm256_sub_epi32(isum, _mm256_slli_epi32(offset_products, 5));
    acc = _mm256_fmadd_ps(_mm256_set1_ps(d), _mm256_cvtepi32_ps(isum), acc);
  }
  return hsum_ps(acc);
}

}  // namespace tokenmill::quant::avx2
