// Internal to quant/: steps 2 and 3 of every K-quant quantizer. Given the per-group
// scales (and mins) a search chose in step 1, quantize them against the block's f16
// super-scale, re-derive each level from the stored scales and pack the block. The
// reference quantizers (quants_k.cc) and the importance-weighted ones
// (quants_weighted.cc) differ only in step 1.
//
// `levels` holds step 1's levels on entry (kept where a group's stored scale is zero)
// and the final ones on return.
#pragma once

#include <cstdint>

#include "quant/blocks.h"

namespace tokenmill::quant::ref {

// Q2_K: 16 groups of 16; x ~= scale * L - min, L in [0, 3].
void store_q2_K(const float* x, const float scales[16], const float mins[16], uint8_t levels[256], BlockQ2_K& block);
// Q3_K: 16 groups of 16; x ~= scale * (L - 4), L in [0, 7]; scales signed.
void store_k16(const float* x, const float scales[16], int8_t levels[256], BlockQ3_K& block);
// Q4_K / Q5_K: 8 groups of 32; x ~= scale * L - min, L in [0, 15] / [0, 31].
void store_k4(const float* x, const float scales[8], const float mins[8], uint8_t levels[256], BlockQ4_K& block);
void store_k4(const float* x, const float scales[8], const float mins[8], uint8_t levels[256], BlockQ5_K& block);
// Q6_K: 16 groups of 16; x ~= scale * (L - 32), L in [0, 63]; scales signed.
void store_k16(const float* x, const float scales[16], int8_t levels[256], BlockQ6_K& block);

}  // namespace tokenmill::quant::ref
