// AVX-512 dot products of Q2_K and Q3_K with Q8_K activation rows: the scheme of
// kquants_low_avx2.cc, 64 quants per step, with vpdpwssd (VNNI) applying the sub-block
// scales to maddubs' int16 pair sums. Each weight super-block is unpacked once and
// dotted with up to kTokenTile activation rows (prefill, batched decode).
//
// A 64-quant step s covers elements 64s .. 64s + 63: the 32-byte chunk s / 2 shifted by
// 4 (s % 2) in bytes 0..31 and by 4 (s % 2) + 2 in bytes 32..63, i.e. sub-blocks
// 4s .. 4s + 3, each 16 bytes; the step's activations are qs[64s .. 64s + 63] as stored.

// GCC 12's AVX-512 headers seed some intrinsics with _mm512_undefined_*(), which
// -Wuninitialized then reports at every use: a known false positive.
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

#include <immintrin.h>

#include <cstdint>
#include <type_traits>

#include "quant/blocks.h"
#include "quant/kernels/kquants_low_x86.h"
#include "quant/kernels/simd_kernels.h"
#include "quant/kernels/x86_helpers.h"

namespace tokenmill::quant::avx512 {

namespace {

// Per (row, token) the operations and their order are those of the single dot product
// (kTokens = 1), so every tile shape gives the same bits.
constexpr int kTokenTile = 4;

// The single-token path's software prefetch distance (x86_helpers.h's prefetch_ahead).
constexpr int64_t kPrefetchBytes = 8192;

// For permutexvar_epi16: int16 pair-sum lane l of step s covers sub-block 4s + l / 8.
struct GroupIndex {
  __m512i step[4];
  GroupIndex() {
    const __m512i lane_group = _mm512_srli_epi16(
        _mm512_set_epi16(31, 30, 29, 28, 27, 26, 25, 24, 23, 22, 21, 20, 19, 18, 17, 16, 15, 14, 13, 12, 11, 10, 9,
                         8, 7, 6, 5, 4, 3, 2, 1, 0),
        3);
    for (int s = 0; s < 4; ++s) step[s] = _mm512_add_epi16(_mm512_set1_epi16(static_cast<int16_t>(4 * s)), lane_group);
  }
};

// The low two bits of the quants of chunk `chunk` (0, 1) as two steps (2 chunk, 2 chunk + 1),
// values 0..3 in element order of each step.
inline void unpack_2bit_chunk(const uint8_t* qs, int chunk, __m512i* first, __m512i* second) {
  const __m256i packed = load_256(qs + 32 * chunk);
  const __m512i both = combine_256(packed, _mm256_srli_epi16(packed, 2));
  const __m512i two_bits = _mm512_set1_epi8(3);
  *first = _mm512_and_si512(both, two_bits);
  *second = _mm512_and_si512(_mm512_srli_epi16(both, 4), two_bits);
}

// acc[t] collects d * (scaled integer sums) in 16 lanes, acc_min[t] the dmin * min terms
// in 8; result = reduce_add(acc) - hsum(acc_min).
template <int kTokens>
void q2_K_row(int64_t n, const BlockQ2_K* x, const uint8_t* a, size_t a_stride, float* out, int64_t out_stride) {
  const GroupIndex group_index;
  const __m128i low_nibble = _mm_set1_epi8(0x0f);
  __m512 acc[kTokens];
  __m256 acc_min[kTokens];
  for (int t = 0; t < kTokens; ++t) {
    acc[t] = _mm512_setzero_ps();
    acc_min[t] = _mm256_setzero_ps();
  }
  auto activations = [&](int t) { return reinterpret_cast<const BlockQ8_K*>(a + t * a_stride); };
  for (int64_t b = 0; b < n / kSuperBlockSize; ++b) {
    if constexpr (kTokens == 1) prefetch_ahead<kPrefetchBytes>(x + b);
    const float x_d = half_to_float(x[b].d);
    const float x_dmin = half_to_float(x[b].dmin);
    const __m128i packed_scales = load_128(x[b].scales);
    const __m256i scales_16 = _mm256_cvtepu8_epi16(_mm_and_si128(packed_scales, low_nibble));
    const __m256i mins_16 = _mm256_cvtepu8_epi16(_mm_and_si128(_mm_srli_epi16(packed_scales, 4), low_nibble));
    const __m512i scales_512 = _mm512_castsi256_si512(scales_16);  // upper half unused by the indices
    __m512i isum[kTokens];
    for (int t = 0; t < kTokens; ++t) {
      const BlockQ8_K& y = activations(t)[b];
      const __m256i min_products = _mm256_madd_epi16(load_256(y.bsums), mins_16);
      acc_min[t] = _mm256_fmadd_ps(_mm256_set1_ps(y.d * x_dmin), _mm256_cvtepi32_ps(min_products), acc_min[t]);
      isum[t] = _mm512_setzero_si512();
    }
    for (int chunk = 0; chunk < 2; ++chunk) {
      __m512i q_first, q_second;
      unpack_2bit_chunk(x[b].qs, chunk, &q_first, &q_second);
      const __m512i scales_first = _mm512_permutexvar_epi16(group_index.step[2 * chunk], scales_512);
      const __m512i scales_second = _mm512_permutexvar_epi16(group_index.step[2 * chunk + 1], scales_512);
      for (int t = 0; t < kTokens; ++t) {
        const BlockQ8_K& y = activations(t)[b];
        const __m512i pairs_first = _mm512_maddubs_epi16(q_first, load_512(y.qs + 128 * chunk));
        const __m512i pairs_second = _mm512_maddubs_epi16(q_second, load_512(y.qs + 128 * chunk + 64));
        isum[t] = _mm512_dpwssd_epi32(isum[t], pairs_first, scales_first);
        isum[t] = _mm512_dpwssd_epi32(isum[t], pairs_second, scales_second);
      }
    }
    for (int t = 0; t < kTokens; ++t) {
      acc[t] = _mm512_fmadd_ps(_mm512_set1_ps(activations(t)[b].d * x_d), _mm512_cvtepi32_ps(isum[t]), acc[t]);
    }
  }
  for (int t = 0; t < kTokens; ++t) out[t * out_stride] = _mm512_reduce_add_ps(acc[t]) - hsum_ps(acc_min[t]);
}

template <int kTokens>
void q3_K_row(int64_t n, const BlockQ3_K* x, const uint8_t* a, size_t a_stride, float* out, int64_t out_stride) {
  const GroupIndex group_index;
  const __m512i four = _mm512_set1_epi8(4);
  __m512 acc[kTokens];
  for (int t = 0; t < kTokens; ++t) acc[t] = _mm512_setzero_ps();
  auto activations = [&](int t) { return reinterpret_cast<const BlockQ8_K*>(a + t * a_stride); };
  for (int64_t b = 0; b < n / kSuperBlockSize; ++b) {
    if constexpr (kTokens == 1) prefetch_ahead<kPrefetchBytes>(x + b);
    const float x_d = half_to_float(x[b].d);
    const __m256i scales_16 = _mm256_cvtepi8_epi16(unpack_q3_K_scales(x[b].scales));  // s_j - 32
    const __m512i scales_512 = _mm512_castsi256_si512(scales_16);  // upper half unused by the indices
    // Element 32m + l takes bit m of hmask[l]. With hmask in bytes 0..31 and hmask >> 1
    // in bytes 32..63, step s finds both of its bits (m = 2s, 2s + 1) at bit 2s. (The
    // 16-bit shift moves a neighbouring byte's bit into bit 7 only, which no step tests.)
    const __m256i hmask_256 = load_256(x[b].hmask);
    const __m512i hmask = combine_256(hmask_256, _mm256_srli_epi16(hmask_256, 1));
    __m512i isum[kTokens];
    for (int t = 0; t < kTokens; ++t) isum[t] = _mm512_setzero_si512();
    for (int chunk = 0; chunk < 2; ++chunk) {
      __m512i low[2];
      unpack_2bit_chunk(x[b].qs, chunk, &low[0], &low[1]);
      __m512i q[2];  // q = low bits | hmask bit << 2, in [0, 7]
      for (int i = 0; i < 2; ++i) {
        const int step = 2 * chunk + i;
        const __mmask64 high = _mm512_test_epi8_mask(hmask, _mm512_set1_epi8(static_cast<char>(1 << (2 * step))));
        q[i] = _mm512_mask_add_epi8(low[i], high, low[i], four);
      }
      const __m512i scales_first = _mm512_permutexvar_epi16(group_index.step[2 * chunk], scales_512);
      const __m512i scales_second = _mm512_permutexvar_epi16(group_index.step[2 * chunk + 1], scales_512);
      for (int t = 0; t < kTokens; ++t) {
        const BlockQ8_K& y = activations(t)[b];
        const __m512i pairs_first = _mm512_maddubs_epi16(q[0], load_512(y.qs + 128 * chunk));
        const __m512i pairs_second = _mm512_maddubs_epi16(q[1], load_512(y.qs + 128 * chunk + 64));
        isum[t] = _mm512_dpwssd_epi32(isum[t], pairs_first, scales_first);
        isum[t] = _mm512_dpwssd_epi32(isum[t], pairs_second, scales_second);
      }
    }
    for (int t = 0; t < kTokens; ++t) {
      const BlockQ8_K& y = activations(t)[b];
      // Levels are q - 4: take off 4 * sum_j s_j * bsums[j].
      const __m256i offset_products = _mm256_madd_epi16(load_256(y.bsums), scales_16);
      isum[t] = _mm512_sub_epi32(isum[t], _mm512_zextsi256_si512(_mm256_slli_epi32(offset_products, 2)));
      acc[t] = _mm512_fmadd_ps(_mm512_set1_ps(y.d * x_d), _mm512_cvtepi32_ps(isum[t]), acc[t]);
    }
  }
  for (int t = 0; t < kTokens; ++t) out[t * out_stride] = _mm512_reduce_add_ps(acc[t]);
}

template <typename Block, int kTokens>
void row_kernel(int64_t n, const Block* x, const uint8_t* a, size_t a_stride, float* out, int64_t out_stride) {
  if constexpr (std::is_same_v<Block, BlockQ2_K>) {
    q2_K_row<kTokens>(n, x, a, a_stride, out, out_stride);
  } else {
    static_assert(std::is_same_v<Block, BlockQ3_K>);
    q3_K_row<kTokens>(n, x, a, a_stride, out, out_stride);
  }
}

// Weight rows in cache panels (x86_helpers.h): for each panel, every tile of kTokenTile
// activation rows against each row of the panel. Unlike kquants_avx512.cc's matrix
// kernel, no activation staging: Q2_K and Q3_K read Q8_K rows as they are.
template <typename Block>
void dot_matrix(int64_t n, const void* w, size_t w_stride, int64_t n_w_rows, const void* a, size_t a_stride,
                int64_t n_a_rows, float* out, int64_t out_stride) {
  const auto* weights = static_cast<const uint8_t*>(w);
  const auto* rows = static_cast<const uint8_t*>(a);
  auto row = [&](int64_t r) { return reinterpret_cast<const Block*>(weights + r * w_stride); };
  const int64_t panel = panel_rows(w_stride, 1);
  for (int64_t r0 = 0; r0 < n_w_rows; r0 += panel) {
    const int64_t r1 = r0 + panel < n_w_rows ? r0 + panel : n_w_rows;
    int64_t t = 0;
    for (; t + kTokenTile <= n_a_rows; t += kTokenTile) {
      for (int64_t r = r0; r < r1; ++r) {
        row_kernel<Block, kTokenTile>(n, row(r), rows + t * a_stride, a_stride, out + t * out_stride + r, out_stride);
      }
    }
    for (; t < n_a_rows; ++t) {
      for (int64_t r = r0; r < r1; ++r) {
        row_kernel<Block, 1>(n, row(r), rows + t * a_stride, 0, out + t * out_stride + r, 0);
      }
    }
  }
}

}  // namespace

TM_DOT_MATRIX_ENTRY(vec_dot_matrix_q2_K_q8_K, dot_matrix<BlockQ2_K>)
TM_DOT_MATRIX_ENTRY(vec_dot_matrix_q3_K_q8_K, dot_matrix<BlockQ3_K>)

}  // namespace tokenmill::quant::avx512
