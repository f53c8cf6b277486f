// CpuBackend's operations against naive double-precision references, each with a named
// tolerance that says which rounding it allows. Fast kernels added to the back end later
// must keep passing these.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <numbers>
#include <numeric>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "base/cpu_features.h"
#include "base/first_max.h"
#include "base/half.h"
#include "ops/cpu/attention_kernels.h"
#include "ops/cpu/cpu_backend.h"
#include "ops/cpu/elementwise.h"
#include "quant/kernels/dispatch.h"
#include "quant/panel_layout.h"
#include "quant/quant.h"
#include "quant/type_traits.h"
#include "recorded_bits.h"

namespace tokenmill::ops {
namespace {

using gguf::TensorType;

// Odd thread count, so the row ranges of parallel loops come out uneven.
constexpr int kThreads = 3;

std::vector<float> random_normal(size_t n, uint32_t seed, float sigma = 1.0f) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist(0.0f, sigma);
  std::vector<float> v(n);
  for (float& x : v) x = dist(rng);
  return v;
}

float round_to_f16(float x) { return f16_to_f32(f32_to_f16(x)); }

// ---------------------------------------------------------------------------------------
// RMSNorm

// Per element, relative to |reference|: a float mean, sqrt, divide and two multiplies.
constexpr double kRmsNormTolerance = 8 * 1.2e-7;

TEST(CpuRmsNorm, MatchesDoubleReference) {
  CpuBackend backend(kThreads);
  constexpr float kEps = 1e-6f;
  constexpr int64_t kRows = 3;
  for (int64_t n_cols : {1, 7, 31, 64, 255}) {
    const std::vector<float> x = random_normal(kRows * n_cols, 1 + n_cols, 3.0f);
    const std::vector<float> weight = random_normal(n_cols, 2 + n_cols);
    std::vector<float> y(x.size());
    backend.rms_norm(x.data(), weight.data(), kRows, n_cols, kEps, y.data());
    for (int64_t r = 0; r < kRows; ++r) {
      double sum = 0.0;
      for (int64_t i = 0; i < n_cols; ++i) sum += static_cast<double>(x[r * n_cols + i]) * x[r * n_cols + i];
      const double scale = 1.0 / std::sqrt(sum / n_cols + kEps);
      for (int64_t i = 0; i < n_cols; ++i) {
        const double expected = x[r * n_cols + i] * scale * weight[i];
        EXPECT_NEAR(y[r * n_cols + i], expected, kRmsNormTolerance * std::fabs(expected) + 1e-30)
            << "n_cols " << n_cols << " row " << r << " col " << i;
      }
    }
    // In place gives the same bits.
    std::vector<float> in_place = x;
    backend.rms_norm(in_place.data(), weight.data(), kRows, n_cols, kEps, in_place.data());
    EXPECT_EQ(in_place, y) << "n_cols " << n_cols;
  }
}

#if defined(__x86_64__)
// The AVX2 path (four rows at a time) sums in the scalar path's order: the same bits for
// every row count and length, tails included, in place too.
TEST(CpuRmsNorm, VectorPathGivesTheScalarBits) {
  if (!detect_cpu_features().has_avx2_kernels()) GTEST_SKIP() << "CPU lacks avx2/fma/f16c";
  constexpr float kEps = 1e-6f;
  for (int64_t n_rows : {1, 3, 4, 5, 9}) {
    for (int64_t n_cols : {1, 7, 8, 31, 64, 255, 640}) {
      const std::vector<float> x = random_normal(n_rows * n_cols, static_cast<uint32_t>(7 * n_rows + n_cols), 2.0f);
      const std::vector<float> weight = random_normal(n_cols, static_cast<uint32_t>(3 + n_cols));
      std::vector<float> expected(x.size()), y(x.size());
      for (int64_t r = 0; r < n_rows; ++r) {
        cpu::rms_norm_row(x.data() + r * n_cols, weight.data(), n_cols, kEps, expected.data() + r * n_cols);
      }
      cpu::rms_norm_avx2(x.data(), weight.data(), n_rows, n_cols, kEps, y.data());
      EXPECT_EQ(y, expected) << n_rows << " x " << n_cols;
      std::vector<float> in_place = x;
      cpu::rms_norm_avx2(in_place.data(), weight.data(), n_rows, n_cols, kEps, in_place.data());
      EXPECT_EQ(in_place, expected) << n_rows << " x " << n_cols << " in place";
    }
  }
}
#endif

TEST(CpuRmsNorm, ZeroRowStaysZero) {
  CpuBackend backend(1);
  const std::vector<float> x(16, 0.0f), weight(16, 1.0f);
  std::vector<float> y(16, 1.0f);
  backend.rms_norm(x.data(), weight.data(), 1, 16, 1e-6f, y.data());
  for (float v : y) EXPECT_EQ(v, 0.0f);
}

// ---------------------------------------------------------------------------------------
// RoPE

// The back end builds angles by repeated float multiplication (as ggml does), so angle
// errors grow with position; up to position 200 they stay below ~2e-5 rad. Per element,
// relative to the norm of its rotation pair.
constexpr double kRopeTolerance = 1e-4;
// |rotated pair| / |pair| - 1: only cos^2 + sin^2 rounding.
constexpr double kRopeNormTolerance = 1e-6;

struct RopeCase {
  RopeStyle style;
  int32_t head_dim;
  float freq_base;
  float freq_scale;
};

const RopeCase kRopeCases[] = {
    {RopeStyle::kNormal, 2, 10000.0f, 1.0f},   {RopeStyle::kNormal, 16, 10000.0f, 1.0f},
    {RopeStyle::kNormal, 64, 500000.0f, 1.0f}, {RopeStyle::kNeox, 16, 10000.0f, 1.0f},
    {RopeStyle::kNeox, 64, 1000000.0f, 0.25f}, {RopeStyle::kNeox, 128, 10000.0f, 0.5f},
};

// The pair (a, b) rotated by RopeStyle: adjacent elements or the two halves of a head.
std::pair<int32_t, int32_t> rope_pair(RopeStyle style, int32_t head_dim, int32_t i) {
  return style == RopeStyle::kNeox ? std::pair{i, i + head_dim / 2} : std::pair{2 * i, 2 * i + 1};
}

TEST(CpuRope, MatchesAngleReference) {
  CpuBackend backend(kThreads);
  constexpr int32_t kHeads = 3;
  const std::vector<int32_t> positions = {0, 1, 5, 37, 100, 200};
  for (const RopeCase& c : kRopeCases) {
    const int64_t row = static_cast<int64_t>(kHeads) * c.head_dim;
    const std::vector<float> x = random_normal(positions.size() * row, c.head_dim);
    std::vector<float> y = x;
    backend.rope(y.data(), positions, kHeads, c.head_dim, c.head_dim, c.freq_base, c.freq_scale, c.style);
    for (size_t t = 0; t < positions.size(); ++t) {
      for (int32_t h = 0; h < kHeads; ++h) {
        const size_t base = t * row + h * c.head_dim;
        for (int32_t i = 0; i < c.head_dim / 2; ++i) {
          const double angle =
              positions[t] * static_cast<double>(c.freq_scale) * std::pow(double(c.freq_base), -2.0 * i / c.head_dim);
          const auto [a, b] = rope_pair(c.style, c.head_dim, i);
          const double x0 = x[base + a], x1 = x[base + b];
          const double tolerance = kRopeTolerance * std::hypot(x0, x1);
          EXPECT_NEAR(y[base + a], x0 * std::cos(angle) - x1 * std::sin(angle), tolerance)
              << "head_dim " << c.head_dim << " pos " << positions[t] << " pair " << i;
          EXPECT_NEAR(y[base + b], x0 * std::sin(angle) + x1 * std::cos(angle), tolerance)
              << "head_dim " << c.head_dim << " pos " << positions[t] << " pair " << i;
        }
      }
    }
  }
}

// Partial rotary (Phi-4-mini: rope.dimension_count 3/4 of the head): the first n_rot values
// of each head rotate as a head of n_rot would, with frequencies over n_rot; the rest pass
// through bit for bit. With n_rot = head_dim it is the whole-head rotation, bit for bit.
TEST(CpuRope, PartialRotaryRotatesTheLeadingValuesOnly) {
  CpuBackend backend(kThreads);
  constexpr int32_t kHeads = 3;
  const std::vector<int32_t> positions = {0, 1, 7, 60, 150};
  for (RopeStyle style : {RopeStyle::kNeox, RopeStyle::kNormal}) {
    for (const auto [head_dim, n_rot] : {std::pair{32, 24}, std::pair{128, 96}, std::pair{64, 2}}) {
      const int64_t row = static_cast<int64_t>(kHeads) * head_dim;
      const std::vector<float> x = random_normal(positions.size() * row, head_dim + n_rot);
      std::vector<float> y = x;
      backend.rope(y.data(), positions, kHeads, head_dim, n_rot, 10000.0f, 1.0f, style);
      // The same values rotated as heads of n_rot alone.
      std::vector<float> alone;
      for (size_t t = 0; t < positions.size(); ++t) {
        for (int32_t h = 0; h < kHeads; ++h) {
          const float* head = x.data() + t * row + h * head_dim;
          alone.insert(alone.end(), head, head + n_rot);
        }
      }
      backend.rope(alone.data(), positions, kHeads, n_rot, n_rot, 10000.0f, 1.0f, style);
      for (size_t t = 0; t < positions.size(); ++t) {
        for (int32_t h = 0; h < kHeads; ++h) {
          const size_t at = t * row + h * head_dim;
          for (int32_t i = 0; i < head_dim; ++i) {
            const float want = i < n_rot ? alone[(t * kHeads + h) * n_rot + i] : x[at + i];
            ASSERT_EQ(y[at + i], want) << "head_dim " << head_dim << " n_rot " << n_rot << " value " << i;
          }
        }
      }
    }
  }
}

// Llama 3.1+'s rope scaling: each pair's frequency divided by its factor. The same table
// is not reused for another set of factors (or none).
TEST(CpuRope, FrequencyFactorsDivideEachPairsAngle) {
  CpuBackend backend(kThreads);
  constexpr int32_t kHeads = 2, kHeadDim = 64;
  constexpr float kBase = 500000.0f;
  const std::vector<int32_t> positions = {0, 3, 40, 1000, 8000};
  std::vector<float> factors(kHeadDim / 2);
  for (int32_t i = 0; i < kHeadDim / 2; ++i) factors[i] = 1.0f + 7.0f * static_cast<float>(i) / (kHeadDim / 2 - 1);
  const int64_t row = static_cast<int64_t>(kHeads) * kHeadDim;
  const std::vector<float> x = random_normal(positions.size() * row, 5);
  for (const float* f : std::vector<const float*>{factors.data(), nullptr}) {
    std::vector<float> y = x;
    backend.rope(y.data(), positions, kHeads, kHeadDim, kHeadDim, kBase, 1.0f, RopeStyle::kNormal, f);
    for (size_t t = 0; t < positions.size(); ++t) {
      for (int32_t i = 0; i < kHeadDim / 2; ++i) {
        const double factor = f ? f[i] : 1.0;
        const double angle = positions[t] * std::pow(double(kBase), -2.0 * i / kHeadDim) / factor;
        const size_t a = t * row + 2 * i, b = a + 1;
        const double x0 = x[a], x1 = x[b];
        EXPECT_NEAR(y[a], x0 * std::cos(angle) - x1 * std::sin(angle), kRopeTolerance * std::hypot(x0, x1) * 8)
            << "pos " << positions[t] << " pair " << i << (f ? " with factors" : " without");
      }
    }
  }
}

TEST(CpuRope, PreservesPairNormsAndPositionZeroIsIdentity) {
  CpuBackend backend(kThreads);
  constexpr int32_t kHeads = 2;
  const std::vector<int32_t> positions = {0, 3, 1000, 4095, 0, 65535};
  for (const RopeCase& c : kRopeCases) {
    const int64_t row = static_cast<int64_t>(kHeads) * c.head_dim;
    const std::vector<float> x = random_normal(positions.size() * row, 7 + c.head_dim);
    std::vector<float> y = x;
    backend.rope(y.data(), positions, kHeads, c.head_dim, c.head_dim, c.freq_base, c.freq_scale, c.style);
    for (size_t t = 0; t < positions.size(); ++t) {
      if (positions[t] == 0) {
        EXPECT_EQ(0, std::memcmp(&x[t * row], &y[t * row], row * sizeof(float))) << "position 0, token " << t;
        continue;
      }
      for (int32_t h = 0; h < kHeads; ++h) {
        for (int32_t i = 0; i < c.head_dim / 2; ++i) {
          const auto [a, b] = rope_pair(c.style, c.head_dim, i);
          const size_t base = t * row + h * c.head_dim;
          const double before = std::hypot(double(x[base + a]), double(x[base + b]));
          const double after = std::hypot(double(y[base + a]), double(y[base + b]));
          EXPECT_NEAR(after, before, kRopeNormTolerance * before + 1e-30)
              << "head_dim " << c.head_dim << " pos " << positions[t] << " pair " << i;
        }
      }
    }
  }
}

// q·k after rotation depends only on the distance between the two positions.
TEST(CpuRope, DotProductDependsOnlyOnRelativePosition) {
  CpuBackend backend(1);
  for (const RopeCase& c : kRopeCases) {
    const std::vector<float> q = random_normal(c.head_dim, 11), k = random_normal(c.head_dim, 12);
    auto rotated_dot = [&](int32_t q_pos, int32_t k_pos) {
      std::vector<float> qr = q, kr = k;
      const int32_t qp[] = {q_pos}, kp[] = {k_pos};
      backend.rope(qr.data(), qp, 1, c.head_dim, c.head_dim, c.freq_base, c.freq_scale, c.style);
      backend.rope(kr.data(), kp, 1, c.head_dim, c.head_dim, c.freq_base, c.freq_scale, c.style);
      return std::inner_product(qr.begin(), qr.end(), kr.begin(), 0.0);
    };
    const double scale = std::sqrt(std::inner_product(q.begin(), q.end(), q.begin(), 0.0) *
                                   std::inner_product(k.begin(), k.end(), k.begin(), 0.0));
    EXPECT_NEAR(rotated_dot(9, 4), rotated_dot(5, 0), kRopeTolerance * scale) << "head_dim " << c.head_dim;
    EXPECT_NEAR(rotated_dot(57, 50), rotated_dot(107, 100), kRopeTolerance * scale) << "head_dim " << c.head_dim;
  }
}

// ---------------------------------------------------------------------------------------
// Gated activations and elementwise ops

// SiLU in float: exp, add, divide, then the product with up.
constexpr double kSiluTolerance = 1e-6;
// GELU is a lookup of the F16-rounded input in a table of F16-rounded outputs (as ggml):
// the input's rounding (2^-11 relative, slope <= 1.13) plus the output's (2^-11).
constexpr double kGeluF16Rounding = 1.0 / 1024;

double gelu_tanh_reference(double x) {
  return 0.5 * x * (1.0 + std::tanh(std::sqrt(2.0 / std::numbers::pi) * (x + 0.044715 * x * x * x)));
}

std::vector<float> activation_inputs() {
  std::vector<float> gate = random_normal(1000, 21, 3.0f);
  for (float v : {0.0f, -0.0f, 1e-6f, -1e-6f, 9.99f, 10.0f, 10.5f, -9.99f, -10.0f, -30.0f, 40.0f}) gate.push_back(v);
  return gate;
}

TEST(CpuActivations, SwigluMatchesReference) {
  CpuBackend backend(1);
  const std::vector<float> gate = activation_inputs();
  const std::vector<float> up = random_normal(gate.size(), 22);
  std::vector<float> y(gate.size());
  backend.swiglu(gate.data(), up.data(), static_cast<int64_t>(gate.size()), y.data());
  for (size_t i = 0; i < gate.size(); ++i) {
    const double expected = gate[i] / (1.0 + std::exp(-double(gate[i]))) * up[i];
    EXPECT_NEAR(y[i], expected, kSiluTolerance * std::fabs(expected) + 1e-30) << "gate " << gate[i];
  }
}

TEST(CpuActivations, GegluMatchesTanhGeluWithinF16Rounding) {
  CpuBackend backend(1);
  const std::vector<float> gate = activation_inputs();
  const std::vector<float> up = random_normal(gate.size(), 23);
  std::vector<float> y(gate.size());
  backend.geglu(gate.data(), up.data(), static_cast<int64_t>(gate.size()), y.data());
  for (size_t i = 0; i < gate.size(); ++i) {
    const double g = gelu_tanh_reference(gate[i]);
    // 1e-7: F16 subnormals near zero.
    const double tolerance = (kGeluF16Rounding * (std::fabs(gate[i]) + std::fabs(g)) + 1e-7) * std::fabs(up[i]);
    EXPECT_NEAR(y[i], g * up[i], tolerance) << "gate " << gate[i];
  }
  // In place over the gate, as gated_ffn_step calls it.
  std::vector<float> in_place = gate;
  backend.geglu(in_place.data(), up.data(), static_cast<int64_t>(gate.size()), in_place.data());
  EXPECT_EQ(in_place, y);
}

TEST(CpuElementwise, AddBiasAndScale) {
  CpuBackend backend(1);
  const std::vector<float> a = random_normal(21, 31), b = random_normal(21, 32), bias = random_normal(7, 33);
  std::vector<float> y(21);
  backend.add(a.data(), b.data(), 21, y.data());
  for (size_t i = 0; i < 21; ++i) EXPECT_EQ(y[i], a[i] + b[i]);
  std::vector<float> x = a;
  backend.add_bias(x.data(), bias.data(), 3, 7);
  for (size_t i = 0; i < 21; ++i) EXPECT_EQ(x[i], a[i] + bias[i % 7]);
  x = a;
  backend.scale(x.data(), 0.5f, 21);
  for (size_t i = 0; i < 21; ++i) EXPECT_EQ(x[i], a[i] * 0.5f);
}

// ---------------------------------------------------------------------------------------
// Attention over the paged cache

// Against a reference given the same F16-rounded q, K and V: only the F16 rounding of
// the probabilities (2^-11 relative) and float sums remain. Relative to max |v|.
constexpr double kAttentionTolerance = 1e-3;
// Against a reference on the unrounded floats: q·k from F16 inputs moves scores by
// ~2^-10 |q||k| scale, hence probabilities by ~1e-3 (measured 5e-4). Relative to max |v|.
constexpr double kAttentionUnroundedTolerance = 3e-3;

struct AttentionCase {
  int32_t n_heads;
  int32_t n_kv_heads;
  int32_t head_dim;
  int32_t window;
  float softcap;
  bool sinks = false;  // a sink logit per head (gpt-oss), from -2 to 2
};

std::string describe(const AttentionCase& c) {
  return std::to_string(c.n_heads) + "/" + std::to_string(c.n_kv_heads) + " heads, head_dim " +
         std::to_string(c.head_dim) + ", window " + std::to_string(c.window) + ", softcap " +
         std::to_string(c.softcap) + (c.sinks ? ", sinks" : "");
}

// Sink logits from -2 to 2 over the heads: some below every score, some above.
std::vector<float> sink_logits(int32_t n_heads) {
  std::vector<float> sinks(static_cast<size_t>(n_heads));
  for (int32_t h = 0; h < n_heads; ++h) sinks[h] = n_heads > 1 ? -2.0f + 4.0f * static_cast<float>(h) / static_cast<float>(n_heads - 1) : 1.0f;
  return sinks;
}

// Two sequences (13 and 6 tokens) stored into shuffled blocks of a cache full of stale
// values, then every token attends. The reference reads the float q, k, v directly.
class AttentionFixture {
 public:
  static constexpr int32_t kBlockSize = 4;
  static constexpr int32_t kLayer = 1;

