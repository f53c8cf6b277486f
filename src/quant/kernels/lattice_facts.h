// Internal to quant/kernels: what every target's lattice i-quant kernels take from the
// reference beyond each format's bits (quants_iq_lattice.cc): whether its grid carries
// IQ1's shift of ±1/8, the constant the super-block sums are multiplied by last, and
// where the f16 super-block scale is. Each target's format derives from these.
#pragma once

#include <cstdint>

#include "quant/blocks.h"

namespace tokenmill::quant {

// kFinal = 1 / kFinalDivisor (a power of two, so exact).
template <typename BlockType, bool kShift, int kFinalDivisor>
struct LatticeFacts {
  using Block = BlockType;
  static constexpr bool kShifted = kShift;
  static constexpr float kFinal = 1.0f / kFinalDivisor;
  static uint16_t scale_bits(const Block& x) { return x.d; }
};

using Iq2XxsFacts = LatticeFacts<BlockIQ2_XXS, false, 8>;
using Iq2XsFacts = LatticeFacts<BlockIQ2_XS, false, 8>;
using Iq2SFacts = LatticeFacts<BlockIQ2_S, false, 8>;
using Iq3XxsFacts = LatticeFacts<BlockIQ3_XXS, false, 4>;
using Iq3SFacts = LatticeFacts<BlockIQ3_S, false, 1>;
using Iq1SFacts = LatticeFacts<BlockIQ1_S, true, 1>;
struct Iq1MFacts : LatticeFacts<BlockIQ1_M, true, 1> {
  static uint16_t scale_bits(const Block& x) { return iq1_m_scale_bits(x); }
};

}  // namespace tokenmill::quant
