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
#include <type_traits>

#include "quant/argmax_screen.h"
#include "quant/type_traits.h"

namespace tokenmill::quant {

// Each file exports the one dot product its algorithm computes per type (a single row,
// one weight row against many activation rows, or a matrix tile); the traits table
// derives the narrower forms from it (type_traits.cc). Arguments as in type_traits.h's
// function types.

namespace avx2 {
// lattice_avx2.cc (body lattice_x86-inl.h): the lattice i-quants, one weight row,
// activation rows in tiles of 4.
#define TM_LATTICE_ROWS_DECL(name)                                                                         \
  void vec_dot_rows_##name##_q8_K(int64_t n, const void* w, const void* a, size_t a_stride, int64_t n_a_rows, \
                                  float* out, int64_t out_stride);
TM_LATTICE_ROWS_DECL(iq2_xxs)
TM_LATTICE_ROWS_DECL(iq2_xs)
TM_LATTICE_ROWS_DECL(iq2_s)
TM_LATTICE_ROWS_DECL(iq3_xxs)
TM_LATTICE_ROWS_DECL(iq3_s)
TM_LATTICE_ROWS_DECL(iq1_s)
TM_LATTICE_ROWS_DECL(iq1_m)
#undef TM_LATTICE_ROWS_DECL
// iquants_avx2.cc (body iq4_x86-inl.h, IQ4_NL, IQ4_XS and MXFP4): one weight row,
// activation rows in tiles of 4.
void vec_dot_rows_iq4_nl_q8_0(int64_t n, const void* w, const void* a, size_t a_stride, int64_t n_a_rows,
                              float* out, int64_t out_stride);
void vec_dot_rows_iq4_xs_q8_K(int64_t n, const void* w, const void* a, size_t a_stride, int64_t n_a_rows,
                              float* out, int64_t out_stride);
void vec_dot_rows_mxfp4_q8_0(int64_t n, const void* w, const void* a, size_t a_stride, int64_t n_a_rows,
                             float* out, int64_t out_stride);
// TQ1_0 / TQ2_0 rows (ternary_x86-inl.h), activation rows in tiles of 4.
void vec_dot_rows_tq1_0_q8_K(int64_t n, const void* w, const void* a, size_t a_stride, int64_t n_a_rows,
                             float* out, int64_t out_stride);
void vec_dot_rows_tq2_0_q8_K(int64_t n, const void* w, const void* a, size_t a_stride, int64_t n_a_rows,
                             float* out, int64_t out_stride);
void vec_dot_panels_mxfp4_q8_0(int64_t n, const void* w, int64_t n_w_rows, const void* a, size_t a_stride,
                               int64_t n_a_rows, float* out, int64_t out_stride, RunningMax* row_max);
// floats_avx2.cc
float vec_dot_f32(int64_t n, const void* w, const void* a);
float vec_dot_f16(int64_t n, const void* w, const void* a);
float vec_dot_bf16(int64_t n, const void* w, const void* a);
// legacy_avx2.cc: one weight row, activation rows in tiles of 4.
void vec_dot_rows_q4_0_q8_0(int64_t n, const void* w, const void* a, size_t a_stride, int64_t n_a_rows,
                            float* out, int64_t out_stride);
void vec_dot_rows_q4_1_q8_1(int64_t n, const void* w, const void* a, size_t a_stride, int64_t n_a_rows,
                            float* out, int64_t out_stride);
void vec_dot_rows_q5_0_q8_0(int64_t n, const void* w, const void* a, size_t a_stride, int64_t n_a_rows,
                            float* out, int64_t out_stride);
void vec_dot_rows_q5_1_q8_1(int64_t n, const void* w, const void* a, size_t a_stride, int64_t n_a_rows,
                            float* out, int64_t out_stride);
void vec_dot_rows_q8_0_q8_0(int64_t n, const void* w, const void* a, size_t a_stride, int64_t n_a_rows,
                            float* out, int64_t out_stride);
// legacy_panels_avx2.cc: weights in quant/panel_layout.h's layout, bit-identical to the
// row kernels above (and to the AVX-512 kernels) on the same rows.
void vec_dot_panels_q4_0_q8_0(int64_t n, const void* w, int64_t n_w_rows, const void* a, size_t a_stride,
                              int64_t n_a_rows, float* out, int64_t out_stride, RunningMax* row_max);
void vec_dot_panels_q5_0_q8_0(int64_t n, const void* w, int64_t n_w_rows, const void* a, size_t a_stride,
                              int64_t n_a_rows, float* out, int64_t out_stride, RunningMax* row_max);
void vec_dot_panels_q8_0_q8_0(int64_t n, const void* w, int64_t n_w_rows, const void* a, size_t a_stride,
                              int64_t n_a_rows, float* out, int64_t out_stride, RunningMax* row_max);
// kquants_low_avx2.cc: rows only.
float vec_dot_q2_K_q8_K(int64_t n, const void* w, const void* a);
float vec_dot_q3_K_q8_K(int64_t n, const void* w, const void* a);
// kquants_avx2.cc (one weight row) and kquants_panels_avx2.cc (8-row panels from 4
// activation rows on, the row kernel below that): bit-identical to each other and to
// the AVX-512 K-quant kernels on the same rows.
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
// activations_avx2.cc
void quantize_row_q8_0(const float* src, void* dst, int64_t n);
void quantize_row_q8_K(const float* src, void* dst, int64_t n);
// kquants_packed_avx2.cc (the _unprefetched ones: a tuning variant, the same bits)
void vec_dot_panels_q4_K_q8_K(int64_t n, const void* w, int64_t n_w_rows, const void* a, size_t a_stride,
                              int64_t n_a_rows, float* out, int64_t out_stride, RunningMax* row_max);
void vec_dot_panels_q4_K_q8_K_unprefetched(int64_t n, const void* w, int64_t n_w_rows, const void* a,
                                          size_t a_stride, int64_t n_a_rows, float* out, int64_t out_stride,
                                          RunningMax* row_max);
void vec_dot_panels_q5_K_q8_K(int64_t n, const void* w, int64_t n_w_rows, const void* a, size_t a_stride,
                              int64_t n_a_rows, float* out, int64_t out_stride, RunningMax* row_max);
void vec_dot_panels_q5_K_q8_K_unprefetched(int64_t n, const void* w, int64_t n_w_rows, const void* a,
                                          size_t a_stride, int64_t n_a_rows, float* out, int64_t out_stride,
                                          RunningMax* row_max);
void vec_dot_panels_q6_K_q8_K(int64_t n, const void* w, int64_t n_w_rows, const void* a, size_t a_stride,
                              int64_t n_a_rows, float* out, int64_t out_stride, RunningMax* row_max);
void vec_dot_panels_iq4_xs_q8_K(int64_t n, const void* w, int64_t n_w_rows, const void* a, size_t a_stride,
                                int64_t n_a_rows, float* out, int64_t out_stride, RunningMax* row_max);
void vec_dot_panels_iq4_xs_q8_K_unprefetched(int64_t n, const void* w, int64_t n_w_rows, const void* a,
                                             size_t a_stride, int64_t n_a_rows, float* out, int64_t out_stride,
                                             RunningMax* row_max);
}  // namespace avx2

