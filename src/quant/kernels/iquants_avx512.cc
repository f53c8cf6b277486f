// The IQ4_NL, IQ4_XS and MXFP4 dot products, and TQ1_0 / TQ2_0's (ternary_x86-inl.h), with AVX-512 VNNI: vpdpbusd on 256 bits; the body is iq4_x86-inl.h.
#include <immintrin.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "quant/blocks.h"
#include "quant/kernels/scratch.h"
#include "quant/kernels/simd_kernels.h"
#include "quant/kernels/x86_helpers.h"
#include "quant/kernels_ref.h"
#include "quant/panel_layout.h"

namespace tokenmill::quant::avx512 {

namespace {

struct Iq4Dot {
  static __m256i dot(__m256i acc, __m256i u, __m256i s) {
    return _mm256_dpbusd_epi32(acc, u, s);
  }
};
struct TernaryDot {
  static __m256i add(__m256i acc, __m256i t, __m256i q) { return _mm256_dpbusd_epi32(acc, t, q); }
  static __m256i finish(__m256i acc) { return acc; }
};

#include "quant/kernels/iq4_x86-inl.h"
#include "quant/kernels/ternary_x86-inl.h"

// IQ4_XS on 512 bits: two groups per vector. The levels are looked up offset by +128
// (unsigned, as vpdpbusd wants them), and the offset's share, 128 * (sum of the group's
// activations), comes off through Q8_K's bsums: the same exact integer per super-block as
// the 256-bit body, so the same bits.
template <int R>
void iq4_xs_tile(int64_t nb, const BlockIQ4_XS* x, const uint8_t* a, size_t a_stride, float* out,
                 int64_t out_stride) {
  const __m512i levels = _mm512_broadcast_i32x4(_mm_setr_epi8(
      1, 24, 45, 63, 79, 93, 106, 118, -127, -115, -103, -90, -75, -59, -39, -15));  // level + 128, as bytes
  const __m512i low4 = _mm512_set1_epi8(0x0f);
  // Group pair p's 16 lanes: group 2p's scale in the low 8, group 2p+1's in the high 8.
  const __m512i pair_index[4] = {
      _mm512_setr_epi32(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1),
      _mm512_setr_epi32(2, 2, 2, 2, 2, 2, 2, 2, 3, 3, 3, 3, 3, 3, 3, 3),
      _mm512_setr_epi32(4, 4, 4, 4, 4, 4, 4, 4, 5, 5, 5, 5, 5, 5, 5, 5),
      _mm512_setr_epi32(6, 6, 6, 6, 6, 6, 6, 6, 7, 7, 7, 7, 7, 7, 7, 7)};
  // 128-bit lanes [lo0 hi0 lo1 hi1]: group 2p's low then high nibbles, then group 2p+1's.
  const __m512i interleave = _mm512_setr_epi64(0, 1, 8, 9, 2, 3, 10, 11);
  const __m256i low_shifts = _mm256_setr_epi32(0, 4, 8, 12, 16, 20, 24, 28);
  const __m256i high_shifts = _mm256_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14);
  const BlockQ8_K* y[R];
  for (int r = 0; r < R; ++r) y[r] = reinterpret_cast<const BlockQ8_K*>(a + static_cast<size_t>(r) * a_stride);
  float sums[R] = {};
  for (int64_t b = 0; b < nb; ++b) {
    uint32_t scales_l;
    std::memcpy(&scales_l, x[b].scales_l, sizeof scales_l);
    const __m256i low = _mm256_and_si256(_mm256_srlv_epi32(_mm256_set1_epi32(static_cast<int32_t>(scales_l)), low_shifts),
                                         _mm256_set1_epi32(0xf));
    const __m256i high = _mm256_and_si256(_mm256_srlv_epi32(_mm256_set1_epi32(x[b].scales_h), high_shifts),
                                          _mm256_set1_epi32(3));
    const __m256i scales = _mm256_sub_epi32(_mm256_or_si256(low, _mm256_slli_epi32(high, 4)), _mm256_set1_epi32(32));
    const __m512i scales512 = _mm512_castsi256_si512(scales);
    __m512i acc[R];
    for (int r = 0; r < R; ++r) acc[r] = _mm512_setzero_si512();
    for (int p = 0; p < 4; ++p) {
      const __m256i q = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x[b].qs + 32 * p));
      const __m512i lo = _mm512_castsi256_si512(_mm256_and_si256(q, _mm512_castsi512_si256(low4)));
      const __m512i hi = _mm512_castsi256_si512(_mm256_and_si256(_mm256_srli_epi16(q, 4), _mm512_castsi512_si256(low4)));
      const __m512i w = _mm512_shuffle_epi8(levels, _mm512_permutex2var_epi64(lo, interleave, hi));
      const __m512i s = _mm512_permutexvar_epi32(pair_index[p], scales512);
      for (int r = 0; r < R; ++r) {
        const __m512i act = _mm512_loadu_si512(y[r][b].qs + 64 * p);
        acc[r] = _mm512_add_epi32(acc[r], _mm512_mullo_epi32(_mm512_dpbusd_epi32(_mm512_setzero_si512(), w, act), s));
      }
    }
    const float dw = iq4_half(x[b].d);
    for (int r = 0; r < R; ++r) {
      // sum_g s_g * (sum of group g's activations), from the 16-element bsums.
      const __m256i group_sums = _mm256_madd_epi16(
          _mm256_loadu_si256(reinterpret_cast<const __m256i*>(y[r][b].bsums)), _mm256_set1_epi16(1));
      const int32_t offset_share = iq4_total(_mm256_mullo_epi32(group_sums, scales));
      const int32_t isum = _mm512_reduce_add_epi32(acc[r]) - 128 * offset_share;
      sums[r] = iq4_fma(dw * y[r][b].d, static_cast<float>(isum), sums[r]);
    }
  }
  for (int r = 0; r < R; ++r) out[r * out_stride] = sums[r];
}

}  // namespace

TM_IQ4_ENTRIES(8)
TM_TERNARY_ROW_ENTRIES

}  // namespace tokenmill::quant::avx512
