// AVX-512 (VNNI) dot products of the legacy weight formats Q4_0, Q5_0 and Q8_0 with Q8_0
// activation rows, sixteen weight rows at a time: int32 lane r of every vector belongs
// to weight row r of a 16-row panel.
//
//   1. Transpose: for each 32-quant block, the panel's 16 rows are turned into eight
//      vectors codes[k], lane r = quants 4k .. 4k + 3 of row r (an 8 x 8 dword
//      transpose in each 256-bit half), and their 16 scales into one float vector. This
//      is done once per panel and kept in a small buffer that every token reads.
//   2. Dot: per token and block, eight vpdpbusd against the token's quants 4k .. 4k + 3
//      broadcast to every lane; lane r then holds the block's exact integer dot product
//      for row r, converted and accumulated in float:
//        acc_r = fma(float(isum_r,b), d_r,b * d_token,b, acc_r)     b = 0, 1, ...
//      Eleven instructions per 16 rows x 32 quants x token; no horizontal sums.
//
// vpdpbusd multiplies unsigned by signed bytes, so each weight is taken as its unsigned
// code u = level + k (Q4_0: the nibble, k = 8; Q5_0: the 5-bit value, k = 16; Q8_0: the
// byte xor 0x80, k = 128) and each block's sum starts at -k * (sum of the token's 32
// quants): u * a summed from there is exactly sum(level * a).
//
// Every (row, token) result goes through the same operations in the same order whatever
// the number of rows or tokens in the call (one row alone runs as a panel of one row),
// so it is bit-identical whichever call computed it: a token's logits do not depend on
// the batch it came in.

// GCC 12's AVX-512 headers seed some intrinsics with _mm512_undefined_*(), which
// -Wuninitialized then reports at every use: a known false positive.
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

#include <immintrin.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>

#include "quant/blocks.h"
#include "quant/kernels/simd_kernels.h"
#include "quant/kernels/x86_helpers.h"

