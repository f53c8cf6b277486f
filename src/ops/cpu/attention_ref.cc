#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "base/half.h"
#include "ops/cpu/attention_kernels.h"

namespace tokenmill::ops::cpu {

namespace {

// Element d of a cached row, as float: F16 converted, or a Q8_0 block's scale times code.
float row_element(const uint8_t* row, int32_t d, KvType type) {
  if (type == KvType::kF16) {
    uint16_t bits;
    std::memcpy(&bits, row + 2 * static_cast<int64_t>(d), sizeof(bits));
    return f16_to_f32(bits);
  }
  const uint8_t* block = row + static_cast<int64_t>(d / kKvQ8Block) * kKvQ8BlockBytes;
  uint16_t scale;
  std::memcpy(&scale, block, sizeof(scale));
  return f16_to_f32(scale) * static_cast<float>(static_cast<int8_t>(block[2 + d % kKvQ8Block]));
}

}  // namespace

void attend_head_group_ref(const HeadGroupAttention& a) {
  const int32_t hd = a.head_dim;
  for (int32_t h = 0; h < a.n_heads; ++h) {
    // The query is rounded to F16 because the cache is F16 (as ggml converts it); with a
    // Q8_0 cache too, so that both types share every step after reading the rows.
    float* q16 = a.scratch_q + static_cast<int64_t>(h) * hd;
    for (int32_t d = 0; d < hd; ++d) q16[d] = f16_to_f32(f32_to_f16(a.q[static_cast<int64_t>(h) * hd + d]));
    float* scores = a.scratch_scores + static_cast<int64_t>(h) * a.n_keys;
    float max_score = -std::numeric_limits<float>::infinity();
    for (int32_t j = 0; j < a.n_keys; ++j) {
      const uint8_t* key = a.keys[j];
      float dot = 0.0f;
      for (int32_t d = 0; d < hd; ++d) dot += q16[d] * row_element(key, d, a.kv_type);
      float s = dot * a.scale;
      if (a.softcap > 0.0f) s = a.softcap * std::tanh(s / a.softcap);
      scores[j] = s;
      max_score = std::max(max_score, s);
    }
    if (a.sinks != nullptr) max_score = std::max(max_score, a.sinks[h]);
    double sum = 0.0;
    for (int32_t j = 0; j < a.n_keys; ++j) {
      scores[j] = std::exp(scores[j] - max_score);
      sum += scores[j];
    }
    if (a.sinks != nullptr) sum += std::exp(static_cast<double>(a.sinks[h]) - max_score);
    const float inv_sum = static_cast<float>(1.0 / sum);
    float* o = a.out + static_cast<int64_t>(h) * hd;
    std::fill(o, o + hd, 0.0f);
    for (int32_t j = 0; j < a.n_keys; ++j) {
      // Probabilities are rounded to F16 before meeting the F16 values, as in ggml.
      const float weight = f16_to_f32(f32_to_f16(scores[j] * inv_sum));
      const uint8_t* value = a.values[j];
      for (int32_t d = 0; d < hd; ++d) o[d] += weight * row_element(value, d, a.kv_type);
    }
  }
}

}  // namespace tokenmill::ops::cpu