  explicit AttentionFixture(const AttentionCase& c, KvType type = KvType::kF16)
      : c_(c), type_(type), kv_(shape(c, type)) {
    // Stale values everywhere: slots a sequence does not own must never be read (random
    // bytes in a Q8_0 cache, whose scales may be NaN or infinite).
    std::mt19937 rng(5);
    std::normal_distribution<float> dist(0.0f, 100.0f);
    for (int32_t l = 0; l < 2; ++l) {
      for (int32_t b = 0; b < 12; ++b) {
        for (int32_t s = 0; s < kBlockSize; ++s) {
          for (uint8_t* row : {kv_.key_row(l, b, s), kv_.value_row(l, b, s)}) {
            if (type == KvType::kQ8_0) {
              for (int64_t i = 0; i < kv_.shape().row_bytes(); ++i) row[i] = static_cast<uint8_t>(rng());
            } else {
              for (int64_t i = 0; i < kv_.shape().row_elements(); ++i) {
                const uint16_t bits = f32_to_f16(dist(rng));
                std::memcpy(row + 2 * i, &bits, sizeof(bits));
              }
            }
          }
        }
      }
    }
    tables_ = {{7, 2, 11, 0}, {5, 9}};
    for (int32_t seq : {0, 1}) {
      for (int32_t p = 0; p < (seq == 0 ? 13 : 6); ++p) {
        positions_.push_back(p);
        sequence_of_token_.push_back(seq);
      }
    }
    const size_t n = positions_.size();
    q_ = random_normal(n * q_row(), 41);
    k_ = random_normal(n * kv_row(), 42);
    v_ = random_normal(n * kv_row(), 43);
    // What the cache holds of k and v: F16-rounded, or Q8_0 blocks dequantized.
    k_stored_ = stored(k_);
    v_stored_ = stored(v_);
    sinks_ = sink_logits(c.n_heads);
  }