// legacy_panels_avxvnni.cc: avx2::vec_dot_panels_* with AVX-VNNI (compiled with -mavxvnni
// as well; call only where CpuFeatures::has_avx_vnni_kernels()). The same bits.
namespace avx_vnni {
void vec_dot_panels_q4_0_q8_0(int64_t n, const void* w, int64_t n_w_rows, const void* a, size_t a_stride,
                              int64_t n_a_rows, float* out, int64_t out_stride, RunningMax* row_max);
void vec_dot_panels_q5_0_q8_0(int64_t n, const void* w, int64_t n_w_rows, const void* a, size_t a_stride,
                              int64_t n_a_rows, float* out, int64_t out_stride, RunningMax* row_max);
void vec_dot_panels_q8_0_q8_0(int64_t n, const void* w, int64_t n_w_rows, const void* a, size_t a_stride,
                              int64_t n_a_rows, float* out, int64_t out_stride, RunningMax* row_max);
}  // namespace avx_vnni

// Every AVX-512 dot product is a matrix kernel (its one-row forms are one-row matrices).
namespace avx512 {
// lattice_avx512.cc (body lattice_x86-inl.h): the lattice i-quants, one weight row,
// activation rows in tiles of 4.
#define TM_LATTICE_ROWS_DECL(name)                                                                         \
  void vec_dot_rows_##name##_q8_K(int64_t n, const void* w, const void* a, size_t a_stride, int64_t n_a_rows, \
                                  float* out, int64_t out_stride);
