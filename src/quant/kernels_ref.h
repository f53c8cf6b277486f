// Internal to quant/: the per-type reference kernels that fill the traits table. Other
// layers reach them through type_traits.h / quant.h, never by these names.
//
// Every function takes n = number of elements (a multiple of the type's block size) and
// untyped row pointers, so it can sit in the table as is.
#pragma once

#include <cstdint>

namespace tokenmill::quant::ref {

// float_formats.cc
void dequantize_row_f32(const void* src, float* dst, int64_t n);
void dequantize_row_f16(const void* src, float* dst, int64_t n);
void dequantize_row_bf16(const void* src, float* dst, int64_t n);
void quantize_row_f32(const float* src, void* dst, int64_t n);
void quantize_row_f16(const float* src, void* dst, int64_t n);
void quantize_row_bf16(const float* src, void* dst, int64_t n);
float vec_dot_f32(int64_t n, const void* w, const void* a);
float vec_dot_f16(int64_t n, const void* w, const void* a);
float vec_dot_bf16(int64_t n, const void* w, const void* a);

// quants_legacy.cc
void dequantize_row_q4_0(const void* src, float* dst, int64_t n);
void dequantize_row_q4_1(const void* src, float* dst, int64_t n);
void dequantize_row_q5_0(const void* src, float* dst, int64_t n);
void dequantize_row_q5_1(const void* src, float* dst, int64_t n);
void dequantize_row_q8_0(const void* src, float* dst, int64_t n);
void dequantize_row_q8_1(const void* src, float* dst, int64_t n);
void quantize_row_q4_0(const float* src, void* dst, int64_t n);
void quantize_row_q4_1(const float* src, void* dst, int64_t n);
void quantize_row_q5_0(const float* src, void* dst, int64_t n);
void quantize_row_q5_1(const float* src, void* dst, int64_t n);
void quantize_row_q8_0(const float* src, void* dst, int64_t n);
void quantize_row_q8_1(const float* src, void* dst, int64_t n);

// quants_k.cc
void dequantize_row_q2_K(const void* src, float* dst, int64_t n);
void dequantize_row_q3_K(const void* src, float* dst, int64_t n);
void dequantize_row_q4_K(const void* src, float* dst, int64_t n);
void dequantize_row_q5_K(const void* src, float* dst, int64_t n);
void dequantize_row_q6_K(const void* src, float* dst, int64_t n);
void dequantize_row_q8_K(const void* src, float* dst, int64_t n);
void quantize_row_q2_K(const float* src, void* dst, int64_t n);
void quantize_row_q3_K(const float* src, void* dst, int64_t n);
void quantize_row_q4_K(const float* src, void* dst, int64_t n);
void quantize_row_q5_K(const float* src, void* dst, int64_t n);
void quantize_row_q6_K(const float* src, void* dst, int64_t n);
void quantize_row_q8_K(const float* src, void* dst, int64_t n);

// quants_iq4.cc: the non-linear 4-bit formats. The weighted forms take per-element
// importance (an imatrix's, or null) as quant.h's quantize_row_weighted does.
void dequantize_row_iq4_nl(const void* src, float* dst, int64_t n);
void dequantize_row_iq4_xs(const void* src, float* dst, int64_t n);
void quantize_row_iq4_nl(const float* src, void* dst, int64_t n);
void quantize_row_iq4_xs(const float* src, void* dst, int64_t n);
void quantize_row_iq4_nl_weighted(const float* src, void* dst, int64_t n, const float* importance);
void quantize_row_iq4_xs_weighted(const float* src, void* dst, int64_t n, const float* importance);
float vec_dot_iq4_nl_q8_0(int64_t n, const void* w, const void* a);
float vec_dot_iq4_xs_q8_K(int64_t n, const void* w, const void* a);
// The 16 levels, and a dot product's float steps, shared with the SIMD kernels.
extern const int8_t kIq4Levels[16];
inline constexpr int kIq4NlLanes = 8;  // IQ4_NL sums: block b goes to lane b % 8
// The IQ4_NL lanes' total, pairwise, as every kernel ends.
inline float sum_iq4_nl_lanes(const float* l) {
  return ((l[0] + l[1]) + (l[2] + l[3])) + ((l[4] + l[5]) + (l[6] + l[7]));
}

// quants_mxfp4.cc: MXFP4 (blocks.h), with IQ4_NL's float steps in its dot product.
void dequantize_row_mxfp4(const void* src, float* dst, int64_t n);
void quantize_row_mxfp4(const float* src, void* dst, int64_t n);
void quantize_row_mxfp4_weighted(const float* src, void* dst, int64_t n, const float* importance);
float vec_dot_mxfp4_q8_0(int64_t n, const void* w, const void* a);
extern const int8_t kMxfp4Levels[16];

// quants_iq_lattice.cc: the lattice i-quants (IQ1_S … IQ3_S): dequantization and dot
// products. quants_iq_lattice_quantize.cc: their quantizers; the weighted forms take
// importance as the IQ4 ones do.
void quantize_row_iq2_xxs(const float* src, void* dst, int64_t n);
void quantize_row_iq2_xs(const float* src, void* dst, int64_t n);
void quantize_row_iq2_s(const float* src, void* dst, int64_t n);
void quantize_row_iq3_xxs(const float* src, void* dst, int64_t n);
void quantize_row_iq3_s(const float* src, void* dst, int64_t n);
void quantize_row_iq2_xxs_weighted(const float* src, void* dst, int64_t n, const float* importance);
void quantize_row_iq2_xs_weighted(const float* src, void* dst, int64_t n, const float* importance);
void quantize_row_iq2_s_weighted(const float* src, void* dst, int64_t n, const float* importance);
void quantize_row_iq3_xxs_weighted(const float* src, void* dst, int64_t n, const float* importance);
void quantize_row_iq3_s_weighted(const float* src, void* dst, int64_t n, const float* importance);
void quantize_row_iq1_s(const float* src, void* dst, int64_t n);
void quantize_row_iq1_m(const float* src, void* dst, int64_t n);
void quantize_row_iq1_s_weighted(const float* src, void* dst, int64_t n, const float* importance);
void quantize_row_iq1_m_weighted(const float* src, void* dst, int64_t n, const float* importance);
void dequantize_row_iq2_xxs(const void* src, float* dst, int64_t n);
void dequantize_row_iq2_xs(const void* src, float* dst, int64_t n);
void dequantize_row_iq2_s(const void* src, float* dst, int64_t n);
void dequantize_row_iq3_xxs(const void* src, float* dst, int64_t n);
void dequantize_row_iq3_s(const void* src, float* dst, int64_t n);
void dequantize_row_iq1_s(const void* src, float* dst, int64_t n);
void dequantize_row_iq1_m(const void* src, float* dst, int64_t n);
float vec_dot_iq2_xxs_q8_K(int64_t n, const void* w, const void* a);
float vec_dot_iq2_xs_q8_K(int64_t n, const void* w, const void* a);
float vec_dot_iq2_s_q8_K(int64_t n, const void* w, const void* a);
float vec_dot_iq3_xxs_q8_K(int64_t n, const void* w, const void* a);
float vec_dot_iq3_s_q8_K(int64_t n, const void* w, const void* a);
float vec_dot_iq1_s_q8_K(int64_t n, const void* w, const void* a);
float vec_dot_iq1_m_q8_K(int64_t n, const void* w, const void* a);

// quants_ternary.cc: TQ1_0 and TQ2_0.
void dequantize_row_tq1_0(const void* src, float* dst, int64_t n);
void dequantize_row_tq2_0(const void* src, float* dst, int64_t n);
void quantize_row_tq1_0(const float* src, void* dst, int64_t n);
void quantize_row_tq2_0(const float* src, void* dst, int64_t n);
float vec_dot_tq1_0_q8_K(int64_t n, const void* w, const void* a);
float vec_dot_tq2_0_q8_K(int64_t n, const void* w, const void* a);

// vec_dot_ref.cc: weight type x activation type.
float vec_dot_q4_0_q8_0(int64_t n, const void* w, const void* a);
float vec_dot_q4_1_q8_1(int64_t n, const void* w, const void* a);
float vec_dot_q5_0_q8_0(int64_t n, const void* w, const void* a);
float vec_dot_q5_1_q8_1(int64_t n, const void* w, const void* a);
float vec_dot_q8_0_q8_0(int64_t n, const void* w, const void* a);
float vec_dot_q2_K_q8_K(int64_t n, const void* w, const void* a);
float vec_dot_q3_K_q8_K(int64_t n, const void* w, const void* a);
float vec_dot_q4_K_q8_K(int64_t n, const void* w, const void* a);
float vec_dot_q5_K_q8_K(int64_t n, const void* w, const void* a);
float vec_dot_q6_K_q8_K(int64_t n, const void* w, const void* a);

}  // namespace tokenmill::quant::ref
