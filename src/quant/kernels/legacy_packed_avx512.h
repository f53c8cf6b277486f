// Internal to quant/kernels: what the AVX-512 legacy-format kernels (legacy_avx512.cc)
// share with their AMX tiles (legacy_amx.cc): activation rows staged block-major, the
// packed Q8_0 panel geometry, the weight prefetch shares and the running maximum fold.
// Only files compiled with AVX-512 include this header.
#pragma once

#include <immintrin.h>

#include <cstddef>
#include <cstdint>

#include "quant/blocks.h"
#include "quant/kernels/amx_tiles.h"
#include "quant/kernels/x86_helpers.h"
#include "quant/type_traits.h"

namespace tokenmill::quant::avx512 {

inline constexpr int kPanel = 16;  // weight rows per panel: one int32 lane each

// Packed Q8_0 (quant/panel_layout.h): per block of a panel, eight vectors of codes
// (vector k, lane r = unsigned codes 4k .. 4k + 3 of row r, each the level + 128; the
// nibble formats rebuilt in this layout carry their own offset) then 16 F16 scales.
inline constexpr size_t kPackedQ8CodesBytes = 8 * 64;
inline constexpr size_t kPackedQ8BlockBytes = kPackedQ8CodesBytes + kPanel * sizeof(uint16_t);

// Per activation row and block: the token's scale as a float and -k * (sum of its
// quants), k the offset of the weight codes it meets.
struct TokenBlock {
  float d;
  int32_t start;
  float s;  // Q8_1's d * sum(a), for the _1 formats' minimum
};

// A run of activation rows staged block-major for the multi-token loops: block b of token
// t at meta[b * stride + t] and its 32 quants at quants + (b * stride + t) * 32. A tile's
// tokens then sit at fixed offsets from one pointer per block (with a pointer per token
// the compiler ran out of registers and spilled: ~20% slower).
struct StagedTokens {
  const TokenBlock* meta;
  const uint8_t* quants;
  int64_t stride;  // tokens staged per block

  StagedTokens from(int64_t t) const { return {meta + t, quants + t * kLegacyBlockSize, stride}; }
  const TokenBlock& token(int64_t b, int t) const { return meta[b * stride + t]; }
  const uint8_t* block_quants(int64_t b) const { return quants + b * stride * kLegacyBlockSize; }
};

// The weight stream ahead of the kernels: with several token tiles per panel, only the
// first reads the panel from memory, so the next panel's bytes are requested evenly over
// all of them (each block step of each tile asks for its share of lines) instead of in
// a burst during the first tile with the memory idle during the others.
struct PrefetchShare {
  const uint8_t* base = nullptr;  // the matrix's first panel (line-aligned)
  int64_t start = 0;              // byte offset, from base, of this tile's first share
  int64_t total = 0;              // bytes this tile asks for over its n_steps shares
  int64_t n_steps = 1;

  // Lines whose start lies in share `step`'s bytes, each line in exactly one share.
  void fetch(int64_t step) const { fetch_steps(step, step + 1); }
  // The lines of shares first .. last - 1.
  void fetch_steps(int64_t first, int64_t last) const {
    const int64_t from = start + total * first / n_steps, to = start + total * last / n_steps;
    for (int64_t line = (from + 63) / 64 * 64; line < to; line += 64) {
      _mm_prefetch(reinterpret_cast<const char*>(base) + line, _MM_HINT_T0);
    }
  }
};

}  // namespace tokenmill::quant::avx512

// legacy_amx.cc: the same results as the AVX-512 kernels, from AMX tiles.
namespace tokenmill::quant::amx {

// kTileTokens staged tokens against one panel in packed Q8_0's layout, whose codes are
// given as signed levels (`codes`: per block the eight code vectors less the format's
// offset, 512 bytes a block) beside the panel itself (`panel`, for its scales): out[t *
// out_stride + r] (out may be null) and, with row_max, the 16 results folded into
// row_max[t], each (row, token) through the AVX-512 kernel's float steps in the same
// order, so the bits are that kernel's. Prefetches its share of the weight stream.
void dot_packed_tile(int64_t n_blocks, const uint8_t* codes, const uint8_t* panel, avx512::StagedTokens tokens,
                     float* out, int64_t out_stride, const avx512::PrefetchShare& prefetch, RunningMax* row_max,
                     int64_t first_column);

}  // namespace tokenmill::quant::amx
