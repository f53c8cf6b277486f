// The AVX2 panel kernels of legacy_panels_avx2.h, without VNNI.

#include "quant/kernels/legacy_panels_avx2.h"

namespace tokenmill::quant::avx2 {

void vec_dot_panels_q8_0_q8_0(int64_t n, const void* w, int64_t n_w_rows, const void* a, size_t a_stride,
                              int64_t n_a_rows, float* out, int64_t out_stride, RunningMax* row_max) {
  dot_panels<BlockQ8_0, false>(n, w, n_w_rows, a, a_stride, n_a_rows, out, out_stride, row_max);
}
void vec_dot_panels_q4_0_q8_0(int64_t n, const void* w, int64_t n_w_rows, const void* a, size_t a_stride,
                              int64_t n_a_rows, float* out, int64_t out_stride, RunningMax* row_max) {
  dot_panels<BlockQ4_0, false>(n, w, n_w_rows, a, a_stride, n_a_rows, out, out_stride, row_max);
}
void vec_dot_panels_q5_0_q8_0(int64_t n, const void* w, int64_t n_w_rows, const void* a, size_t a_stride,
                              int64_t n_a_rows, float* out, int64_t out_stride, RunningMax* row_max) {
  dot_panels<BlockQ5_0, false>(n, w, n_w_rows, a, a_stride, n_a_rows, out, out_stride, row_max);
}

}  // namespace tokenmill::quant::avx2