TM_LATTICE_ROWS_DECL(iq2_xxs)
TM_LATTICE_ROWS_DECL(iq2_xs)
TM_LATTICE_ROWS_DECL(iq2_s)
TM_LATTICE_ROWS_DECL(iq3_xxs)
TM_LATTICE_ROWS_DECL(iq3_s)
TM_LATTICE_ROWS_DECL(iq1_s)
TM_LATTICE_ROWS_DECL(iq1_m)
#undef TM_LATTICE_ROWS_DECL
// iquants_avx512.cc (body iq4_x86-inl.h, IQ4_NL, IQ4_XS and MXFP4): one weight row,
// activation rows in tiles of 4.
void vec_dot_rows_iq4_nl_q8_0(int64_t n, const void* w, const void* a, size_t a_stride, int64_t n_a_rows,
                              float* out, int64_t out_stride);
void vec_dot_rows_iq4_xs_q8_K(int64_t n, const void* w, const void* a, size_t a_stride, int64_t n_a_rows,
                              float* out, int64_t out_stride);
void vec_dot_rows_mxfp4_q8_0(int64_t n, const void* w, const void* a, size_t a_stride, int64_t n_a_rows,
                             float* out, int64_t out_stride);
// TQ1_0 / TQ2_0 rows (ternary_x86-inl.h), activation rows in tiles of 4.
void vec_dot_rows_tq1_0_q8_K(int64_t n, const void* w, const void* a, size_t a_stride, int64_t n_a_rows,
                             float* out, int64_t out_stride);
void vec_dot_rows_tq2_0_q8_K(int64_t n, const void* w, const void* a, size_t a_stride, int64_t n_a_rows,
                             float* out, int64_t out_stride);
void vec_dot_panels_mxfp4_q8_0(int64_t n, const void* w, int64_t n_w_rows, const void* a, size_t a_stride,
                               int64_t n_a_rows, float* out, int64_t out_stride, RunningMax* row_max);
// floats_avx512.cc
float vec_dot_f32(int64_t n, const void* w, const void* a);
float vec_dot_f16(int64_t n, const void* w, const void* a);
float vec_dot_bf16(int64_t n, const void* w, const void* a);
// legacy_avx512.cc; the panels in quant/panel_layout.h's layout (n_w_rows a multiple of
// 16), bit-identical to the matrix kernel of the same type on the same rows.
void vec_dot_matrix_q4_0_q8_0(int64_t n, const void* w, size_t w_stride, int64_t n_w_rows, const void* a,
                              size_t a_stride, int64_t n_a_rows, float* out, int64_t out_stride);
void vec_dot_matrix_q4_1_q8_1(int64_t n, const void* w, size_t w_stride, int64_t n_w_rows, const void* a,
                              size_t a_stride, int64_t n_a_rows, float* out, int64_t out_stride);
void vec_dot_matrix_q5_0_q8_0(int64_t n, const void* w, size_t w_stride, int64_t n_w_rows, const void* a,
                              size_t a_stride, int64_t n_a_rows, float* out, int64_t out_stride);
