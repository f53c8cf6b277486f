// AVX-512 (VNNI) dot products of the legacy weight formats Q4_0, Q5_0 and Q8_0 with Q8_0
// activation rows, and of Q4_1 and Q5_1 with Q8_1 rows, sixteen weight rows at a time: int32 lane r of every vector belongs
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
#include <type_traits>

#include "quant/blocks.h"
#include "quant/kernels/legacy_packed_avx512.h"
#include "quant/kernels/scratch.h"
#include "quant/kernels/simd_kernels.h"
#include "quant/kernels/panel_transpose_avx512.h"
#include "quant/kernels/x86_helpers.h"
#include "quant/panel_layout.h"

namespace tokenmill::quant::avx512 {

namespace {

constexpr int kTokenTile = 8;     // tokens whose accumulators stay in registers
constexpr int kPairTokenTile = 6; // the same with two Q8_0 panels at once (dot_packed)
constexpr int kTokenBlock = 64;   // tokens per pass over the weights (their activations stay in L2)
// Packed Q4_0 / Q5_0 with this many tokens or more run as pairs of panels rebuilt in
// Q8_0's layout (dot_panels); fewer unpack one panel's codes in registers per tile: the
// rebuild pays once two tiles of tokens share it.
constexpr int kPairMinTokens = 2 * kTokenTile;

// Codes<Block>::kOffset = k, the amount by which every unsigned code exceeds its level.
template <typename Block>
struct Codes;
// Codes<Block>::pair(b): the codes of blocks b[0] and b[1] of one row, each in element
// order, in the two 256-bit halves (the single-token path below); single(b): one block.
template <>
struct Codes<BlockQ8_0> {
  using Activation = BlockQ8_0;
  static constexpr bool kHasMin = false;
  static constexpr int kOffset = 128;
  static __m512i pair(const BlockQ8_0* b) {
    return _mm512_xor_si512(combine_256(load_256(b[0].qs), load_256(b[1].qs)), _mm512_set1_epi8(static_cast<char>(0x80)));
  }
  static __m256i single(const BlockQ8_0& b) {
    return _mm256_xor_si256(load_256(b.qs), _mm256_set1_epi8(static_cast<char>(0x80)));
  }
};

// Nibbles of two consecutive legacy blocks, each in element order (values 0..15).
__m512i unpack_nibbles_pair(const uint8_t* qs_0, const uint8_t* qs_1) {
  const __m256i packed = _mm256_set_m128i(load_128(qs_1), load_128(qs_0));
  // [lo_0, lo_1, hi_0, hi_1] in 128-bit lanes, reordered to [lo_0, hi_0, lo_1, hi_1].
  const __m512i both = combine_256(packed, _mm256_srli_epi16(packed, 4));
  const __m512i ordered = _mm512_shuffle_i64x2(both, both, _MM_SHUFFLE(3, 1, 2, 0));
  return _mm512_and_si512(ordered, _mm512_set1_epi8(0x0f));
}

// The nibble formats' codes, shared by the _0 and _1 variants (the code is the same
// 4-bit or 5-bit q; only the offset and the minimum differ).
template <typename Block>
__m512i nibble_pair(const Block* b) {
  return unpack_nibbles_pair(b[0].qs, b[1].qs);
}
template <typename Block>
__m512i five_bit_pair(const Block* b) {
  const __mmask64 bit4 =
      static_cast<__mmask64>(load_u32(b[0].qh)) | (static_cast<__mmask64>(load_u32(b[1].qh)) << 32);
  const __m512i nibbles = nibble_pair(b);
  return _mm512_mask_add_epi8(nibbles, bit4, nibbles, _mm512_set1_epi8(16));
}
template <typename Block>
__m256i five_bit_single(const Block& b) {
  const __m256i nibbles = unpack_legacy_nibbles(b.qs);
  return _mm256_mask_add_epi8(nibbles, static_cast<__mmask32>(load_u32(b.qh)), nibbles, _mm256_set1_epi8(16));
}

template <>
struct Codes<BlockQ4_0> {
  using Activation = BlockQ8_0;
  static constexpr bool kHasMin = false;
  static constexpr int kOffset = 8;
  static __m512i pair(const BlockQ4_0* b) { return nibble_pair(b); }
  static __m256i single(const BlockQ4_0& b) { return unpack_legacy_nibbles(b.qs); }
};

template <>
struct Codes<BlockQ5_0> {
  using Activation = BlockQ8_0;
  static constexpr bool kHasMin = false;
  static constexpr int kOffset = 16;
  static __m512i pair(const BlockQ5_0* b) { return five_bit_pair(b); }
  static __m256i single(const BlockQ5_0& b) { return five_bit_single(b); }
};

// The _1 formats: x = d * q + m with q the plain nibble (Q4_1) or 5-bit value (Q5_1),
// against Q8_1 activations whose s = d_a * sum(a) pays for the minimum:
// dot = d * d_a * sum(q * a) + m * s. The codes are q itself (k = 0).
template <>
struct Codes<BlockQ4_1> {
  using Activation = BlockQ8_1;
  static constexpr bool kHasMin = true;
  static constexpr int kOffset = 0;
  static __m512i pair(const BlockQ4_1* b) { return nibble_pair(b); }
  static __m256i single(const BlockQ4_1& b) { return unpack_legacy_nibbles(b.qs); }
};

template <>
struct Codes<BlockQ5_1> {
  using Activation = BlockQ8_1;
  static constexpr bool kHasMin = true;
  static constexpr int kOffset = 0;
  static __m512i pair(const BlockQ5_1* b) { return five_bit_pair(b); }
  static __m256i single(const BlockQ5_1& b) { return five_bit_single(b); }
};

// One block of a transposed panel: codes[k] lane r = codes 4k .. 4k + 3 of row r; scales
// lane r = row r's d as a float, mins its m (Q4_1, Q5_1).
struct PanelBlock {
  __m512i codes[8];
  __m512 scales;
  __m512 mins;  // the _1 formats' m; unused otherwise
};

// The unsigned codes of one block of 16 rows: out[k] lane r = codes 4k .. 4k + 3 of
// row r. `rows` point at each row's block; head[j] lane r = bytes 4j .. 4j + 3 of row
// r's block (d in the low half of head[0]).
template <typename Block>
void panel_codes(const Block* const* rows, const __m512i* head, __m512i* out);

template <>
void panel_codes<BlockQ8_0>(const BlockQ8_0* const* rows, const __m512i*, __m512i* out) {
  const uint8_t* src[kPanel];
  for (int r = 0; r < kPanel; ++r) src[r] = reinterpret_cast<const uint8_t*>(rows[r]->qs);
  transpose_16x32(src, out);
  for (int k = 0; k < 8; ++k) out[k] = _mm512_xor_si512(out[k], _mm512_set1_epi8(static_cast<char>(0x80)));
}

// Q4_0 / Q5_0 nibbles: byte i of qs holds element i (low nibble) and 16 + i (high).
void nibble_codes(const uint8_t* const* qs, __m512i* out) {
  __m512i packed[4];
  transpose_16x16(qs, packed);
  const __m512i low_nibble = _mm512_set1_epi8(0x0f);
  for (int j = 0; j < 4; ++j) {
    out[j] = _mm512_and_si512(packed[j], low_nibble);
    out[4 + j] = _mm512_and_si512(_mm512_srli_epi16(packed[j], 4), low_nibble);
  }
}

// The nibble formats' transposed codes: their qs of the 16 rows.
template <typename Block>
void panel_nibble_codes(const Block* const* rows, __m512i* out) {
  const uint8_t* src[kPanel];
  for (int r = 0; r < kPanel; ++r) src[r] = rows[r]->qs;
  nibble_codes(src, out);
}

// + 16 where bit e of qh is set (element e), for Q5_0 and Q5_1; qh lane r = row r's qh.
// Codes 4k .. 4k + 3 take bits 4k .. 4k + 3, all in qh byte k / 2: that byte copied to
// the four bytes of each lane, then byte i tested against bit (4k + i) % 8.
void add_fifth_bits(__m512i qh, __m512i* out) {
  const __m512i sixteen = _mm512_set1_epi8(16);
  for (int k = 0; k < 8; ++k) {
    const int byte = k / 2;
    const __m512i copy_index = _mm512_add_epi32(_mm512_set1_epi32(byte * 0x01010101),
                                                _mm512_set4_epi32(0x0c0c0c0c, 0x08080808, 0x04040404, 0));
    const __m512i bits = _mm512_set1_epi32(k % 2 == 0 ? 0x08040201 : static_cast<int>(0x80402010));
    const __mmask64 set = _mm512_test_epi8_mask(_mm512_shuffle_epi8(qh, copy_index), bits);
    out[k] = _mm512_mask_add_epi8(out[k], set, out[k], sixteen);
  }
}

template <>
void panel_codes<BlockQ4_0>(const BlockQ4_0* const* rows, const __m512i*, __m512i* out) {
  panel_nibble_codes(rows, out);
}

template <>
void panel_codes<BlockQ4_1>(const BlockQ4_1* const* rows, const __m512i*, __m512i* out) {
  panel_nibble_codes(rows, out);
}

// Q5_0: qh is bytes 2 .. 5 of the block.
template <>
void panel_codes<BlockQ5_0>(const BlockQ5_0* const* rows, const __m512i* head, __m512i* out) {
  static_assert(offsetof(BlockQ5_0, qh) == 2);
  panel_nibble_codes(rows, out);
  add_fifth_bits(_mm512_or_si512(_mm512_srli_epi32(head[0], 16), _mm512_slli_epi32(head[1], 16)), out);
}

// Q5_1: qh is bytes 4 .. 7 of the block.
template <>
void panel_codes<BlockQ5_1>(const BlockQ5_1* const* rows, const __m512i* head, __m512i* out) {
  static_assert(offsetof(BlockQ5_1, qh) == 4);
  panel_nibble_codes(rows, out);
  add_fifth_bits(head[1], out);
}

// Rows r0 .. r0 + 15 of the weights (rows past n_rows repeat the last one; their lanes
// are computed and never stored), block by block into `panel`. Block b of the next
// panel's rows (`next`, n_next rows, none when 0) is prefetched with block b of this one:
// 16 rows side by side are 16 streams, which the hardware prefetcher does not follow.
template <typename Block>
void transpose_panel(int64_t n_blocks, const uint8_t* w, size_t w_stride, int64_t n_rows, const uint8_t* next,
                     int64_t n_next, PanelBlock* panel) {
  size_t offsets[kPanel];
  for (int r = 0; r < kPanel; ++r) offsets[r] = static_cast<size_t>(r < n_rows ? r : n_rows - 1) * w_stride;
  for (int64_t b = 0; b < n_blocks; ++b) {
    for (int64_t r = 0; r < n_next; ++r) {
      _mm_prefetch(reinterpret_cast<const char*>(next + r * w_stride + b * sizeof(Block)), _MM_HINT_T0);
    }
    const uint8_t* first = w + b * sizeof(Block);
    const Block* rows[kPanel];
    const uint8_t* starts[kPanel];
    for (int r = 0; r < kPanel; ++r) {
      starts[r] = first + offsets[r];
      rows[r] = reinterpret_cast<const Block*>(starts[r]);
    }
    __m512i head[2];
    transpose_16x8(starts, head);
    panel_codes<Block>(rows, head, panel[b].codes);
    static_assert(offsetof(Block, d) == 0);
    panel[b].scales = _mm512_cvtph_ps(_mm512_cvtepi32_epi16(head[0]));
    if constexpr (Codes<Block>::kHasMin) {
      static_assert(offsetof(Block, m) == 2);
      panel[b].mins = _mm512_cvtph_ps(_mm512_cvtepi32_epi16(_mm512_srli_epi32(head[0], 16)));
    }
  }
}

// Stages n_tokens rows (at most kTokenBlock) into meta / quants (n_blocks * kTokenBlock
// entries each).
template <typename Block>
StagedTokens prepare_tokens(int64_t n_blocks, const uint8_t* a, size_t a_stride, int64_t n_tokens, TokenBlock* meta,
                            uint8_t* quants) {
  const __m256i ones = _mm256_set1_epi8(1);
  using Activation = typename Codes<Block>::Activation;
  for (int64_t t = 0; t < n_tokens; ++t) {
    const auto* y = reinterpret_cast<const Activation*>(a + t * a_stride);
    for (int64_t b = 0; b < n_blocks; ++b) {
      TokenBlock& token = meta[b * n_tokens + t];
      token.d = half_to_float(y[b].d);
      token.start = 0;
      token.s = 0.0f;
      const __m256i q = load_256(y[b].qs);
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(quants + (b * n_tokens + t) * kLegacyBlockSize), q);
      if constexpr (Codes<Block>::kOffset != 0) {
        const __m256i sums = _mm256_dpbusd_epi32(_mm256_setzero_si256(), ones, q);
        token.start = -Codes<Block>::kOffset * hsum_epi32(sums);
      }
      if constexpr (Codes<Block>::kHasMin) token.s = half_to_float(y[b].s);
    }
  }
  return {meta, quants, n_tokens};
}

// Scratch for staging up to kTokenBlock tokens of n_blocks blocks.
struct StagingBuffers {
  TokenBlock* meta;
  uint8_t* quants;
  explicit StagingBuffers(int64_t n_blocks)
      : meta(static_cast<TokenBlock*>(
            thread_scratch(ScratchSlot::kStagedMeta, sizeof(TokenBlock) * static_cast<size_t>(n_blocks) * kTokenBlock))),
        quants(static_cast<uint8_t*>(
            thread_scratch(ScratchSlot::kStagedQuants, static_cast<size_t>(n_blocks) * kTokenBlock * kLegacyBlockSize))) {}
};

// out[t * out_stride + r] for the panel's first n_rows rows and kTokens tokens.
template <typename Block, int kTokens>
void dot_panel(int64_t n_blocks, const PanelBlock* panel, StagedTokens tokens, int64_t n_rows, float* out,
               int64_t out_stride) {
  __m512 acc[kTokens];
  for (int t = 0; t < kTokens; ++t) acc[t] = _mm512_setzero_ps();
  for (int64_t b = 0; b < n_blocks; ++b) {
    const PanelBlock& p = panel[b];
    const uint8_t* q = tokens.block_quants(b);
    // kTokens independent vpdpbusd chains in flight (see dot_packed).
    __m512i isum[kTokens];
    for (int t = 0; t < kTokens; ++t) isum[t] = _mm512_set1_epi32(tokens.token(b, t).start);
    for (int k = 0; k < 8; ++k) {
      for (int t = 0; t < kTokens; ++t) {
        isum[t] = _mm512_dpbusd_epi32(isum[t], p.codes[k],
                                      _mm512_set1_epi32(static_cast<int>(load_u32(q + t * kLegacyBlockSize + 4 * k))));
      }
    }
    for (int t = 0; t < kTokens; ++t) {
      const TokenBlock& token = tokens.token(b, t);
      acc[t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(isum[t]), _mm512_mul_ps(p.scales, _mm512_set1_ps(token.d)), acc[t]);
      if constexpr (Codes<Block>::kHasMin) acc[t] = _mm512_fmadd_ps(p.mins, _mm512_set1_ps(token.s), acc[t]);
    }
  }
  const __mmask16 keep = static_cast<__mmask16>((1u << n_rows) - 1);
  for (int t = 0; t < kTokens; ++t) _mm512_mask_storeu_ps(out + t * out_stride, keep, acc[t]);
}

// One token against 16 rows without transposing the weights (decode, where the weights
// are read once and a transpose would cost more than the dot products): each row's
// codes of two blocks are multiplied in place (lanes 0..7 block b, 8..15 block b + 1),
// and the 16 rows' vectors are summed down to block b's and block b + 1's sums with
// lane r = row r. Integer sums are exact in any order, so this gives the transposed
// path's isum and, through the same float steps, its result bit for bit.
//
// The pair step of that sum: rows a and b's vectors to [a0+a2, b0+b2, a1+a3, b1+b3] per
// 128-bit lane, which reduce_8_pairs finishes.
__attribute__((always_inline)) inline __m512i add_row_pair(__m512i a, __m512i b) {
  return _mm512_add_epi32(_mm512_unpacklo_epi32(a, b), _mm512_unpackhi_epi32(a, b));
}

// w[i] = add_row_pair(v[2i], v[2i + 1]) for 16 rows -> out[0] lane r = lanes 0..7 of
// v[r] summed (block b), out[1] = lanes 8..15 (block b + 1).
__attribute__((always_inline)) inline void reduce_8_pairs(const __m512i* w, __m512i* out) {
  __m512i x[4];
  for (int i = 0; i < 4; ++i) {  // rows 4i .. 4i + 3, one 128-bit lane per quarter of v
    x[i] = _mm512_add_epi32(_mm512_unpacklo_epi64(w[2 * i], w[2 * i + 1]), _mm512_unpackhi_epi64(w[2 * i], w[2 * i + 1]));
  }
  // Quarters 0 + 1 are block b, 2 + 3 block b + 1: [x0 b, x0 b+1, x1 b, x1 b+1] ...
  const __m512i y01 = _mm512_add_epi32(_mm512_shuffle_i64x2(x[0], x[1], _MM_SHUFFLE(2, 0, 2, 0)),
                                       _mm512_shuffle_i64x2(x[0], x[1], _MM_SHUFFLE(3, 1, 3, 1)));
  const __m512i y23 = _mm512_add_epi32(_mm512_shuffle_i64x2(x[2], x[3], _MM_SHUFFLE(2, 0, 2, 0)),
                                       _mm512_shuffle_i64x2(x[2], x[3], _MM_SHUFFLE(3, 1, 3, 1)));
  out[0] = _mm512_shuffle_i64x2(y01, y23, _MM_SHUFFLE(2, 0, 2, 0));
  out[1] = _mm512_shuffle_i64x2(y01, y23, _MM_SHUFFLE(3, 1, 3, 1));
}

template <typename Block>
void dot_panel_single(int64_t n_blocks, const uint8_t* w, size_t w_stride, int64_t n_rows, const uint8_t* next,
                      int64_t n_next, const uint8_t* a, const TokenBlock* token, float* out) {
  const auto* y = reinterpret_cast<const typename Codes<Block>::Activation*>(a);
  const Block* rows[kPanel];
  for (int r = 0; r < kPanel; ++r) rows[r] = reinterpret_cast<const Block*>(w + (r < n_rows ? r : n_rows - 1) * w_stride);
  __m512 acc = _mm512_setzero_ps();
  // The float steps of dot_panel<1>, block by block.
  auto accumulate = [&](int64_t b, __m512i sums) {
    const uint8_t* starts[kPanel];
    for (int r = 0; r < kPanel; ++r) starts[r] = reinterpret_cast<const uint8_t*>(rows[r] + b);
    __m512i head[2];
    transpose_16x8(starts, head);
    const __m512 scales = _mm512_cvtph_ps(_mm512_cvtepi32_epi16(head[0]));
    const __m512i isum = _mm512_add_epi32(_mm512_set1_epi32(token[b].start), sums);
    acc = _mm512_fmadd_ps(_mm512_cvtepi32_ps(isum), _mm512_mul_ps(scales, _mm512_set1_ps(token[b].d)), acc);
    if constexpr (Codes<Block>::kHasMin) {
      const __m512 mins = _mm512_cvtph_ps(_mm512_cvtepi32_epi16(_mm512_srli_epi32(head[0], 16)));
      acc = _mm512_fmadd_ps(mins, _mm512_set1_ps(token[b].s), acc);
    }
  };
  // The next panel's rows are contiguous: its cache lines are prefetched in order, an
  // equal share with each pair of blocks.
  const int64_t next_bytes = n_next * static_cast<int64_t>(w_stride);
  const int64_t n_pairs = n_blocks / 2 > 0 ? n_blocks / 2 : 1;
  const int64_t bytes_per_pair = (next_bytes / n_pairs + 127) / 64 * 64;
  const char* prefetch = reinterpret_cast<const char*>(next);
  const char* prefetch_end = prefetch + next_bytes;
  int64_t b = 0;
  for (; b + 2 <= n_blocks; b += 2) {
    for (int64_t i = 0; i < bytes_per_pair && prefetch < prefetch_end; i += 64, prefetch += 64) {
      _mm_prefetch(prefetch, _MM_HINT_T0);
    }
    const __m512i levels = combine_256(load_256(y[b].qs), load_256(y[b + 1].qs));
    __m512i w[kPanel / 2];
    for (int i = 0; i < kPanel / 2; ++i) {
      w[i] = add_row_pair(_mm512_dpbusd_epi32(_mm512_setzero_si512(), Codes<Block>::pair(rows[2 * i] + b), levels),
                          _mm512_dpbusd_epi32(_mm512_setzero_si512(), Codes<Block>::pair(rows[2 * i + 1] + b), levels));
    }
    __m512i sums[2];
    reduce_8_pairs(w, sums);
    accumulate(b, sums[0]);
    accumulate(b + 1, sums[1]);
  }
  if (b < n_blocks) {  // an odd last block, in the lower halves
    const __m256i levels = load_256(y[b].qs);
    auto row_sums = [&](int r) {
      return _mm512_zextsi256_si512(_mm256_dpbusd_epi32(_mm256_setzero_si256(), Codes<Block>::single(rows[r][b]), levels));
    };
    __m512i w[kPanel / 2];
    for (int i = 0; i < kPanel / 2; ++i) w[i] = add_row_pair(row_sums(2 * i), row_sums(2 * i + 1));
    __m512i sums[2];
    reduce_8_pairs(w, sums);
    accumulate(b, sums[0]);
  }
  _mm512_mask_storeu_ps(out, static_cast<__mmask16>((1u << n_rows) - 1), acc);
}

// A run of staged tokens against one transposed panel.
template <typename Block>
void dot_panel_tokens(int64_t n_blocks, const PanelBlock* panel, StagedTokens tokens, int64_t n_tokens, int64_t n_rows,
                      float* out, int64_t out_stride) {
  for_token_tiles<kTokenTile>(n_tokens, [&](auto n, int64_t t) {
    dot_panel<Block, decltype(n)::value>(n_blocks, panel, tokens.from(t), n_rows, out + t * out_stride, out_stride);
  });
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
  auto* panel = static_cast<PanelBlock*>(thread_scratch(ScratchSlot::kPanel, sizeof(PanelBlock) * n_blocks));
  StagingBuffers staging(n_blocks);
  for (int64_t t0 = 0; t0 < n_a_rows; t0 += kTokenBlock) {
    const int64_t n_tokens = n_a_rows - t0 < kTokenBlock ? n_a_rows - t0 : kTokenBlock;
    const uint8_t* a_block = activations + t0 * a_stride;
    const StagedTokens tokens = prepare_tokens<Block>(n_blocks, a_block, a_stride, n_tokens, staging.meta, staging.quants);
    for (int64_t r0 = 0; r0 < n_w_rows; r0 += kPanel) {
      const int64_t n_rows = n_w_rows - r0 < kPanel ? n_w_rows - r0 : kPanel;
      const int64_t after = n_w_rows - r0 - n_rows;
      if (n_tokens == 1) {
        dot_panel_single<Block>(n_blocks, weights + r0 * w_stride, w_stride, n_rows, weights + (r0 + n_rows) * w_stride,
                                after < kPanel ? after : kPanel, a_block, tokens.meta, out + t0 * out_stride + r0);
        continue;
      }
      transpose_panel<Block>(n_blocks, weights + r0 * w_stride, w_stride, n_rows, weights + (r0 + n_rows) * w_stride,
                             after < kPanel ? after : kPanel, panel);
      dot_panel_tokens<Block>(n_blocks, panel, tokens, n_tokens, n_rows, out + t0 * out_stride + r0, out_stride);
    }
  }
}

// Weights stored in quant/panel_layout.h's layout: per block of a panel, Q8_0 keeps the
// eight code vectors themselves; Q4_0 / Q5_0 keep their packed nibbles transposed (four
// vectors) and, for Q5_0, the rows' qh, then the 16 scales. The codes are rebuilt from
// them exactly as transpose_panel builds them from the file's rows, and the float steps
// are dot_panel's, so the results are its bits.
template <typename Block>
struct Packed;

template <>
struct Packed<BlockQ8_0> {
  static constexpr size_t kScales = kPackedQ8CodesBytes;
  static void codes(const uint8_t* block, __m512i* out) {
    for (int k = 0; k < 8; ++k) out[k] = load_512(block + 64 * k);
  }
};

template <>
struct Packed<BlockQ4_0> {
  static constexpr size_t kScales = 4 * 64;
  static void codes(const uint8_t* block, __m512i* out) {
    const __m512i low_nibble = _mm512_set1_epi8(0x0f);
    for (int j = 0; j < 4; ++j) {
      const __m512i packed = load_512(block + 64 * j);
      out[j] = _mm512_and_si512(packed, low_nibble);
      out[4 + j] = _mm512_and_si512(_mm512_srli_epi16(packed, 4), low_nibble);
    }
  }
};

template <>
struct Packed<BlockQ5_0> {
  static constexpr size_t kScales = 5 * 64;
  static void codes(const uint8_t* block, __m512i* out) {
    Packed<BlockQ4_0>::codes(block, out);
    add_fifth_bits(load_512(block + 4 * 64), out);
  }
};

template <typename Block>
constexpr size_t kPackedBlockBytes = kPanel * sizeof(Block);
constexpr int64_t kPackedPrefetchBytes = 8192;  // the panels are streamed in order

// out + offset, or null for a call that only folds its results (no stores).
inline float* offset_rows(float* out, int64_t offset) { return out != nullptr ? out + offset : nullptr; }

// kPanels consecutive panels of the packed layout (two only for Q8_0, whose codes are
// loaded as used; the nibble formats unpack a block's codes into registers) against
// kTokens tokens: out[t * out_stride + 16p + r], each (row, token) through the same steps
// as dot_panel's. Two panels share each token broadcast: 2 x 6 tokens ran 1.47 vpdpbusd
// a cycle against 1.21 for 1 x 8 (the broadcasts compete with the dot products; two
// panels of 8 tokens spill registers).
template <typename Block, int kPanels, int kTokens>
void dot_packed(int64_t n_blocks, const uint8_t* panel, int64_t panel_bytes, StagedTokens tokens, float* out,
                int64_t out_stride, const PrefetchShare& prefetch, RunningMax* row_max, int64_t first_column) {
  static_assert(Packed<Block>::kScales + kPanel * sizeof(uint16_t) == kPackedBlockBytes<Block>);
  static_assert(kPanels == 1 || std::is_same_v<Block, BlockQ8_0>);
  __m512 acc[kPanels][kTokens];
  for (int p = 0; p < kPanels; ++p) {
    for (int t = 0; t < kTokens; ++t) acc[p][t] = _mm512_setzero_ps();
  }
  for (int64_t b = 0; b < n_blocks; ++b) {
    const uint8_t* block[kPanels];
    for (int p = 0; p < kPanels; ++p) block[p] = panel + p * panel_bytes + b * kPackedBlockBytes<Block>;
    prefetch.fetch(b);
    const uint8_t* q = tokens.block_quants(b);
    auto broadcast = [&](int t, int k) {
      return _mm512_set1_epi32(static_cast<int>(load_u32(q + t * kLegacyBlockSize + 4 * k)));
    };
    // Step k for every token before step k + 1: kPanels x kTokens independent vpdpbusd
    // chains in flight instead of one chain of eight (integer sums: the order changes no bit).
    __m512i isum[kPanels][kTokens];
    for (int t = 0; t < kTokens; ++t) {
      const __m512i start = _mm512_set1_epi32(tokens.token(b, t).start);
      for (int p = 0; p < kPanels; ++p) isum[p][t] = start;
    }
    if constexpr (std::is_same_v<Block, BlockQ8_0>) {
      // Each step's codes loaded as they are used, not all eight held in registers.
      for (int k = 0; k < 8; ++k) {
        __m512i codes[kPanels];
        for (int p = 0; p < kPanels; ++p) codes[p] = load_512(block[p] + 64 * k);
        for (int t = 0; t < kTokens; ++t) {
          const __m512i a = broadcast(t, k);
          for (int p = 0; p < kPanels; ++p) isum[p][t] = _mm512_dpbusd_epi32(isum[p][t], codes[p], a);
        }
      }
    } else {
      __m512i codes[8];
      Packed<Block>::codes(block[0], codes);
      for (int k = 0; k < 8; ++k) {
        for (int t = 0; t < kTokens; ++t) isum[0][t] = _mm512_dpbusd_epi32(isum[0][t], codes[k], broadcast(t, k));
      }
    }
    for (int p = 0; p < kPanels; ++p) {
      const __m512 scales = _mm512_cvtph_ps(load_256(block[p] + Packed<Block>::kScales));
      for (int t = 0; t < kTokens; ++t) {
        const float d = tokens.token(b, t).d;
        acc[p][t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(isum[p][t]), _mm512_mul_ps(scales, _mm512_set1_ps(d)), acc[p][t]);
      }
    }
  }
  if (out != nullptr) {
    for (int p = 0; p < kPanels; ++p) {
      for (int t = 0; t < kTokens; ++t) _mm512_storeu_ps(out + t * out_stride + kPanel * p, acc[p][t]);
    }
  }
  if (row_max != nullptr) {
    for (int t = 0; t < kTokens; ++t) {
      for (int p = 0; p < kPanels; ++p) fold_running_max(acc[p][t], first_column + kPanel * p, row_max[t]);
    }
  }
}

// n_panels (1, or 2 in Q8_0's layout) panels from `panel` against n_tokens staged tokens.
// The tiles prefetch `ahead` bytes from offset `ahead_from` of `base` (the weights' first
// panel, line-aligned), in equal shares over all their block steps. With kAmx (Q8_0's
// layout only), whole tiles of amx::kTileTokens tokens run on AMX, panel by panel, and
// the rest here: the same bits either way.
//
// The AMX tiles multiply signed codes (tdpbssd): the panels' codes less `code_offset`
// (the k of the format whose codes they are), made once per call for all its tiles, so
// that no tile adds the tokens' start (-k * sum(a)) to every sum.
template <typename Block, bool kAmx = false>
void dot_packed_tokens(int64_t n_blocks, const uint8_t* panel, int64_t n_panels, StagedTokens tokens,
                       int64_t n_tokens, float* out, int64_t out_stride, const uint8_t* base, int64_t ahead_from,
                       int64_t ahead, RunningMax* row_max, int64_t first_column, int code_offset = 128) {
  static_assert(!kAmx || std::is_same_v<Block, BlockQ8_0>);
  const int64_t panel_bytes = n_blocks * static_cast<int64_t>(kPackedBlockBytes<Block>);
  const int64_t tile_size = n_panels == 2 ? kPairTokenTile : kTokenTile;
  const int64_t n_amx_tokens = kAmx ? n_tokens / amx::kTileTokens * amx::kTileTokens : 0;
  const int64_t n_rest = n_tokens - n_amx_tokens;
  const int64_t n_tiles = n_amx_tokens / amx::kTileTokens * n_panels + (n_rest + tile_size - 1) / tile_size;
  PrefetchShare prefetch;
  prefetch.base = base;
  prefetch.n_steps = n_blocks;
  int64_t tile = 0;
  auto share = [&] {
    prefetch.start = ahead_from + ahead * tile / n_tiles;
    prefetch.total = ahead_from + ahead * (tile + 1) / n_tiles - prefetch.start;
    ++tile;
  };
  uint8_t* signed_codes = nullptr;
  if (n_amx_tokens > 0) {
    signed_codes = static_cast<uint8_t*>(thread_scratch(
        ScratchSlot::kSignedCodes, static_cast<size_t>(n_panels * n_blocks) * kPackedQ8CodesBytes));
    const __m512i offset = _mm512_set1_epi8(static_cast<char>(code_offset));
    for (int64_t b = 0; b < n_panels * n_blocks; ++b) {  // a pair's panels are adjacent: blocks in a row
      for (int k = 0; k < 8; ++k) {
        _mm512_store_si512(signed_codes + b * kPackedQ8CodesBytes + 64 * k,
                           _mm512_sub_epi8(load_512(panel + b * kPackedQ8BlockBytes + 64 * k), offset));
      }
    }
  }
  for (int64_t t = 0; t < n_amx_tokens; t += amx::kTileTokens) {
    for (int64_t p = 0; p < n_panels; ++p) {  // panel order: each token's maximum folds in column order
      share();
      amx::dot_packed_tile(n_blocks, signed_codes + p * n_blocks * static_cast<int64_t>(kPackedQ8CodesBytes),
                           panel + p * panel_bytes, tokens.from(t),
                           offset_rows(out, t * out_stride + kPanel * p), out_stride, prefetch,
                           row_max != nullptr ? row_max + t : nullptr, first_column + kPanel * p);
    }
  }
  if (n_rest == 0) return;
  tokens = tokens.from(n_amx_tokens);
  out = offset_rows(out, n_amx_tokens * out_stride);
  if (row_max != nullptr) row_max += n_amx_tokens;
  n_tokens = n_rest;
  if constexpr (std::is_same_v<Block, BlockQ8_0>) {
    if (n_panels == 2) {
      for_balanced_token_tiles<kPairTokenTile>(n_tokens, [&](auto n, int64_t t) {
        share();
        dot_packed<Block, 2, decltype(n)::value>(n_blocks, panel, panel_bytes, tokens.from(t),
                                                 offset_rows(out, t * out_stride), out_stride, prefetch,
                                                 row_max != nullptr ? row_max + t : nullptr, first_column);
      });
      return;
    }
  }
  for_token_tiles<kTokenTile>(n_tokens, [&](auto n, int64_t t) {
    share();
    dot_packed<Block, 1, decltype(n)::value>(n_blocks, panel, panel_bytes, tokens.from(t),
                                             offset_rows(out, t * out_stride), out_stride, prefetch,
                                             row_max != nullptr ? row_max + t : nullptr, first_column);
  });
}

// Packed Q4_0 / Q5_0 panels rewritten in packed Q8_0's layout: the same codes (each the
// nibble format's own unsigned code, whose offset the tokens staged for Block carry) and
// the same F16 scales, so that dot_packed<BlockQ8_0> on them gives dot_packed<Block>'s
// bits. Their lines are in cache (prefetched while the previous panels were computed).
template <typename Block>
void rebuild_as_q8_0(int64_t n_blocks, const uint8_t* panels, int64_t n_panels, uint8_t* out) {
  for (int64_t b = 0; b < n_panels * n_blocks; ++b) {
    const uint8_t* block = panels + b * kPackedBlockBytes<Block>;
    uint8_t* rebuilt = out + b * kPackedBlockBytes<BlockQ8_0>;
    __m512i codes[8];
    Packed<Block>::codes(block, codes);
    for (int k = 0; k < 8; ++k) _mm512_storeu_si512(rebuilt + 64 * k, codes[k]);
    std::memcpy(rebuilt + Packed<BlockQ8_0>::kScales, block + Packed<Block>::kScales, kPanel * sizeof(uint16_t));
  }
}

template <typename Block, bool kAmx = false>
void dot_panels(int64_t n, const void* w, int64_t n_w_rows, const void* a, size_t a_stride, int64_t n_a_rows,
                float* out, int64_t out_stride, RunningMax* row_max) {
  const PanelMatrix panels(w, n / kLegacyBlockSize, kPackedBlockBytes<Block>);
  const auto* activations = static_cast<const uint8_t*>(a);
  const int64_t n_blocks = panels.n_blocks;
  StagingBuffers staging(n_blocks);
  // Nibble formats with kPairMinTokens tokens or more: each pair of panels is rebuilt in
  // Q8_0's layout (rebuild_as_q8_0) and computed as Q8_0's pairs are.
  constexpr bool kNibbles = !std::is_same_v<Block, BlockQ8_0>;
  uint8_t* rebuilt = nullptr;
  // With AMX, whole tiles of its tokens: their tiles read the codes in Q8_0's layout.
  const bool amx_tiles = kAmx && n_a_rows >= amx::kTileTokens;
  if (kNibbles && (n_a_rows >= kPairMinTokens || amx_tiles)) {
    rebuilt = static_cast<uint8_t*>(
        thread_scratch(ScratchSlot::kPanel, 2 * static_cast<size_t>(n_blocks) * kPackedBlockBytes<BlockQ8_0>));
  }
  if (amx_tiles) amx::begin_tiles();
  for (int64_t t0 = 0; t0 < n_a_rows; t0 += kTokenBlock) {
    const int64_t n_tokens = n_a_rows - t0 < kTokenBlock ? n_a_rows - t0 : kTokenBlock;
    const uint8_t* a_block = activations + t0 * a_stride;
    const StagedTokens tokens = prepare_tokens<Block>(n_blocks, a_block, a_stride, n_tokens, staging.meta, staging.quants);
    for (int64_t r0 = 0; r0 < n_w_rows;) {
      const uint8_t* panel = panels.panel(r0);
      const int64_t offset = panel - panels.base;
      float* panel_out = offset_rows(out, t0 * out_stride + r0);
      // With a tile of tokens or more (nibble formats: kPairMinTokens), two panels at a
      // time where two remain.
      const bool pair = n_tokens >= (kNibbles ? kPairMinTokens : kTokenTile) && r0 + 2 * kPanel <= n_w_rows;
      const int64_t n_panels = pair ? 2 : 1;
      const int64_t span = n_panels * panels.panel_bytes;
      RunningMax* tile_max = row_max != nullptr ? row_max + t0 : nullptr;
      if (kNibbles && (pair || (amx_tiles && n_tokens >= amx::kTileTokens))) {
        // The next pair streams in over this one's tiles; this one was requested over
        // the previous pair's (the first pair of a call is read on demand).
        rebuild_as_q8_0<Block>(n_blocks, panel, n_panels, rebuilt);
        dot_packed_tokens<BlockQ8_0, kAmx>(n_blocks, rebuilt, n_panels, tokens, n_tokens, panel_out, out_stride,
                                           panels.base, offset + span, span, tile_max, r0, Codes<Block>::kOffset);
      } else {
        // One panel runs kPackedPrefetchBytes ahead; a pair's stream starts at the next
        // pair: both its panels are read from their first block on, so an 8 KB lead
        // would leave the second one cold (from memory that ran at half speed).
        dot_packed_tokens<Block, kAmx && !kNibbles>(n_blocks, panel, n_panels, tokens, n_tokens, panel_out, out_stride,
                                                    panels.base, offset + (pair ? span : kPackedPrefetchBytes), span,
                                                    tile_max, r0);
      }
      r0 += n_panels * kPanel;
    }
  }
  if (amx_tiles) amx::end_tiles();
}

}  // namespace

}  // namespace tokenmill::quant::avx512

