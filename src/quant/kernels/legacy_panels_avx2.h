// Internal to quant/kernels: the AVX2 matrix kernels for Q8_0, Q4_0 and Q5_0 weights in quant/panel_layout.h's 16-row
// panels (repacked at load) against Q8_0 activation rows: the scheme of
// legacy_avx512.cc's dot_packed in 8 lanes. Each 64-byte group of a panel block is two
// 256-bit halves, rows 0..7 and rows 8..15; int32 lane r of a half's vectors belongs to
// its row r.
//
// Per (half, token) and block the exact integer dot product isum_r is built from the
// half's code vectors against the token's quant dwords broadcast to every lane, then
//   acc_r = fma(float(isum_r), d_r * d_token, acc_r)        block by block,
// the float steps of every legacy kernel in quant/kernels (the file-layout rows in
// legacy_avx2.cc, the AVX-512 kernels), so a (row, token) result has the same bits
// whichever kernel, instruction set or batch computed it.
//
// The integer part without VNNI: vpmaddubsw multiplies unsigned by signed bytes into
// int16 pair sums that saturate above 32767, so
//   Q4_0 / Q5_0: unsigned codes u = level + k (k = 8, 16), the staged start -k * sum(a);
//       pair sums stay below 2 * 31 * 127, so four of them are added as int16 before one
//       vpmaddwd widens them;
//   Q8_0: the signed levels q (the packed codes xor 0x80) as |q| times a with q's sign
//       (vpsignb); |q| <= 128 and |a| <= 127 keep each pair sum exact.
// With many tokens the nibble formats' codes are rebuilt once per panel into a buffer
// (the unpacking would otherwise be repeated by every token tile).

#pragma once

#include <immintrin.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "quant/blocks.h"
#include "quant/kernels/scratch.h"
#include "quant/kernels/simd_kernels.h"
#include "quant/kernels/tiles_avx2.h"
#include "quant/kernels/x86_helpers.h"
#include "quant/panel_layout.h"

namespace tokenmill::quant {
// Internal linkage: this header is compiled into files with different instruction sets
// (see x86_helpers.h).
namespace {

constexpr int kPanel = 16;        // rows per packed panel: two halves of 8 lanes
constexpr int kHalf = 8;
constexpr int kTokenBlock = 64;   // tokens staged per pass over the weights (they stay in L2)
constexpr int kRebuildMinTokens = 2 * kAvx2TokenTile;  // nibble formats: rebuild codes from here on
constexpr int64_t kPrefetchBytes = 8192;           // the panels are streamed in order

template <typename Block>
constexpr size_t kPackedBlockBytes = kPanel * sizeof(Block);

// Per format: where the scales of a packed block start, the code offset k the staged
// start pays for, and the code vector of (half h, quant dword k) of a block.
template <typename Block>
struct Packed;

template <>
struct Packed<BlockQ8_0> {
  static constexpr size_t kScales = 8 * 64;
  static constexpr int kOffset = 0;  // without VNNI the signed levels are used (see the top of the file)
};

template <>
struct Packed<BlockQ4_0> {
  static constexpr size_t kScales = 4 * 64;
  static constexpr int kOffset = 8;
  // Codes of dwords j and 4 + j (low and high nibbles of group j).
  static void codes(const uint8_t* block, int h, __m256i* out) {
    const __m256i low_nibble = _mm256_set1_epi8(0x0f);
    for (int j = 0; j < 4; ++j) {
      const __m256i packed = load_256(block + 64 * j + 32 * h);
      out[j] = _mm256_and_si256(packed, low_nibble);
      out[4 + j] = _mm256_and_si256(_mm256_srli_epi16(packed, 4), low_nibble);
    }
  }
};

template <>
struct Packed<BlockQ5_0> {
  static constexpr size_t kScales = 5 * 64;
  static constexpr int kOffset = 16;
  // Q4_0's nibbles plus 16 where bit e of the row's qh is set. Codes of dword k take bits
  // 4k .. 4k + 3, all in qh byte k / 2: that byte copied to the lane's four bytes, then
  // byte i tested against bit (4k + i) % 8.
  static void codes(const uint8_t* block, int h, __m256i* out) {
    Packed<BlockQ4_0>::codes(block, h, out);
    const __m256i qh = load_256(block + 4 * 64 + 32 * h);
    const __m256i sixteen = _mm256_set1_epi8(16);
    for (int k = 0; k < 8; ++k) {
      const int byte = k / 2;
      const __m256i copy_index = _mm256_add_epi32(_mm256_set1_epi32(byte * 0x01010101),
                                                  _mm256_setr_epi32(0, 0x04040404, 0x08080808, 0x0c0c0c0c, 0,
                                                                    0x04040404, 0x08080808, 0x0c0c0c0c));
      const __m256i bits = _mm256_set1_epi32(k % 2 == 0 ? 0x08040201 : static_cast<int>(0x80402010));
      const __m256i set = _mm256_cmpeq_epi8(_mm256_and_si256(_mm256_shuffle_epi8(qh, copy_index), bits), bits);
      out[k] = _mm256_or_si256(out[k], _mm256_and_si256(set, sixteen));
    }
  }
};

// The offset k of the codes the kernels multiply: Packed's, except Q8_0 with VNNI, which
// takes the packed codes (level + 128) as they are.
template <typename Block, bool kVnni>
constexpr int code_offset() {
  return kVnni && std::is_same_v<Block, BlockQ8_0> ? 128 : Packed<Block>::kOffset;
}

// A nibble format's panel rebuilt as plain codes: per block, 8 groups of 64 bytes in
// Q8_0's packed order (group k, half h = dword k's codes of rows 8h .. 8h + 7), then the
// 16 scales. The tokens are staged with the source format's offset.
struct Rebuilt {
  static constexpr size_t kScales = 8 * 64;
  static constexpr size_t kBlockBytes = kScales + kPanel * sizeof(uint16_t);
  static void codes(const uint8_t* block, int h, __m256i* out) {
    for (int k = 0; k < 8; ++k) out[k] = load_256(block + 64 * k + 32 * h);
  }
};

template <typename Block>
void rebuild_panel(int64_t n_blocks, const uint8_t* panel, uint8_t* out) {
  for (int64_t b = 0; b < n_blocks; ++b) {
    const uint8_t* block = panel + b * kPackedBlockBytes<Block>;
    uint8_t* rebuilt = out + b * Rebuilt::kBlockBytes;
    for (int h = 0; h < 2; ++h) {
      __m256i codes[8];
      Packed<Block>::codes(block, h, codes);
      for (int k = 0; k < 8; ++k) _mm256_storeu_si256(reinterpret_cast<__m256i*>(rebuilt + 64 * k + 32 * h), codes[k]);
    }
    std::memcpy(rebuilt + Rebuilt::kScales, block + Packed<Block>::kScales, kPanel * sizeof(uint16_t));
  }
}

// Per activation row and block: the token's scale and -k * (the sum of its 32 quants).
struct TokenBlock {
  float d;
  int32_t start;
};

// Activation rows staged block-major: block b of token t at meta[b * stride + t], its
// quants at quants + (b * stride + t) * 32.
struct StagedTokens {
  const TokenBlock* meta;
  const uint8_t* quants;
  int64_t stride;

