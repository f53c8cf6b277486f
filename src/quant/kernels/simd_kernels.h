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

// The kernels' function types (type_traits.h's pointer types, as declarators): each file
// exports the one dot product its algorithm computes per type (a single row, one weight
// row against many activation rows, or a matrix tile); the traits table derives the
// narrower forms from it (type_traits.cc).
using DotOneRow = std::remove_pointer_t<VecDotFn>;
using DotRows = std::remove_pointer_t<VecDotRowsFn>;
using DotMatrix = std::remove_pointer_t<VecDotMatrixFn>;
using DotPanels = std::remove_pointer_t<VecDotPanelsFn>;
using QuantizeRow = std::remove_pointer_t<QuantizeRowFn>;

// Defines the exported kernel `name` as `body` (a template instance taking the same
// arguments), one line per entry point in the kernel files.
#define TM_DOT_ROWS_ENTRY(name, ...)                                                                \
  void name(int64_t n, const void* w, const void* a, size_t a_stride, int64_t n_a_rows, float* out, \
            int64_t out_stride) {                                                                   \
    __VA_ARGS__(n, w, a, a_stride, n_a_rows, out, out_stride);                                      \
  }
#define TM_DOT_MATRIX_ENTRY(name, ...)                                                                   \
  void name(int64_t n, const void* w, size_t w_stride, int64_t n_w_rows, const void* a, size_t a_stride, \
            int64_t n_a_rows, float* out, int64_t out_stride) {                                          \
    __VA_ARGS__(n, w, w_stride, n_w_rows, a, a_stride, n_a_rows, out, out_stride);                       \
  }
#define TM_DOT_PANELS_ENTRY(name, ...)                                                                    \
  void name(int64_t n, const void* w, int64_t n_w_rows, const void* a, size_t a_stride, int64_t n_a_rows, \
            float* out, int64_t out_stride, RunningMax* row_max) {                                        \
    __VA_ARGS__(n, w, n_w_rows, a, a_stride, n_a_rows, out, out_stride, row_max);                         \
  }

// The activation rows a matrix kernel takes at a time when it reads them again for every
// weight row: a block small enough to stay in L2 while the weight rows pass it (a
// 512-token prompt of 2048 columns is 1.2 MB as Q8_K, which would be streamed from L3).
inline constexpr size_t kActivationBlockBytes = 256 * 1024;

// What both x86 widths export from one body each:
// - lattice_*.cc (lattice_x86-inl.h): the lattice i-quants, one weight row, activation
//   rows in tiles of 4, and for the formats without IQ1's shift a matrix kernel that
//   unpacks two weight rows at a time for prefill; for IQ3_XXS and IQ3_S also the same
//   kernels reading the grid rows by vector gathers (_gathered: a tuning variant, the
//   same bits);
// - iquants_*.cc (iq4_x86-inl.h, ternary_x86-inl.h): IQ4_NL, IQ4_XS, MXFP4, TQ1_0 and
//   TQ2_0 the same way, MXFP4's panels, and for TQ1_0/TQ2_0 a matrix kernel that
//   unpacks the trits of several weight rows at a time for prefill;
// - floats_*.cc (floats_simd-inl.h) and activations_*.cc.
#define TM_X86_SHARED_KERNELS                                                                               \
  DotRows vec_dot_rows_iq2_xxs_q8_K, vec_dot_rows_iq2_xs_q8_K, vec_dot_rows_iq2_s_q8_K,                     \
      vec_dot_rows_iq3_xxs_q8_K, vec_dot_rows_iq3_s_q8_K, vec_dot_rows_iq1_s_q8_K, vec_dot_rows_iq1_m_q8_K, \
      vec_dot_rows_iq4_nl_q8_0, vec_dot_rows_iq4_xs_q8_K, vec_dot_rows_mxfp4_q8_0, vec_dot_rows_tq1_0_q8_K, \
      vec_dot_rows_tq2_0_q8_K;                                                                              \
  DotMatrix vec_dot_matrix_iq2_xxs_q8_K, vec_dot_matrix_iq2_xs_q8_K, vec_dot_matrix_iq2_s_q8_K,             \
      vec_dot_matrix_iq3_xxs_q8_K, vec_dot_matrix_iq3_s_q8_K, vec_dot_matrix_tq1_0_q8_K,                    \
      vec_dot_matrix_tq2_0_q8_K;                                                                            \
  DotRows vec_dot_rows_iq3_xxs_q8_K_gathered, vec_dot_rows_iq3_s_q8_K_gathered;                             \
  DotMatrix vec_dot_matrix_iq3_xxs_q8_K_gathered, vec_dot_matrix_iq3_s_q8_K_gathered;                       \
  DotPanels vec_dot_panels_mxfp4_q8_0;                                                                      \
  DotOneRow vec_dot_f32, vec_dot_f16, vec_dot_bf16;                                                         \
  DotRows vec_dot_rows_f32, vec_dot_rows_f16, vec_dot_rows_bf16;                                            \
  QuantizeRow quantize_row_q8_0, quantize_row_q8_K;

