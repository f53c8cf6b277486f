// GPTQ: the Cholesky factorisation and inverse factor on known matrices, damping of a
// singular Hessian, and, on a random matrix with correlated activations, a lower matmul
// output error than round-to-nearest and than importance weighting.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "base/thread_pool.h"
#include "quant/gptq.h"
#include "quant/quant.h"

namespace tokenmill::quant {
namespace {

using gguf::TensorType;

TEST(Gptq, CholeskyOfAKnownMatrix) {
  // A = R^T R with R = [[2, 1, -1], [0, 3, 2], [0, 0, 1]].
  const double r[9] = {2, 1, -1, 0, 3, 2, 0, 0, 1};
  double a[9] = {};
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 3; ++j)
      for (int k = 0; k < 3; ++k) a[i * 3 + j] += r[k * 3 + i] * r[k * 3 + j];
  ASSERT_TRUE(cholesky_upper(a, 3));
  for (int i = 0; i < 9; ++i) EXPECT_NEAR(a[i], r[i], 1e-12) << i;

  double not_pd[4] = {1, 2, 2, 1};
  EXPECT_FALSE(cholesky_upper(not_pd, 2));
}

// H^-1 = U^T U, U upper, checked as (U^T U) H = I on a random SPD matrix, with and without
// a thread pool.
TEST(Gptq, InverseFactorInvertsTheHessian) {
  const int64_t n = 150;
  std::mt19937 rng(5);
  std::normal_distribution<double> normal;
  std::vector<double> x(static_cast<size_t>(400 * n));
  for (double& v : x) v = normal(rng);
  std::vector<double> h(static_cast<size_t>(n * n), 0.0);
  for (int64_t t = 0; t < 400; ++t)
    for (int64_t i = 0; i < n; ++i)
      for (int64_t j = i; j < n; ++j) h[i * n + j] += x[t * n + i] * x[t * n + j];
  ThreadPool pool(3);
  for (ThreadPool* p : {static_cast<ThreadPool*>(nullptr), &pool}) {
    auto u = gptq_inverse_factor(h.data(), n, /*damp=*/0.0, p);
    ASSERT_TRUE(u.ok());
    double max_err = 0.0;
    for (int64_t i = 0; i < n; ++i) {
      for (int64_t j = 0; j < i; ++j) EXPECT_EQ((*u)[i * n + j], 0.0f);
      for (int64_t j = 0; j < n; ++j) {
        // (U^T U H)[i][j] = sum_k (U^T U)[i][k] H[k][j]
        double s = 0.0;
        for (int64_t k = 0; k < n; ++k) {
          double uu = 0.0;
          for (int64_t m = 0; m <= std::min(i, k); ++m) uu += (*u)[m * n + i] * static_cast<double>((*u)[m * n + k]);
          s += uu * (k <= j ? h[k * n + j] : h[j * n + k]);
        }
        max_err = std::max(max_err, std::fabs(s - (i == j ? 1.0 : 0.0)));
      }
    }
    EXPECT_LT(max_err, 1e-4);
  }
}

TEST(Gptq, DampingHandlesASingularHessian) {
  // Rank 1, and one column never active.
  const int64_t n = 64;
  std::vector<double> h(static_cast<size_t>(n * n), 0.0);
  for (int64_t i = 0; i < n - 1; ++i)
    for (int64_t j = i; j < n - 1; ++j) h[i * n + j] = (i + 1.0) * (j + 1.0);
  auto u = gptq_inverse_factor(h.data(), n);
  ASSERT_TRUE(u.ok()) << u.status().message();
  for (float v : *u) EXPECT_TRUE(std::isfinite(v));
  for (int64_t i = 0; i < n; ++i) EXPECT_GT((*u)[i * n + i], 0.0f);

  std::vector<double> zero(static_cast<size_t>(n * n), 0.0);
  auto identity = gptq_inverse_factor(zero.data(), n);
  ASSERT_TRUE(identity.ok());
  EXPECT_EQ((*identity)[0], 1.0f);
  EXPECT_EQ((*identity)[1], 0.0f);
}

struct Problem {
  int64_t n_rows = 48, n_cols = 512, n_tokens = 2048;
  std::vector<float> w;  // [n_rows, n_cols]
  std::vector<float> x;  // [n_tokens, n_cols]
  std::vector<double> h; // X^T X, upper
};

// Correlated activations: x = z M with a random mixing M, channel scales spread over a
// factor of ~30 (as real activations, with a few outlier channels).
Problem make_problem(uint32_t seed) {
  Problem p;
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal;
  const int64_t n = p.n_cols, k = 64;
  p.w.resize(static_cast<size_t>(p.n_rows * n));
  for (float& v : p.w) v = 0.05f * normal(rng);
  std::vector<float> mix(static_cast<size_t>(k * n));
  for (float& v : mix) v = normal(rng);
  std::vector<float> scale(static_cast<size_t>(n));
  std::uniform_real_distribution<float> uni(0.0f, 1.0f);
  for (float& s : scale) s = std::exp(3.0f * uni(rng)) * (uni(rng) < 0.02f ? 8.0f : 1.0f);
  p.x.resize(static_cast<size_t>(p.n_tokens * n));
  std::vector<float> z(static_cast<size_t>(k));
  for (int64_t t = 0; t < p.n_tokens; ++t) {
    for (float& v : z) v = normal(rng);
    for (int64_t j = 0; j < n; ++j) {
      float s = 0.3f * normal(rng);
      for (int64_t c = 0; c < k; ++c) s += z[c] * mix[c * n + j] * 0.2f;
      p.x[t * n + j] = s * scale[j];
    }
  }
  p.h.assign(static_cast<size_t>(n * n), 0.0);
  for (int64_t t = 0; t < p.n_tokens; ++t)
    for (int64_t i = 0; i < n; ++i)
      for (int64_t j = i; j < n; ++j) p.h[i * n + j] += static_cast<double>(p.x[t * n + i]) * p.x[t * n + j];
  return p;
}

// ||X W^T - X Ŵ^T||_F^2 through the Hessian: sum over rows of d H d^T, d = w - ŵ.
double output_error(const Problem& p, const std::vector<float>& wq) {
  const int64_t n = p.n_cols;
  double total = 0.0;
  for (int64_t r = 0; r < p.n_rows; ++r) {
    std::vector<double> d(static_cast<size_t>(n));
    for (int64_t j = 0; j < n; ++j) d[j] = static_cast<double>(p.w[r * n + j]) - wq[r * n + j];
    for (int64_t i = 0; i < n; ++i) {
      total += p.h[i * n + i] * d[i] * d[i];
      for (int64_t j = i + 1; j < n; ++j) total += 2.0 * p.h[i * n + j] * d[i] * d[j];
    }
  }
  return total;
}

std::vector<float> dequantize_all(TensorType type, const std::vector<uint8_t>& q, int64_t n_rows, int64_t n_cols) {
  std::vector<float> out(static_cast<size_t>(n_rows * n_cols));
  const size_t row_bytes = row_size(type, n_cols);
  for (int64_t r = 0; r < n_rows; ++r) dequantize_row(type, q.data() + r * row_bytes, out.data() + r * n_cols, n_cols);
  return out;
}

TEST(Gptq, LowerOutputErrorThanRoundToNearestAndImportance) {
  const Problem p = make_problem(42);
  const int64_t n = p.n_cols;
  auto u = gptq_inverse_factor(p.h.data(), n);
  ASSERT_TRUE(u.ok());
  const std::vector<float> importance = gptq_importance(p.h.data(), n);
  for (TensorType type : {TensorType::kQ4_0, TensorType::kQ5_0, TensorType::kQ4_1, TensorType::kQ2_K,
                          TensorType::kQ3_K, TensorType::kQ4_K, TensorType::kQ5_K, TensorType::kQ6_K,
                          TensorType::kIQ4_NL, TensorType::kIQ4_XS, TensorType::kIQ3_S, TensorType::kIQ3_XXS,
                          TensorType::kIQ2_S, TensorType::kIQ2_XS, TensorType::kIQ2_XXS, TensorType::kIQ1_M,
                          TensorType::kIQ1_S}) {
    ASSERT_TRUE(supports_gptq(type));
    SCOPED_TRACE(gguf::tensor_type_name(type));
    const size_t row_bytes = row_size(type, n);
    std::vector<uint8_t> rtn(row_bytes * p.n_rows), weighted(row_bytes * p.n_rows), gptq(row_bytes * p.n_rows);
    for (int64_t r = 0; r < p.n_rows; ++r) {
      quantize_row_ref(type, p.w.data() + r * n, rtn.data() + r * row_bytes, n);
      quantize_row_weighted(type, p.w.data() + r * n, weighted.data() + r * row_bytes, n, importance.data());
    }
    std::vector<float> w = p.w;
    // In two calls, as the driver splits rows over threads.
    gptq_quantize_rows(type, w.data(), 20, n, u->data(), importance.data(), gptq.data());
    gptq_quantize_rows(type, w.data() + 20 * n, p.n_rows - 20, n, u->data(), importance.data(),
                       gptq.data() + 20 * row_bytes);
    const std::vector<float> wg = dequantize_all(type, gptq, p.n_rows, n);
    for (float v : wg) ASSERT_TRUE(std::isfinite(v));
    const double e_rtn = output_error(p, dequantize_all(type, rtn, p.n_rows, n));
    const double e_weighted = output_error(p, dequantize_all(type, weighted, p.n_rows, n));
    const double e_gptq = output_error(p, wg);
    std::printf("%-5s output error: rtn %.4g  importance %.4g  gptq %.4g (%.2fx importance)\n",
                std::string(gguf::tensor_type_name(type)).c_str(), e_rtn, e_weighted, e_gptq, e_gptq / e_weighted);
    EXPECT_LT(e_gptq, e_rtn);
    EXPECT_LT(e_gptq, e_weighted);
    if (type == TensorType::kQ4_0 || type == TensorType::kQ4_K || type == TensorType::kIQ4_XS ||
        type == TensorType::kIQ3_S || type == TensorType::kIQ2_XS) {
      EXPECT_LT(e_gptq, 0.8 * e_weighted);
    }
  }
}

// Deterministic and independent of how rows are split.
TEST(Gptq, RowsAreIndependent) {
  const Problem p = make_problem(7);
  const int64_t n = p.n_cols;
  auto u = gptq_inverse_factor(p.h.data(), n);
  ASSERT_TRUE(u.ok());
  const std::vector<float> importance = gptq_importance(p.h.data(), n);
  const TensorType type = TensorType::kQ4_K;
  const size_t row_bytes = row_size(type, n);
  std::vector<uint8_t> all(row_bytes * p.n_rows), one(row_bytes * p.n_rows);
  std::vector<float> w = p.w;
  gptq_quantize_rows(type, w.data(), p.n_rows, n, u->data(), importance.data(), all.data());
  w = p.w;
  for (int64_t r = 0; r < p.n_rows; ++r) {
    gptq_quantize_rows(type, w.data() + r * n, 1, n, u->data(), importance.data(), one.data() + r * row_bytes);
  }
  EXPECT_EQ(all, one);
}

}  // namespace
}  // namespace tokenmill::quant
