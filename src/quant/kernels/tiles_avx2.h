// The token tiles of the AVX2 matrix kernels (legacy_panels_avx2.h,
// kquants_panels_avx2.cc). Internal linkage, as x86_helpers.h.
#pragma once

#include <cstdint>
#include <type_traits>

#include "quant/kernels/x86_helpers.h"

namespace tokenmill::quant {
namespace {

// Tokens whose accumulators stay in the 16 vector registers.
constexpr int kAvx2TokenTile = 4;

// tile(std::integral_constant<int, n>{}, first token) over n_tokens tokens: tiles of
// kAvx2TokenTile, then one of the rest (n is a compile-time size: the accumulators are
// registers).
template <typename Tile>
void for_avx2_token_tiles(int64_t n_tokens, Tile&& tile) {
  static_assert(kAvx2TokenTile == 4, "the remainder cases below are written for tiles of 4");
  int64_t t = 0;
  for (; t + kAvx2TokenTile <= n_tokens; t += kAvx2TokenTile) tile(std::integral_constant<int, kAvx2TokenTile>{}, t);
  switch (n_tokens - t) {
    case 3: tile(std::integral_constant<int, 3>{}, t); break;
    case 2: tile(std::integral_constant<int, 2>{}, t); break;
    case 1: tile(std::integral_constant<int, 1>{}, t); break;
    default: break;
  }
}

}  // namespace
}  // namespace tokenmill::quant
