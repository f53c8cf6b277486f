// Single-threaded elementwise kernels shared by the CPU back end.
#pragma once

#include <cstdint>

namespace tokenmill::ops::cpu {

// GELU with the tanh approximation, evaluated as ggml does on the CPU: the input is
// rounded to F16 and looked up in a table of F16 results (|x| >= 10 short-circuits).
// Matching this rounding keeps our logits bit-close to llama.cpp's.
float gelu_tanh(float x);
float silu(float x);

void rms_norm_row(const float* x, const float* weight, int64_t n, float eps, float* y);

}  // namespace tokenmill::ops::cpu
