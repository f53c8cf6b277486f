// GPTQ: quantization with second-order error compensation (Frantar et al., 2022).
//
// For a weight matrix W [n_rows, n_cols] that multiplies activations X [n_tokens, n_cols],
// the output error is ||X W^T - X Ŵ^T||^2 = sum over rows of (w - ŵ) H (w - ŵ)^T / 2 with
// H = 2 X^T X. GPTQ quantizes the columns of each row in order and, after quantizing column
// i, moves its rounding error onto the columns not yet quantized through the inverse
// Hessian, so that later columns compensate for it:
//     e = (w_i - q_i) / U_ii,   w_j -= e * U_ij  (j > i),   U = upper Cholesky of H^-1.
//
// Block formats: columns go in blocks of the format's block size (32 for Q4_0 … Q5_1 and
// IQ4_NL, the 256-wide super-block for K-quants, IQ4_XS and the lattice i-quants). At the
// start of a block its scales are chosen by the format's importance-weighted search on the
// current, error-updated values, with diag(H) as the importance; then the block is decided
// group by group on those fixed scales — one column at a time, or 8 columns at a time for
// the lattice i-quants, whose grid points and signs cover 8 weights together; each
// column's error then moves the columns after it (quant/gptq_block_coder.h). Updates to
// later blocks are batched (lazy) per block. The output is an ordinary row of the type,
// so every kernel and llama.cpp read it.
//
// Thread-safety: pure functions; rows are independent given U, so callers split rows
// over threads.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "base/status.h"
#include "gguf/tensor_type.h"

namespace tokenmill {
class ThreadPool;
}

namespace tokenmill::quant {

// Calibration statistics of one matmul input: sum over tokens of x x^T (X^T X).
// Only the upper triangle (j >= i) of the row-major n x n matrix is used.
struct GptqHessian {
  int64_t n = 0;
  int64_t n_tokens = 0;
  std::vector<double> sum_xxt;  // [n * n]
};

// Weight tensor name -> statistics of its input. Matrices that read the same input (Q, K
// and V; FFN gate and up) share one object.
using GptqHessians = std::unordered_map<std::string, std::shared_ptr<const GptqHessian>>;

inline constexpr double kGptqDefaultDamp = 0.01;

// The types GPTQ quantizes: Q4_0, Q4_1, Q5_0, Q5_1, Q2_K … Q6_K, IQ4_NL, IQ4_XS, IQ2_XXS,
// IQ2_XS, IQ2_S, IQ3_XXS, IQ3_S. Others are quantized without it.
bool supports_gptq(gguf::TensorType type);

// In-place upper Cholesky factorisation A = R^T R of the symmetric positive definite
// row-major n x n matrix `a` (its upper triangle is read; on return it holds R, the strict
// lower triangle zeroed). Returns false when A is not positive definite. `pool` (optional)
// splits the work.
bool cholesky_upper(double* a, int64_t n, ThreadPool* pool = nullptr);

// U, the upper Cholesky factor of (H + damp * mean(diag H) * I)^-1 (H^-1 = U^T U), as a
// row-major n x n float matrix. `h` is the upper triangle of H (any positive multiple of
// X^T X). Columns never active (H_jj = 0) keep just the damping. Damping is increased
// tenfold (up to 4 times) if the factorisation fails; an all-zero H gives the identity.
Result<std::vector<float>> gptq_inverse_factor(const double* h, int64_t n, double damp = kGptqDefaultDamp,
                                               ThreadPool* pool = nullptr);

// Importance per column for the scale searches: diag(H) scaled to mean 1, plus 1e-3.
std::vector<float> gptq_importance(const double* h, int64_t n);

// Quantizes rows w [n_rows, n_cols] (overwritten: the error-updated values) into
// n_rows * row_size(type, n_cols) bytes at dst. u: gptq_inverse_factor's [n_cols, n_cols];
// importance: [n_cols] (gptq_importance). REQUIRES: supports_gptq(type),
// n_cols % block_size == 0, finite w.
void gptq_quantize_rows(gguf::TensorType type, float* w, int64_t n_rows, int64_t n_cols, const float* u,
                        const float* importance, void* dst);

}  // namespace tokenmill::quant
