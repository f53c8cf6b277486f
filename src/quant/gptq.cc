#include "quant/gptq.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>

#include "base/half.h"
#include "base/thread_pool.h"
#include "quant/blocks.h"
#include "quant/gptq_block_coder.h"
#include "quant/k_quant_store.h"
#include "quant/quant.h"
#include "quant/scale_search.h"

namespace tokenmill::quant {

namespace {

using gguf::TensorType;

constexpr int kMaxBlock = kSuperBlockSize;

// ------------------------------------------------------------------ linear algebra

// Runs fn(i) for i in [begin, end), interleaved over the pool's threads (the work per i
// varies along the range, so contiguous splits would be unbalanced).
template <typename Fn>
void for_interleaved(ThreadPool* pool, int64_t begin, int64_t end, int64_t grain, const Fn& fn) {
  const int64_t n = end - begin;
  if (!pool || pool->n_threads() <= 1 || n < 2 * grain) {
    for (int64_t i = begin; i < end; ++i) fn(i);
    return;
  }
  const int n_parts = pool->n_threads();
  pool->run_on_all([&](int part) {
    for (int64_t c = begin + part * grain; c < end; c += n_parts * grain) {
      const int64_t stop = std::min(end, c + grain);
      for (int64_t i = c; i < stop; ++i) fn(i);
    }
  });
}

// row[0, n) -= f * src[0, n)
inline void axpy_neg(double* row, const double* src, double f, int64_t n) {
  for (int64_t j = 0; j < n; ++j) row[j] -= f * src[j];
}

// ------------------------------------------------------------------ block formats

// One block's grid: element i is represented as a[i] * (L - offset) + b[i], L in [0, lmax].
struct BlockFit {
  float a[kMaxBlock];
  float b[kMaxBlock];
  int offset = 0;
  int lmax = 0;
  // Step-1 results, kept for the final store.
  float scales[16];
  float mins[16];
  uint8_t ulevels[kMaxBlock];
  int8_t slevels[kMaxBlock];
  uint16_t d16 = 0;
  uint16_t m16 = 0;
};

int block_size_of(TensorType type) {
  switch (type) {
    case TensorType::kQ4_0:
    case TensorType::kQ4_1:
    case TensorType::kQ5_0:
    case TensorType::kQ5_1: return kLegacyBlockSize;
    default: return kSuperBlockSize;
  }
}

void error_weights(const float* x, const float* importance, float sigma2, int n, float* weights) {
  for (int i = 0; i < n; ++i) weights[i] = importance[i] * std::sqrt(sigma2 + x[i] * x[i]);
}

// K-quants: packs x with the step-1 scales (levels re-derived from x by the store).
void store_k(TensorType type, const float* x, BlockFit& fit, void* block) {
  uint8_t ulevels[kMaxBlock];
  int8_t slevels[kMaxBlock];
  std::memcpy(ulevels, fit.ulevels, sizeof ulevels);
  std::memcpy(slevels, fit.slevels, sizeof slevels);
  switch (type) {
    case TensorType::kQ2_K: ref::store_q2_K(x, fit.scales, fit.mins, ulevels, *static_cast<BlockQ2_K*>(block)); break;
    case TensorType::kQ3_K: ref::store_k16(x, fit.scales, slevels, *static_cast<BlockQ3_K*>(block)); break;
    case TensorType::kQ4_K: ref::store_k4(x, fit.scales, fit.mins, ulevels, *static_cast<BlockQ4_K*>(block)); break;
    case TensorType::kQ5_K: ref::store_k4(x, fit.scales, fit.mins, ulevels, *static_cast<BlockQ5_K*>(block)); break;
    case TensorType::kQ6_K: ref::store_k16(x, fit.scales, slevels, *static_cast<BlockQ6_K*>(block)); break;
    default: break;
  }
}

// Sets every level bit of a K-quant block to `fill` (0: all levels 0; 0xff: all lmax).
void fill_levels(TensorType type, void* block, uint8_t fill) {
  switch (type) {
    case TensorType::kQ2_K: std::memset(static_cast<BlockQ2_K*>(block)->qs, fill, sizeof(BlockQ2_K::qs)); break;
    case TensorType::kQ3_K: {
      auto* b = static_cast<BlockQ3_K*>(block);
      std::memset(b->hmask, fill, sizeof b->hmask);
      std::memset(b->qs, fill, sizeof b->qs);
      break;
    }
    case TensorType::kQ4_K: std::memset(static_cast<BlockQ4_K*>(block)->qs, fill, sizeof(BlockQ4_K::qs)); break;
    case TensorType::kQ5_K: {
      auto* b = static_cast<BlockQ5_K*>(block);
      std::memset(b->qh, fill, sizeof b->qh);
      std::memset(b->qs, fill, sizeof b->qs);
      break;
    }
    case TensorType::kQ6_K: {
      auto* b = static_cast<BlockQ6_K*>(block);
      std::memset(b->ql, fill, sizeof b->ql);
      std::memset(b->qh, fill, sizeof b->qh);
      break;
    }
    default: break;
  }
}

// The grid of a K-quant block: store it, then read the value of level 0 and of level
// lmax of every element back through dequantize_row.
void probe_k_grid(TensorType type, const float* x, BlockFit& fit, int lmax) {
  alignas(16) uint8_t block[sizeof(BlockQ6_K) + sizeof(BlockQ5_K)];
  store_k(type, x, fit, block);
  float v0[kMaxBlock], v1[kMaxBlock];
  fill_levels(type, block, 0x00);
  dequantize_row(type, block, v0, kSuperBlockSize);
  fill_levels(type, block, 0xff);
  dequantize_row(type, block, v1, kSuperBlockSize);
  for (int i = 0; i < kSuperBlockSize; ++i) {
    fit.a[i] = (v1[i] - v0[i]) / static_cast<float>(lmax);
    fit.b[i] = v0[i];
  }
  fit.offset = 0;
  fit.lmax = lmax;
}

// Step 1 of quants_weighted.cc on the current values x of one block: its scales, and the
// grid they define.
void fit_block(TensorType type, const float* x, const float* importance, float sigma2, BlockFit& fit) {
  float weights[32];
  uint8_t scratch[32];
  switch (type) {
    case TensorType::kQ4_0:
    case TensorType::kQ5_0: {
      const int n_max = type == TensorType::kQ4_0 ? 8 : 16;
      error_weights(x, importance, sigma2, kLegacyBlockSize, weights);
      const float scale = fit_symmetric_scale(kLegacyBlockSize, n_max, x, fit.slevels, weights);
      fit.d16 = f32_to_f16(scale);
      const float d = f16_to_f32(fit.d16);
      std::fill(fit.a, fit.a + kLegacyBlockSize, d);
      std::fill(fit.b, fit.b + kLegacyBlockSize, 0.0f);
      fit.offset = n_max;
      fit.lmax = 2 * n_max - 1;
      break;
    }
    case TensorType::kQ4_1:
    case TensorType::kQ5_1: {
      const int n_max = type == TensorType::kQ4_1 ? 15 : 31;
      error_weights(x, importance, sigma2, kLegacyBlockSize, weights);
      float min = 0.0f;
      const float scale =
          fit_scale_and_min(kLegacyBlockSize, n_max, x, weights, fit.ulevels, &min, scratch, -1.0f, 0.1f, 20, false);
      fit.d16 = f32_to_f16(scale);
      fit.m16 = f32_to_f16(-min);
      std::fill(fit.a, fit.a + kLegacyBlockSize, f16_to_f32(fit.d16));
      std::fill(fit.b, fit.b + kLegacyBlockSize, f16_to_f32(fit.m16));
      fit.offset = 0;
      fit.lmax = n_max;
      break;
    }
    case TensorType::kQ2_K:
      for (int j = 0; j < 16; ++j) {
        error_weights(x + 16 * j, importance + 16 * j, sigma2, 16, weights);
        fit.scales[j] = fit_scale_and_min(16, 3, x + 16 * j, weights, fit.ulevels + 16 * j, &fit.mins[j], scratch,
                                          -0.9f, 0.05f, 36, false);
      }
      probe_k_grid(type, x, fit, 3);
      break;
    case TensorType::kQ3_K:
    case TensorType::kQ6_K: {
      const int n_max = type == TensorType::kQ3_K ? 4 : 32;
      for (int j = 0; j < 16; ++j) {
        error_weights(x + 16 * j, importance + 16 * j, sigma2, 16, weights);
        fit.scales[j] = fit_symmetric_scale(16, n_max, x + 16 * j, fit.slevels + 16 * j, weights);
      }
      probe_k_grid(type, x, fit, 2 * n_max - 1);
      break;
    }
    case TensorType::kQ4_K:
    case TensorType::kQ5_K: {
      const int n_max = type == TensorType::kQ4_K ? 15 : 31;
      for (int j = 0; j < 8; ++j) {
        error_weights(x + 32 * j, importance + 32 * j, sigma2, 32, weights);
        fit.scales[j] = fit_scale_and_min(32, n_max, x + 32 * j, weights, fit.ulevels + 32 * j, &fit.mins[j], scratch,
                                          -0.9f, 0.1f, 20, false);
      }
      probe_k_grid(type, x, fit, n_max);
      break;
    }
    default: break;
  }
}

// The level of value w on element i's grid, and the value it stands for.
inline int level_of(const BlockFit& fit, int i, float w, float* value) {
  const float a = fit.a[i];
  if (a == 0.0f) {
    *value = fit.b[i];
    return fit.offset;
  }
  const int level = clamp_int(round_to_int((w - fit.b[i]) / a) + fit.offset, 0, fit.lmax);
  *value = a * static_cast<float>(level - fit.offset) + fit.b[i];
  return level;
}

// Packs a finished block. `xq` holds each element's value at the moment it was
// quantized (K-quant stores re-derive the same nearest levels from it); `levels` the
// levels chosen (used by the legacy packers).
void store_block(TensorType type, const float* xq, const int* levels, BlockFit& fit, void* block) {
  if (type == TensorType::kQ4_0 || type == TensorType::kQ5_0 || type == TensorType::kQ4_1 ||
      type == TensorType::kQ5_1) {
    uint8_t q[kLegacyBlockSize];
    const bool zero = fit.a[0] == 0.0f;
    for (int i = 0; i < kLegacyBlockSize; ++i) {
      const bool sym = type == TensorType::kQ4_0 || type == TensorType::kQ5_0;
      q[i] = static_cast<uint8_t>(zero ? (sym ? static_cast<uint8_t>(fit.slevels[i]) : fit.ulevels[i]) : levels[i]);
    }
    uint8_t* qs = nullptr;
    uint8_t* qh = nullptr;
    switch (type) {
      case TensorType::kQ4_0: {
        auto* b = static_cast<BlockQ4_0*>(block);
        b->d = fit.d16;
        qs = b->qs;
        break;
      }
      case TensorType::kQ5_0: {
        auto* b = static_cast<BlockQ5_0*>(block);
        b->d = fit.d16;
        qs = b->qs;
        qh = b->qh;
        break;
      }
      case TensorType::kQ4_1: {
        auto* b = static_cast<BlockQ4_1*>(block);
        b->d = fit.d16;
        b->m = fit.m16;
        qs = b->qs;
        break;
      }
      default: {
        auto* b = static_cast<BlockQ5_1*>(block);
        b->d = fit.d16;
        b->m = fit.m16;
        qs = b->qs;
        qh = b->qh;
        break;
      }
    }
    constexpr int kHalf = kLegacyBlockSize / 2;
    for (int j = 0; j < kHalf; ++j) qs[j] = static_cast<uint8_t>((q[j] & 0x0f) | ((q[j + kHalf] & 0x0f) << 4));
    if (qh) {
      uint32_t high_bits = 0;
      for (int j = 0; j < kLegacyBlockSize; ++j) high_bits |= static_cast<uint32_t>((q[j] >> 4) & 1) << j;
      std::memcpy(qh, &high_bits, sizeof high_bits);
    }
    return;
  }
  store_k(type, xq, fit, block);
}

// The legacy and K-quants: each column rounds to the nearest level of its element's
// affine grid.
class AffineBlockCoder final : public GptqBlockCoder {
 public:
  explicit AffineBlockCoder(TensorType type) : type_(type) {}
  int block_size() const override { return block_size_of(type_); }
  int group_size() const override { return 1; }
  void fit(const float* x, const float* importance, float sigma2) override {
    fit_block(type_, x, importance, sigma2, fit_);
  }
  void decide_group(int g, const float* x, const float*, float, float* q) override {
    xq_[g] = x[0];
    levels_[g] = level_of(fit_, g, x[0], q);
  }
  void pack(void* dst) override { store_block(type_, xq_, levels_, fit_, dst); }

