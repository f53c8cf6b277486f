// AVX2 Q4_K, Q5_K, Q6_K and IQ4_XS dot products on repacked 16-row panels (quant/panel_layout.h):
// the body of kquant_packed_x86-inl.h on 8-lane vectors, each panel in two passes of 8
// rows. Sub-block sums are vpmaddubsw int16 pairs, up to the format's kInt16Group of them
// added as int16, then one vpmaddwd against (sc_j, sc_j) both widens and scales them; the
// minimum (or Q6_K's -32) terms are vpmaddwd of int16 pairs. The same integers and float
// steps as every other K-quant path, so the same bits as AVX-512 and the row kernels.

#include <immintrin.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "quant/blocks.h"
#include "quant/kernels/kquant_panels.h"
#include "quant/panel_layout.h"
#include "quant/kernels/simd_kernels.h"
#include "quant/kernels/x86_helpers.h"

namespace tokenmill::quant::avx2 {

namespace {

// The 8-lane vectors of kquant_packed_x86-inl.h.
struct V {
  using I = __m256i;
  using F = __m256;
  static constexpr int kLanes = 8;
  static constexpr int kTokenTile = 4;  // 16 vector registers
  static constexpr bool kInt16Sums = true;
  static I load(const uint8_t* p) { return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)); }
  static I table16(const uint8_t* t) { return _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(t))); }
  static I lookup16(I table, I index) { return _mm256_shuffle_epi8(table, index); }
  static I abs8(I a) { return _mm256_abs_epi8(a); }
  static I sign8(I a, I b) { return _mm256_sign_epi8(a, b); }
  static I broadcast4(const int8_t* p) { return broadcast_dword(p); }
  static F load_f16(const uint8_t* p) { return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))); }
  static F f16_low(I x) {
    const I low = _mm256_and_si256(x, _mm256_set1_epi32(0xffff));  // vpackusdw keeps it as it is
    return _mm256_cvtph_ps(_mm_packus_epi32(_mm256_castsi256_si128(low), _mm256_extracti128_si256(low, 1)));
  }
  static I dot4(I part, I u, I s) { return in_register(_mm256_add_epi16(part, _mm256_maddubs_epi16(u, s))); }
  static I scale_operand(I sc) {  // (sc, sc) as int16 pairs
    return _mm256_or_si256(_mm256_and_si256(sc, _mm256_set1_epi32(0xffff)), _mm256_slli_epi32(sc, 16));
  }
  static I scale_sum(I part, I scale) { return _mm256_madd_epi16(part, scale); }
  static I dot2(I acc, I a, I b) { return _mm256_add_epi32(acc, _mm256_madd_epi16(a, b)); }
  static I and_(I a, I b) { return _mm256_and_si256(a, b); }
  static I or_(I a, I b) { return _mm256_or_si256(a, b); }
  static I add(I a, I b) { return in_register(_mm256_add_epi32(a, b)); }  // kept a chain, as dot4
  static I sub(I a, I b) { return _mm256_sub_epi32(a, b); }
  static I srli(I a, int n) { return _mm256_srli_epi32(a, n); }
  static I slli(I a, int n) { return _mm256_slli_epi32(a, n); }
  static I srai(I a, int n) { return _mm256_srai_epi32(a, n); }
  static I set1_8(int8_t v) { return _mm256_set1_epi8(v); }
  static I set1_32(int32_t v) { return _mm256_set1_epi32(v); }
  static I zero() { return _mm256_setzero_si256(); }
  static F cvt(I a) { return _mm256_cvtepi32_ps(a); }
  static F fma(F a, F b, F c) { return _mm256_fmadd_ps(a, b, c); }
  static F fnmadd(F a, F b, F c) { return _mm256_fnmadd_ps(a, b, c); }
  static F mul(F a, F b) { return _mm256_mul_ps(a, b); }
  static F set1_ps(float v) { return _mm256_set1_ps(v); }
  static F load_ps(const float* p) { return _mm256_loadu_ps(p); }
  static void store(float* out, F x, int n) {
    if (n == kLanes) {
      _mm256_storeu_ps(out, x);
      return;
    }
    const I lanes = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    _mm256_maskstore_ps(out, _mm256_cmpgt_epi32(_mm256_set1_epi32(n), lanes), x);
  }
  static void fold_max(F x, int64_t first_column, RunningMax& m) { fold_running_max(x, first_column, m); }
};

#include "quant/kernels/kquant_packed_x86-inl.h"

}  // namespace

TM_PACKED_KQUANT_ENTRIES()

}  // namespace tokenmill::quant::avx2
