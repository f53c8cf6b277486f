// IQ4_NL and IQ4_XS: 4-bit indices into 16 fixed non-linear levels, scaled per block of
// 32 (IQ4_NL: an f16 scale; IQ4_XS: a 6-bit scale under an f16 one per 256).
//
// Quantization is our own search: per group of 32, a range of candidate scales (the
// largest value mapped near either end of the level table), each with its nearest-level
// assignment and its weighted least-squares scale, keeping the best fit. The weights are
// x^2 without an importance matrix (large values matter most to a matmul), and
// importance * sqrt(sigma2 + x^2) with one, as for the other weighted formats.
#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <memory>

#include "base/half.h"
#include "quant/blocks.h"
#include "quant/gptq_block_coder.h"
#include "quant/kernels_ref.h"
#include "quant/scale_search.h"

namespace tokenmill::quant::ref {

const int8_t kIq4Levels[16] = {-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113};

namespace {

constexpr int kGroup = 32;
constexpr int kGroupsPerSuper = kSuperBlockSize / kGroup;

// The nearest level's index for v, from floor(2v): every midpoint between two levels is
// a multiple of 1/2, so floor(2v) alone says which side of each midpoint v lies on.
constexpr int kNearestSpan = 300;
constexpr std::array<uint8_t, 2 * kNearestSpan + 1> kNearest = [] {
  std::array<uint8_t, 2 * kNearestSpan + 1> table{};
  constexpr int levels[16] = {-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113};
  for (int h = -kNearestSpan; h <= kNearestSpan; ++h) {
    int index = 0;
    for (int k = 0; k + 1 < 16; ++k) {
      if (h >= levels[k] + levels[k + 1]) index = k + 1;  // 2v >= twice the midpoint
    }
    table[static_cast<size_t>(h + kNearestSpan)] = static_cast<uint8_t>(index);
  }
  return table;
}();

uint8_t nearest_level(float v) {
  const float twice = std::floor(2.0f * v);
  const int h = twice < -kNearestSpan ? -kNearestSpan : twice > kNearestSpan ? kNearestSpan : static_cast<int>(twice);
  return kNearest[static_cast<size_t>(h + kNearestSpan)];
}

// The best scale for one group: x ~= s * level[index]; indices written. 0 for an all-zero
// (or all-unweighted) group.
float fit_group(const float* x, const float* w, uint8_t* index) {
  float amax = 0.0f, extreme = 0.0f;
  for (int i = 0; i < kGroup; ++i) {
    if (std::fabs(x[i]) > amax) {
      amax = std::fabs(x[i]);
      extreme = x[i];
    }
  }
  if (amax < 1e-30f) {
    std::fill(index, index + kGroup, uint8_t{8});  // level 1: as near zero as the table goes
    return 0.0f;
  }
  float best_score = -1.0f, best_scale = 0.0f;
  uint8_t trial[kGroup];
  // The extreme value near the lowest level (-127) or the highest (113), stretched and
  // shrunk around each.
  for (const float end : {static_cast<float>(kIq4Levels[0]), static_cast<float>(kIq4Levels[15])}) {
    for (int t = -8; t <= 8; ++t) {
      const float inverse = (end + 1.5f * static_cast<float>(t)) / extreme;
      double sum_xq = 0.0, sum_qq = 0.0;
      for (int i = 0; i < kGroup; ++i) {
        trial[i] = nearest_level(x[i] * inverse);
        const double q = kIq4Levels[trial[i]];
        sum_xq += static_cast<double>(w[i]) * x[i] * q;
        sum_qq += static_cast<double>(w[i]) * q * q;
      }
      if (sum_qq <= 0.0) continue;
      const auto score = static_cast<float>(sum_xq * sum_xq / sum_qq);  // the error's reduction
      if (score > best_score) {
        best_score = score;
        best_scale = static_cast<float>(sum_xq / sum_qq);
        std::memcpy(index, trial, kGroup);
      }
    }
  }
  return best_scale;
}

// Indices for a group under a given (stored) scale.
void assign(const float* x, float scale, uint8_t* index) {
  const float inverse = scale != 0.0f ? 1.0f / scale : 0.0f;
  for (int i = 0; i < kGroup; ++i) index[i] = scale != 0.0f ? nearest_level(x[i] * inverse) : uint8_t{8};
}

void pack(const uint8_t* index, uint8_t* qs) {
  for (int j = 0; j < kGroup / 2; ++j) qs[j] = static_cast<uint8_t>(index[j] | (index[j + kGroup / 2] << 4));
}

void group_weights(const float* x, const float* importance, float sigma2, float* w) {
  for (int i = 0; i < kGroup; ++i) {
    w[i] = importance != nullptr ? importance[i] * std::sqrt(sigma2 + x[i] * x[i]) : x[i] * x[i];
  }
}

void quantize_iq4_nl(const float* x, BlockIQ4_NL* blocks, int64_t n, const float* importance) {
  const float sigma2 = importance != nullptr ? mean_square(x, n) : 0.0f;
  for (int64_t b = 0; b < n / kGroup; ++b, x += kGroup) {
    float w[kGroup];
    uint8_t index[kGroup];
    group_weights(x, importance != nullptr ? importance + b * kGroup : nullptr, sigma2, w);
    blocks[b].d = f32_to_f16(fit_group(x, w, index));
    assign(x, f16_to_f32(blocks[b].d), index);
    pack(index, blocks[b].qs);
  }
}

void quantize_iq4_xs(const float* x, BlockIQ4_XS* blocks, int64_t n, const float* importance) {
  const float sigma2 = importance != nullptr ? mean_square(x, n) : 0.0f;
  for (int64_t b = 0; b < n / kSuperBlockSize; ++b, x += kSuperBlockSize) {
    BlockIQ4_XS& block = blocks[b];
    float scales[kGroupsPerSuper];
    float extreme = 0.0f;
    for (int g = 0; g < kGroupsPerSuper; ++g) {
      float w[kGroup];
      uint8_t index[kGroup];
      const float* imp = importance != nullptr ? importance + b * kSuperBlockSize + g * kGroup : nullptr;
      group_weights(x + g * kGroup, imp, sigma2, w);
      scales[g] = fit_group(x + g * kGroup, w, index);
      if (std::fabs(scales[g]) > std::fabs(extreme)) extreme = scales[g];
    }
    // The largest group scale becomes the sub-scale -32, the end of the 6-bit range.
    block.d = f32_to_f16(extreme / -32.0f);
    const float d = f16_to_f32(block.d);
    const float inverse = d != 0.0f ? 1.0f / d : 0.0f;
    block.scales_h = 0;
    std::memset(block.scales_l, 0, sizeof block.scales_l);
    for (int g = 0; g < kGroupsPerSuper; ++g) {
      const int l = std::clamp(static_cast<int>(std::lround(scales[g] * inverse)), -32, 31);
      const int stored = l + 32;
      block.scales_l[g / 2] |= static_cast<uint8_t>((stored & 0xf) << (4 * (g % 2)));
      block.scales_h |= static_cast<uint16_t>((stored >> 4) << (2 * g));
      uint8_t index[kGroup];
      assign(x + g * kGroup, d * static_cast<float>(l), index);
      pack(index, block.qs + g * kGroup / 2);
    }
  }
}

// sum_j level[q_j] * a_j over one group of 32 whose quants are packed in qs.
int32_t group_dot(const uint8_t* qs, const int8_t* a) {
  int32_t sum = 0;
  for (int j = 0; j < kGroup / 2; ++j) {
    sum += kIq4Levels[qs[j] & 0xf] * a[j] + kIq4Levels[qs[j] >> 4] * a[j + kGroup / 2];
  }
  return sum;
}

}  // namespace

void dequantize_row_iq4_nl(const void* src, float* dst, int64_t n) {
  const auto* blocks = static_cast<const BlockIQ4_NL*>(src);
  for (int64_t b = 0; b < n / kGroup; ++b, dst += kGroup) {
    const float d = f16_to_f32(blocks[b].d);
    for (int j = 0; j < kGroup / 2; ++j) {
      dst[j] = d * static_cast<float>(kIq4Levels[blocks[b].qs[j] & 0xf]);
      dst[j + kGroup / 2] = d * static_cast<float>(kIq4Levels[blocks[b].qs[j] >> 4]);
    }
  }
}

void dequantize_row_iq4_xs(const void* src, float* dst, int64_t n) {
  const auto* blocks = static_cast<const BlockIQ4_XS*>(src);
  for (int64_t b = 0; b < n / kSuperBlockSize; ++b) {
    const float d = f16_to_f32(blocks[b].d);
    for (int g = 0; g < kGroupsPerSuper; ++g, dst += kGroup) {
      const float dl = d * static_cast<float>(iq4_xs_scale(blocks[b], g) - 32);
      const uint8_t* qs = blocks[b].qs + g * kGroup / 2;
      for (int j = 0; j < kGroup / 2; ++j) {
        dst[j] = dl * static_cast<float>(kIq4Levels[qs[j] & 0xf]);
        dst[j + kGroup / 2] = dl * static_cast<float>(kIq4Levels[qs[j] >> 4]);
      }
    }
  }
}

void quantize_row_iq4_nl(const float* src, void* dst, int64_t n) {
  quantize_iq4_nl(src, static_cast<BlockIQ4_NL*>(dst), n, nullptr);
}
void quantize_row_iq4_xs(const float* src, void* dst, int64_t n) {
  quantize_iq4_xs(src, static_cast<BlockIQ4_XS*>(dst), n, nullptr);
}
void quantize_row_iq4_nl_weighted(const float* src, void* dst, int64_t n, const float* importance) {
  quantize_iq4_nl(src, static_cast<BlockIQ4_NL*>(dst), n, importance);
}
void quantize_row_iq4_xs_weighted(const float* src, void* dst, int64_t n, const float* importance) {
  quantize_iq4_xs(src, static_cast<BlockIQ4_XS*>(dst), n, importance);
}

// The float steps every kernel repeats: block b's exact integer sum times d_w * d_a,
// fused into lane b % 8, the lanes summed pairwise at the end.
float vec_dot_iq4_nl_q8_0(int64_t n, const void* w, const void* a) {
  const auto* x = static_cast<const BlockIQ4_NL*>(w);
  const auto* y = static_cast<const BlockQ8_0*>(a);
  float lanes[kIq4NlLanes] = {};
  for (int64_t b = 0; b < n / kGroup; ++b) {
    const float d = f16_to_f32(x[b].d) * f16_to_f32(y[b].d);
    lanes[b % kIq4NlLanes] = std::fma(d, static_cast<float>(group_dot(x[b].qs, y[b].qs)), lanes[b % kIq4NlLanes]);
  }
  return sum_iq4_nl_lanes(lanes);
}

// Per super-block: sum_g (s_g - 32) * group sum, exact in int32 (|.| <= 8 * 32 * 32 * 127 * 127),
// times d_w * d_a fused into the running sum.
float vec_dot_iq4_xs_q8_K(int64_t n, const void* w, const void* a) {
  const auto* x = static_cast<const BlockIQ4_XS*>(w);
  const auto* y = static_cast<const BlockQ8_K*>(a);
  float sum = 0.0f;
  for (int64_t b = 0; b < n / kSuperBlockSize; ++b) {
    int32_t isum = 0;
    for (int g = 0; g < kGroupsPerSuper; ++g) {
      isum += (iq4_xs_scale(x[b], g) - 32) * group_dot(x[b].qs + g * kGroup / 2, y[b].qs + g * kGroup);
    }
    sum = std::fma(f16_to_f32(x[b].d) * y[b].d, static_cast<float>(isum), sum);
  }
  return sum;
}

}  // namespace tokenmill::quant::ref