// The packed panels with AMX tiles for whole tiles of tokens (legacy_amx.cc).
namespace tokenmill::quant::amx {
TM_DOT_PANELS_ENTRY(vec_dot_panels_q8_0_q8_0, avx512::dot_panels<BlockQ8_0, true>)
TM_DOT_PANELS_ENTRY(vec_dot_panels_q4_0_q8_0, avx512::dot_panels<BlockQ4_0, true>)
TM_DOT_PANELS_ENTRY(vec_dot_panels_q5_0_q8_0, avx512::dot_panels<BlockQ5_0, true>)
}  // namespace tokenmill::quant::amx

namespace tokenmill::quant::avx512 {

TM_DOT_MATRIX_ENTRY(vec_dot_matrix_q4_1_q8_1, dot_matrix<BlockQ4_1>)
TM_DOT_MATRIX_ENTRY(vec_dot_matrix_q5_1_q8_1, dot_matrix<BlockQ5_1>)
TM_DOT_PANELS_ENTRY(vec_dot_panels_q8_0_q8_0, dot_panels<BlockQ8_0>)
TM_DOT_PANELS_ENTRY(vec_dot_panels_q4_0_q8_0, dot_panels<BlockQ4_0>)
TM_DOT_PANELS_ENTRY(vec_dot_panels_q5_0_q8_0, dot_panels<BlockQ5_0>)

TM_DOT_MATRIX_ENTRY(vec_dot_matrix_q4_0_q8_0, dot_matrix<BlockQ4_0>)
TM_DOT_MATRIX_ENTRY(vec_dot_matrix_q5_0_q8_0, dot_matrix<BlockQ5_0>)
TM_DOT_MATRIX_ENTRY(vec_dot_matrix_q8_0_q8_0, dot_matrix<BlockQ8_0>)

}  // namespace tokenmill::quant::avx512
