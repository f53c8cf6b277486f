#include "base/first_max.h"

#include <cstddef>
#include <limits>

namespace tokenmill {

// kLanes running maxima, each over every kLanes-th value, so that the compiler vectorizes
// the scan (one dependent compare per value made this a few percent of a 16-sequence
// decode step); then the lanes' results are merged, the smallest index winning ties as
// in a plain scan.
int32_t first_max_index(std::span<const float> values) {
  constexpr float kNegInf = -std::numeric_limits<float>::infinity();
  constexpr size_t kLanes = 16;
  const size_t n = values.size();
  float lane_max[kLanes];
  int32_t lane_index[kLanes];
  for (size_t j = 0; j < kLanes; ++j) {
    lane_max[j] = kNegInf;
    lane_index[j] = 0;
  }
  size_t i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    for (size_t j = 0; j < kLanes; ++j) {
      const bool better = values[i + j] > lane_max[j];
      lane_max[j] = better ? values[i + j] : lane_max[j];
      lane_index[j] = better ? static_cast<int32_t>(i + j) : lane_index[j];
    }
  }
  int32_t best = 0;
  float best_value = kNegInf;
  for (size_t j = 0; j < kLanes; ++j) {
    if (lane_max[j] > best_value || (lane_max[j] == best_value && lane_max[j] > kNegInf && lane_index[j] < best)) {
      best_value = lane_max[j];
      best = lane_index[j];
    }
  }
  for (; i < n; ++i) {
    if (values[i] > best_value) {
      best_value = values[i];
      best = static_cast<int32_t>(i);
    }
  }
  return best;
}

void first_max_index_rows(const float* values, int64_t n_rows, int64_t row_length, int32_t* out) {
  for (int64_t r = 0; r < n_rows; ++r) {
    out[r] = first_max_index(std::span<const float>(values + r * row_length, static_cast<size_t>(row_length)));
  }
}

}  // namespace tokenmill