namespace tokenmill::quant {

namespace {

using ref::kGroup;
using ref::kGroupsPerSuper;
using ref::kIq4Levels;

// IQ4_NL and IQ4_XS for GPTQ: the group scales fitted as the weighted quantizers fit
// them, then each column takes the nearest level at its group's scale.
class Iq4BlockCoder final : public GptqBlockCoder {
 public:
  explicit Iq4BlockCoder(bool xs) : xs_(xs) {}
  int block_size() const override { return xs_ ? kSuperBlockSize : kGroup; }
  int group_size() const override { return 1; }

  void fit(const float* x, const float* importance, float sigma2) override {
    float w[kGroup];
    uint8_t index[kGroup];
    if (!xs_) {
      ref::group_weights(x, importance, sigma2, w);
      d_ = f32_to_f16(ref::fit_group(x, w, index));
      scale_[0] = f16_to_f32(d_);
      return;
    }
    float fitted[kGroupsPerSuper];
    float extreme = 0.0f;
    for (int g = 0; g < kGroupsPerSuper; ++g) {
      ref::group_weights(x + g * kGroup, importance + g * kGroup, sigma2, w);
      fitted[g] = ref::fit_group(x + g * kGroup, w, index);
      if (std::fabs(fitted[g]) > std::fabs(extreme)) extreme = fitted[g];
    }
    d_ = f32_to_f16(extreme / -32.0f);
    const float d = f16_to_f32(d_);
    const float inverse = d != 0.0f ? 1.0f / d : 0.0f;
    for (int g = 0; g < kGroupsPerSuper; ++g) {
      stored_[g] = std::clamp(static_cast<int>(std::lround(fitted[g] * inverse)), -32, 31) + 32;
      scale_[g] = d * static_cast<float>(stored_[g] - 32);
    }
  }

