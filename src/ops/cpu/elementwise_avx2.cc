// AVX2 (+FMA, F16C) versions of the gated activations (elementwise.h). Every element goes
// through the same vector code, the last partial vector through masked loads and stores,
// so a value's result never depends on where a range starts or ends.
//
// Only intrinsics and plain arithmetic here: this file is compiled with -mavx2, and an
// inline function shared with other files could be merged into theirs.
#include <immintrin.h>
#include <math.h>

#include <cstdint>

#include "ops/cpu/elementwise.h"

namespace tokenmill::ops::cpu {

namespace {

__m256i tail_mask(int64_t n_left) {
  const __m256i lanes = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  return _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(n_left)), lanes);
}

// e^x to about 1 ulp for x in [-87.3, 88.7] (clamped outside): x = n ln 2 + r with
// |r| <= ln 2 / 2, e^r by the Cephes polynomial, 2^n through the exponent bits.
__m256 exp_ps(__m256 x) {
  x = _mm256_min_ps(_mm256_max_ps(x, _mm256_set1_ps(-87.3f)), _mm256_set1_ps(88.7f));
  const __m256 n = _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(1.44269504088896341f)),
                                   _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m256 r = _mm256_fnmadd_ps(n, _mm256_set1_ps(0.693359375f), x);
  r = _mm256_fnmadd_ps(n, _mm256_set1_ps(-2.12194440e-4f), r);
  __m256 p = _mm256_set1_ps(1.9875691500e-4f);
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.3981999507e-3f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(8.3334519073e-3f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(4.1665795894e-2f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.6666665459e-1f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(5.0000001201e-1f));
  const __m256 e_r = _mm256_add_ps(_mm256_fmadd_ps(_mm256_mul_ps(p, r), r, r), _mm256_set1_ps(1.0f));
  const __m256i exponent = _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23);
  return _mm256_mul_ps(e_r, _mm256_castsi256_ps(exponent));
}

// GELU as gelu_tanh(): 0 at or below -10, x at or above 10, else the F16 table.
__m256 gelu(__m256 x, const float* table) {
  const __m128i halves = _mm256_cvtps_ph(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  const __m256 looked_up = _mm256_i32gather_ps(table, _mm256_cvtepu16_epi32(halves), 4);
  const __m256 low = _mm256_cmp_ps(x, _mm256_set1_ps(-10.0f), _CMP_LE_OQ);
  const __m256 high = _mm256_cmp_ps(x, _mm256_set1_ps(10.0f), _CMP_GE_OQ);
  return _mm256_blendv_ps(_mm256_andnot_ps(low, looked_up), x, high);
}

__m256 silu(__m256 x) {
  const __m256 e = exp_ps(_mm256_sub_ps(_mm256_setzero_ps(), x));
  return _mm256_div_ps(x, _mm256_add_ps(_mm256_set1_ps(1.0f), e));
}

template <typename Activation>
void gated(const float* gate, const float* up, int64_t n, float* y, Activation activation) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 g = activation(_mm256_loadu_ps(gate + i));
    _mm256_storeu_ps(y + i, _mm256_mul_ps(g, _mm256_loadu_ps(up + i)));
  }
  if (i < n) {
    const __m256i mask = tail_mask(n - i);
    const __m256 g = activation(_mm256_maskload_ps(gate + i, mask));
    _mm256_maskstore_ps(y + i, mask, _mm256_mul_ps(g, _mm256_maskload_ps(up + i, mask)));
  }
}

}  // namespace

void geglu_avx2(const float* gate, const float* up, int64_t n, float* y, const float* gelu_table) {
  gated(gate, up, n, y, [gelu_table](__m256 x) { return gelu(x, gelu_table); });
}

void swiglu_avx2(const float* gate, const float* up, int64_t n, float* y) {
  gated(gate, up, n, y, [](__m256 x) { return silu(x); });
}

namespace {

// kRows rows of rms_norm_row at once: their sums are independent chains, so the adds of
// one row wait on their own previous adds while the other rows' run.
template <int kRows>
void rms_norm_rows_avx2(const float* x, const float* weight, int64_t n, float eps, float* y) {
  // rms_norm_row's sums exactly: eight double lanes, lane j adding the float squares of
  // x[i + j] in order (lanes 0-3 in `low`, 4-7 in `high`), then the lanes in order.
  __m256d low[kRows], high[kRows];
  for (int r = 0; r < kRows; ++r) low[r] = high[r] = _mm256_setzero_pd();
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    for (int r = 0; r < kRows; ++r) {
      const __m256 v = _mm256_loadu_ps(x + r * n + i);
      const __m256 squares = _mm256_mul_ps(v, v);
      low[r] = _mm256_add_pd(low[r], _mm256_cvtps_pd(_mm256_castps256_ps128(squares)));
      high[r] = _mm256_add_pd(high[r], _mm256_cvtps_pd(_mm256_extractf128_ps(squares, 1)));
    }
  }
  for (int r = 0; r < kRows; ++r) {
    const float* row = x + r * n;
    alignas(32) double lanes[8];
    _mm256_store_pd(lanes, low[r]);
    _mm256_store_pd(lanes + 4, high[r]);
    for (int64_t k = i; k < n; ++k) lanes[0] += static_cast<double>(row[k] * row[k]);
    double sum = 0.0;
    for (double lane : lanes) sum += lane;
    const float mean = static_cast<float>(sum / static_cast<double>(n));
    const float scale_value = 1.0f / sqrtf(mean + eps);
    const __m256 scale = _mm256_set1_ps(scale_value);
    float* out = y + r * n;
    int64_t k = 0;
    for (; k + 8 <= n; k += 8) {
      _mm256_storeu_ps(out + k, _mm256_mul_ps(_mm256_mul_ps(_mm256_loadu_ps(row + k), scale), _mm256_loadu_ps(weight + k)));
    }
    for (; k < n; ++k) out[k] = (row[k] * scale_value) * weight[k];
  }
}

}  // namespace

void rms_norm_avx2(const float* x, const float* weight, int64_t n_rows, int64_t n_cols, float eps, float* y) {
  int64_t r = 0;
  for (; r + 4 <= n_rows; r += 4) rms_norm_rows_avx2<4>(x + r * n_cols, weight, n_cols, eps, y + r * n_cols);
  for (; r < n_rows; ++r) rms_norm_rows_avx2<1>(x + r * n_cols, weight, n_cols, eps, y + r * n_cols);
}

}  // namespace tokenmill::ops::cpu
