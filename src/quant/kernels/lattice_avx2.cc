// The lattice i-quants' dot products with AVX2: vpmaddubsw then vpmaddwd by the scales; the body is lattice_x86-inl.h.
#include <immintrin.h>

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "quant/blocks.h"
#include "quant/iq_grids.h"
#include "quant/kernels/scratch.h"
#include "quant/kernels/simd_kernels.h"
#include "quant/kernels/x86_helpers.h"
#include "quant/kernels_ref.h"

namespace tokenmill::quant::avx2 {

namespace {

struct LatticeDot {
  static __m256i dot(__m256i acc, __m256i u, __m256i s, __m256i scales) {
    return in_register(_mm256_add_epi32(acc, _mm256_madd_epi16(_mm256_maddubs_epi16(u, s), scales)));
  }
};

#include "quant/kernels/lattice_x86-inl.h"

}  // namespace

#define TM_LATTICE_ROWS(name, Format)                                                                        \
  void vec_dot_rows_##name##_q8_K(int64_t n, const void* w, const void* a, size_t a_stride, int64_t n_a_rows, \
                                  float* out, int64_t out_stride) {                                          \
    lattice_rows<Format>(n, w, a, a_stride, n_a_rows, out, out_stride);                                      \
  }
TM_LATTICE_ROWS(iq2_xxs, Iq2XxsFormat)
TM_LATTICE_ROWS(iq2_xs, Iq2XsFormat)
TM_LATTICE_ROWS(iq2_s, Iq2SFormat)
TM_LATTICE_ROWS(iq3_xxs, Iq3XxsFormat)
TM_LATTICE_ROWS(iq3_s, Iq3SFormat)
TM_LATTICE_ROWS(iq1_s, Iq1SFormat)
TM_LATTICE_ROWS(iq1_m, Iq1MFormat)
#undef TM_LATTICE_ROWS

}  // namespace tokenmill::quant::avx2
