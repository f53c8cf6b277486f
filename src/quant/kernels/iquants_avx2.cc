// The IQ4_NL, IQ4_XS and MXFP4 dot products, and TQ1_0 / TQ2_0's (ternary_x86-inl.h), with AVX2: vpmaddubsw (two products per 16 bits, at most 2 * 127 * 127) then vpmaddwd; the body is iq4_x86-inl.h.
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

namespace tokenmill::quant::avx2 {

namespace {

// acc + scale times the sums of four products u[i] * s[i] per 32-bit lane (u unsigned, at
// most 127; s signed; |scale| <= 32): the int16 pair sums (at most 2 * 127 * 127) times the
// scale in the same vpmaddwd.
inline __m256i scaled_dot(__m256i acc, __m256i u, __m256i s, int scale) {
  const __m256i pairs = _mm256_maddubs_epi16(u, s);
  return in_register(_mm256_add_epi32(acc, _mm256_madd_epi16(pairs, _mm256_set1_epi16(static_cast<int16_t>(scale)))));
}

struct Iq4Dot {
  static __m256i dot(__m256i acc, __m256i u, __m256i s) { return scaled_dot(acc, u, s, 1); }
};

// The trits' products as int16 pair sums (each at most 2 * 2 * 127; eight vectors' worth
// at most 4064), widened once per block.
struct TernaryDot {
  static __m256i add(__m256i acc, __m256i t, __m256i q) {
    return in_register(_mm256_add_epi16(acc, _mm256_maddubs_epi16(t, q)));
  }
  static __m256i finish(__m256i acc) { return _mm256_madd_epi16(acc, _mm256_set1_epi16(1)); }
};

#include "quant/kernels/iq4_x86-inl.h"
#include "quant/kernels/ternary_x86-inl.h"

// IQ4_XS rows on 256 bits (AVX-512 has its own, iquants_avx512.cc): each group's exact sum
// times its 6-bit scale, one integer per super-block fused as the reference does.
template <int R>
void iq4_xs_tile(int64_t nb, const BlockIQ4_XS* x, const uint8_t* a, size_t a_stride, float* out,
                 int64_t out_stride) {
  const __m256i levels = iq4_levels();
  const BlockQ8_K* y[R];
  for (int r = 0; r < R; ++r) y[r] = reinterpret_cast<const BlockQ8_K*>(a + static_cast<size_t>(r) * a_stride);
  float sums[R] = {};
  for (int64_t b = 0; b < nb; ++b) {
    __m256i acc[R];
    for (int r = 0; r < R; ++r) acc[r] = _mm256_setzero_si256();
    for (int g = 0; g < 8; ++g) {
      const int scale = iq4_xs_scale(x[b], g) - 32;
      const __m256i w = iq4_group(x[b].qs + 16 * g, levels);
      const __m256i w_abs = _mm256_abs_epi8(w);
      for (int r = 0; r < R; ++r) {
        const __m256i a = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(y[r][b].qs + 32 * g));
        acc[r] = scaled_dot(acc[r], w_abs, _mm256_sign_epi8(a, w), scale);
      }
    }
    const float dw = iq4_half(x[b].d);
    for (int r = 0; r < R; ++r) sums[r] = iq4_fma(dw * y[r][b].d, static_cast<float>(iq4_total(acc[r])), sums[r]);
  }
  for (int r = 0; r < R; ++r) out[r * out_stride] = sums[r];
}

}  // namespace

TM_IQ4_ENTRIES(4)
TM_TERNARY_ROW_ENTRIES

}  // namespace tokenmill::quant::avx2
