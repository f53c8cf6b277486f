// AVX-512 activation quantizers, bit-identical to the references (see
// activations_avx2.cc for the rounding each one must reproduce).

// GCC 12's AVX-512 headers seed some intrinsics with _mm512_undefined_*(), which
// -Wuninitialized then reports at every use: a known false positive.
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

#include <immintrin.h>

#include <cstdint>
#include <cstring>

#include "quant/blocks.h"
#include "quant/kernels/simd_kernels.h"
#include "quant/kernels/x86_helpers.h"

namespace tokenmill::quant::avx512 {

namespace {

// std::round for |v| < 2^23 (see activations_avx2.cc).
__m512 round_half_away(__m512 v) {
  const __m512 truncated = _mm512_roundscale_ps(v, _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC);
  const __m512 fraction = _mm512_abs_ps(_mm512_sub_ps(v, truncated));
  const __mmask16 needs_step = _mm512_cmp_ps_mask(fraction, _mm512_set1_ps(0.5f), _CMP_GE_OQ);
  const __m512 step_away = _mm512_or_ps(_mm512_and_ps(v, _mm512_set1_ps(-0.0f)), _mm512_set1_ps(1.0f));
  return _mm512_mask_add_ps(truncated, needs_step, truncated, step_away);
}

void store_16_bytes(int8_t* dst, __m128i bytes) { _mm_storeu_si128(reinterpret_cast<__m128i*>(dst), bytes); }

}  // namespace

void quantize_row_q8_0(const float* src, void* dst, int64_t n) {
  auto* blocks = static_cast<BlockQ8_0*>(dst);
  for (int64_t b = 0; b < n / kLegacyBlockSize; ++b, src += kLegacyBlockSize) {
    const __m512 v_0 = _mm512_loadu_ps(src);
    const __m512 v_1 = _mm512_loadu_ps(src + 16);
    const float amax = _mm512_reduce_max_ps(_mm512_max_ps(_mm512_abs_ps(v_0), _mm512_abs_ps(v_1)));
    const float d = amax / 127.0f;
    const float inv_d = d != 0.0f ? 1.0f / d : 0.0f;
    const __m512 scale = _mm512_set1_ps(inv_d);
    store_16_bytes(blocks[b].qs, _mm512_cvtsepi32_epi8(_mm512_cvttps_epi32(round_half_away(_mm512_mul_ps(v_0, scale)))));
    store_16_bytes(blocks[b].qs + 16,
                   _mm512_cvtsepi32_epi8(_mm512_cvttps_epi32(round_half_away(_mm512_mul_ps(v_1, scale)))));
    blocks[b].d = float_to_half(d);
  }
}

void quantize_row_q8_K(const float* src, void* dst, int64_t n) {
  auto* blocks = static_cast<BlockQ8_K*>(dst);
  constexpr int kVectors = kSuperBlockSize / 16;  // one vector per bsums group
  for (int64_t b = 0; b < n / kSuperBlockSize; ++b, src += kSuperBlockSize) {
    BlockQ8_K& block = blocks[b];
    __m512 amax_v = _mm512_setzero_ps();
    for (int i = 0; i < kVectors; ++i) amax_v = _mm512_max_ps(amax_v, _mm512_abs_ps(_mm512_loadu_ps(src + 16 * i)));
    const float amax = _mm512_reduce_max_ps(amax_v);
    if (amax == 0.0f) {
      std::memset(&block, 0, sizeof block);
      continue;
    }
    // The first element of that magnitude, with its sign.
    float max = 0.0f;
    for (int i = 0; i < kVectors; ++i) {
      const __mmask16 hits =
          _mm512_cmp_ps_mask(_mm512_abs_ps(_mm512_loadu_ps(src + 16 * i)), _mm512_set1_ps(amax), _CMP_EQ_OQ);
      if (hits != 0) {
        max = src[16 * i + __builtin_ctz(static_cast<unsigned>(hits))];
        break;
      }
    }
    const float inv = -127.0f / max;
    const __m512 scale = _mm512_set1_ps(inv);
    for (int i = 0; i < kVectors; ++i) {
      // cvtps rounds half to even (the default MXCSR mode), as lrintf in the reference;
      // the min with 127 is the reference's (a no-op in practice, |inv * x| <= 127).
      const __m512i q = _mm512_min_epi32(_mm512_cvtps_epi32(_mm512_mul_ps(_mm512_loadu_ps(src + 16 * i), scale)),
                                         _mm512_set1_epi32(127));
      store_16_bytes(block.qs + 16 * i, _mm512_cvtsepi32_epi8(q));
      block.bsums[i] = static_cast<int16_t>(_mm512_reduce_add_epi32(q));
    }
    block.d = 1.0f / inv;
  }
}

}  // namespace tokenmill::quant::avx512
