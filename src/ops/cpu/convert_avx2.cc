// F16C conversions for the CPU back end (compiled with -mavx2 -mfma -mf16c).
#include <immintrin.h>

#include <cstdint>

#include "ops/cpu/attention_kernels.h"

namespace tokenmill::ops::cpu {

void convert_to_f16_avx2(const float* src, uint16_t* dst, int64_t n) {
  constexpr int kRound = _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC;
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + i), _mm256_cvtps_ph(_mm256_loadu_ps(src + i), kRound));
  }
  for (; i < n; ++i) dst[i] = static_cast<uint16_t>(_cvtss_sh(src[i], kRound));
}

}  // namespace tokenmill::ops::cpu
