// The lattice i-quants' dot products with AVX2: vpmaddubsw then vpmaddwd by the scales; the body is lattice_x86-inl.h.
#include <immintrin.h>

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "quant/blocks.h"
#include "quant/iq_grids.h"
#include "quant/kernels/lattice_facts.h"
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

TM_LATTICE_ROW_ENTRIES

}  // namespace tokenmill::quant::avx2
