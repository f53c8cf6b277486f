// The parts of the K-quant matrix kernels (kquant_packed_x86-inl.h: 16-row packed panels,
// kquants_panels_avx2.cc: 8-row transposed panels) that do not depend on the vector width:
// the activation rows staged block-major, and (AVX2's 8-row panels) the transposed
// panel's shape and the walk that transposes a panel super-block by super-block.
//
// Internal linkage on purpose (an anonymous namespace), as x86_helpers.h: each kernel file
// compiles its own copy with its own instruction set.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "quant/blocks.h"
#include "quant/kernels/scratch.h"
#include "quant/kernels/x86_helpers.h"

namespace tokenmill::quant {
namespace {

// Tokens per pass over the weights: their staged activations stay in L2.
constexpr int kKQuantTokenBlock = 64;

// A transposed super-block of the panel's rows, lane r of every vector for row r:
// codes[i] = codes 4i .. 4i + 3 (element order, unsigned), scales[j] = sub-block j's
// scale in the form the kernel multiplies, pairs[i] = the int16 pair that the token's
// pairs[i] multiply (the min terms or Q6_K's -32 offsets), d / dmin = the row's scales
// as floats. Vectors names the width's types: Int (integer lanes) and Float.
template <typename Vectors, int kSubBlocks, int kPairs>
struct KQuantPanel {
  typename Vectors::Int codes[kSuperBlockSize / 4];
  typename Vectors::Int scales[kSubBlocks];
  typename Vectors::Int pairs[kPairs];
  typename Vectors::Float d;
  typename Vectors::Float dmin;
};

// Per token and super-block: its scale and the int16 pairs that the panel's pairs multiply.
struct TokenBlock {
  float d;
  int32_t pairs[8];
};

// A run of activation rows staged block-major: super-block b of token t at
// meta[b * stride + t] and its 256 quants at quants + (b * stride + t) * 256. A tile's
// tokens then sit at fixed offsets from one pointer per super-block.
struct StagedTokens {
  const TokenBlock* meta;
  const int8_t* quants;
  int64_t stride;  // tokens staged per super-block

  StagedTokens from(int64_t t) const { return {meta + t, quants + t * kSuperBlockSize, stride}; }
  const TokenBlock* block_meta(int64_t b) const { return meta + b * stride; }
  const int8_t* block_quants(int64_t b) const { return quants + b * stride * kSuperBlockSize; }
};

// Stages up to kKQuantTokenBlock Q8_K rows of n_blocks super-blocks into this thread's
// scratch (each call reuses it). Format::token_pairs gives each block's pairs.
template <typename Format>
StagedTokens stage_tokens(int64_t n_blocks, const uint8_t* a, size_t a_stride, int64_t n_tokens) {
  const auto block_tokens = static_cast<size_t>(n_blocks) * kKQuantTokenBlock;
  auto* meta = static_cast<TokenBlock*>(thread_scratch(ScratchSlot::kStagedMeta, sizeof(TokenBlock) * block_tokens));
  auto* quants = static_cast<int8_t*>(thread_scratch(ScratchSlot::kStagedQuants, block_tokens * kSuperBlockSize));
  for (int64_t t = 0; t < n_tokens; ++t) {
    const auto* y = reinterpret_cast<const BlockQ8_K*>(a + t * a_stride);
    for (int64_t b = 0; b < n_blocks; ++b) {
      TokenBlock& token = meta[b * n_tokens + t];
      token.d = y[b].d;
      Format::token_pairs(y[b], token.pairs);
      std::memcpy(quants + (b * n_tokens + t) * kSuperBlockSize, y[b].qs, kSuperBlockSize);
    }
  }
  return {meta, quants, n_tokens};
}

// Rows r0 .. r0 + kRows - 1 of the weights at w (rows past n_rows repeat the last one;
// their lanes are computed and never stored), super-block by super-block into `panel`,
// one prefetch step per super-block.
template <typename Format, int kRows>
void transpose_panel(int64_t n_blocks, const uint8_t* w, size_t w_stride, int64_t n_rows,
                     typename Format::Panel* panel, PrefetchCursor& prefetch) {
  using Block = typename Format::Block;
  size_t offsets[kRows];
  for (int r = 0; r < kRows; ++r) offsets[r] = static_cast<size_t>(r < n_rows ? r : n_rows - 1) * w_stride;
  for (int64_t b = 0; b < n_blocks; ++b) {
    prefetch.step();
    const uint8_t* rows[kRows];
    for (int r = 0; r < kRows; ++r) rows[r] = w + offsets[r] + b * sizeof(Block);
    Format::transpose(rows, panel[b]);
  }
}

}  // namespace
}  // namespace tokenmill::quant