void vec_dot_matrix_q5_1_q8_1(int64_t n, const void* w, size_t w_stride, int64_t n_w_rows, const void* a,
                              size_t a_stride, int64_t n_a_rows, float* out, int64_t out_stride);
void vec_dot_matrix_q8_0_q8_0(int64_t n, const void* w, size_t w_stride, int64_t n_w_rows, const void* a,
                              size_t a_stride, int64_t n_a_rows, float* out, int64_t out_stride);
void vec_dot_panels_q4_0_q8_0(int64_t n, const void* w, int64_t n_w_rows, const void* a, size_t a_stride,
                              int64_t n_a_rows, float* out, int64_t out_stride, RunningMax* row_max);
void vec_dot_panels_q5_0_q8_0(int64_t n, const void* w, int64_t n_w_rows, const void* a, size_t a_stride,
                              int64_t n_a_rows, float* out, int64_t out_stride, RunningMax* row_max);
void vec_dot_panels_q8_0_q8_0(int64_t n, const void* w, int64_t n_w_rows, const void* a, size_t a_stride,
                              int64_t n_a_rows, float* out, int64_t out_stride, RunningMax* row_max);
// kquants_low_avx512.cc and kquants_avx512.cc
void vec_dot_matrix_q2_K_q8_K(int64_t n, const void* w, size_t w_stride, int64_t n_w_rows, const void* a,
                              size_t a_stride, int64_t n_a_rows, float* out, int64_t out_stride);
void vec_dot_matrix_q3_K_q8_K(int64_t n, const void* w, size_t w_stride, int64_t n_w_rows, const void* a,
                              size_t a_stride, int64_t n_a_rows, float* out, int64_t out_stride);
void vec_dot_matrix_q4_K_q8_K(int64_t n, const void* w, size_t w_stride, int64_t n_w_rows, const void* a,
                              size_t a_stride, int64_t n_a_rows, float* out, int64_t out_stride);
void vec_dot_matrix_q5_K_q8_K(int64_t n, const void* w, size_t w_stride, int64_t n_w_rows, const void* a,
                              size_t a_stride, int64_t n_a_rows, float* out, int64_t out_stride);
void vec_dot_matrix_q6_K_q8_K(int64_t n, const void* w, size_t w_stride, int64_t n_w_rows, const void* a,
                              size_t a_stride, int64_t n_a_rows, float* out, int64_t out_stride);
void vec_dot_panels_q4_K_q8_K(int64_t n, const void* w, int64_t n_w_rows, const void* a, size_t a_stride,
                              int64_t n_a_rows, float* out, int64_t out_stride, RunningMax* row_max);
void vec_dot_panels_q5_K_q8_K(int64_t n, const void* w, int64_t n_w_rows, const void* a, size_t a_stride,
                              int64_t n_a_rows, float* out, int64_t out_stride, RunningMax* row_max);
void vec_dot_panels_q6_K_q8_K(int64_t n, const void* w, int64_t n_w_rows, const void* a, size_t a_stride,
                              int64_t n_a_rows, float* out, int64_t out_stride, RunningMax* row_max);
void vec_dot_panels_iq4_xs_q8_K(int64_t n, const void* w, int64_t n_w_rows, const void* a, size_t a_stride,
                                int64_t n_a_rows, float* out, int64_t out_stride, RunningMax* row_max);
// The same without software prefetch of the weights (a tuning variant, the same bits).
void vec_dot_panels_iq4_xs_q8_K_unprefetched(int64_t n, const void* w, int64_t n_w_rows, const void* a,
                                             size_t a_stride, int64_t n_a_rows, float* out, int64_t out_stride,
                                             RunningMax* row_max);
void vec_dot_panels_q4_K_q8_K_unprefetched(int64_t n, const void* w, int64_t n_w_rows, const void* a,
                                          size_t a_stride, int64_t n_a_rows, float* out, int64_t out_stride,
                                          RunningMax* row_max);
