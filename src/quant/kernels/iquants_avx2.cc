// The IQ4_NL, IQ4_XS and MXFP4 dot products with AVX2: vpmaddubsw (two products per 16 bits, at most 2 * 127 * 127) then vpmaddwd; the body is iq4_x86-inl.h.
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

struct Iq4Dot {
  static __m256i dot(__m256i acc, __m256i u, __m256i s) {
    const __m256i pairs = _mm256_maddubs_epi16(u, s);
    return in_register(_mm256_add_epi32(acc, _mm256_madd_epi16(pairs, _mm256_set1_epi16(1))));
  }
  // The int16 pair sums (at most 2 * 127 * 127) times the scale in the same vpmaddwd.
  static __m256i scaled_dot(__m256i acc, __m256i u, __m256i s, int scale) {
    const __m256i pairs = _mm256_maddubs_epi16(u, s);
    return in_register(_mm256_add_epi32(acc, _mm256_madd_epi16(pairs, _mm256_set1_epi16(static_cast<int16_t>(scale)))));
  }
};

#include "quant/kernels/iq4_x86-inl.h"

}  // namespace

void vec_dot_rows_iq4_nl_q8_0(int64_t n, const void* w, const void* a, size_t a_stride, int64_t n_a_rows,
                              float* out, int64_t out_stride) {
  iq4_rows<BlockIQ4_NL, Iq4NlTile>(n, w, a, a_stride, n_a_rows, out, out_stride, kLegacyBlockSize);
}

void vec_dot_rows_iq4_xs_q8_K(int64_t n, const void* w, const void* a, size_t a_stride, int64_t n_a_rows,
                              float* out, int64_t out_stride) {
  iq4_rows<BlockIQ4_XS, Iq4XsTile>(n, w, a, a_stride, n_a_rows, out, out_stride, kSuperBlockSize);
}

void vec_dot_rows_mxfp4_q8_0(int64_t n, const void* w, const void* a, size_t a_stride, int64_t n_a_rows,
                             float* out, int64_t out_stride) {
  iq4_rows<BlockMXFP4, Mxfp4Tile>(n, w, a, a_stride, n_a_rows, out, out_stride, kLegacyBlockSize);
}

void vec_dot_panels_mxfp4_q8_0(int64_t n, const void* w, int64_t n_w_rows, const void* a, size_t a_stride,
                               int64_t n_a_rows, float* out, int64_t out_stride, RunningMax* row_max) {
  mx_panels<4>(n, w, n_w_rows, a, a_stride, n_a_rows, out, out_stride, row_max);
}

}  // namespace tokenmill::quant::avx2