namespace tokenmill::quant::avx512 {

namespace {

constexpr int kPanel = 16;        // weight rows per panel: one int32 lane each
constexpr int kTokenTile = 8;     // tokens whose accumulators stay in registers
constexpr int kTokenBlock = 64;   // tokens per pass over the weights (their activations stay in L2)

// Codes<Block>::row(b): the 32 unsigned codes of one weight block in element order, and
// kOffset = k, the amount by which every code exceeds its level.
template <typename Block>
struct Codes;

template <>
struct Codes<BlockQ8_0> {
  static constexpr int kOffset = 128;
  static __m256i row(const BlockQ8_0& b) { return _mm256_xor_si256(load_256(b.qs), _mm256_set1_epi8(static_cast<char>(0x80))); }
};

template <>
struct Codes<BlockQ4_0> {
  static constexpr int kOffset = 8;
  static __m256i row(const BlockQ4_0& b) { return unpack_legacy_nibbles(b.qs); }
};

// Q5_0: the code is the 5-bit q itself, nibble + 16 where qh has bit 4 (qh is exactly a
// byte mask of "bit 4 set" in element order).
template <>
struct Codes<BlockQ5_0> {
  static constexpr int kOffset = 16;
  static __m256i row(const BlockQ5_0& b) {
    const __m256i nibbles = unpack_legacy_nibbles(b.qs);
    return _mm256_mask_add_epi8(nibbles, static_cast<__mmask32>(load_u32(b.qh)), nibbles, _mm256_set1_epi8(16));
  }
};

// One block of a transposed panel: codes[k] lane r = codes 4k .. 4k + 3 of row r; scales
// lane r = row r's d as a float.
struct PanelBlock {
  __m512i codes[8];
  __m512 scales;
};

// Rows r0 .. r0 + 15 of the weights (rows past n_rows repeat the last one; their lanes
// are computed and never stored), block by block into `panel`. Block b of the next
// panel's rows (`next`, n_next rows, none when 0) is prefetched with block b of this one:
// 16 rows side by side are 16 streams, which the hardware prefetcher does not follow.
template <typename Block>
void transpose_panel(int64_t n_blocks, const uint8_t* w, size_t w_stride, int64_t n_rows, const uint8_t* next,
                     int64_t n_next, PanelBlock* panel) {
  const Block* rows[kPanel];
  int offsets[kPanel];
  for (int r = 0; r < kPanel; ++r) {
    const int64_t row = r < n_rows ? r : n_rows - 1;
    rows[r] = reinterpret_cast<const Block*>(w + row * w_stride);
    offsets[r] = static_cast<int>(row * static_cast<int64_t>(w_stride));
  }
  const __m512i scale_offsets = _mm512_loadu_si512(offsets);
  for (int64_t b = 0; b < n_blocks; ++b) {
    for (int64_t r = 0; r < n_next; ++r) {
      _mm_prefetch(reinterpret_cast<const char*>(next + r * w_stride + b * sizeof(Block)), _MM_HINT_T0);
    }
    // z[i] = [row i | row i + 4] for i < 4, [row i + 4 | row i + 8] for i >= 4: the lane
    // order the last step below needs for lane r = row r.
    __m512i z[8];
    for (int i = 0; i < 4; ++i) {
      z[i] = combine_256(Codes<Block>::row(rows[i][b]), Codes<Block>::row(rows[i + 4][b]));
      z[i + 4] = combine_256(Codes<Block>::row(rows[i + 8][b]), Codes<Block>::row(rows[i + 12][b]));
    }
    // 4 x 4 dword transposes in every 128-bit lane: u[k] (k < 4) holds dword k of rows
    // {0-3 | 4-7} in its low 128-bit pair for dwords 0..3 and 4..7 of each source half.
    __m512i t[8];
    for (int g = 0; g < 2; ++g) {
      t[4 * g + 0] = _mm512_unpacklo_epi32(z[4 * g + 0], z[4 * g + 1]);
      t[4 * g + 1] = _mm512_unpackhi_epi32(z[4 * g + 0], z[4 * g + 1]);
      t[4 * g + 2] = _mm512_unpacklo_epi32(z[4 * g + 2], z[4 * g + 3]);
      t[4 * g + 3] = _mm512_unpackhi_epi32(z[4 * g + 2], z[4 * g + 3]);
    }
    __m512i u[8];
    for (int g = 0; g < 2; ++g) {
      u[4 * g + 0] = _mm512_unpacklo_epi64(t[4 * g + 0], t[4 * g + 2]);
      u[4 * g + 1] = _mm512_unpackhi_epi64(t[4 * g + 0], t[4 * g + 2]);
      u[4 * g + 2] = _mm512_unpacklo_epi64(t[4 * g + 1], t[4 * g + 3]);
      u[4 * g + 3] = _mm512_unpackhi_epi64(t[4 * g + 1], t[4 * g + 3]);
    }
    // u[k] 128-bit lanes: [rows 0-3, dword k | rows 0-3, dword k + 4 | rows 4-7, dword k |
    // rows 4-7, dword k + 4]; u[4 + k] the same for rows 8-15.
    for (int k = 0; k < 4; ++k) {
      panel[b].codes[k] = _mm512_shuffle_i64x2(u[k], u[4 + k], _MM_SHUFFLE(2, 0, 2, 0));
      panel[b].codes[k + 4] = _mm512_shuffle_i64x2(u[k], u[4 + k], _MM_SHUFFLE(3, 1, 3, 1));
    }
    // d is the first field of every block: 32-bit gathers whose low halves are the scales.
    const __m512i words = _mm512_i32gather_epi32(scale_offsets, w + b * sizeof(Block), 1);
    panel[b].scales = _mm512_cvtph_ps(_mm512_cvtepi32_epi16(words));
  }
}

// Per activation row and block: the token's scale as a float and -k * (sum of its quants).
struct TokenBlock {
  float d;
  int32_t start;
};

template <typename Block>
void prepare_tokens(int64_t n_blocks, const uint8_t* a, size_t a_stride, int64_t n_tokens, TokenBlock* out) {
  const __m256i ones = _mm256_set1_epi8(1);
  for (int64_t t = 0; t < n_tokens; ++t) {
    const auto* y = reinterpret_cast<const BlockQ8_0*>(a + t * a_stride);
    for (int64_t b = 0; b < n_blocks; ++b) {
      const __m256i sums = _mm256_dpbusd_epi32(_mm256_setzero_si256(), ones, load_256(y[b].qs));
      out[t * n_blocks + b].d = half_to_float(y[b].d);
      out[t * n_blocks + b].start = -Codes<Block>::kOffset * hsum_epi32(sums);
    }
  }
}

// out[t * out_stride + r] for the panel's first n_rows rows and kTokens tokens.
template <int kTokens>
void dot_panel(int64_t n_blocks, const PanelBlock* panel, const uint8_t* a, size_t a_stride,
               const TokenBlock* tokens, int64_t n_rows, float* out, int64_t out_stride) {
  __m512 acc[kTokens];
  for (int t = 0; t < kTokens; ++t) acc[t] = _mm512_setzero_ps();
  for (int64_t b = 0; b < n_blocks; ++b) {
    const PanelBlock& p = panel[b];
    for (int t = 0; t < kTokens; ++t) {
      const TokenBlock& token = tokens[t * n_blocks + b];
      const auto* q = reinterpret_cast<const uint8_t*>(reinterpret_cast<const BlockQ8_0*>(a + t * a_stride)[b].qs);
      __m512i isum = _mm512_set1_epi32(token.start);
      for (int k = 0; k < 8; ++k) {
        isum = _mm512_dpbusd_epi32(isum, p.codes[k], _mm512_set1_epi32(static_cast<int>(load_u32(q + 4 * k))));
      }
      acc[t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(isum), _mm512_mul_ps(p.scales, _mm512_set1_ps(token.d)), acc[t]);
    }
  }
  const __mmask16 keep = static_cast<__mmask16>((1u << n_rows) - 1);
  for (int t = 0; t < kTokens; ++t) _mm512_mask_storeu_ps(out + t * out_stride, keep, acc[t]);
}

// A run of tokens (fewer than kTokenTile at the end) against one transposed panel.
void dot_panel_tokens(int64_t n_blocks, const PanelBlock* panel, const uint8_t* a, size_t a_stride,
                      const TokenBlock* tokens, int64_t n_tokens, int64_t n_rows, float* out, int64_t out_stride) {
  int64_t t = 0;
  for (; t + kTokenTile <= n_tokens; t += kTokenTile) {
    dot_panel<kTokenTile>(n_blocks, panel, a + t * a_stride, a_stride, tokens + t * n_blocks, n_rows,
                          out + t * out_stride, out_stride);
  }
  const uint8_t* a_rest = a + t * a_stride;
  const TokenBlock* tokens_rest = tokens + t * n_blocks;
  float* out_rest = out + t * out_stride;
  switch (n_tokens - t) {
    case 7: dot_panel<7>(n_blocks, panel, a_rest, a_stride, tokens_rest, n_rows, out_rest, out_stride); break;
    case 6: dot_panel<6>(n_blocks, panel, a_rest, a_stride, tokens_rest, n_rows, out_rest, out_stride); break;
    case 5: dot_panel<5>(n_blocks, panel, a_rest, a_stride, tokens_rest, n_rows, out_rest, out_stride); break;
    case 4: dot_panel<4>(n_blocks, panel, a_rest, a_stride, tokens_rest, n_rows, out_rest, out_stride); break;
    case 3: dot_panel<3>(n_blocks, panel, a_rest, a_stride, tokens_rest, n_rows, out_rest, out_stride); break;
    case 2: dot_panel<2>(n_blocks, panel, a_rest, a_stride, tokens_rest, n_rows, out_rest, out_stride); break;
    case 1: dot_panel<1>(n_blocks, panel, a_rest, a_stride, tokens_rest, n_rows, out_rest, out_stride); break;
    default: break;
  }
}

// Every shape goes through here: for each block of kTokenBlock tokens, each 16-row panel
// is transposed once and dotted with all of them. The next panel's rows are prefetched
// while this one is computed (16 rows side by side are 16 streams, which the hardware
// prefetcher does not follow well).
template <typename Block>
void dot_matrix(int64_t n, const void* w, size_t w_stride, int64_t n_w_rows, const void* a, size_t a_stride,
                int64_t n_a_rows, float* out, int64_t out_stride) {
  const auto* weights = static_cast<const uint8_t*>(w);
  const auto* activations = static_cast<const uint8_t*>(a);
  const int64_t n_blocks = n / kLegacyBlockSize;
  auto* panel = static_cast<PanelBlock*>(std::aligned_alloc(64, sizeof(PanelBlock) * n_blocks));
  auto* tokens = static_cast<TokenBlock*>(std::malloc(sizeof(TokenBlock) * n_blocks * kTokenBlock));
  for (int64_t t0 = 0; t0 < n_a_rows; t0 += kTokenBlock) {
    const int64_t n_tokens = n_a_rows - t0 < kTokenBlock ? n_a_rows - t0 : kTokenBlock;
    const uint8_t* a_block = activations + t0 * a_stride;
    prepare_tokens<Block>(n_blocks, a_block, a_stride, n_tokens, tokens);
    for (int64_t r0 = 0; r0 < n_w_rows; r0 += kPanel) {
      const int64_t n_rows = n_w_rows - r0 < kPanel ? n_w_rows - r0 : kPanel;
      const int64_t after = n_w_rows - r0 - n_rows;
      transpose_panel<Block>(n_blocks, weights + r0 * w_stride, w_stride, n_rows, weights + (r0 + n_rows) * w_stride,
                             after < kPanel ? after : kPanel, panel);
      dot_panel_tokens(n_blocks, panel, a_block, a_stride, tokens, n_tokens, n_rows, out + t0 * out_stride + r0,
                       out_stride);
    }
  }
  std::free(tokens);
  std::free(panel);
}

template <typename Block>
float dot_row(int64_t n, const void* w, const void* a) {
  float result;
  dot_matrix<Block>(n, w, 0, 1, a, 0, 1, &result, 0);
  return result;
}

template <typename Block>
void dot_rows(int64_t n, const void* w, const void* a, size_t a_stride, int64_t n_a_rows, float* out,
              int64_t out_stride) {
  dot_matrix<Block>(n, w, 0, 1, a, a_stride, n_a_rows, out, out_stride);
}

}  // namespace

float vec_dot_q4_0_q8_0(int64_t n, const void* w, const void* a) { return dot_row<BlockQ4_0>(n, w, a); }
float vec_dot_q5_0_q8_0(int64_t n, const void* w, const void* a) { return dot_row<BlockQ5_0>(n, w, a); }
float vec_dot_q8_0_q8_0(int64_t n, const void* w, const void* a) { return dot_row<BlockQ8_0>(n, w, a); }

void vec_dot_rows_q4_0_q8_0(int64_t n, const void* w, const void* a, size_t a_stride, int64_t n_a_rows,
                            float* out, int64_t out_stride) {
  dot_rows<BlockQ4_0>(n, w, a, a_stride, n_a_rows, out, out_stride);
}
void vec_dot_rows_q5_0_q8_0(int64_t n, const void* w, const void* a, size_t a_stride, int64_t n_a_rows,
                            float* out, int64_t out_stride) {
  dot_rows<BlockQ5_0>(n, w, a, a_stride, n_a_rows, out, out_stride);
}
void vec_dot_rows_q8_0_q8_0(int64_t n, const void* w, const void* a, size_t a_stride, int64_t n_a_rows,
                            float* out, int64_t out_stride) {
  dot_rows<BlockQ8_0>(n, w, a, a_stride, n_a_rows, out, out_stride);
}

void vec_dot_matrix_q4_0_q8_0(int64_t n, const void* w, size_t w_stride, int64_t n_w_rows, const void* a,
                              size_t a_stride, int64_t n_a_rows, float* out, int64_t out_stride) {
  dot_matrix<BlockQ4_0>(n, w, w_stride, n_w_rows, a, a_stride, n_a_rows, out, out_stride);
}
void vec_dot_matrix_q5_0_q8_0(int64_t n, const void* w, size_t w_stride, int64_t n_w_rows, const void* a,
                              size_t a_stride, int64_t n_a_rows, float* out, int64_t out_stride) {
  dot_matrix<BlockQ5_0>(n, w, w_stride, n_w_rows, a, a_stride, n_a_rows, out, out_stride);
}
void vec_dot_matrix_q8_0_q8_0(int64_t n, const void* w, size_t w_stride, int64_t n_w_rows, const void* a,
                              size_t a_stride, int64_t n_a_rows, float* out, int64_t out_stride) {
  dot_matrix<BlockQ8_0>(n, w, w_stride, n_w_rows, a, a_stride, n_a_rows, out, out_stride);
}

}  // namespace tokenmill::quant::avx512
