// The index a greedy sampler picks from a row of logits.
#pragma once

#include <cstdint>
#include <span>

namespace tokenmill {

// The first (lowest) index of the largest value; NaN is never largest; 0 when every value
// is -inf or NaN (or the span is empty).
int32_t first_max_index(std::span<const float> values);

// out[r] = first_max_index of row r of values ([n_rows, row_length], row-major).
void first_max_index_rows(const float* values, int64_t n_rows, int64_t row_length, int32_t* out);

}  // namespace tokenmill
