// The index a greedy sampler picks from a row of logits.
#pragma once

#include <cstdint>
#include <span>

namespace tokenmill {

// The first (lowest) index of the largest value; NaN is never largest; 0 when every value
// is -inf or NaN (or the span is empty).
int32_t first_max_index(std::span<const float> values);

}  // namespace tokenmill
