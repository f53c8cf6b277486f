// AVX2 activation quantizers, bit-identical to the reference ones in quants_legacy.cc
// (Q8_0) and quants_k.cc (Q8_K): the same float operations in the same order per
// element, and the same rounding:
//   Q8_0: q = round half away from zero (x * (1 / d)), d = amax / 127 stored as f16
//   Q8_K: q = min(127, round half to even (x * (-127 / max))), d = 1 / (-127 / max)
// (max: the element of largest magnitude, sign kept, the first one on a tie).

#include <immintrin.h>

#include <cstdint>
#include <cstring>

#include "quant/blocks.h"
#include "quant/kernels/simd_kernels.h"
#include "quant/kernels/x86_helpers.h"

namespace tokenmill::quant::avx2 {

namespace {

// std::round for |v| < 2^23: truncate, then step away from zero where the dropped
// fraction is at least one half. (v - trunc(v) is exact in that range; adding 0.5
// before truncating is not, e.g. for 0.49999997.)
__m256 round_half_away(__m256 v) {
  const __m256 truncated = _mm256_round_ps(v, _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC);
  const __m256 fraction = abs_ps(_mm256_sub_ps(v, truncated));
  const __m256 step_away = _mm256_or_ps(_mm256_and_ps(v, _mm256_set1_ps(-0.0f)), _mm256_set1_ps(1.0f));
  const __m256 needs_step = _mm256_cmp_ps(fraction, _mm256_set1_ps(0.5f), _CMP_GE_OQ);
  return _mm256_add_ps(truncated, _mm256_and_ps(needs_step, step_away));
}

// 32 int32 in four vectors (element order) to 32 int8 with signed saturation.
__m256i pack_32(__m256i i0, __m256i i1, __m256i i2, __m256i i3) {
  // packs work within 128-bit lanes; the permute puts the 8-byte runs back in order.
  const __m256i words = _mm256_packs_epi16(_mm256_packs_epi32(i0, i1), _mm256_packs_epi32(i2, i3));
  return _mm256_permutevar8x32_epi32(words, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
}

}  // namespace

void quantize_row_q8_0(const float* src, void* dst, int64_t n) {
  auto* blocks = static_cast<BlockQ8_0*>(dst);
  for (int64_t b = 0; b < n / kLegacyBlockSize; ++b, src += kLegacyBlockSize) {
    __m256 v[4];
    for (int i = 0; i < 4; ++i) v[i] = _mm256_loadu_ps(src + 8 * i);
    const __m256 amax_v = _mm256_max_ps(_mm256_max_ps(abs_ps(v[0]), abs_ps(v[1])), _mm256_max_ps(abs_ps(v[2]), abs_ps(v[3])));
    const float amax = hmax_ps(amax_v);
    const float d = amax / 127.0f;
    const float inv_d = d != 0.0f ? 1.0f / d : 0.0f;
    const __m256 scale = _mm256_set1_ps(inv_d);
    __m256i q[4];
    for (int i = 0; i < 4; ++i) q[i] = _mm256_cvttps_epi32(round_half_away(_mm256_mul_ps(v[i], scale)));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(blocks[b].qs), pack_32(q[0], q[1], q[2], q[3]));
    blocks[b].d = float_to_half(d);
  }
}

void quantize_row_q8_K(const float* src, void* dst, int64_t n) {
  auto* blocks = static_cast<BlockQ8_K*>(dst);
  constexpr int kVectors = kSuperBlockSize / 8;
  for (int64_t b = 0; b < n / kSuperBlockSize; ++b, src += kSuperBlockSize) {
    BlockQ8_K& block = blocks[b];
    __m256 amax_v = _mm256_setzero_ps();
    for (int i = 0; i < kVectors; ++i) amax_v = _mm256_max_ps(amax_v, abs_ps(_mm256_loadu_ps(src + 8 * i)));
    const float amax = hmax_ps(amax_v);
    if (amax == 0.0f) {
      std::memset(&block, 0, sizeof block);
      continue;
    }
    // The first element of that magnitude, with its sign.
    float max = 0.0f;
    for (int i = 0; i < kVectors; ++i) {
      const int hits = _mm256_movemask_ps(_mm256_cmp_ps(abs_ps(_mm256_loadu_ps(src + 8 * i)), _mm256_set1_ps(amax), _CMP_EQ_OQ));
      if (hits != 0) {
        max = src[8 * i + __builtin_ctz(static_cast<unsigned>(hits))];
        break;
      }
    }
    const float inv = -127.0f / max;
    const __m256 scale = _mm256_set1_ps(inv);
    for (int i = 0; i < kSuperBlockSize / 32; ++i) {
      // cvtps rounds half to even (the default MXCSR mode), as lrintf in the reference.
      __m256i q[4];
      // The min with 127 is the reference's; |inv * x| <= 127 makes it a no-op in practice.
      for (int j = 0; j < 4; ++j) {
        q[j] = _mm256_min_epi32(_mm256_cvtps_epi32(_mm256_mul_ps(_mm256_loadu_ps(src + 32 * i + 8 * j), scale)),
                                _mm256_set1_epi32(127));
      }
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(block.qs + 32 * i), pack_32(q[0], q[1], q[2], q[3]));
      // bsums of the two groups of 16 in these 32 quants.
      const __m256i group_0 = _mm256_add_epi32(q[0], q[1]);
      const __m256i group_1 = _mm256_add_epi32(q[2], q[3]);
      block.bsums[2 * i] = static_cast<int16_t>(hsum_epi32(group_0));
      block.bsums[2 * i + 1] = static_cast<int16_t>(hsum_epi32(group_1));
    }
    block.d = 1.0f / inv;
  }
}

}  // namespace tokenmill::quant::avx2