 private:
  TensorType type_;
  BlockFit fit_;
  float xq_[kMaxBlock];  // each element's value at the moment it was decided
  int levels_[kMaxBlock];
};

std::unique_ptr<GptqBlockCoder> make_coder(TensorType type) {
  if (auto coder = make_iq4_gptq_coder(type)) return coder;
  if (auto coder = make_lattice_gptq_coder(type)) return coder;
  return std::make_unique<AffineBlockCoder>(type);
}

}  // namespace

// The types with a block coder: every importance-weighted format but MXFP4, whose
// 32 weights share one power-of-two scale (quantize_model gives it diag(H) as its
// importance, without the compensation).
bool supports_gptq(gguf::TensorType type) {
  return supports_weighted_quantization(type) && type != TensorType::kMXFP4;
}

bool cholesky_upper(double* a, int64_t n, ThreadPool* pool) {
  for (int64_t k = 0; k < n; ++k) {
    double* rk = a + k * n;
    const double diag = rk[k];
    if (!(diag > 0.0) || !std::isfinite(diag)) return false;
    const double r = std::sqrt(diag);
    rk[k] = r;
    for (int64_t j = k + 1; j < n; ++j) rk[j] /= r;
    for (int64_t j = 0; j < k; ++j) rk[j] = 0.0;
    // Trailing update of the upper triangle: A[i][i:] -= R[k][i] * R[k][i:].
    for_interleaved(pool, k + 1, n, 16, [&](int64_t i) {
      const double f = rk[i];
      if (f != 0.0) axpy_neg(a + i * n + i, rk + i, f, n - i);
    });
  }
  return true;
}

Result<std::vector<float>> gptq_inverse_factor(const double* h, int64_t n, double damp, ThreadPool* pool) {
  if (n <= 0) return invalid_argument("gptq: empty Hessian");
  auto at = [&](int64_t i, int64_t j) { return i <= j ? h[i * n + j] : h[j * n + i]; };
  double mean_diag = 0.0;
  for (int64_t i = 0; i < n; ++i) mean_diag += at(i, i);
  mean_diag /= static_cast<double>(n);
  if (!std::isfinite(mean_diag)) return invalid_argument("gptq: the Hessian holds a non-finite value");
  std::vector<float> u(static_cast<size_t>(n * n), 0.0f);
  if (!(mean_diag > 0.0)) {
    for (int64_t i = 0; i < n; ++i) u[i * n + i] = 1.0f;
    return u;
  }

  // G = J H J (J reverses the order), G = R^T R. Then H = A^T A with A = J R J lower, and
  // H^-1 = U^T U with U = A^-T = J R^-T J upper: U[i][j] = (R^-1)[n-1-j][n-1-i].
  std::vector<double> g(static_cast<size_t>(n * n));
  bool factored = false;
  for (int attempt = 0; attempt < 5 && !factored; ++attempt, damp *= 10.0) {
    const double add = damp * mean_diag;
    for (int64_t a = 0; a < n; ++a) {
      for (int64_t b = a; b < n; ++b) g[a * n + b] = at(n - 1 - a, n - 1 - b);
      g[a * n + a] += add;
    }
    factored = cholesky_upper(g.data(), n, pool);
  }
  if (!factored) return invalid_argument("gptq: the damped Hessian is not positive definite");

  // V = R^-1 (upper), bottom row first: V[i] = (e_i - sum_{p>i} R[i][p] V[p]) / R[i][i].
  // Columns are independent, so threads take interleaved column chunks.
  std::vector<double> v(static_cast<size_t>(n * n), 0.0);
  const double* r = g.data();
  constexpr int64_t kChunk = 64;
  const int64_t n_chunks = (n + kChunk - 1) / kChunk;
  for_interleaved(pool, 0, n_chunks, 1, [&](int64_t chunk) {
    const int64_t c0 = chunk * kChunk;
    const int64_t c1 = std::min(n, c0 + kChunk);
    for (int64_t i = std::min(c1, n) - 1; i >= 0; --i) {
      double* vi = v.data() + i * n;
      const int64_t lo = std::max(c0, i);  // V[i][j] = 0 for j < i
      if (lo >= c1) continue;
      for (int64_t j = lo; j < c1; ++j) vi[j] = (j == i) ? 1.0 : 0.0;
      for (int64_t p = i + 1; p < c1; ++p) {
        const double f = r[i * n + p];
        if (f == 0.0) continue;
        const double* vp = v.data() + p * n;
        const int64_t start = std::max(lo, p);
        axpy_neg(vi + start, vp + start, f, c1 - start);
      }
      const double inv = 1.0 / r[i * n + i];
      for (int64_t j = lo; j < c1; ++j) vi[j] *= inv;
    }
  });
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t j = i; j < n; ++j) u[i * n + j] = static_cast<float>(v[(n - 1 - j) * n + (n - 1 - i)]);
  }
  return u;
}