  StagedTokens from(int64_t t) const { return {meta + t, quants + t * kLegacyBlockSize, stride}; }
  const TokenBlock& token(int64_t b, int t) const { return meta[b * stride + t]; }
  const uint8_t* block_quants(int64_t b) const { return quants + b * stride * kLegacyBlockSize; }
};

StagedTokens stage_tokens(int64_t n_blocks, const uint8_t* a, size_t a_stride, int64_t n_tokens, int offset) {
  auto* meta = static_cast<TokenBlock*>(
      thread_scratch(ScratchSlot::kStagedMeta, sizeof(TokenBlock) * static_cast<size_t>(n_blocks) * kTokenBlock));
  auto* quants = static_cast<uint8_t*>(
      thread_scratch(ScratchSlot::kStagedQuants, static_cast<size_t>(n_blocks) * kTokenBlock * kLegacyBlockSize));
  const __m256i ones = _mm256_set1_epi8(1);
  for (int64_t t = 0; t < n_tokens; ++t) {
    const auto* y = reinterpret_cast<const BlockQ8_0*>(a + t * a_stride);
    for (int64_t b = 0; b < n_blocks; ++b) {
      TokenBlock& token = meta[b * n_tokens + t];
      token.d = half_to_float(y[b].d);
      const __m256i q = load_256(y[b].qs);
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(quants + (b * n_tokens + t) * kLegacyBlockSize), q);
      token.start = 0;
      if (offset != 0) {
        const __m256i sums = _mm256_madd_epi16(_mm256_maddubs_epi16(ones, q), _mm256_set1_epi16(1));
        token.start = -offset * hsum_epi32(sums);
      }
    }
  }
  return {meta, quants, n_tokens};
}

// isum[t] of one half of a block for kTokens tokens (q: the block's staged quants).
template <typename Format, int kTokens, bool kVnni>
__attribute__((always_inline)) inline void block_sums(const uint8_t* block, int h, const uint8_t* q,
                                                      const TokenBlock* const* meta, __m256i* isum) {
  const __m256i ones_16 = _mm256_set1_epi16(1);
  if constexpr (kVnni) {
#if defined(__AVXVNNI__)
    __m256i codes[8];
    if constexpr (std::is_same_v<Format, Packed<BlockQ8_0>>) {
#pragma GCC unroll 8
      for (int k = 0; k < 8; ++k) codes[k] = load_256(block + 64 * k + 32 * h);
    } else {
      Format::codes(block, h, codes);
    }
#pragma GCC unroll 8
    for (int t = 0; t < kTokens; ++t) isum[t] = _mm256_set1_epi32(meta[t]->start);
#pragma GCC unroll 8
    for (int k = 0; k < 8; ++k) {
#pragma GCC unroll 8
      for (int t = 0; t < kTokens; ++t) {
        isum[t] = _mm256_dpbusd_avx_epi32(isum[t], codes[k], broadcast_dword(q + t * kLegacyBlockSize + 4 * k));
      }
    }
#else
    static_assert(!kVnni, "kVnni kernels are built with -mavxvnni");
#endif
  } else if constexpr (std::is_same_v<Format, Packed<BlockQ8_0>>) {
#pragma GCC unroll 8
    for (int t = 0; t < kTokens; ++t) isum[t] = _mm256_setzero_si256();
#pragma GCC unroll 8
    for (int k = 0; k < 8; ++k) {
      const __m256i levels = _mm256_xor_si256(load_256(block + 64 * k + 32 * h), _mm256_set1_epi8(static_cast<char>(0x80)));
      const __m256i magnitudes = _mm256_abs_epi8(levels);
#pragma GCC unroll 8
      for (int t = 0; t < kTokens; ++t) {
        const __m256i a = _mm256_sign_epi8(broadcast_dword(q + t * kLegacyBlockSize + 4 * k), levels);
        isum[t] = in_register(_mm256_add_epi32(isum[t], _mm256_madd_epi16(_mm256_maddubs_epi16(magnitudes, a), ones_16)));
      }
    }
  } else {
    // Codes below 32: four int16 pair sums of one lane add up to less than 2^15.
    __m256i codes[8];
    Format::codes(block, h, codes);
#pragma GCC unroll 8
    for (int t = 0; t < kTokens; ++t) isum[t] = _mm256_set1_epi32(meta[t]->start);
#pragma GCC unroll 8
    for (int g = 0; g < 2; ++g) {
      __m256i pairs[kTokens];
#pragma GCC unroll 8
      for (int t = 0; t < kTokens; ++t) pairs[t] = _mm256_setzero_si256();
#pragma GCC unroll 8
      for (int k = 4 * g; k < 4 * g + 4; ++k) {
#pragma GCC unroll 8
        for (int t = 0; t < kTokens; ++t) {
          pairs[t] = in_register(
              _mm256_add_epi16(pairs[t], _mm256_maddubs_epi16(codes[k], broadcast_dword(q + t * kLegacyBlockSize + 4 * k))));
        }
      }
#pragma GCC unroll 8
      for (int t = 0; t < kTokens; ++t) isum[t] = _mm256_add_epi32(isum[t], _mm256_madd_epi16(pairs[t], ones_16));
    }
  }
}

// One panel (16 rows) against kTokens staged tokens: out[t * out_stride + r]. The halves
// run one after the other (the second reads the panel from cache): both halves' sums at
// once need more than the 16 vector registers.
template <typename Format, int kTokens, bool kVnni>
void dot_packed(int64_t n_blocks, const uint8_t* panel, size_t block_bytes, StagedTokens tokens, float* out,
                int64_t out_stride, PrefetchCursor prefetch, RunningMax* row_max, int64_t first_column) {
  for (int h = 0; h < 2; ++h) {
    __m256 acc[kTokens];
#pragma GCC unroll 8
    for (int t = 0; t < kTokens; ++t) acc[t] = _mm256_setzero_ps();
    for (int64_t b = 0; b < n_blocks; ++b) {
      const uint8_t* block = panel + b * block_bytes;
      prefetch.step();
      const uint8_t* q = tokens.block_quants(b);
      const TokenBlock* meta[kTokens];
#pragma GCC unroll 8
      for (int t = 0; t < kTokens; ++t) meta[t] = &tokens.token(b, t);
      __m256i isum[kTokens];
      block_sums<Format, kTokens, kVnni>(block, h, q, meta, isum);
      const __m256 scales = _mm256_cvtph_ps(load_128(block + Format::kScales + 16 * h));
#pragma GCC unroll 8
      for (int t = 0; t < kTokens; ++t) {
        acc[t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(isum[t]), _mm256_mul_ps(scales, _mm256_set1_ps(meta[t]->d)), acc[t]);
      }
    }
    if (out != nullptr) {
      for (int t = 0; t < kTokens; ++t) _mm256_storeu_ps(out + t * out_stride + kHalf * h, acc[t]);
    }
    if (row_max != nullptr) {
      for (int t = 0; t < kTokens; ++t) fold_running_max(acc[t], first_column + kHalf * h, row_max[t]);
    }
  }
}

inline float* offset_rows(float* out, int64_t offset) { return out != nullptr ? out + offset : nullptr; }

// One panel against n_tokens staged tokens; the tiles prefetch `ahead` bytes from offset
// `ahead_from` of `base` in equal shares.
template <typename Format, bool kVnni>
void dot_panel_tokens(int64_t n_blocks, const uint8_t* panel, size_t block_bytes, StagedTokens tokens,
                      int64_t n_tokens, float* out, int64_t out_stride, const uint8_t* base, int64_t ahead_from,
                      int64_t ahead, RunningMax* row_max, int64_t first_column) {
  const int64_t n_tiles = (n_tokens + kAvx2TokenTile - 1) / kAvx2TokenTile;
  int64_t tile = 0;
  for_avx2_token_tiles(n_tokens, [&](auto n, int64_t t) {
    const PrefetchCursor prefetch(base, ahead_from + ahead * tile / n_tiles, ahead_from + ahead * (tile + 1) / n_tiles,
                                  2 * n_blocks);
    ++tile;
    dot_packed<Format, decltype(n)::value, kVnni>(n_blocks, panel, block_bytes, tokens.from(t), offset_rows(out, t * out_stride),
                                           out_stride, prefetch, row_max != nullptr ? row_max + t : nullptr,
                                           first_column);
  });
}

template <typename Block, bool kVnni>
void dot_panels(int64_t n, const void* w, int64_t n_w_rows, const void* a, size_t a_stride, int64_t n_a_rows,
                float* out, int64_t out_stride, RunningMax* row_max) {
  const PanelMatrix panels(w, n / kLegacyBlockSize, kPackedBlockBytes<Block>);
  const auto* activations = static_cast<const uint8_t*>(a);
  const int64_t n_blocks = panels.n_blocks, panel_bytes = panels.panel_bytes;
  constexpr bool kNibbles = !std::is_same_v<Block, BlockQ8_0>;
  uint8_t* rebuilt = nullptr;
  if (kNibbles && n_a_rows >= kRebuildMinTokens) {
    rebuilt = static_cast<uint8_t*>(
        thread_scratch(ScratchSlot::kPanel, static_cast<size_t>(n_blocks) * Rebuilt::kBlockBytes));
  }
  for (int64_t t0 = 0; t0 < n_a_rows; t0 += kTokenBlock) {
    const int64_t n_tokens = n_a_rows - t0 < kTokenBlock ? n_a_rows - t0 : kTokenBlock;
    const StagedTokens tokens =
        stage_tokens(n_blocks, activations + t0 * a_stride, a_stride, n_tokens, code_offset<Block, kVnni>());
    RunningMax* tile_max = row_max != nullptr ? row_max + t0 : nullptr;
    for (int64_t r0 = 0; r0 < n_w_rows; r0 += kPanel) {
      const uint8_t* panel = panels.panel(r0);
      const int64_t offset = panel - panels.base;
      float* panel_out = offset_rows(out, t0 * out_stride + r0);
      if constexpr (kNibbles) {
        if (rebuilt != nullptr) {
          rebuild_panel<Block>(n_blocks, panel, rebuilt);
          dot_panel_tokens<Rebuilt, kVnni>(n_blocks, rebuilt, Rebuilt::kBlockBytes, tokens, n_tokens, panel_out,
                                           out_stride, panels.base, offset + panel_bytes, panel_bytes, tile_max, r0);
          continue;
        }
      }
      dot_panel_tokens<Packed<Block>, kVnni>(n_blocks, panel, kPackedBlockBytes<Block>, tokens, n_tokens, panel_out,
                                             out_stride, panels.base, offset + kPrefetchBytes, panel_bytes, tile_max, r0);
    }
  }
}

}  // namespace
}  // namespace tokenmill::quant

// The entries simd_kernels.h declares, with or without VNNI, for the namespace that
// expands this.
#define TM_LEGACY_PANEL_ENTRIES(kVnni)                                        \
  TM_DOT_PANELS_ENTRY(vec_dot_panels_q8_0_q8_0, dot_panels<BlockQ8_0, kVnni>) \
  TM_DOT_PANELS_ENTRY(vec_dot_panels_q4_0_q8_0, dot_panels<BlockQ4_0, kVnni>) \
  TM_DOT_PANELS_ENTRY(vec_dot_panels_q5_0_q8_0, dot_panels<BlockQ5_0, kVnni>)
