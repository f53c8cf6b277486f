// Token tiles and the weight prefetch cursor shared by the AVX2 matrix kernels
// (legacy_panels_avx2.cc, kquants_panels_avx2.cc). Internal linkage, as x86_helpers.h.
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

// Bytes [from, to) of a weight stream requested in equal parts over n_steps steps of a
// kernel: the lines of the panel that comes next stream in while this one is computed
// (side-by-side rows are streams the hardware prefetcher does not follow well). A
// cursor, so that the block loops divide nothing.
class PrefetchCursor {
 public:
  PrefetchCursor(const uint8_t* base, int64_t from, int64_t to, int64_t n_steps)
      : next_(reinterpret_cast<const char*>(base) + (from + 63) / 64 * 64),
        end_(reinterpret_cast<const char*>(base) + to),
        bytes_per_step_(((to - from) / (n_steps > 0 ? n_steps : 1) + 127) / 64 * 64) {}
  void step() {
    for (int64_t i = 0; i < bytes_per_step_ && next_ < end_; i += 64, next_ += 64) _mm_prefetch(next_, _MM_HINT_T0);
  }

 private:
  const char* next_;
  const char* end_;
  int64_t bytes_per_step_;
};

}  // namespace
}  // namespace tokenmill::quant