std::vector<float> gptq_importance(const double* h, int64_t n) {
  std::vector<float> w(static_cast<size_t>(n));
  double mean = 0.0;
  for (int64_t i = 0; i < n; ++i) mean += h[i * n + i];
  mean /= static_cast<double>(std::max<int64_t>(1, n));
  if (!(mean > 0.0)) return std::vector<float>(static_cast<size_t>(n), 1.0f);
  constexpr float kFloor = 1e-3f;
  for (int64_t i = 0; i < n; ++i) w[i] = static_cast<float>(h[i * n + i] / mean) + kFloor;
  return w;
}

void gptq_quantize_rows(gguf::TensorType type, float* w, int64_t n_rows, int64_t n_cols, const float* u,
                        const float* importance, void* dst) {
  const std::unique_ptr<GptqBlockCoder> coder = make_coder(type);
  const int bs = coder->block_size();
  const int gs = coder->group_size();
  const size_t block_bytes = row_size(type, bs);
  const size_t out_row_bytes = row_size(type, n_cols);
  auto* out = static_cast<uint8_t*>(dst);

  std::vector<float> sigma2(static_cast<size_t>(n_rows));
  for (int64_t r = 0; r < n_rows; ++r) {
    double sum = 0.0;
    const float* row = w + r * n_cols;
    for (int64_t j = 0; j < n_cols; ++j) sum += static_cast<double>(row[j]) * row[j];
    sigma2[r] = static_cast<float>(sum / static_cast<double>(n_cols));
  }
  std::vector<float> errors(static_cast<size_t>(n_rows) * bs);  // [row][k]: scaled error of column b0 + k
  float q[kMaxBlock];

  for (int64_t b0 = 0; b0 < n_cols; b0 += bs) {
    const int64_t b1 = b0 + bs;
    for (int64_t r = 0; r < n_rows; ++r) {
      float* row = w + r * n_cols;
      coder->fit(row + b0, importance + b0, sigma2[r]);
      float* err = errors.data() + r * bs;
      for (int g = 0; g < bs / gs; ++g) {
        const int64_t g0 = b0 + static_cast<int64_t>(g) * gs;
        coder->decide_group(g, row + g0, importance + g0, sigma2[r], q);
        // The group's codes are fixed; each column's error, in order, moves the columns
        // after it (the rest of the group included, which changes their errors).
        for (int t = 0; t < gs; ++t) {
          const int64_t i = g0 + t;
          const float* ui = u + i * n_cols;
          const float e = (row[i] - q[t]) / ui[i];
          err[i - b0] = e;
          if (e != 0.0f) {
            for (int64_t j = i + 1; j < b1; ++j) row[j] -= e * ui[j];
          }
        }
      }
      coder->pack(out + r * out_row_bytes + (b0 / bs) * block_bytes);
    }
    // Lazy batch: the block's errors reach the later columns in one pass over U's rows.
    if (b1 < n_cols) {
      for (int k = 0; k < bs; ++k) {
        const float* uk = u + (b0 + k) * n_cols;
        for (int64_t r = 0; r < n_rows; ++r) {
          const float e = errors[r * bs + k];
          if (e == 0.0f) continue;
          float* row = w + r * n_cols;
          for (int64_t j = b1; j < n_cols; ++j) row[j] -= e * uk[j];
        }
      }
    }
  }
}

}  // namespace tokenmill::quant