  void decide_group(int i, const float* x, const float*, float, float* q) override {
    const float scale = scale_[i / kGroup];
    index_[i] = scale != 0.0f ? ref::nearest_level(x[0] / scale) : uint8_t{8};
    q[0] = scale * static_cast<float>(kIq4Levels[index_[i]]);
  }

  void pack(void* dst) override {
    if (!xs_) {
      auto* b = static_cast<BlockIQ4_NL*>(dst);
      b->d = d_;
      ref::pack(index_, b->qs);
      return;
    }
    auto* b = static_cast<BlockIQ4_XS*>(dst);
    b->d = d_;
    b->scales_h = 0;
    std::memset(b->scales_l, 0, sizeof b->scales_l);
    for (int g = 0; g < kGroupsPerSuper; ++g) {
      b->scales_l[g / 2] |= static_cast<uint8_t>((stored_[g] & 0xf) << (4 * (g % 2)));
      b->scales_h |= static_cast<uint16_t>((stored_[g] >> 4) << (2 * g));
      ref::pack(index_ + g * kGroup, b->qs + g * kGroup / 2);
    }
  }

 private:
  bool xs_;
  uint16_t d_ = 0;
  int stored_[kGroupsPerSuper] = {};
  float scale_[kGroupsPerSuper] = {};
  uint8_t index_[kSuperBlockSize] = {};
};

}  // namespace

std::unique_ptr<GptqBlockCoder> make_iq4_gptq_coder(gguf::TensorType type) {
  if (type == gguf::TensorType::kIQ4_NL) return std::make_unique<Iq4BlockCoder>(false);
  if (type == gguf::TensorType::kIQ4_XS) return std::make_unique<Iq4BlockCoder>(true);
  return nullptr;
}

}  // namespace tokenmill::quant
