// Internal to quant/: the per-instruction-set kernels that fill the avx2 / avx512
// columns of the traits table. Same contracts as the reference kernels in
// kernels_ref.h and the function types of type_traits.h.
//
// The functions in avx2:: are compiled with -mavx2 -mfma -mf16c, those in avx512:: with
// -mavx512{f,bw,dq,vl,vnni} as well (cmake/layers.cmake). Calling one on a CPU without
// those instructions is an illegal-instruction crash: go through dispatch.h, or check
// cpu_features() first as the tests do.
#pragma once

#include <cstddef>
#include <cstdint>

#include "quant/type_traits.h"

namespace tokenmill::quant {

// floats_avx2.cc, legacy_avx2.cc, kquants_avx2.cc, kquants_low_avx2.cc, activations_avx2.cc
namespace avx2 {
float vec_dot_f32(int64_t n, const void* w, const void* a);
float vec_dot_bf16(int64_t n, const void* w, const void* a);
float vec_dot_q4_1_q8_1(int64_t n, const void* w, const void* a);
float vec_dot_q5_1_q8_1(int64_t n, const void* w, const void* a);
void vec_dot_rows_q4_1_q8_1(int64_t n, const void* w, const void* a, size_t a_stride, int64_t n_a_rows,
                            float* out, int64_t out_stride);
void vec_dot_rows_q5_1_q8_1(int64_t n, const void* w, const void* a, size_t a_stride, int64_t n_a_rows,
                            float* out, int64_t out_stride);
float vec_dot_f16(int64_t n, const void* w, const void* a);
float vec_dot_q4_0_q8_0(int64_t n, const void* w, const void* a);
float vec_dot_q5_0_q8_0(int64_t n, const void* w, const void* a);
float vec_dot_q8_0_q8_0(int64_t n, const void* w, const void* a);
float vec_dot_q4_K_q8_K(int64_t n, const void* w, const void* a);
float vec_dot_q5_K_q8_K(int64_t n, const void* w, const void* a);
float vec_dot_q6_K_q8_K(int64_t n, const void* w, const void* a);
float vec_dot_q2_K_q8_K(int64_t n, const void* w, const void* a);
float vec_dot_q3_K_q8_K(int64_t n, const void* w, const void* a);
void vec_dot_rows_q4_0_q8_0(int64_t n, const void* w, const void* a, size_t a_stride, int64_t n_a_rows,
                            float* out, int64_t out_stride);
void vec_dot_rows_q5_0_q8_0(int64_t n, const void* w, const void* a, size_t a_stride, int64_t n_a_rows,
                            float* out, int64_t out_stride);
void vec_dot_rows_q8_0_q8_0(int64_t n, const void* w, const void* a, size_t a_stride, int64_t n_a_rows,
                            float* out, int64_t out_stride);
// kquants_avx2.cc (rows) and kquants_panels_avx2.cc (matrices): bit-identical to each
// other and to the AVX-512 K-quant kernels on the same rows.
void vec_dot_rows_q4_K_q8_K(int64_t n, const void* w, const void* a, size_t a_stride, int64_t n_a_rows,
                            float* out, int64_t out_stride);
void vec_dot_rows_q5_K_q8_K(int64_t n, const void* w, const void* a, size_t a_stride, int64_t n_a_rows,
                            float* out, int64_t out_stride);
void vec_dot_rows_q6_K_q8_K(int64_t n, const void* w, const void* a, size_t a_stride, int64_t n_a_rows,
                            float* out, int64_t out_stride);
void vec_dot_matrix_q4_K_q8_K(int64_t n, const void* w, size_t w_stride, int64_t n_w_rows, const void* a,
                              size_t a_stride, int64_t n_a_rows, float* out, int64_t out_stride);
void vec_dot_matrix_q5_K_q8_K(int64_t n, const void* w, size_t w_stride, int64_t n_w_rows, const void* a,
                              size_t a_stride, int64_t n_a_rows, float* out, int64_t out_stride);
void vec_dot_matrix_q6_K_q8_K(int64_t n, const void* w, size_t w_stride, int64_t n_w_rows, const void* a,
                              size_t a_stride, int64_t n_a_rows, float* out, int64_t out_stride);
// legacy_panels_avx2.cc: weights in quant/panel_layout.h's layout, bit-identical to the
// row kernels above (and to the AVX-512 kernels) on the same rows.
void vec_dot_panels_q8_0_q8_0(int64_t n, const void* w, int64_t n_w_rows, const void* a, size_t a_stride,
                              int64_t n_a_rows, float* out, int64_t out_stride, RunningMax* row_max);
void vec_dot_panels_q4_0_q8_0(int64_t n, const void* w, int64_t n_w_rows, const void* a, size_t a_stride,
                              int64_t n_a_rows, float* out, int64_t out_stride, RunningMax* row_max);
void vec_dot_panels_q5_0_q8_0(int64_t n, const void* w, int64_t n_w_rows, const void* a, size_t a_stride,
                              int64_t n_a_rows, float* out, int64_t out_stride, RunningMax* row_max);
void quantize_row_q8_0(const float* src, void* dst, int64_t n);
void quantize_row_q8_K(const float* src, void* dst, int64_t n);
}  // namespace avx2

// legacy_panels_avxvnni.cc: avx2::vec_dot_panels_* with AVX-VNNI (compiled with -mavxvnni
// as well; call only where CpuFeatures::has_avx_vnni_kernels()). The same bits.
namespace avx_vnni {
void vec_dot_panels_q8_0_q8_0(int64_t n, const void* w, int64_t n_w_rows, const void* a, size_t a_stride,
                              int64_t n_a_rows, float* out, int64_t out_stride, RunningMax* row_max);
void vec_dot_panels_q4_0_q8_0(int64_t n, const void* w, int64_t n_w_rows, const void* a, size_t a_stride,
                              int64_t n_a_rows, float* out, int64_t out_stride, RunningMax* row_max);
void vec_dot_panels_q5_0_q8_0(int64_t n, const void* w, int64_t n_w_rows, const void* a, size_t a_stride,
                              int64_t n_a_rows, float* out, int64_t out_stride, RunningMax* row_max);
}  // namespace avx_vnni

// floats_avx512.cc, legacy_avx512.cc, kquants_avx512.cc, kquants_low_avx512.cc,
// activations_avx512.cc
namespace avx512 {
float vec_dot_f32(int64_t n, const void* w, const void* a);
float vec_dot_bf16(int64_t n, const void* w, const void* a);
// Weights in quant/panel_layout.h's layout (n_w_rows a multiple of 16), bit-identical to
// the vec_dot_matrix kernel of the same type on the same rows.
void vec_dot_panels_q8_0_q8_0(int64_t n, const void* w, int64_t n_w_rows, const void* a, size_t a_stride,
                              int64_t n_a_rows, float* out, int64_t out_stride, RunningMax* row_max);
void vec_dot_panels_q4_0_q8_0(int64_t n, const void* w, int64_t n_w_rows, const void* a, size_t a_stride,
                              int64_t n_a_rows, float* out, int64_t out_stride, RunningMax* row_max);
void vec_dot_panels_q5_0_q8_0(int64_t n, const void* w, int64_t n_w_rows, const void* a, size_t a_stride,
                              int64_t n_a_rows, float* out, int64_t out_stride, RunningMax* row_max);
float vec_dot_q4_1_q8_1(int64_t n, const void* w, const void* a);
float vec_dot_q5_1_q8_1(int64_t n, const void* w, const void* a);
void vec_dot_rows_q4_1_q8_1(int64_t n, const void* w, const void* a, size_t a_stride, int64_t n_a_rows,
                            float* out, int64_t out_stride);
void vec_dot_rows_q5_1_q8_1(int64_t n, const void* w, const void* a, size_t a_stride, int64_t n_a_rows,
                            float* out, int64_t out_stride);
void vec_dot_matrix_q4_1_q8_1(int64_t n, const void* w, size_t w_stride, int64_t n_w_rows, const void* a,
                              size_t a_stride, int64_t n_a_rows, float* out, int64_t out_stride);
void vec_dot_matrix_q5_1_q8_1(int64_t n, const void* w, size_t w_stride, int64_t n_w_rows, const void* a,
                              size_t a_stride, int64_t n_a_rows, float* out, int64_t out_stride);
float vec_dot_f16(int64_t n, const void* w, const void* a);
float vec_dot_q4_0_q8_0(int64_t n, const void* w, const void* a);
float vec_dot_q5_0_q8_0(int64_t n, const void* w, const void* a);
float vec_dot_q8_0_q8_0(int64_t n, const void* w, const void* a);
float vec_dot_q4_K_q8_K(int64_t n, const void* w, const void* a);
float vec_dot_q5_K_q8_K(int64_t n, const void* w, const void* a);
float vec_dot_q6_K_q8_K(int64_t n, const void* w, const void* a);
void vec_dot_rows_q4_0_q8_0(int64_t n, const void* w, const void* a, size_t a_stride, int64_t n_a_rows,
                            float* out, int64_t out_stride);
void vec_dot_rows_q5_0_q8_0(int64_t n, const void* w, const void* a, size_t a_stride, int64_t n_a_rows,
                            float* out, int64_t out_stride);
void vec_dot_rows_q8_0_q8_0(int64_t n, const void* w, const void* a, size_t a_stride, int64_t n_a_rows,
                            float* out, int64_t out_stride);
void vec_dot_rows_q4_K_q8_K(int64_t n, const void* w, const void* a, size_t a_stride, int64_t n_a_rows,
                            float* out, int64_t out_stride);
void vec_dot_rows_q5_K_q8_K(int64_t n, const void* w, const void* a, size_t a_stride, int64_t n_a_rows,
                            float* out, int64_t out_stride);
void vec_dot_rows_q6_K_q8_K(int64_t n, const void* w, const void* a, size_t a_stride, int64_t n_a_rows,
                            float* out, int64_t out_stride);
void vec_dot_matrix_q4_K_q8_K(int64_t n, const void* w, size_t w_stride, int64_t n_w_rows, const void* a,
                              size_t a_stride, int64_t n_a_rows, float* out, int64_t out_stride);
void vec_dot_matrix_q5_K_q8_K(int64_t n, const void* w, size_t w_stride, int64_t n_w_rows, const void* a,
                              size_t a_stride, int64_t n_a_rows, float* out, int64_t out_stride);
void vec_dot_matrix_q6_K_q8_K(int64_t n, const void* w, size_t w_stride, int64_t n_w_rows, const void* a,
                              size_t a_stride, int64_t n_a_rows, float* out, int64_t out_stride);
// Q2_K / Q3_K (kquants_low_avx512.cc): rows and matrix bit-identical to vec_dot.
float vec_dot_q2_K_q8_K(int64_t n, const void* w, const void* a);
float vec_dot_q3_K_q8_K(int64_t n, const void* w, const void* a);
void vec_dot_rows_q2_K_q8_K(int64_t n, const void* w, const void* a, size_t a_stride, int64_t n_a_rows,
                            float* out, int64_t out_stride);
void vec_dot_rows_q3_K_q8_K(int64_t n, const void* w, const void* a, size_t a_stride, int64_t n_a_rows,
                            float* out, int64_t out_stride);
void vec_dot_matrix_q2_K_q8_K(int64_t n, const void* w, size_t w_stride, int64_t n_w_rows, const void* a,
                              size_t a_stride, int64_t n_a_rows, float* out, int64_t out_stride);
void vec_dot_matrix_q3_K_q8_K(int64_t n, const void* w, size_t w_stride, int64_t n_w_rows, const void* a,
                              size_t a_stride, int64_t n_a_rows, float* out, int64_t out_stride);
void vec_dot_matrix_q4_0_q8_0(int64_t n, const void* w, size_t w_stride, int64_t n_w_rows, const void* a,
                              size_t a_stride, int64_t n_a_rows, float* out, int64_t out_stride);
void vec_dot_matrix_q5_0_q8_0(int64_t n, const void* w, size_t w_stride, int64_t n_w_rows, const void* a,
                              size_t a_stride, int64_t n_a_rows, float* out, int64_t out_stride);
void vec_dot_matrix_q8_0_q8_0(int64_t n, const void* w, size_t w_stride, int64_t n_w_rows, const void* a,
                              size_t a_stride, int64_t n_a_rows, float* out, int64_t out_stride);
void quantize_row_q8_0(const float* src, void* dst, int64_t n);
void quantize_row_q8_K(const float* src, void* dst, int64_t n);
}  // namespace avx512

}  // namespace tokenmill::quant