  static KvShape shape(const AttentionCase& c, KvType type) {
    KvShape s{2, 12, kBlockSize, c.n_kv_heads, c.head_dim};
    s.type = type;
    return s;
  }

  AttentionBatch batch() const { return {positions_, sequence_of_token_, tables_}; }
  AttentionParams params() const {
    AttentionParams p;
    p.layer = kLayer;
    p.n_heads = c_.n_heads;
    p.n_kv_heads = c_.n_kv_heads;
    p.head_dim = c_.head_dim;
    p.scale = 1.0f / std::sqrt(static_cast<float>(c_.head_dim));
    p.window = c_.window;
    p.softcap = c_.softcap;
    p.sinks = c_.sinks ? sinks_.data() : nullptr;
    return p;
  }

  // Stores every token's k, v, then runs attention for every token: [n, q_row].
  std::vector<float> run(Backend& backend) {
    backend.store_kv(kv_, kLayer, batch(), k_.data(), v_.data());
    std::vector<float> out(q_.size());
    backend.attention(kv_, batch(), params(), q_.data(), out.data());
    return out;
  }

  // The same in double, optionally from F16-rounded q and k, v as the cache stores them.
  std::vector<double> reference(bool round_inputs) const {
    auto in = [&](float x) { return round_inputs ? double(round_to_f16(x)) : double(x); };
    auto key = [&](size_t i) { return round_inputs ? double(k_stored_[i]) : double(k_[i]); };
    auto value = [&](size_t i) { return round_inputs ? double(v_stored_[i]) : double(v_[i]); };
    const size_t n = positions_.size();
    const int32_t hd = c_.head_dim;
    const int32_t group = c_.n_heads / c_.n_kv_heads;
    const double scale = 1.0 / std::sqrt(static_cast<double>(hd));
    std::vector<double> out(n * q_row(), 0.0);
    for (size_t t = 0; t < n; ++t) {
      for (int32_t h = 0; h < c_.n_heads; ++h) {
        const int32_t kv_head = h / group;
        // Keys: the earlier tokens of the same sequence, inside the window.
        std::vector<size_t> keys;
        std::vector<double> scores;
        for (size_t j = 0; j < n; ++j) {
          if (sequence_of_token_[j] != sequence_of_token_[t] || positions_[j] > positions_[t]) continue;
          if (c_.window > 0 && positions_[t] - positions_[j] >= c_.window) continue;
          double dot = 0.0;
          for (int32_t d = 0; d < hd; ++d) dot += in(q_[t * q_row() + h * hd + d]) * key(j * kv_row() + kv_head * hd + d);
          double s = dot * scale;
          if (c_.softcap > 0.0f) s = c_.softcap * std::tanh(s / c_.softcap);
          keys.push_back(j);
          scores.push_back(s);
        }
        double max_score = *std::max_element(scores.begin(), scores.end());
        if (c_.sinks) max_score = std::max(max_score, double(sinks_[h]));
        double sum = c_.sinks ? std::exp(double(sinks_[h]) - max_score) : 0.0;
        for (double& s : scores) sum += (s = std::exp(s - max_score));
        for (size_t i = 0; i < keys.size(); ++i) {
          for (int32_t d = 0; d < hd; ++d) {
            out[t * q_row() + h * hd + d] += scores[i] / sum * value(keys[i] * kv_row() + kv_head * hd + d);
          }
        }
      }
    }
    return out;
  }