// The panels of both widths in quant/panel_layout.h's layout (the _unprefetched ones: a
// tuning variant without software prefetch of the weights, the same bits), bit-identical
// to the row or matrix kernels of the same type on the same rows and across the widths:
// legacy_panels_avx2.cc / legacy_avx512.cc, kquants_packed_avx2.cc / kquants_avx512.cc
// (one body, kquant_packed_x86-inl.h).
#define TM_X86_PANEL_KERNELS                                                                       \
  DotPanels vec_dot_panels_q4_0_q8_0, vec_dot_panels_q5_0_q8_0, vec_dot_panels_q8_0_q8_0,          \
      vec_dot_panels_q4_K_q8_K, vec_dot_panels_q4_K_q8_K_unprefetched, vec_dot_panels_q5_K_q8_K,   \
      vec_dot_panels_q5_K_q8_K_unprefetched, vec_dot_panels_q6_K_q8_K, vec_dot_panels_q6_K_q8_K_unprefetched, vec_dot_panels_iq4_xs_q8_K, \
      vec_dot_panels_iq4_xs_q8_K_unprefetched;

namespace avx2 {
TM_X86_SHARED_KERNELS
TM_X86_PANEL_KERNELS
// legacy_avx2.cc: one weight row, activation rows in tiles of 4.
DotRows vec_dot_rows_q4_0_q8_0, vec_dot_rows_q4_1_q8_1, vec_dot_rows_q5_0_q8_0, vec_dot_rows_q5_1_q8_1,
    vec_dot_rows_q8_0_q8_0;
// kquants_low_avx2.cc: rows only.
DotOneRow vec_dot_q2_K_q8_K, vec_dot_q3_K_q8_K;
// kquants_avx2.cc (one weight row) and kquants_panels_avx2.cc (8-row panels from 4
// activation rows on, the row kernel below that): bit-identical to each other and to
// the AVX-512 K-quant kernels on the same rows.
DotRows vec_dot_rows_q4_K_q8_K, vec_dot_rows_q5_K_q8_K, vec_dot_rows_q6_K_q8_K;
DotMatrix vec_dot_matrix_q4_K_q8_K, vec_dot_matrix_q5_K_q8_K, vec_dot_matrix_q6_K_q8_K;
}  // namespace avx2

// legacy_panels_avxvnni.cc: avx2::vec_dot_panels_* with AVX-VNNI (compiled with -mavxvnni
// as well; call only where CpuFeatures::has_avx_vnni_kernels()). The same bits.
namespace avx_vnni {
DotPanels vec_dot_panels_q4_0_q8_0, vec_dot_panels_q5_0_q8_0, vec_dot_panels_q8_0_q8_0;
}  // namespace avx_vnni

