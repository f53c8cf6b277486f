// Single-threaded elementwise kernels shared by the CPU back end (the scalar versions
// here, vector versions in elementwise_avx2.cc).
#pragma once

#include <cstdint>

namespace tokenmill::ops::cpu {

// GELU with the tanh approximation, evaluated as ggml does on the CPU: the input is
// rounded to F16 and looked up in a table of F16 results (|x| >= 10 short-circuits).
// Matching this rounding keeps our logits bit-close to llama.cpp's.
float gelu_tanh(float x);
float silu(float x);

void rms_norm_row(const float* x, const float* weight, int64_t n, float eps, float* y);

// gelu_tanh() of every F16 value, as float: [65536].
const float* gelu_f32_table();

// y = act(gate) * up over n values (y may alias gate or up), in elementwise_avx2.cc.
// geglu_avx2 gives the bits of gelu_tanh(); swiglu_avx2 evaluates e^x by a polynomial
// (about 1 ulp), so its results differ from silu() in the last bits.
// REQUIRES: CpuFeatures::has_avx2_kernels().
void geglu_avx2(const float* gate, const float* up, int64_t n, float* y, const float* gelu_table);
void swiglu_avx2(const float* gate, const float* up, int64_t n, float* y);

// rms_norm_row over n_rows rows [n_rows, n_cols], bit for bit (the same double sums in
// the same order), 8 lanes and 4 rows at a time. REQUIRES: has_avx2_kernels().
void rms_norm_avx2(const float* x, const float* weight, int64_t n_rows, int64_t n_cols, float eps, float* y);

}  // namespace tokenmill::ops::cpu