  double max_abs_v() const {
    double m = 0.0;
    for (float x : v_) m = std::max(m, double(std::fabs(x)));
    return m;
  }
  size_t n_tokens() const { return positions_.size(); }
  int64_t q_row() const { return static_cast<int64_t>(c_.n_heads) * c_.head_dim; }
  int64_t kv_row() const { return static_cast<int64_t>(c_.n_kv_heads) * c_.head_dim; }
  const std::vector<float>& q() const { return q_; }
  KvStorage& kv() { return kv_; }
  const std::vector<std::vector<int32_t>>& tables() const { return tables_; }
  const std::vector<float>& k() const { return k_; }

 private:
  std::vector<float> stored(const std::vector<float>& x) const {
    std::vector<float> out(x.size());
    if (type_ == KvType::kF16) {
      for (size_t i = 0; i < x.size(); ++i) out[i] = round_to_f16(x[i]);
      return out;
    }
    std::vector<uint8_t> blocks(quant::row_size(TensorType::kQ8_0, kv_row()));
    for (size_t r = 0; r < x.size() / kv_row(); ++r) {
      quant::quantize_row_ref(TensorType::kQ8_0, x.data() + r * kv_row(), blocks.data(), kv_row());
      quant::dequantize_row(TensorType::kQ8_0, blocks.data(), out.data() + r * kv_row(), kv_row());
    }
    return out;
  }