// Every AVX-512 legacy and K-quant dot product is a matrix kernel (its one-row forms are
// one-row matrices): legacy_avx512.cc, kquants_low_avx512.cc and kquants_avx512.cc.
namespace avx512 {
TM_X86_SHARED_KERNELS
TM_X86_PANEL_KERNELS
DotMatrix vec_dot_matrix_q4_0_q8_0, vec_dot_matrix_q4_1_q8_1, vec_dot_matrix_q5_0_q8_0,
    vec_dot_matrix_q5_1_q8_1, vec_dot_matrix_q8_0_q8_0, vec_dot_matrix_q2_K_q8_K, vec_dot_matrix_q3_K_q8_K,
    vec_dot_matrix_q4_K_q8_K, vec_dot_matrix_q5_K_q8_K, vec_dot_matrix_q6_K_q8_K;
}  // namespace avx512
#undef TM_X86_SHARED_KERNELS
#undef TM_X86_PANEL_KERNELS

// The AVX-512 packed-panel kernels with their whole tiles of 16 activation rows on AMX
// (legacy_avx512.cc, tiles in legacy_amx.cc): bit-identical to avx512's. Only where
// cpu_features().has_amx_kernels().
namespace amx {
DotPanels vec_dot_panels_q4_0_q8_0, vec_dot_panels_q5_0_q8_0, vec_dot_panels_q8_0_q8_0;
// kquants_avx512.cc, sums in kquant_amx.cc: the packed Q4_K, Q6_K and IQ4_XS panels, whole tiles
// of 16 tokens' sub-block sums on AMX.
DotPanels vec_dot_panels_q4_K_q8_K, vec_dot_panels_q4_K_q8_K_unprefetched;
DotPanels vec_dot_panels_q6_K_q8_K, vec_dot_panels_q6_K_q8_K_unprefetched;
DotPanels vec_dot_panels_iq4_xs_q8_K, vec_dot_panels_iq4_xs_q8_K_unprefetched;
// kquants_avx512.cc likewise: Q6_K rows in the file's layout, packed per call, whole tiles
// of 16 tokens on AMX (avx512's bits).
DotMatrix vec_dot_matrix_q6_K_q8_K;
// argmax_screen_amx.cc: quant::fill_argmax_screen and quant::screen_panels
// (quant/argmax_screen.h), the screen itself on AMX tiles.
bool fill_screen_panels(ArgmaxScreen& screen, const uint8_t* panels, int64_t first_panel, int64_t last_panel);
void screen_panels(const ArgmaxScreen& screen, int64_t first_panel, int64_t last_panel, const int8_t* y,
                   const int8_t* z, const ScreenToken* tokens, int64_t n_tokens, ScreenCandidates* candidates);
}  // namespace amx

// dot_neon.cc (namespace neon, every arm64 CPU) and dot_neon_dotprod.cc (namespace
// neon_dotprod, CpuFeatures::dotprod): one body (dot_neon-inl.h), the bits of the x86
// row kernels above. Only on arm64 builds.
#define TM_NEON_DOT_ROWS                                                                                    \
  DotRows vec_dot_rows_q4_0_q8_0, vec_dot_rows_q5_0_q8_0, vec_dot_rows_q8_0_q8_0, vec_dot_rows_iq4_nl_q8_0, \
      vec_dot_rows_mxfp4_q8_0, vec_dot_rows_q4_K_q8_K, vec_dot_rows_q5_K_q8_K, vec_dot_rows_q6_K_q8_K,      \
      vec_dot_rows_iq4_xs_q8_K, vec_dot_rows_iq2_xxs_q8_K, vec_dot_rows_iq2_xs_q8_K,                        \
      vec_dot_rows_iq2_s_q8_K, vec_dot_rows_iq3_xxs_q8_K, vec_dot_rows_iq3_s_q8_K,                          \
      vec_dot_rows_iq1_s_q8_K, vec_dot_rows_iq1_m_q8_K,                                                     \
      vec_dot_rows_tq1_0_q8_K, vec_dot_rows_tq2_0_q8_K;
namespace neon {
TM_NEON_DOT_ROWS
// floats_neon.cc: the AVX2 floats' bits.
DotOneRow vec_dot_f32, vec_dot_f16, vec_dot_bf16;
DotRows vec_dot_rows_f32, vec_dot_rows_f16, vec_dot_rows_bf16;
}  // namespace neon
namespace neon_dotprod {
TM_NEON_DOT_ROWS
}  // namespace neon_dotprod
#undef TM_NEON_DOT_ROWS

}  // namespace tokenmill::quant