void vec_dot_panels_q5_K_q8_K_unprefetched(int64_t n, const void* w, int64_t n_w_rows, const void* a,
                                          size_t a_stride, int64_t n_a_rows, float* out, int64_t out_stride,
                                          RunningMax* row_max);
// activations_avx512.cc
void quantize_row_q8_0(const float* src, void* dst, int64_t n);
void quantize_row_q8_K(const float* src, void* dst, int64_t n);
}  // namespace avx512

// The AVX-512 packed-panel kernels with their whole tiles of 16 activation rows on AMX
// (legacy_avx512.cc, tiles in legacy_amx.cc): bit-identical to avx512's. Only where
// cpu_features().has_amx_kernels().
namespace amx {
void vec_dot_panels_q4_0_q8_0(int64_t n, const void* w, int64_t n_w_rows, const void* a, size_t a_stride,
                              int64_t n_a_rows, float* out, int64_t out_stride, RunningMax* row_max);
void vec_dot_panels_q5_0_q8_0(int64_t n, const void* w, int64_t n_w_rows, const void* a, size_t a_stride,
                              int64_t n_a_rows, float* out, int64_t out_stride, RunningMax* row_max);
void vec_dot_panels_q8_0_q8_0(int64_t n, const void* w, int64_t n_w_rows, const void* a, size_t a_stride,
                              int64_t n_a_rows, float* out, int64_t out_stride, RunningMax* row_max);
// argmax_screen_amx.cc: quant::fill_argmax_screen and quant::screen_panels
// (quant/argmax_screen.h), the screen itself on AMX tiles.
bool fill_screen_panels(ArgmaxScreen& screen, const uint8_t* panels, int64_t first_panel, int64_t last_panel);
void screen_panels(const ArgmaxScreen& screen, int64_t first_panel, int64_t last_panel, const int8_t* y,
                   const int8_t* z, const ScreenToken* tokens, int64_t n_tokens, ScreenCandidates* candidates);
}  // namespace amx

// dot_neon.cc (namespace neon, every arm64 CPU) and dot_neon_dotprod.cc (namespace
// neon_dotprod, CpuFeatures::dotprod): one body (dot_neon-inl.h), the bits of the x86
// row kernels above. Only on arm64 builds. Each is a VecDotRowsFn (type_traits.h).
using NeonDotRows = std::remove_pointer_t<VecDotRowsFn>;
#define TM_NEON_DOT_ROWS \
  NeonDotRows vec_dot_rows_q4_0_q8_0, vec_dot_rows_q5_0_q8_0, vec_dot_rows_q8_0_q8_0, vec_dot_rows_iq4_nl_q8_0, \
      vec_dot_rows_mxfp4_q8_0, vec_dot_rows_q4_K_q8_K, vec_dot_rows_q5_K_q8_K, vec_dot_rows_q6_K_q8_K, \
      vec_dot_rows_iq4_xs_q8_K, vec_dot_rows_iq2_xxs_q8_K, vec_dot_rows_iq2_xs_q8_K, \
      vec_dot_rows_iq2_s_q8_K, vec_dot_rows_iq3_xxs_q8_K, vec_dot_rows_iq3_s_q8_K, \
      vec_dot_rows_iq1_s_q8_K, vec_dot_rows_iq1_m_q8_K, \
      vec_dot_rows_tq1_0_q8_K, vec_dot_rows_tq2_0_q8_K;
namespace neon {
TM_NEON_DOT_ROWS
// floats_neon.cc: the AVX2 floats' bits.
float vec_dot_f32(int64_t n, const void* w, const void* a);
float vec_dot_f16(int64_t n, const void* w, const void* a);
float vec_dot_bf16(int64_t n, const void* w, const void* a);
}  // namespace neon
namespace neon_dotprod {
TM_NEON_DOT_ROWS
}  // namespace neon_dotprod
#undef TM_NEON_DOT_ROWS

}  // namespace tokenmill::quant