  AttentionCase c_;
  KvType type_;
  KvStorage kv_;
  std::vector<std::vector<int32_t>> tables_;
  std::vector<int32_t> positions_;
  std::vector<int32_t> sequence_of_token_;
  std::vector<float> q_, k_, v_;  // [n, q_row], [n, kv_row], [n, kv_row]
  std::vector<float> k_stored_, v_stored_;
  std::vector<float> sinks_;  // [n_heads], used when c_.sinks
};

const AttentionCase kAttentionCases[] = {
    {4, 2, 16, 0, 0.0f},   // GQA, full causal
    {8, 1, 32, 3, 0.0f},   // multi-query, window smaller than a block
    {6, 2, 16, 5, 0.0f},   // window across block boundaries
    {4, 4, 8, 0, 5.0f},    // multi-head with a score softcap
    {2, 1, 64, 13, 0.0f},  // window exactly the longest sequence
    {8, 2, 16, 0, 0.0f, true},  // attention sinks (gpt-oss), full causal
    {4, 2, 32, 3, 0.0f, true},  // sinks with a sliding window
};

TEST(CpuAttention, MatchesReferenceOnF16RoundedInputs) {
  CpuBackend backend(kThreads);
  for (const AttentionCase& c : kAttentionCases) {
    AttentionFixture f(c);
    const std::vector<float> out = f.run(backend);
    const std::vector<double> expected = f.reference(/*round_inputs=*/true);
    const double tolerance = kAttentionTolerance * f.max_abs_v();
    for (size_t i = 0; i < out.size(); ++i) {
      ASSERT_NEAR(out[i], expected[i], tolerance) << describe(c) << ", token " << i / f.q_row();
    }
  }
}

// The sink term is no rounding matter: the same case without sinks gives outputs far
// apart (every probability scaled down by sum / (sum + e^sink)).
TEST(CpuAttention, SinksChangeTheOutputAsTheReferenceSays) {
  CpuBackend backend(kThreads);
  AttentionCase with = {8, 2, 16, 0, 0.0f, true}, without = with;
  without.sinks = false;
  AttentionFixture a(with), b(without);
  const std::vector<float> out_with = a.run(backend), out_without = b.run(backend);
  double largest = 0.0;
  for (size_t i = 0; i < out_with.size(); ++i) largest = std::max(largest, double(std::fabs(out_with[i] - out_without[i])));
  EXPECT_GT(largest, 50 * kAttentionTolerance * a.max_abs_v());
}

TEST(CpuAttention, MatchesFloatReference) {
  CpuBackend backend(kThreads);
  for (const AttentionCase& c : kAttentionCases) {
    AttentionFixture f(c);
    const std::vector<float> out = f.run(backend);
    const std::vector<double> expected = f.reference(/*round_inputs=*/false);
    const double tolerance = kAttentionUnroundedTolerance * f.max_abs_v();
    for (size_t i = 0; i < out.size(); ++i) {
      ASSERT_NEAR(out[i], expected[i], tolerance) << describe(c) << ", token " << i / f.q_row();
    }
  }
}

// A decode step (one query against keys stored by earlier calls) gives the same bits as
// that token's row of the whole prefill.
TEST(CpuAttention, SingleQueryMatchesItsRowOfTheBatch) {
  CpuBackend backend(kThreads);
  for (const AttentionCase& c : kAttentionCases) {
    AttentionFixture f(c);
    const std::vector<float> all = f.run(backend);
    const size_t last_of_first_sequence = 12;  // position 12 of sequence 0
    const int32_t position[] = {12};
    const int32_t sequence[] = {0};
    const std::vector<std::vector<int32_t>> tables = {f.tables()[0]};
    std::vector<float> one(f.q_row());
    backend.attention(f.kv(), AttentionBatch{position, sequence, tables}, f.params(),
                      f.q().data() + last_of_first_sequence * f.q_row(), one.data());
    EXPECT_EQ(0, std::memcmp(one.data(), all.data() + last_of_first_sequence * f.q_row(), one.size() * sizeof(float)))
        << describe(c);
  }
}

TEST(CpuAttention, StoreKvWritesF16RowsIntoTheirSlots) {
  CpuBackend backend(1);
  const AttentionCase c = {4, 2, 16, 0, 0.0f};
  AttentionFixture f(c);
  const std::vector<float> k = random_normal(f.n_tokens() * f.kv_row(), 42);  // the fixture's k
  f.run(backend);
  // Token 9 of sequence 0 is at position 9: block tables[0][2], slot 1.
  const uint8_t* row = f.kv().key_row(AttentionFixture::kLayer, f.tables()[0][2], 1);
  for (int64_t i = 0; i < f.kv_row(); ++i) {
    uint16_t bits;
    std::memcpy(&bits, row + 2 * i, sizeof(bits));
    EXPECT_EQ(bits, f32_to_f16(k[9 * f.kv_row() + i]));
  }
}

// ---------------------------------------------------------------------------------------
// Attention over a Q8_0 cache (head_dim a multiple of 32)

const AttentionCase kQ8AttentionCases[] = {
    {4, 2, 32, 0, 0.0f},   // GQA, full causal
    {8, 1, 32, 3, 0.0f},   // multi-query, window smaller than a block
    {4, 4, 64, 0, 5.0f},   // multi-head with a score softcap
    {2, 1, 64, 13, 0.0f},  // window exactly the longest sequence
    {4, 1, 256, 0, 0.0f},  // Gemma 3's head_dim
};

TEST(CpuAttentionQ8, StoreKvWritesTheQ8BlocksOfEachRow) {
  CpuBackend backend(1);
  AttentionFixture f({4, 2, 64, 0, 0.0f}, KvType::kQ8_0);
  f.run(backend);
  // Token 9 of sequence 0 is at position 9: block tables[0][2], slot 1.
  const uint8_t* row = f.kv().key_row(AttentionFixture::kLayer, f.tables()[0][2], 1);
  std::vector<uint8_t> expected(quant::row_size(TensorType::kQ8_0, f.kv_row()));
  ASSERT_EQ(static_cast<int64_t>(expected.size()), f.kv().shape().row_bytes());
  quant::quantize_row_ref(TensorType::kQ8_0, f.k().data() + 9 * f.kv_row(), expected.data(), f.kv_row());
  EXPECT_EQ(0, std::memcmp(row, expected.data(), expected.size()));
}

// Against the reference on what the cache holds (Q8_0 k, v dequantized, q rounded to
// F16): the same tolerance as F16. Against the unrounded floats, the codes' rounding
// (half a step of amax / 127 per value) moves scores and values by about 1%.
TEST(CpuAttentionQ8, MatchesReferenceOnStoredInputs) {
  CpuBackend backend(kThreads);
  for (const AttentionCase& c : kQ8AttentionCases) {
    AttentionFixture f(c, KvType::kQ8_0);
    const std::vector<float> out = f.run(backend);
    const std::vector<double> expected = f.reference(/*round_inputs=*/true);
    const std::vector<double> unrounded = f.reference(/*round_inputs=*/false);
    for (size_t i = 0; i < out.size(); ++i) {
      ASSERT_NEAR(out[i], expected[i], kAttentionTolerance * f.max_abs_v()) << describe(c) << ", token " << i / f.q_row();
      ASSERT_NEAR(out[i], unrounded[i], 3e-2 * f.max_abs_v()) << describe(c) << ", token " << i / f.q_row();
    }
  }
}

TEST(CpuAttentionQ8, SingleQueryMatchesItsRowOfTheBatch) {
  CpuBackend backend(kThreads);
  for (const AttentionCase& c : kQ8AttentionCases) {
    AttentionFixture f(c, KvType::kQ8_0);
    const std::vector<float> all = f.run(backend);
    const int32_t position[] = {12};
    const int32_t sequence[] = {0};
    const std::vector<std::vector<int32_t>> tables = {f.tables()[0]};
    std::vector<float> one(f.q_row());
    backend.attention(f.kv(), AttentionBatch{position, sequence, tables}, f.params(), f.q().data() + 12 * f.q_row(),
                      one.data());
    EXPECT_EQ(0, std::memcmp(one.data(), all.data() + 12 * f.q_row(), one.size() * sizeof(float))) << describe(c);
  }
}

// Each vector kernel this CPU can run, called directly (the back end picks only the best
// one), against the scalar reference on one item: F16 and Q8_0 rows, a softcap, a tail of
// keys that is not a multiple of any vector width.
// n_keys key and value rows of head_dim values, stored as the cache stores them (F16, or
// Q8_0 blocks), with a pointer to each row as HeadGroupAttention takes them.
struct KvRows {
  std::vector<uint8_t> key_rows, value_rows;
  std::vector<const uint8_t*> keys, values;
  KvRows(KvType type, const std::vector<float>& k, const std::vector<float>& v, int32_t n_keys, int32_t head_dim) {
    KvShape shape{1, 1, 64, 1, head_dim};
    shape.type = type;
    const int64_t row_bytes = shape.row_bytes();
    key_rows.resize(n_keys * row_bytes);
    value_rows.resize(n_keys * row_bytes);
    for (int32_t j = 0; j < n_keys; ++j) {
      for (auto [src, dst] : {std::pair{&k, &key_rows}, std::pair{&v, &value_rows}}) {
        uint8_t* row = dst->data() + j * row_bytes;
        if (type == KvType::kQ8_0) {
          quant::quantize_row_ref(TensorType::kQ8_0, src->data() + j * head_dim, row, head_dim);
        } else {
          for (int32_t d = 0; d < head_dim; ++d) {
            const uint16_t bits = f32_to_f16((*src)[j * head_dim + d]);
            std::memcpy(row + 2 * d, &bits, sizeof(bits));
          }
        }
      }
      keys.push_back(key_rows.data() + j * row_bytes);
      values.push_back(value_rows.data() + j * row_bytes);
    }
  }
};

TEST(CpuAttentionKernels, EveryVectorKernelMatchesTheReference) {
  const std::vector<cpu::AttentionKernel> kernels = cpu::attention_kernels(detect_cpu_features());
  constexpr int32_t kHeads = 4, kHeadDim = 64, kKeys = 37;
  const std::vector<float> q = random_normal(kHeads * kHeadDim, 61);
  const std::vector<float> k = random_normal(kKeys * kHeadDim, 62);
  const std::vector<float> v = random_normal(kKeys * kHeadDim, 63);
  for (KvType type : {KvType::kF16, KvType::kQ8_0}) {
    const KvRows rows(type, k, v, kKeys, kHeadDim);
    const std::vector<const uint8_t*>& keys = rows.keys;
    const std::vector<const uint8_t*>& values = rows.values;
    const std::vector<float> sinks = sink_logits(kHeads);
    for (const auto& [softcap, with_sinks] : {std::pair{0.0f, false}, {5.0f, false}, {0.0f, true}, {5.0f, true}}) {
      auto run = [&](void (*kernel)(const cpu::HeadGroupAttention&)) {
        std::vector<float> out(kHeads * kHeadDim), scratch_q(kHeads * kHeadDim), scratch_scores(kHeads * kKeys);
        cpu::HeadGroupAttention a;
        a.q = q.data();
        a.n_heads = kHeads;
        a.head_dim = kHeadDim;
        a.keys = keys.data();
        a.values = values.data();
        a.kv_type = type;
        a.n_keys = kKeys;
        a.scale = 0.125f;
        a.softcap = softcap;
        a.sinks = with_sinks ? sinks.data() : nullptr;
        a.out = out.data();
        a.scratch_q = scratch_q.data();
        a.scratch_scores = scratch_scores.data();
        kernel(a);
        return out;
      };
      const std::vector<float> expected = run(cpu::attend_head_group_ref);
      for (const cpu::AttentionKernel& kernel : kernels) {
        if (!kernel.runs_here) continue;
        const std::vector<float> out = run(kernel.attend);
        for (size_t i = 0; i < out.size(); ++i) {
          ASSERT_NEAR(out[i], expected[i], kAttentionTolerance * 4.0)  // |v| < 4 here
              << kernel.isa << " " << kv_type_name(type) << " softcap " << softcap << " sinks " << with_sinks
              << " element " << i;
        }
      }
    }
  }
}

// Every width keeps the AVX-512 kernel's sums in its order (16-lane q·k accumulators,
// 16 double lanes in the softmax, the same e^x with its cutoff), so the bodies this CPU
// runs give the same bits: for every head grouping, key count (tails of the 16-key
// blocks; a long one, so that some probability sits where a last-bit change of its score
// would round it to another F16 value) and scale (a large one drives scores below the
// e^x cutoff). Across targets (x86 against arm64) the same bits are checked through the
// outputs the model tests compare (tests/model).
TEST(CpuAttentionKernels, EveryWidthGivesTheSameBits) {
  std::vector<cpu::AttentionKernel> kernels;
  for (const cpu::AttentionKernel& kernel : cpu::attention_kernels(detect_cpu_features())) {
    if (kernel.runs_here) kernels.push_back(kernel);
  }
  if (kernels.size() < 2) {
    std::printf("[ kernels  ] attention widths compared: none (this CPU runs %zu)\n", kernels.size());
    return;
  }
  constexpr int32_t kMaxHeads = 6, kHeadDim = 256, kMaxKeys = 2000;
  const std::vector<float> q = random_normal(kMaxHeads * kHeadDim, 71);
  const std::vector<float> k = random_normal(kMaxKeys * kHeadDim, 72);
  const std::vector<float> v = random_normal(kMaxKeys * kHeadDim, 73);
  int n_compared = 0;
  for (KvType type : {KvType::kF16, KvType::kQ8_0}) {
    const KvRows rows(type, k, v, kMaxKeys, kHeadDim);
    const std::vector<const uint8_t*>& keys = rows.keys;
    const std::vector<const uint8_t*>& values = rows.values;
    for (int32_t n_heads : {1, 2, 3, 4, 6}) {
      for (int32_t n_keys : {1, 7, 16, 37, 100, 2000}) {
        for (const auto& [scale, with_sinks] : {std::pair{0.0625f, false}, {2.0f, false}, {0.0625f, true}, {2.0f, true}}) {
          const std::vector<float> sinks = sink_logits(n_heads);
          auto run = [&](void (*kernel)(const cpu::HeadGroupAttention&)) {
            std::vector<float> out(n_heads * kHeadDim), scratch_q(n_heads * kHeadDim), scratch_scores(n_heads * n_keys);
            cpu::HeadGroupAttention a;
            a.q = q.data();
            a.n_heads = n_heads;
            a.head_dim = kHeadDim;
            a.keys = keys.data();
            a.values = values.data();
            a.kv_type = type;
            a.n_keys = n_keys;
            a.scale = scale;
            a.sinks = with_sinks ? sinks.data() : nullptr;
            a.out = out.data();
            a.scratch_q = scratch_q.data();
            a.scratch_scores = scratch_scores.data();
            kernel(a);
            return out;
          };
          const std::vector<float> widest = run(kernels[0].attend);
          for (size_t k = 1; k < kernels.size(); ++k) {
            const std::vector<float> other = run(kernels[k].attend);
            ASSERT_EQ(std::memcmp(widest.data(), other.data(), widest.size() * sizeof(float)), 0)
                << kernels[k].isa << " vs " << kernels[0].isa << ": " << kv_type_name(type) << ", " << n_heads
                << " heads, " << n_keys << " keys, scale " << scale << (with_sinks ? ", sinks" : "");
          }
          ++n_compared;
        }
      }
    }
  }
  std::printf("[ kernels  ] attention %s vs %s: %d cases, the same bits\n", kernels[0].isa, kernels[1].isa, n_compared);
}

// The same bits on every target, not only on every width of one CPU: the widest body this
// CPU runs hashes its outputs over a set of cases and the hash is compared with the one
// recorded on x86-64 (tests/fixtures/ops/attention_bits.txt; tools/make_attention_bits.sh
// writes it through TOKENMILL_WRITE_ATTENTION_BITS). Under qemu-aarch64 this checks the
// NEON body against the AVX-512 and AVX2 ones.
TEST(CpuAttentionKernels, WidestBodyGivesTheRecordedBitsOnEveryTarget) {
  const cpu::AttentionKernel* widest = nullptr;
  const std::vector<cpu::AttentionKernel> kernels = cpu::attention_kernels(detect_cpu_features());
  for (const cpu::AttentionKernel& kernel : kernels) {
    if (kernel.runs_here) {
      widest = &kernel;
      break;
    }
  }
  ASSERT_NE(widest, nullptr) << "no vector attention body runs on this CPU";
  constexpr int32_t kMaxHeads = 4, kHeadDim = 128, kMaxKeys = 300;
  const std::vector<float> q = testing::hashed_values(kMaxHeads * kHeadDim, 1);
  const std::vector<float> k = testing::hashed_values(kMaxKeys * kHeadDim, 2);
  const std::vector<float> v = testing::hashed_values(kMaxKeys * kHeadDim, 3);
  std::string lines;
  for (KvType type : {KvType::kF16, KvType::kQ8_0}) {
    const KvRows rows(type, k, v, kMaxKeys, kHeadDim);
    for (int32_t n_heads : {1, 3, 4}) {
      for (int32_t n_keys : {1, 37, 300}) {
        for (float softcap : {0.0f, 5.0f}) {
          std::vector<float> out(n_heads * kHeadDim), scratch_q(n_heads * kHeadDim), scratch_scores(n_heads * n_keys);
          cpu::HeadGroupAttention a;
          a.q = q.data();
          a.n_heads = n_heads;
          a.head_dim = kHeadDim;
          a.keys = rows.keys.data();
          a.values = rows.values.data();
          a.kv_type = type;
          a.n_keys = n_keys;
          a.scale = 0.09f;
          a.softcap = softcap;
          a.out = out.data();
          a.scratch_q = scratch_q.data();
          a.scratch_scores = scratch_scores.data();
          widest->attend(a);
          testing::BitsHash h;
          h.add(out.data(), out.size() * sizeof(float));
          char line[128];
          std::snprintf(line, sizeof line, "%s heads=%d keys=%d softcap=%g %s\n", kv_type_name(type), n_heads, n_keys,
                        softcap, h.hex().c_str());
          lines += line;
        }
      }
    }
  }
  EXPECT_EQ(lines, testing::recorded_bits("ops/attention_bits.txt", lines))
      << "the " << widest->isa << " body's bits differ from those recorded";
  std::printf("[ kernels  ] attention %s: the recorded bits\n", widest->isa);
}

TEST(KvShapeBytes, Q8RowsTakeSeventeenThirtySecondsOfF16) {
  KvShape shape{18, 100, 16, 1, 256};
  const int64_t f16 = shape.total_bytes();
  shape.type = KvType::kQ8_0;
  EXPECT_EQ(shape.row_bytes(), 8 * 34);
  EXPECT_EQ(shape.total_bytes() * 32, f16 * 17);
  EXPECT_EQ(parse_kv_type("q8_0"), KvType::kQ8_0);
  EXPECT_EQ(parse_kv_type("f16"), KvType::kF16);
  EXPECT_EQ(parse_kv_type("q4_0"), std::nullopt);
  EXPECT_STREQ(kv_type_name(KvType::kQ8_0), "q8_0");
}

// ---------------------------------------------------------------------------------------
// Matmul for every weight type

// Largest error of one converted activation, per the weight type's vec_dot_type. The
// bound for x_i is e_i * |x_i| (float formats) or e_i * max |x| over x_i's block (the Q8
// formats: a step of amax/127, half of it as error, plus the F16 scale's rounding).
double activation_rounding(TensorType vec_dot_type) {
  switch (vec_dot_type) {
    case TensorType::kF32: return 0.0;
    case TensorType::kF16: return 1.0 / 2048;
    case TensorType::kBF16: return 1.0 / 256;
    default: return 1.0 / 127;
  }
}
// Float summation of products, relative to sum |w_i x_i|.
constexpr double kMatmulAccumulationTolerance = 2e-6;

// A row of a type that has no quantizer (the lattice i-quants): random quant bits under a
// super-block scale d = 0.01 (IQ1_M keeps its d in the top nibbles of its scale words).
void random_lattice_row(const quant::TypeTraits& traits, int64_t n_cols, uint64_t seed, uint8_t* row) {
  std::mt19937_64 rng(seed);
  const size_t n_blocks = static_cast<size_t>(n_cols / traits.block_size);
  for (size_t i = 0; i < n_blocks * traits.bytes_per_block; ++i) row[i] = static_cast<uint8_t>(rng());
  const uint16_t d = f32_to_f16(0.01f);
  for (size_t b = 0; b < n_blocks; ++b) {
    uint8_t* block = row + b * traits.bytes_per_block;
    if (traits.type == TensorType::kIQ1_M) {
      uint16_t words[4];
      std::memcpy(words, block + 48, sizeof words);
      for (int k = 0; k < 4; ++k) words[k] = static_cast<uint16_t>((words[k] & 0x0fff) | (((d >> (4 * k)) & 0xf) << 12));
      std::memcpy(block + 48, words, sizeof words);
    } else {
      std::memcpy(block, &d, sizeof d);
    }
  }
}

TEST(CpuMatmul, EveryWeightTypeMatchesDequantizedFloatDot) {
  CpuBackend backend(kThreads);
  int n_types = 0;
  for (const quant::TypeTraits& traits : quant::all_type_traits()) {
    if (!traits.vec_dot_ref) continue;
    ++n_types;
    const quant::TypeTraits& input = quant::type_traits(traits.vec_dot_type);
    const bool block_relative = input.is_quantized;
    const double rounding = activation_rounding(traits.vec_dot_type);
    for (int64_t n_cols : {256, 512}) {
      for (int64_t n_rows : {1, 7, 31}) {
        // Weights: random rows quantized to the type; the reference uses them dequantized.
        const size_t row_bytes = quant::row_size(traits.type, n_cols);
        std::vector<uint8_t> weights(row_bytes * n_rows);
        std::vector<float> dequantized(n_rows * n_cols);
        const std::vector<float> w_float = random_normal(n_rows * n_cols, 50 + n_rows, 0.1f);
        for (int64_t r = 0; r < n_rows; ++r) {
          if (traits.quantize_row_ref != nullptr) {
            quant::quantize_row_ref(traits.type, &w_float[r * n_cols], &weights[r * row_bytes], n_cols);
          } else {
            random_lattice_row(traits, n_cols, 70 + r, &weights[r * row_bytes]);
          }
          quant::dequantize_row(traits.type, &weights[r * row_bytes], &dequantized[r * n_cols], n_cols);
        }
        const WeightMatrix w{traits.type, weights.data(), n_cols, n_rows, row_bytes};
        for (int64_t n_tokens : {1, 3, 17}) {
          std::vector<float> x = random_normal(n_tokens * n_cols, 60 + n_tokens);
          x[0] = 25.0f;  // an outlier, as real activations have
          std::vector<float> y(n_tokens * n_rows, std::nanf(""));
          backend.matmul(w, x.data(), n_tokens, y.data());
          for (int64_t t = 0; t < n_tokens; ++t) {
            const float* xt = &x[t * n_cols];
            for (int64_t r = 0; r < n_rows; ++r) {
              const float* wr = &dequantized[r * n_cols];
              double expected = 0.0, magnitude = 0.0, bound = 0.0;
              for (int64_t i = 0; i < n_cols; ++i) {
                expected += double(wr[i]) * xt[i];
                magnitude += std::fabs(double(wr[i]) * xt[i]);
                double x_scale = std::fabs(xt[i]);
                if (block_relative) {
                  const int64_t begin = i / input.block_size * input.block_size;
                  x_scale = 0.0;
                  for (int64_t j = begin; j < begin + input.block_size; ++j) x_scale = std::max(x_scale, double(std::fabs(xt[j])));
                }
                bound += std::fabs(wr[i]) * rounding * x_scale;
              }
              const double tolerance = bound + kMatmulAccumulationTolerance * magnitude + 1e-6;
              ASSERT_NEAR(y[t * n_rows + r], expected, tolerance)
                  << traits.name << ": n_cols " << n_cols << ", n_rows " << n_rows << ", n_tokens " << n_tokens
                  << ", token " << t << ", row " << r;
            }
          }
        }
      }
    }
  }
  EXPECT_GE(n_types, 25);  // f32, f16, bf16, 4 legacy, 5 K-quant, 11 i-quant and 2 ternary formats
}

// Splitting rows or tokens over threads, or batching tokens, changes no bits: each output
// is one row's dot product with one token's converted activations.
TEST(CpuMatmul, ThreadsAndBatchingDoNotChangeBits) {
  CpuBackend one_thread(1), many_threads(kThreads);
  constexpr int64_t kCols = 256, kRows = 31, kTokens = 17;
  for (TensorType type : {TensorType::kF32, TensorType::kF16, TensorType::kQ4_0, TensorType::kQ8_0,
                          TensorType::kQ4_K, TensorType::kQ6_K}) {
    const size_t row_bytes = quant::row_size(type, kCols);
    std::vector<uint8_t> weights(row_bytes * kRows);
    const std::vector<float> w_float = random_normal(kRows * kCols, 70, 0.1f);
    for (int64_t r = 0; r < kRows; ++r) quant::quantize_row_ref(type, &w_float[r * kCols], &weights[r * row_bytes], kCols);
    const WeightMatrix w{type, weights.data(), kCols, kRows, row_bytes};
    const std::vector<float> x = random_normal(kTokens * kCols, 71);
    std::vector<float> batched(kTokens * kRows), threaded(kTokens * kRows), single(kRows);
    one_thread.matmul(w, x.data(), kTokens, batched.data());
    many_threads.matmul(w, x.data(), kTokens, threaded.data());
    EXPECT_EQ(batched, threaded) << gguf::tensor_type_name(type);
    for (int64_t t = 0; t < kTokens; ++t) {
      many_threads.matmul(w, &x[t * kCols], 1, single.data());
      EXPECT_EQ(0, std::memcmp(single.data(), &batched[t * kRows], kRows * sizeof(float)))
          << gguf::tensor_type_name(type) << " token " << t;
    }
  }
}

// matmul_argmax gives matmul's bits and, per token, the first row of its largest output:
// folded inside the panel kernels (Q8_0 repacked), or scanned after the others; the same
// argmax without the results (y null).
TEST(CpuMatmul, ArgmaxIsEachTokensFirstLargestOutput) {
  CpuBackend backend(kThreads);
  constexpr int64_t kCols = 256, kRows = 4096;
  for (TensorType type : {TensorType::kQ8_0, TensorType::kQ4_K, TensorType::kF32}) {
    for (const bool repack : {false, true}) {
      if (repack && quant::best_panel_kernel(type) == nullptr) continue;
      const size_t row_bytes = quant::row_size(type, kCols);
      std::vector<float> w_float = random_normal(kRows * kCols, 80, 0.1f);
      // Rows 2000 and 3000 repeat row 100; even tokens point along it, so the three tie
      // for their largest output and the first, 100, must be named.
      for (const int64_t copy : {2000, 3000}) std::copy_n(&w_float[100 * kCols], kCols, &w_float[copy * kCols]);
      std::vector<uint8_t> weights(row_bytes * kRows);
      for (int64_t r = 0; r < kRows; ++r) quant::quantize_row_ref(type, &w_float[r * kCols], &weights[r * row_bytes], kCols);
      std::vector<uint8_t> packed;
      WeightMatrix w{type, weights.data(), kCols, kRows, row_bytes};
      if (repack) {
        packed.resize(weights.size());
        quant::pack_panels(type, weights.data(), kRows, row_bytes, packed.data());
        w.data = packed.data();
        w.panels = true;
      }
      for (int64_t n_tokens : {1, 5, 16}) {
        std::vector<float> x = random_normal(n_tokens * kCols, 81 + n_tokens);
        for (int64_t t = 0; t < n_tokens; t += 2) {
          for (int64_t i = 0; i < kCols; ++i) x[t * kCols + i] = 0.01f * x[t * kCols + i] + 10.0f * w_float[100 * kCols + i];
        }
        std::vector<float> y(n_tokens * kRows), y_plain(n_tokens * kRows);
        std::vector<int32_t> argmax(n_tokens, -7);
        std::vector<int32_t> argmax_only(n_tokens, -7);
        backend.matmul_argmax(w, x.data(), n_tokens, y.data(), argmax.data());
        backend.matmul_argmax(w, x.data(), n_tokens, nullptr, argmax_only.data());  // no results stored
        backend.matmul(w, x.data(), n_tokens, y_plain.data());
        const std::string what = std::string(gguf::tensor_type_name(type)) + (repack ? " panels" : "") + ", " +
                                 std::to_string(n_tokens) + " tokens";
        EXPECT_EQ(0, std::memcmp(y.data(), y_plain.data(), y.size() * sizeof(float))) << what;
        EXPECT_EQ(argmax_only, argmax) << what;
        for (int64_t t = 0; t < n_tokens; ++t) {
          EXPECT_EQ(argmax[t], first_max_index(std::span<const float>(&y[t * kRows], kRows))) << what << ", token " << t;
          if (t % 2 == 0) {
            EXPECT_EQ(argmax[t], 100) << what << ", token " << t;
          }
        }
      }
    }
  }
}

// Greedy picks of many tokens from a Q8_0 panel matrix go through its int8 screen where
// the CPU has AMX (quant/argmax_screen.h): the picks must be the exact kernels' first
// largest rows. Ties (rows 2000 and 3000 repeat row 100, and even tokens point along it),
// close races (odd tokens are random, over rows of similar size), activations with large
// outliers (which the screen's second level must absorb), token counts with a partial
// tile, and rows in whole and half pairs of panels.
TEST(CpuMatmul, ScreenedArgmaxIsTheExactFirstLargestRow) {
  constexpr int64_t kCols = 640;
  for (const int64_t n_rows : {int64_t{8192}, int64_t{8192 - 16}}) {
    CpuBackend backend(kThreads);  // one per matrix: a screen is known by the matrix's address
    const TensorType type = TensorType::kQ8_0;
    const size_t row_bytes = quant::row_size(type, kCols);
    std::vector<float> w_float = random_normal(n_rows * kCols, 90, 0.05f);
    for (const int64_t copy : {2000, 3000}) std::copy_n(&w_float[100 * kCols], kCols, &w_float[copy * kCols]);
    std::vector<uint8_t> weights(row_bytes * n_rows), packed(row_bytes * n_rows);
    for (int64_t r = 0; r < n_rows; ++r) quant::quantize_row_ref(type, &w_float[r * kCols], &weights[r * row_bytes], kCols);
    // Panels as the model lays them out, where this CPU has a panel kernel (the screen
    // runs on panels only); the file's rows elsewhere.
    const bool repack = quant::best_panel_kernel(type) != nullptr;
    if (repack) quant::pack_panels(type, weights.data(), n_rows, row_bytes, packed.data());
    const WeightMatrix w{type, repack ? packed.data() : weights.data(), kCols, n_rows, row_bytes, repack};
    int64_t expected_screened = 0;
    for (const int64_t n_tokens : {32, 45, 64}) {
      std::vector<float> x = random_normal(n_tokens * kCols, 91 + n_tokens);
      for (int64_t t = 0; t < n_tokens; ++t) {
        float* row = &x[t * kCols];
        row[7] *= 40.0f;  // an outlier feature, as in real hidden states
        row[300] *= -25.0f;
        if (t % 2 == 0) {
          for (int64_t i = 0; i < kCols; ++i) row[i] = 0.02f * row[i] + 5.0f * w_float[100 * kCols + i];
        }
      }
      std::vector<float> y(n_tokens * n_rows);
      std::vector<int32_t> argmax(n_tokens, -7);
      backend.matmul(w, x.data(), n_tokens, y.data());
      backend.matmul_argmax(w, x.data(), n_tokens, nullptr, argmax.data());
      if (quant::screen_runs_here()) expected_screened += n_tokens;
      for (int64_t t = 0; t < n_tokens; ++t) {
        EXPECT_EQ(argmax[t], first_max_index(std::span<const float>(&y[t * n_rows], n_rows)))
            << n_rows << " rows, " << n_tokens << " tokens, token " << t;
        if (t % 2 == 0) {
          EXPECT_EQ(argmax[t], 100) << n_tokens << " tokens, token " << t;
        }
      }
    }
    EXPECT_EQ(backend.screened_tokens(), expected_screened);
    // Its memory is announced for budgets where it can be built, and only there.
    EXPECT_EQ(backend.argmax_extra_bytes(w), quant::screen_runs_here() ? n_rows * kCols + n_rows * 12 : 0);
    EXPECT_EQ(backend.argmax_extra_bytes(WeightMatrix{type, weights.data(), kCols, n_rows, row_bytes}), 0);
    std::printf("screened argmax, %lld rows: %s\n", static_cast<long long>(n_rows),
                quant::screen_runs_here() ? "the screen ran (AMX)" : "exact kernels only (no AMX here)");
  }
}

// Products of one input in one pass give the bits of separate matmuls: products of one
// pass (Q5_0 + Q8_0 share Q8_0 activations; panels or rows), products whose pieces
// straddle them (row counts not a multiple of a piece), and mixes that cannot share a
// pass (Q4_K's activations are Q8_K; panels beside rows).
TEST(CpuMatmul, SharedInputProductsGiveTheBitsOfSeparateCalls) {
  CpuBackend backend(kThreads);
  constexpr int64_t kCols = 256;
  struct Spec {
    TensorType type;
    int64_t n_rows;
    bool repack;
  };
  const std::vector<std::vector<Spec>> groups = {
      {{TensorType::kQ5_0, 1024, true}, {TensorType::kQ5_0, 256, true}, {TensorType::kQ8_0, 256, true}},
      {{TensorType::kQ5_0, 48, true}, {TensorType::kQ5_0, 16, true}},
      {{TensorType::kQ4_K, 37, false}, {TensorType::kQ6_K, 64, false}, {TensorType::kQ4_K, 5, false}},
      {{TensorType::kQ8_0, 80, true}, {TensorType::kQ4_K, 48, false}, {TensorType::kQ8_0, 32, false}},
      {{TensorType::kF32, 9, false}},
  };
  uint32_t seed = 90;
  for (const std::vector<Spec>& group : groups) {
    std::vector<std::vector<uint8_t>> storage;
    std::vector<WeightMatrix> matrices;
    std::string what;
    for (const Spec& spec : group) {
      if (spec.repack && quant::best_panel_kernel(spec.type) == nullptr) continue;  // no panel kernel here
      const size_t row_bytes = quant::row_size(spec.type, kCols);
      const std::vector<float> w_float = random_normal(spec.n_rows * kCols, ++seed, 0.1f);
      std::vector<uint8_t> weights(row_bytes * spec.n_rows);
      for (int64_t r = 0; r < spec.n_rows; ++r) {
        quant::quantize_row_ref(spec.type, &w_float[r * kCols], &weights[r * row_bytes], kCols);
      }
      WeightMatrix w{spec.type, nullptr, kCols, spec.n_rows, row_bytes};
      if (spec.repack) {
        std::vector<uint8_t> packed(weights.size());
        quant::pack_panels(spec.type, weights.data(), spec.n_rows, row_bytes, packed.data());
        weights = std::move(packed);
        w.panels = true;
      }
      storage.push_back(std::move(weights));
      w.data = storage.back().data();
      matrices.push_back(w);
      what += std::string(gguf::tensor_type_name(spec.type)) + "x" + std::to_string(spec.n_rows) +
              (spec.repack ? " panels " : " ");
    }
    for (int64_t n_tokens : {1, 5, 16, 33}) {
      const std::vector<float> x = random_normal(n_tokens * kCols, ++seed);
      std::vector<std::vector<float>> together, apart;
      std::vector<MatmulProduct> products;
      for (const WeightMatrix& w : matrices) {
        together.emplace_back(n_tokens * w.n_rows, std::nanf(""));
        apart.emplace_back(n_tokens * w.n_rows, std::nanf(""));
      }
      for (size_t i = 0; i < matrices.size(); ++i) products.push_back({&matrices[i], together[i].data()});
      backend.matmul_shared_input(products, x.data(), n_tokens);
      for (size_t i = 0; i < matrices.size(); ++i) backend.matmul(matrices[i], x.data(), n_tokens, apart[i].data());
      for (size_t i = 0; i < matrices.size(); ++i) {
        EXPECT_EQ(0, std::memcmp(together[i].data(), apart[i].data(), together[i].size() * sizeof(float)))
            << what << "product " << i << ", " << n_tokens << " tokens";
      }
    }
  }
}

TEST(CpuGetRows, EqualsDequantizedRows) {
  CpuBackend backend(1);
  constexpr int64_t kCols = 256, kRows = 9;
  for (TensorType type : {TensorType::kF32, TensorType::kF16, TensorType::kBF16, TensorType::kQ8_0,
                          TensorType::kQ4_K, TensorType::kQ6_K}) {
    const size_t row_bytes = quant::row_size(type, kCols);
    std::vector<uint8_t> table(row_bytes * kRows);
    const std::vector<float> values = random_normal(kRows * kCols, 80);
    for (int64_t r = 0; r < kRows; ++r) quant::quantize_row_ref(type, &values[r * kCols], &table[r * row_bytes], kCols);
    const WeightMatrix w{type, table.data(), kCols, kRows, row_bytes};
    const std::vector<int32_t> ids = {8, 0, 3, 3};
    std::vector<float> out(ids.size() * kCols), expected(kCols);
    backend.get_rows(w, ids, out.data());
    for (size_t i = 0; i < ids.size(); ++i) {
      quant::dequantize_row(type, &table[ids[i] * row_bytes], expected.data(), kCols);
      EXPECT_EQ(0, std::memcmp(expected.data(), &out[i * kCols], kCols * sizeof(float)))
          << gguf::tensor_type_name(type) << " id " << ids[i];
    }
  }
}

}  // namespace
}  // namespace tokenmill::ops
