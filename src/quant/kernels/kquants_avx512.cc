// AVX-512 (VNNI) dot products of Q4_K, Q5_K and Q6_K with Q8_K activation rows, sixteen
// weight rows at a time: int32 lane r of every vector below belongs to weight row r of a
// 16-row group (the scheme of legacy_avx512.cc, with the K-quants' sub-block scales).
//
// Per (row, token) and super-block b everything up to the float steps is an exact
// integer: T = sum_j sc_j * isum_j (isum_j = sum of code * a over sub-block j) split in
// two halves T_lo, T_hi by sub-block (Format::kSubBlockOrder), and for Q4_K / Q5_K
// M = sum_j mn_j * (a's sum over sub-block j). Q6_K folds its "- 32" into T_lo. Each fits
// in int32 (Q6_K, the largest: 16 * 128 * 194,560 < 2^31), so it is the same integer
// however it was summed. The float steps, per super-block in this order, are
//   acc = fnmadd(float(M), dmin * y.d, acc)     (Q4_K, Q5_K)
//   acc = fma(float(T_lo), d * y.d, acc)
//   acc = fma(float(T_hi), d * y.d, acc)
// and the result is acc. (Any fixed order gives batch invariance; this one keeps the
// Gemma 3 golden test against llama.cpp inside its budget: with T unsplit the worst gap
// change there was 1.51-1.69 against a budget of 1.5.) Two paths compute the integers:
//
//   Many tokens (prefill, batched decode): each 16-row panel's super-blocks are
//   transposed once into a buffer (transpose_panel), code vectors with lane r = four
//   codes of row r, sub-block scales as int32 lanes. Per token and sub-block a chain of
//   vpdpbusd against the token's broadcast quant dwords gives isum_j in every lane at
//   once, one vpmulld + vpaddd applies sc_j; the min (or -32) terms are vpdpwssd of
//   int16 pairs. No horizontal sums.
//
//   Up to a few tokens (decode): each row is read once, in order, and multiplied in place
//   with the single-row scheme (64 quants per step, kquants_avx2.cc's layout), each
//   super-block unpacked once for all the tokens; its 16 int32 partial sums per
//   super-block and token are kept, and the 16 rows' partial sums are then added down to
//   vectors with lane r = row r (reduce_rows).
//
// Both then run the same float steps on the same integers, so every (row, token) result
// has the same bits whatever the number of rows or tokens in the call: a token's logits
// do not depend on its batch.

// GCC 12's AVX-512 headers seed some intrinsics with _mm512_undefined_*(), which
// -Wuninitialized then reports at every use: a known false positive.
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

#include <immintrin.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <type_traits>

#include "quant/blocks.h"
#include "quant/kernels/kquant_panels.h"
#include "quant/kernels/scratch.h"
#include "quant/kernels/simd_kernels.h"
#include "quant/kernels/panel_transpose_avx512.h"
#include "quant/kernels/x86_helpers.h"

namespace tokenmill::quant::avx512 {

namespace {

constexpr int kPanel = 16;       // weight rows per panel: one int32 lane each
constexpr int kTokenTile = 8;    // tokens whose accumulators stay in registers
constexpr int kTokenBlock = kKQuantTokenBlock;
// With fewer tokens than Format::kMinPanelTokens a call reads the rows in place, each
// super-block unpacked once for up to kRowTokens tokens; from there on transposing
// 16-row panels pays (Q6_K's costlier transposition moves its crossing one token up).
constexpr int kRowTokens = 4;

// Decode streams each weight once from memory; the hardware prefetcher alone leaves
// bandwidth unused, so the single-token path prefetches kPrefetchBytes ahead of the
// super-block it reads (past a row's end that is the next row: rows are contiguous;
// past the matrix's end a prefetch is harmless).
constexpr int64_t kPrefetchBytes = 8192;
template <typename Block>
inline void prefetch_ahead(const Block* block) {
  const char* p = reinterpret_cast<const char*>(block) + kPrefetchBytes;
  for (size_t line = 0; line < sizeof(Block); line += 64) _mm_prefetch(p + line, _MM_HINT_T0);
}

// ---------------------------------------------------------------------------------------
// Transposes: panel_transpose_avx512.h.

// The other direction, summed: v[r] (16 int32 lanes of row r) -> out[q] lane r = the sum
// of lanes 4q .. 4q + 3 of v[r], for q < kQuarters. Integer adds: exact.
template <int kQuarters>
__attribute__((always_inline)) inline void reduce_rows(const __m512i* v, __m512i* out) {
  __m512i w[8];
  for (int i = 0; i < 8; ++i) {  // per 128-bit lane: [a0 + a2, b0 + b2, a1 + a3, b1 + b3]
    w[i] = _mm512_add_epi32(_mm512_unpacklo_epi32(v[2 * i], v[2 * i + 1]), _mm512_unpackhi_epi32(v[2 * i], v[2 * i + 1]));
  }
  __m512i x[4];
  for (int i = 0; i < 4; ++i) {  // per 128-bit lane q: rows 4i .. 4i + 3, quarter q of each summed
    x[i] = _mm512_add_epi32(_mm512_unpacklo_epi64(w[2 * i], w[2 * i + 1]), _mm512_unpackhi_epi64(w[2 * i], w[2 * i + 1]));
  }
  auto quarter = [&](auto q) {  // [x0, x1, x2, x3] 128-bit lane q
    constexpr int kQ = decltype(q)::value;
    const __m512i x01 = _mm512_shuffle_i64x2(x[0], x[1], _MM_SHUFFLE(kQ, kQ, kQ, kQ));
    const __m512i x23 = _mm512_shuffle_i64x2(x[2], x[3], _MM_SHUFFLE(kQ, kQ, kQ, kQ));
    return _mm512_shuffle_i64x2(x01, x23, _MM_SHUFFLE(2, 0, 2, 0));
  };
  out[0] = quarter(std::integral_constant<int, 0>{});
  out[1] = quarter(std::integral_constant<int, 1>{});
  out[2] = quarter(std::integral_constant<int, 2>{});
  if constexpr (kQuarters == 4) out[3] = quarter(std::integral_constant<int, 3>{});
}

// Two super-blocks of a row without a minimum (Q6_K) in one vector for reduce_rows:
// quarters 0, 1 sum to T_lo, T_hi of `first`, quarters 2, 3 to those of `second`.
__attribute__((always_inline)) inline __m512i pack_pair(__m512i first, __m512i second) {
  return _mm512_add_epi32(_mm512_shuffle_i64x2(first, second, _MM_SHUFFLE(2, 0, 2, 0)),
                          _mm512_shuffle_i64x2(first, second, _MM_SHUFFLE(3, 1, 3, 1)));
}

// One row's super-block for reduce_rows: quarter 0 sums to T_lo (lanes 0..7 of `total`),
// quarter 1 to T_hi (lanes 8..15), quarter 2 to M (the 8 lanes of `min_total`).
__attribute__((always_inline)) inline __m512i pack_sums(__m512i total, __m256i min_total) {
  const __m512i mins = _mm512_castsi256_si512(min_total);
  return _mm512_add_epi32(_mm512_shuffle_i64x2(total, mins, _MM_SHUFFLE(0, 0, 2, 0)),
                          _mm512_shuffle_i64x2(total, mins, _MM_SHUFFLE(1, 1, 3, 1)));
}

// Bytes i and i + 1 of every int32 lane as an int16 pair (zero-extended).
__m512i byte_pair(__m512i v, int i) {
  const __m512i low = _mm512_and_si512(_mm512_srli_epi32(v, 8 * i), _mm512_set1_epi32(0xff));
  const __m512i high = _mm512_and_si512(_mm512_srli_epi32(v, 8 * i + 8), _mm512_set1_epi32(0xff));
  return _mm512_or_si512(low, _mm512_slli_epi32(high, 16));
}

// ---------------------------------------------------------------------------------------
// Panels. Many tokens, and every call on a repacked matrix, read 16 rows' super-blocks in
// quant/panel_layout.h's packed layout: vector i (64 bytes) lane r = dword i of row r's
// block, then (Q6_K) the 16 rows' d. Repacked matrices are read where they lie; rows in
// the file's layout are packed into a buffer first (pack_super_block), once per call.

// Super-block b of 16 rows (rows[r] = row r's block) into out (16 * sizeof(Block) bytes).
template <typename Block>
__attribute__((always_inline)) inline void pack_super_block(const uint8_t* const* rows, uint8_t* out) {
  constexpr size_t kWhole = sizeof(Block) / 4 * 4;  // the interleaved dwords' bytes
  static_assert(kWhole % 32 == 16, "whole 32-byte chunks and one 16-byte chunk");
  const uint8_t* src[kPanel];
  __m512i v[8];
  for (size_t offset = 0; offset < kWhole; offset += 32) {
    for (int r = 0; r < kPanel; ++r) src[r] = rows[r] + offset;
    const int n = offset + 32 <= kWhole ? 8 : 4;
    if (n == 8) {
      transpose_16x32(src, v);
    } else {
      transpose_16x16(src, v);
    }
    for (int i = 0; i < n; ++i) _mm512_storeu_si512(out + kPanel * offset + 64 * i, v[i]);
  }
  constexpr size_t kRest = sizeof(Block) - kWhole;  // Q6_K's d
  for (int r = 0; r < kPanel; ++r) std::memcpy(out + kPanel * kWhole + kRest * r, rows[r] + kWhole, kRest);
}

// ---------------------------------------------------------------------------------------
// Formats. Each one has
//   kSubBlocks, kDwords (4-code dwords per sub-block), kPairs, kHasMin
//   Header, header(p): the parts of a packed super-block p used once per token (see
//     Header below)
//   code(p, i): packed super-block p's code vector i, lane r = codes 4i .. 4i + 3 of row r
//     (element order, unsigned bytes)
//   head(block): a 32-bit word whose f16 halves are d (low) and dmin (high, Q4_K/Q5_K)
//   RowSums::of(x, y): one row's super-block against one token in place, 16 int32 lanes:
//     Q4_K / Q5_K [8 lanes summing to T | 8 lanes summing to M], Q6_K 16 summing to T.
//   token_pairs(y, pairs): the token's int16 pairs that the panel's `pairs` multiply.

// A packed super-block's parts besides the codes, lane r for row r: scales[j] = sub-block
// j's scale as int32, pairs[i] = the int16 pair that the token's pairs[i] multiply (the
// min terms or Q6_K's -32 offsets), d / dmin = the row's scales as floats.
template <int kSubBlocks, int kPairs>
struct Header {
  __m512 d, dmin;
  __m512i scales[kSubBlocks];
  __m512i pairs[kPairs];
};

// Q4_K / Q5_K sub-block scales and mins as bytes [sc0 .. sc7, mn0 .. mn7] (the layout of
// unpack_k4_scales), in vector registers: the 12 packed bytes are read as words
// w0 w1 w2 and
//   sc0..3 = w0 & 0x3f..   sc4..7 = (w2 & 0x0f..) | ((w0 >> 2) & 0x30..)
//   mn0..3 = w1 & 0x3f..   mn4..7 = ((w2 >> 4) & 0x0f..) | ((w1 >> 2) & 0x30..)
// REQUIRES: 16 readable bytes at `packed` (the block's quants follow its scales).
__m128i unpack_k4_scales_vector(const uint8_t* packed) {
  const __m128i words = load_128(packed);
  const __m128i low = _mm_srlv_epi32(_mm_shuffle_epi32(words, _MM_SHUFFLE(2, 1, 2, 0)), _mm_setr_epi32(0, 0, 0, 4));
  const __m128i high = _mm_srli_epi32(_mm_shuffle_epi32(words, _MM_SHUFFLE(1, 1, 0, 0)), 2);
  return _mm_or_si128(_mm_and_si128(low, _mm_setr_epi32(0x3f3f3f3f, 0x0f0f0f0f, 0x3f3f3f3f, 0x0f0f0f0f)),
                      _mm_and_si128(high, _mm_setr_epi32(0, 0x30303030, 0, 0x30303030)));
}

// The same for 16 rows at once: in = the transposed words w0, w1, w2 (lane r = row r's),
// out = scales[8] and the min pairs (mn_2i, mn_2i+1) of Q4_K / Q5_K's Header.
void unpack_k4_scales_panel(const __m512i* words, __m512i* scales, __m512i* min_pairs) {
  const __m512i six_bits = _mm512_set1_epi8(0x3f);
  const __m512i low_nibble = _mm512_set1_epi8(0x0f);
  const __m512i bits_4_5 = _mm512_set1_epi8(0x30);
  const __m512i sc_0_3 = _mm512_and_si512(words[0], six_bits);
  const __m512i mn_0_3 = _mm512_and_si512(words[1], six_bits);
  const __m512i sc_4_7 = _mm512_or_si512(_mm512_and_si512(words[2], low_nibble),
                                         _mm512_and_si512(_mm512_srli_epi32(words[0], 2), bits_4_5));
  const __m512i mn_4_7 = _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi32(words[2], 4), low_nibble),
                                         _mm512_and_si512(_mm512_srli_epi32(words[1], 2), bits_4_5));
  for (int j = 0; j < 4; ++j) {
    scales[j] = _mm512_and_si512(_mm512_srli_epi32(sc_0_3, 8 * j), _mm512_set1_epi32(0xff));
    scales[4 + j] = _mm512_and_si512(_mm512_srli_epi32(sc_4_7, 8 * j), _mm512_set1_epi32(0xff));
  }
  min_pairs[0] = byte_pair(mn_0_3, 0);
  min_pairs[1] = byte_pair(mn_0_3, 2);
  min_pairs[2] = byte_pair(mn_4_7, 0);
  min_pairs[3] = byte_pair(mn_4_7, 2);
}

// Q4_K / Q5_K tokens: pairs[i] = (s_2i, s_2i+1), s_j = the sum of sub-block j's 32 quants
// (|s_j| <= 32 * 128: an int16).
void k4_token_pairs(const BlockQ8_K& y, int32_t* pairs) {
  const __m256i sums = _mm256_madd_epi16(load_256(y.bsums), _mm256_set1_epi16(1));
  _mm_storeu_si128(reinterpret_cast<__m128i*>(pairs), _mm256_cvtepi32_epi16(sums));
}

// Q4_K / Q5_K: the packed head (dword 0: d, dmin) and scales (dwords 1..3).
__attribute__((always_inline)) inline Header<8, 4> k4_header(const uint8_t* p) {
  Header<8, 4> h;
  const __m512i head = load_512(p);
  h.d = _mm512_cvtph_ps(_mm512_cvtepi32_epi16(head));
  h.dmin = _mm512_cvtph_ps(_mm512_cvtepi32_epi16(_mm512_srli_epi32(head, 16)));
  const __m512i words[3] = {load_512(p + 64), load_512(p + 128), load_512(p + 192)};
  unpack_k4_scales_panel(words, h.scales, h.pairs);
  return h;
}

// Q4_K / Q5_K code vector i (sub-block j = i / 8, dword k = i % 8) from the nibbles at
// packed dword `qs` on: 32-byte chunk m = j / 2 holds sub-block 2m in its low nibbles and
// 2m + 1 in its high ones.
__attribute__((always_inline)) inline __m512i k4_nibbles(const uint8_t* p, int qs, int i) {
  const int j = i / 8, k = i % 8;
  const __m512i packed = load_512(p + 64 * (qs + 8 * (j / 2) + k));
  return _mm512_and_si512(j % 2 == 0 ? packed : _mm512_srli_epi32(packed, 4), _mm512_set1_epi8(0x0f));
}

// Q4_K. The single-row scheme runs against activation rows whose quants are regrouped
// (permute_for_q4_K) so that one vpdpbusd of four steps serves each sub-block: in step s
// (0..3) of a super-block, int32 lanes 2j and 2j + 1 hold quants 32j + 8s .. 32j + 8s + 7
// of sub-block j. Four vpdpbusd (u4 weights x s8 activations) then leave in lanes 2j,
// 2j+1 integer sums of sub-block j alone (|sum| <= 4 * 4 * 15 * 128 < 2^15), and one
// vpmaddwd against (scale_j, 0) int16 pairs applies the 6-bit scales. The weights are
// regrouped to match with one vpermt2q + shift + mask per step.
//
// Activation layout: step s occupies qs[64s .. 64s + 63]; its 8-byte group j is
// elements 32j + 8s .. 32j + 8s + 7. d and bsums are unchanged.
void permute_for_q4_K(const BlockQ8_K* src, BlockQ8_K* dst, int64_t n_blocks) {
  for (int64_t b = 0; b < n_blocks; ++b) {
    dst[b].d = src[b].d;
    std::memcpy(dst[b].bsums, src[b].bsums, sizeof dst[b].bsums);
    for (int step = 0; step < 4; ++step) {
      for (int j = 0; j < 8; ++j) std::memcpy(dst[b].qs + 64 * step + 8 * j, src[b].qs + 32 * j + 8 * step, 8);
    }
  }
}

struct Q4K {
  using Block = BlockQ4_K;
  static constexpr int kSubBlocks = 8;
  static constexpr int kDwords = 8;
  static constexpr int kPairs = 4;
  static constexpr bool kHasMin = true;
  static constexpr bool kRegroupsTokens = true;  // the single-row path reads permute_for_q4_K's layout
  // The sub-blocks whose sums the single-row scheme leaves in lanes 0..7 (T_lo), then
  // those in lanes 8..15 (T_hi): int32 lanes 2j, 2j + 1 hold sub-block j.
  static constexpr int kSubBlockOrder[kSubBlocks] = {0, 1, 2, 3, 4, 5, 6, 7};
  static constexpr int64_t kMinPanelTokens = 4;

  static uint32_t head(const Block& x) { return load_u32(reinterpret_cast<const uint8_t*>(&x.d)); }
  static void token_pairs(const BlockQ8_K& y, int32_t* pairs) { k4_token_pairs(y, pairs); }
  __attribute__((always_inline)) static Header<kSubBlocks, kPairs> header(const uint8_t* p) { return k4_header(p); }
  __attribute__((always_inline)) static __m512i code(const uint8_t* p, int i) {
    return k4_nibbles(p, offsetof(Block, qs) / 4, i);
  }

  struct RowSums {
    __m512i low_nibble = _mm512_set1_epi8(0x0f);
    // bsums group j (16 quants) pairs with min j / 2 (scale byte 8 + j / 2), as int16.
    __m512i min_index = _mm512_castsi256_si512(_mm256_setr_epi16(
        0xff08, 0xff08, 0xff09, 0xff09, 0xff0a, 0xff0a, 0xff0b, 0xff0b,
        0xff0c, 0xff0c, 0xff0d, 0xff0d, 0xff0e, 0xff0e, 0xff0f, 0xff0f));
    // int32 lane L = scale byte L / 2, zero-extended (lanes 4q .. 4q + 3 sit in 128-bit lane q).
    __m512i scale_index = _mm512_set_epi32(
        static_cast<int>(0x80808007), static_cast<int>(0x80808007), static_cast<int>(0x80808006),
        static_cast<int>(0x80808006), static_cast<int>(0x80808005), static_cast<int>(0x80808005),
        static_cast<int>(0x80808004), static_cast<int>(0x80808004), static_cast<int>(0x80808003),
        static_cast<int>(0x80808003), static_cast<int>(0x80808002), static_cast<int>(0x80808002),
        static_cast<int>(0x80808001), static_cast<int>(0x80808001), static_cast<int>(0x80808000),
        static_cast<int>(0x80808000));
    // Step s: 128-bit lane m = 8-byte group s of the 32-byte chunk m, twice; the first copy
    // gives its low nibbles (sub-block 2m), the second its high nibbles (sub-block 2m + 1).
    __m512i step_index[4];
    __m512i nibble_shift = _mm512_set_epi64(4, 0, 4, 0, 4, 0, 4, 0);
    RowSums() {
      for (int step = 0; step < 4; ++step) {
        step_index[step] = _mm512_add_epi64(_mm512_set1_epi64(step), _mm512_set_epi64(12, 12, 8, 8, 4, 4, 0, 0));
      }
    }

    // The row's part, shared by every token.
    struct Unpacked {
      __m512i q[4];     // step s's codes in the regrouped order
      __m512i scales;   // (sc_L/2, 0) int16 pairs
      __m256i mins;     // mn_j/2 for bsums group j
    };
    __attribute__((always_inline)) Unpacked unpack(const Block& x) const {
      Unpacked u;
      // Bytes [sc0 .. sc7, mn0 .. mn7] in every 128-bit lane.
      const __m512i scale_bytes = _mm512_broadcast_i32x4(unpack_k4_scales_vector(x.scales));
      u.mins = _mm512_castsi512_si256(_mm512_shuffle_epi8(scale_bytes, min_index));
      u.scales = _mm512_shuffle_epi8(scale_bytes, scale_index);
      const __m512i packed_0 = load_512(x.qs);
      const __m512i packed_1 = load_512(x.qs + 64);
      for (int step = 0; step < 4; ++step) {
        const __m512i groups = _mm512_permutex2var_epi64(packed_0, step_index[step], packed_1);
        u.q[step] = _mm512_and_si512(_mm512_srlv_epi64(groups, nibble_shift), low_nibble);
      }
      return u;
    }
    __attribute__((always_inline)) __m512i of(const Unpacked& u, const BlockQ8_K& y) const {
      __m512i sums = _mm512_setzero_si512();
      for (int step = 0; step < 4; ++step) sums = _mm512_dpbusd_epi32(sums, u.q[step], load_512(y.qs + 64 * step));
      return pack_sums(_mm512_madd_epi16(sums, u.scales), _mm256_madd_epi16(load_256(y.bsums), u.mins));
    }
  };
};

// A vector of 32 int16 whose lanes 0..15 are index `lo` and lanes 16..31 index `hi` of
// the 16 int16 held in a 256-bit register (for permutexvar).
__m512i split_index(int lo, int hi) {
  return combine_256(_mm256_set1_epi16(static_cast<int16_t>(lo)), _mm256_set1_epi16(static_cast<int16_t>(hi)));
}

// Q5_K: Q4_K's nibbles plus 16 where bit j of qh[l] is set (element 32j + l).
struct Q5K {
  using Block = BlockQ5_K;
  static constexpr int kSubBlocks = 8;
  static constexpr int kDwords = 8;
  static constexpr int kPairs = 4;
  static constexpr bool kHasMin = true;
  static constexpr bool kRegroupsTokens = false;
  static constexpr int64_t kMinPanelTokens = 4;
  // T_lo, then T_hi (see Q4K): bytes 0..31 of step p are sub-blocks 4p, 4p + 1.
  static constexpr int kSubBlockOrder[kSubBlocks] = {0, 1, 4, 5, 2, 3, 6, 7};

  static uint32_t head(const Block& x) { return load_u32(reinterpret_cast<const uint8_t*>(&x.d)); }
  static void token_pairs(const BlockQ8_K& y, int32_t* pairs) { k4_token_pairs(y, pairs); }
  __attribute__((always_inline)) static Header<kSubBlocks, kPairs> header(const uint8_t* p) { return k4_header(p); }
  // Q4_K's nibbles plus 16 where bit j of the qh byte is set: qh dword k holds the fifth
  // bits of dword k of every sub-block.
  __attribute__((always_inline)) static __m512i code(const uint8_t* p, int i) {
    const int j = i / 8, k = i % 8;
    const __m512i qh = load_512(p + 64 * (offsetof(Block, qh) / 4 + k));
    const __m512i bit = j < 4 ? _mm512_slli_epi32(qh, 4 - j) : _mm512_srli_epi32(qh, j - 4);  // bit j -> bit 4
    return _mm512_or_si512(k4_nibbles(p, offsetof(Block, qs) / 4, i), _mm512_and_si512(bit, _mm512_set1_epi8(0x10)));
  }

  struct RowSums {
    __m512i low_nibble = _mm512_set1_epi8(0x0f);
    __m512i sixteen = _mm512_set1_epi8(16);
    __m256i min_index = _mm256_setr_epi16(8, 8, 9, 9, 10, 10, 11, 11, 12, 12, 13, 13, 14, 14, 15, 15);

    // 64 quants per step (p), maddubs pair sums scaled by vpdpwssd. The row's part:
    struct Unpacked {
      __m512i low[2], high[2];                // codes of step p: low / high nibbles with their fifth bits
      __m512i low_scales[2], high_scales[2];  // the int16 scale of each pair sum
      __m256i mins;                           // mn_j/2 for bsums group j
    };
    __attribute__((always_inline)) Unpacked unpack(const Block& x) const {
      Unpacked u;
      const __m256i scales_16 = _mm256_cvtepu8_epi16(unpack_k4_scales(x.scales));
      const __m512i scales_512 = _mm512_castsi256_si512(scales_16);  // upper half unused by the indices
      u.mins = _mm256_permutexvar_epi16(min_index, scales_16);
      // Sub-block s takes its fifth bits from bit s of the qh bytes. Bytes 0..31 of a step
      // are sub-blocks 4p (low nibbles) / 4p + 1 (high), bytes 32..63 are 4p + 2 / 4p + 3:
      // with qh >> 2 in the upper half, both halves test bits 4p and 4p + 1.
      const __m256i qh_256 = load_256(x.qh);
      const __m512i qh = combine_256(qh_256, _mm256_srli_epi16(qh_256, 2));
      for (int p = 0; p < 2; ++p) {
        const __m512i packed = load_512(x.qs + 64 * p);
        const __m512i low_nibbles = _mm512_and_si512(packed, low_nibble);
        const __m512i high_nibbles = _mm512_and_si512(_mm512_srli_epi16(packed, 4), low_nibble);
        const __mmask64 low_bit4 = _mm512_test_epi8_mask(qh, _mm512_set1_epi8(static_cast<char>(1 << (4 * p))));
        const __mmask64 high_bit4 = _mm512_test_epi8_mask(qh, _mm512_set1_epi8(static_cast<char>(2 << (4 * p))));
        u.low[p] = _mm512_mask_add_epi8(low_nibbles, low_bit4, low_nibbles, sixteen);
        u.high[p] = _mm512_mask_add_epi8(high_nibbles, high_bit4, high_nibbles, sixteen);
        u.low_scales[p] = _mm512_permutexvar_epi16(split_index(4 * p, 4 * p + 2), scales_512);
        u.high_scales[p] = _mm512_permutexvar_epi16(split_index(4 * p + 1, 4 * p + 3), scales_512);
      }
      return u;
    }
    __attribute__((always_inline)) __m512i of(const Unpacked& u, const BlockQ8_K& y) const {
      __m512i isum = _mm512_setzero_si512();
      for (int p = 0; p < 2; ++p) {
        const __m512i y_0 = load_512(y.qs + 128 * p);
        const __m512i y_1 = load_512(y.qs + 128 * p + 64);
        const __m512i y_low = _mm512_shuffle_i64x2(y_0, y_1, _MM_SHUFFLE(1, 0, 1, 0));
        const __m512i y_high = _mm512_shuffle_i64x2(y_0, y_1, _MM_SHUFFLE(3, 2, 3, 2));
        isum = _mm512_dpwssd_epi32(isum, _mm512_maddubs_epi16(u.low[p], y_low), u.low_scales[p]);
        isum = _mm512_dpwssd_epi32(isum, _mm512_maddubs_epi16(u.high[p], y_high), u.high_scales[p]);
      }
      return pack_sums(isum, _mm256_madd_epi16(load_256(y.bsums), u.mins));
    }
  };
};

// Q6_K: codes q in [0, 63], level q - 32; sixteen int8 scales of 16 quants each.
struct Q6K {
  using Block = BlockQ6_K;
  static constexpr int kSubBlocks = 16;
  static constexpr int kDwords = 4;
  static constexpr int kPairs = 8;
  static constexpr bool kHasMin = false;
  static constexpr bool kRegroupsTokens = false;
  static constexpr int64_t kMinPanelTokens = 5;
  // T_lo (with every sub-block's -32 term), then T_hi (see Q4K): bytes 0..31 of the
  // 64-quant steps are sub-blocks j with bit 1 of j clear.
  static constexpr int kSubBlockOrder[kSubBlocks] = {0, 1, 4, 5, 8, 9, 12, 13, 2, 3, 6, 7, 10, 11, 14, 15};

  // d is the block's last two bytes: read with the two before it, shifted down.
  static uint32_t head(const Block& x) {
    return load_u32(reinterpret_cast<const uint8_t*>(&x.d) - 2) >> 16;
  }
  // The token's group sums as they are, pairs (bsums_2i, bsums_2i+1).
  static void token_pairs(const BlockQ8_K& y, int32_t* pairs) { std::memcpy(pairs, y.bsums, sizeof y.bsums); }

  // Element 128h + 32g + 4k .. + 3 (h, g, k < 2, 4, 8) is code 32h + 8g + k: its low
  // four bits are nibble g / 2 of ql[64h + 32 (g % 2) + 4k ..], its high two bits
  // 2g, 2g + 1 of qh[32h + 4k ..] (blocks.h).
  __attribute__((always_inline)) static __m512i code(const uint8_t* p, int i) {
    const int h = i / 32, g = i % 32 / 8, k = i % 8;
    const __m512i ql = load_512(p + 64 * ((offsetof(Block, ql) + 64 * h + 32 * (g % 2)) / 4 + k));
    const __m512i qh = load_512(p + 64 * ((offsetof(Block, qh) + 32 * h) / 4 + k));
    const __m512i low = _mm512_and_si512(g < 2 ? ql : _mm512_srli_epi32(ql, 4), _mm512_set1_epi8(0x0f));
    const __m512i high = g < 2 ? _mm512_slli_epi32(qh, 4 - 2 * g) : _mm512_srli_epi32(qh, 2 * g - 4);  // bits 2g, 2g+1 -> 4, 5
    return _mm512_or_si512(low, _mm512_and_si512(high, _mm512_set1_epi8(0x30)));
  }
  __attribute__((always_inline)) static Header<kSubBlocks, kPairs> header(const uint8_t* p) {
    Header<kSubBlocks, kPairs> h;
    for (int q = 0; q < 4; ++q) {  // lane r of dword q = scales 4q .. 4q + 3 of row r
      const __m512i packed = load_512(p + 64 * (offsetof(Block, scales) / 4 + q));
      for (int i = 0; i < 4; ++i) h.scales[4 * q + i] = _mm512_srai_epi32(_mm512_slli_epi32(packed, 24 - 8 * i), 24);
    }
    // The -32 of every level: pairs (-32 sc_2i, -32 sc_2i+1) against the token's bsums.
    for (int i = 0; i < 8; ++i) {
      const __m512i low = _mm512_sub_epi32(_mm512_setzero_si512(), _mm512_slli_epi32(h.scales[2 * i], 5));
      const __m512i high = _mm512_sub_epi32(_mm512_setzero_si512(), _mm512_slli_epi32(h.scales[2 * i + 1], 5));
      h.pairs[i] = _mm512_or_si512(_mm512_and_si512(low, _mm512_set1_epi32(0xffff)), _mm512_slli_epi32(high, 16));
    }
    static_assert(offsetof(Block, d) == sizeof(Block) / 4 * 4, "d is the part after the whole dwords");
    h.d = _mm512_cvtph_ps(load_256(p + kPanel * offsetof(Block, d)));
    h.dmin = _mm512_setzero_ps();
    return h;
  }

  struct RowSums {
    __m512i low_nibble = _mm512_set1_epi8(0x0f);
    __m512i bits_4_5 = _mm512_set1_epi8(0x30);
    // int16 pair-sum lane l of a 64-quant step covers group (16 quants) l / 8 of that step.
    __m512i group_index[4];
    RowSums() {
      for (int s = 0; s < 4; ++s) {
        group_index[s] = _mm512_add_epi16(
            _mm512_set1_epi16(static_cast<int16_t>(4 * s)),
            _mm512_srli_epi16(_mm512_set_epi16(31, 30, 29, 28, 27, 26, 25, 24, 23, 22, 21, 20, 19, 18, 17, 16, 15,
                                               14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0),
                              3));
      }
    }

    // The row's part, shared by every token.
    struct Unpacked {
      __m512i first[2], second[2];                // codes of the two 64-quant steps of half h
      __m512i scales_first[2], scales_second[2];  // the int16 scale of each pair sum
      __m256i scales_16;                          // sc_0 .. sc_15
    };
    __attribute__((always_inline)) Unpacked unpack(const Block& x) const {
      Unpacked u;
      u.scales_16 = _mm256_cvtepi8_epi16(load_128(x.scales));
      const __m512i scales_512 = _mm512_castsi256_si512(u.scales_16);  // upper half unused by the indices
      for (int half = 0; half < 2; ++half) {
        // Bytes 0..31 of ql hold elements 0..31 (low nibble) and 64..95 (high), bytes
        // 32..63 elements 32..63 and 96..127; qh bits 2k, 2k+1 go with element 32k + l.
        // With qh in bytes 0..31 and qh >> 2 in bytes 32..63, the low-nibble step needs
        // bits 0-1 of each and the high-nibble step bits 4-5.
        const __m512i ql = load_512(x.ql + 64 * half);
        const __m256i qh_256 = load_256(x.qh + 32 * half);
        const __m512i qh = combine_256(qh_256, _mm256_srli_epi16(qh_256, 2));
        u.first[half] = _mm512_or_si512(_mm512_and_si512(ql, low_nibble),
                                        _mm512_and_si512(_mm512_slli_epi16(qh, 4), bits_4_5));
        u.second[half] = _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi16(ql, 4), low_nibble),
                                         _mm512_and_si512(qh, bits_4_5));
        u.scales_first[half] = _mm512_permutexvar_epi16(group_index[2 * half], scales_512);
        u.scales_second[half] = _mm512_permutexvar_epi16(group_index[2 * half + 1], scales_512);
      }
      return u;
    }
    __attribute__((always_inline)) __m512i of(const Unpacked& u, const BlockQ8_K& y) const {
      __m512i isum = _mm512_setzero_si512();
      for (int half = 0; half < 2; ++half) {
        const __m512i pairs_first = _mm512_maddubs_epi16(u.first[half], load_512(y.qs + 128 * half));
        const __m512i pairs_second = _mm512_maddubs_epi16(u.second[half], load_512(y.qs + 128 * half + 64));
        isum = _mm512_dpwssd_epi32(isum, pairs_first, u.scales_first[half]);
        isum = _mm512_dpwssd_epi32(isum, pairs_second, u.scales_second[half]);
      }
      // The -32 of every level: 32 * sum_j scale_j * bsums[j].
      const __m256i offset_products = _mm256_madd_epi16(load_256(y.bsums), u.scales_16);
      // No minimum: T's 16 lanes as they are (lanes 0..7 T_lo, 8..15 T_hi), for pack_pair.
      return _mm512_sub_epi32(isum, _mm512_zextsi256_si512(_mm256_slli_epi32(offset_products, 5)));
    }
  };
};

// ---------------------------------------------------------------------------------------
// The float steps (see the top of the file), shared by both paths: per (row, token) one
// float sum, and per super-block first its minimum term, then T's two halves.

struct Accumulator {
  __m512 sum = _mm512_setzero_ps();

  __attribute__((always_inline)) void add_min(__m512i m, __m512 dmin, float token_d) {
    sum = _mm512_fnmadd_ps(_mm512_cvtepi32_ps(m), _mm512_mul_ps(dmin, _mm512_set1_ps(token_d)), sum);
  }
  __attribute__((always_inline)) void add_total(__m512i t_lo, __m512i t_hi, __m512 d, float token_d) {
    add_half(t_lo, d, token_d);
    add_half(t_hi, d, token_d);
  }
  // One of add_total's two steps, T_lo's first: the panel path takes T_lo's as soon as
  // T_lo is complete (the same float operations in the same order).
  __attribute__((always_inline)) void add_half(__m512i t, __m512 d, float token_d) {
    sum = _mm512_fmadd_ps(_mm512_cvtepi32_ps(t), _mm512_mul_ps(d, _mm512_set1_ps(token_d)), sum);
  }
};

// ---------------------------------------------------------------------------------------
// A few tokens: rows [0, n_rows) of a 16-row group (n_rows <= 16), each read once in
// order and unpacked once for the kTokens tokens. `sums` and `heads` are scratch of
// kTokens * n_blocks * 16 and n_blocks * 16 entries; y[t] is token t's row as Format's
// RowSums reads it.

template <typename Format, int kTokens>
void dot_group_rows(int64_t n_blocks, const uint8_t* w, size_t w_stride, int64_t n_rows, const BlockQ8_K* const* y,
                    __m512i* sums, uint32_t* heads, float* out, int64_t out_stride) {
  // Its constants local (not behind a reference the stores below might alias: reloads).
  const typename Format::RowSums row_sums;
  using Block = typename Format::Block;
  const int64_t token_sums = n_blocks * kPanel;  // entries per token in `sums`
  // Local copies: the stores below could otherwise alias them, forcing reloads.
  const BlockQ8_K* tokens[kTokens];
  __m512i* token_out[kTokens];
  for (int t = 0; t < kTokens; ++t) {
    tokens[t] = y[t];
    token_out[t] = sums + t * token_sums;
  }
  // Q6_K (no minimum): two super-blocks per stored vector (pack_pair), entry b / 2.
  constexpr int64_t kPerEntry = Format::kHasMin ? 1 : 2;
  const int64_t n_entries = (n_blocks + kPerEntry - 1) / kPerEntry;
  for (int64_t r = 0; r < n_rows; ++r) {
    const auto* x = reinterpret_cast<const Block*>(w + r * w_stride);
    for (int64_t b = 0; b < n_blocks; b += kPerEntry) {
      prefetch_ahead(x + b);
      const typename Format::RowSums::Unpacked unpacked = row_sums.unpack(x[b]);
      heads[b * kPanel + r] = Format::head(x[b]);
      if constexpr (kPerEntry == 1) {
        for (int t = 0; t < kTokens; ++t) {
          _mm512_store_si512(token_out[t] + b * kPanel + r, row_sums.of(unpacked, tokens[t][b]));
        }
      } else {
        const bool two = b + 1 < n_blocks;
        if (two) {
          prefetch_ahead(x + b + 1);
          heads[(b + 1) * kPanel + r] = Format::head(x[b + 1]);
        }
        const typename Format::RowSums::Unpacked next = row_sums.unpack(x[two ? b + 1 : b]);
        for (int t = 0; t < kTokens; ++t) {
          const __m512i second = two ? row_sums.of(next, tokens[t][b + 1]) : _mm512_setzero_si512();
          _mm512_store_si512(token_out[t] + (b / 2) * kPanel + r, pack_pair(row_sums.of(unpacked, tokens[t][b]), second));
        }
      }
    }
  }
  for (int64_t r = n_rows; r < kPanel; ++r) {  // lanes computed and never stored
    for (int64_t e = 0; e < n_entries; ++e) {
      for (int t = 0; t < kTokens; ++t) _mm512_store_si512(sums + t * token_sums + e * kPanel + r, _mm512_setzero_si512());
    }
    for (int64_t b = 0; b < n_blocks; ++b) heads[b * kPanel + r] = 0;
  }
  for (int t = 0; t < kTokens; ++t) {
    Accumulator acc;
    auto head_of = [&](int64_t b) { return _mm512_loadu_si512(heads + b * kPanel); };
    if constexpr (Format::kHasMin) {
      for (int64_t b = 0; b < n_blocks; ++b) {
        const __m512i head = head_of(b);
        __m512i quarters[3];  // T_lo, T_hi, M
        reduce_rows<3>(sums + t * token_sums + b * kPanel, quarters);
        acc.add_min(quarters[2], _mm512_cvtph_ps(_mm512_cvtepi32_epi16(_mm512_srli_epi32(head, 16))), y[t][b].d);
        acc.add_total(quarters[0], quarters[1], _mm512_cvtph_ps(_mm512_cvtepi32_epi16(head)), y[t][b].d);
      }
    } else {
      for (int64_t b = 0; b < n_blocks; b += 2) {
        __m512i quarters[4];  // T_lo, T_hi of b, then of b + 1
        reduce_rows<4>(sums + t * token_sums + (b / 2) * kPanel, quarters);
        acc.add_total(quarters[0], quarters[1], _mm512_cvtph_ps(_mm512_cvtepi32_epi16(head_of(b))), y[t][b].d);
        if (b + 1 < n_blocks) {
          acc.add_total(quarters[2], quarters[3], _mm512_cvtph_ps(_mm512_cvtepi32_epi16(head_of(b + 1))), y[t][b + 1].d);
        }
      }
    }
    _mm512_mask_storeu_ps(out + t * out_stride, static_cast<__mmask16>((1u << n_rows) - 1), acc.sum);
  }
}

// ---------------------------------------------------------------------------------------
// Many tokens.

// The next panel's rows (contiguous) are prefetched in order (PrefetchCursor) while this
// one is computed, an equal share with every super-block transposed and every
// super-block of every tile: 16 rows side by side are 16 streams, which the hardware
// prefetcher does not follow well, and prefetches issued in one phase only leave the
// memory idle in the other.

// A packed panel (n_blocks super-blocks) against kTokens tokens: out[t * out_stride + r]
// for its first n_rows rows (out may be null), and with row_max each token's 16 results
// folded into row_max[t] as columns first_column ... (whole panels only).
template <typename Format, int kTokens>
void dot_panel(int64_t n_blocks, const uint8_t* panel, StagedTokens tokens, int64_t n_rows, float* out,
               int64_t out_stride, PrefetchCursor& prefetch, RunningMax* row_max = nullptr, int64_t first_column = 0) {
  constexpr size_t kBlockBytes = kPanel * sizeof(typename Format::Block);
  Accumulator acc[kTokens];
  for (int64_t b = 0; b < n_blocks; ++b) {
    prefetch.step();
    const uint8_t* block = panel + static_cast<size_t>(b) * kBlockBytes;
    const auto p = Format::header(block);
    const int8_t* q = tokens.block_quants(b);
    const TokenBlock* meta = tokens.block_meta(b);
    __m512i total[kTokens];
    for (int t = 0; t < kTokens; ++t) total[t] = _mm512_setzero_si512();
    for (int i = 0; i < Format::kPairs; ++i) {
      for (int t = 0; t < kTokens; ++t) total[t] = _mm512_dpwssd_epi32(total[t], p.pairs[i], _mm512_set1_epi32(meta[t].pairs[i]));
    }
    if constexpr (Format::kHasMin) {  // that was M; T_lo starts from zero (Q6_K: from its -32 terms)
      for (int t = 0; t < kTokens; ++t) {
        acc[t].add_min(total[t], p.dmin, meta[t].d);
        total[t] = _mm512_setzero_si512();
      }
    }
    // T_lo's sub-blocks, then T_hi's; kTokens independent vpdpbusd chains in flight.
    // (Unrolled: the vpdpbusd chains must stay in registers. T_lo goes into the sums as
    // soon as it is complete: kept to the end, 8 tokens' totals, sub-block sums, T_lo's
    // and sums needed all 32 registers, and the sums were spilled to the stack.)
#pragma GCC unroll 2
    for (int half = 0; half < 2; ++half) {
#pragma GCC unroll 8
      for (int s = 0; s < Format::kSubBlocks / 2; ++s) {
        const int j = Format::kSubBlockOrder[half * Format::kSubBlocks / 2 + s];
        __m512i isum[kTokens];
        for (int t = 0; t < kTokens; ++t) isum[t] = _mm512_setzero_si512();
#pragma GCC unroll 8
        for (int k = 0; k < Format::kDwords; ++k) {
          const int dword = j * Format::kDwords + k;
          const __m512i codes = Format::code(block, dword);
          for (int t = 0; t < kTokens; ++t) {
            isum[t] = _mm512_dpbusd_epi32(
                isum[t], codes,
                _mm512_set1_epi32(static_cast<int>(load_u32(reinterpret_cast<const uint8_t*>(q + t * kSuperBlockSize + 4 * dword)))));
          }
        }
        for (int t = 0; t < kTokens; ++t) total[t] = _mm512_add_epi32(total[t], _mm512_mullo_epi32(isum[t], p.scales[j]));
      }
      for (int t = 0; t < kTokens; ++t) {
        acc[t].add_half(total[t], p.d, meta[t].d);
        total[t] = _mm512_setzero_si512();
      }
    }
  }
  const __mmask16 keep = static_cast<__mmask16>((1u << n_rows) - 1);
  for (int t = 0; t < kTokens; ++t) {
    if (out != nullptr) _mm512_mask_storeu_ps(out + t * out_stride, keep, acc[t].sum);
    if (row_max != nullptr) fold_running_max(acc[t].sum, first_column, row_max[t]);
  }
}

// Every shape goes through here.
template <typename Format>
void dot_matrix(int64_t n, const void* w, size_t w_stride, int64_t n_w_rows, const void* a, size_t a_stride,
                int64_t n_a_rows, float* out, int64_t out_stride) {
  constexpr size_t kBlockBytes = kPanel * sizeof(typename Format::Block);
  const auto* weights = static_cast<const uint8_t*>(w);
  const auto* activations = static_cast<const uint8_t*>(a);
  const int64_t n_blocks = n / kSuperBlockSize;
  if (n_a_rows < Format::kMinPanelTokens) {
    // Scratch: per 16 rows, partial sums [n_a_rows][n_blocks][16] and heads [n_blocks][16];
    // Q4_K's regrouped tokens [n_a_rows][n_blocks]. On the stack when it fits (decode of
    // rows up to 8192 wide): an allocation per call costs decode about a percent, and
    // one over malloc's mmap threshold (128 KB) a page fault per page every call.
    const size_t sums_bytes = sizeof(__m512i) * kPanel * static_cast<size_t>(n_blocks * n_a_rows);
    const size_t heads_bytes = (sizeof(uint32_t) * kPanel * static_cast<size_t>(n_blocks) + 63) / 64 * 64;
    const size_t regrouped_bytes = Format::kRegroupsTokens ? sizeof(BlockQ8_K) * static_cast<size_t>(n_blocks * n_a_rows) : 0;
    const size_t scratch_bytes = sums_bytes + heads_bytes + regrouped_bytes;
    constexpr size_t kStackScratch = 64 * 1024;
    alignas(64) uint8_t stack_scratch[kStackScratch];
    uint8_t* allocated = scratch_bytes > kStackScratch ? static_cast<uint8_t*>(std::aligned_alloc(64, (scratch_bytes + 63) / 64 * 64)) : nullptr;
    uint8_t* scratch = allocated != nullptr ? allocated : stack_scratch;
    auto* sums = reinterpret_cast<__m512i*>(scratch);
    auto* heads = reinterpret_cast<uint32_t*>(scratch + sums_bytes);
    auto* regrouped = reinterpret_cast<BlockQ8_K*>(scratch + sums_bytes + heads_bytes);  // Q4_K only
    const BlockQ8_K* y[Format::kMinPanelTokens];
    for (int64_t t = 0; t < n_a_rows; ++t) {
      const auto* row = reinterpret_cast<const BlockQ8_K*>(activations + t * a_stride);
      y[t] = row;
      if constexpr (Format::kRegroupsTokens) {
        permute_for_q4_K(row, regrouped + t * n_blocks, n_blocks);
        y[t] = regrouped + t * n_blocks;
      }
    }
    for (int64_t r0 = 0; r0 < n_w_rows; r0 += kPanel) {
      const int64_t n_rows = n_w_rows - r0 < kPanel ? n_w_rows - r0 : kPanel;
      for (int64_t t = 0; t < n_a_rows; t += kRowTokens) {
        auto group = [&](auto tokens) {
          dot_group_rows<Format, decltype(tokens)::value>(n_blocks, weights + r0 * w_stride, w_stride, n_rows, y + t,
                                                          sums, heads, out + t * out_stride + r0, out_stride);
        };
        switch (n_a_rows - t < kRowTokens ? n_a_rows - t : kRowTokens) {
          case 1: group(std::integral_constant<int, 1>{}); break;
          case 2: group(std::integral_constant<int, 2>{}); break;
          case 3: group(std::integral_constant<int, 3>{}); break;
          default: group(std::integral_constant<int, kRowTokens>{}); break;
        }
      }
    }
    std::free(allocated);
    return;
  }
  auto* panel = static_cast<uint8_t*>(thread_scratch(ScratchSlot::kPanel, kBlockBytes * static_cast<size_t>(n_blocks)));
  for (int64_t t0 = 0; t0 < n_a_rows; t0 += kTokenBlock) {
    const int64_t n_tokens = n_a_rows - t0 < kTokenBlock ? n_a_rows - t0 : kTokenBlock;
    const StagedTokens tokens = stage_tokens<Format>(n_blocks, activations + t0 * a_stride, a_stride, n_tokens);
    const int64_t n_tiles = (n_tokens + kTokenTile - 1) / kTokenTile;
    for (int64_t r0 = 0; r0 < n_w_rows; r0 += kPanel) {
      const int64_t n_rows = n_w_rows - r0 < kPanel ? n_w_rows - r0 : kPanel;
      const int64_t after = n_w_rows - r0 - n_rows;
      const int64_t n_next = after < kPanel ? after : kPanel;
      PrefetchCursor prefetch(weights + (r0 + n_rows) * w_stride, 0, n_next * static_cast<int64_t>(w_stride),
                              n_blocks * (1 + n_tiles));
      // Rows past n_rows repeat the last one: their lanes are computed and never stored.
      const uint8_t* rows[kPanel];
      for (int r = 0; r < kPanel; ++r) rows[r] = weights + (r0 + (r < n_rows ? r : n_rows - 1)) * w_stride;
      for (int64_t b = 0; b < n_blocks; ++b) {
        prefetch.step();
        pack_super_block<typename Format::Block>(rows, panel + static_cast<size_t>(b) * kBlockBytes);
        for (int r = 0; r < kPanel; ++r) rows[r] += sizeof(typename Format::Block);
      }
      for_token_tiles<kTokenTile>(n_tokens, [&](auto tile, int64_t t) {
        dot_panel<Format, decltype(tile)::value>(n_blocks, panel, tokens.from(t), n_rows,
                                                 out + (t0 + t) * out_stride + r0, out_stride, prefetch);
      });
    }
  }
}

// Repacked panels (quant/panel_layout.h): dot_matrix's panel path without the packing,
// for every number of tokens (decode too: the matrix is then one sequential stream, with
// no horizontal sums). kPrefetch: software prefetch of the next panel while this one is
// computed; whether that beats the hardware prefetcher alone depends on the CPU (the
// load-time tuner times both; the same bits either way).
template <typename Format, bool kPrefetch>
void dot_packed_panels(int64_t n, const void* w, int64_t n_w_rows, const void* a, size_t a_stride, int64_t n_a_rows,
                       float* out, int64_t out_stride, RunningMax* row_max) {
  const auto* weights = static_cast<const uint8_t*>(w);
  const auto* activations = static_cast<const uint8_t*>(a);
  const int64_t n_blocks = n / kSuperBlockSize;
  const int64_t panel_bytes = kPanel * static_cast<int64_t>(sizeof(typename Format::Block)) * n_blocks;
  for (int64_t t0 = 0; t0 < n_a_rows; t0 += kTokenBlock) {
    const int64_t n_tokens = n_a_rows - t0 < kTokenBlock ? n_a_rows - t0 : kTokenBlock;
    const StagedTokens tokens = stage_tokens<Format>(n_blocks, activations + t0 * a_stride, a_stride, n_tokens);
    const int64_t n_tiles = (n_tokens + kTokenTile - 1) / kTokenTile;
    for (int64_t r0 = 0; r0 < n_w_rows; r0 += kPanel) {
      const uint8_t* panel = weights + r0 / kPanel * panel_bytes;
      PrefetchCursor prefetch(panel + panel_bytes, 0, kPrefetch && r0 + kPanel < n_w_rows ? panel_bytes : 0,
                              n_blocks * n_tiles);
      for_token_tiles<kTokenTile>(n_tokens, [&](auto tile, int64_t t) {
        dot_panel<Format, decltype(tile)::value>(n_blocks, panel, tokens.from(t), kPanel,
                                                 out != nullptr ? out + (t0 + t) * out_stride + r0 : nullptr,
                                                 out_stride, prefetch, row_max != nullptr ? row_max + t0 + t : nullptr,
                                                 r0);
      });
    }
  }
}

}  // namespace

void vec_dot_panels_q4_K_q8_K(int64_t n, const void* w, int64_t n_w_rows, const void* a, size_t a_stride,
                              int64_t n_a_rows, float* out, int64_t out_stride, RunningMax* row_max) {
  dot_packed_panels<Q4K, true>(n, w, n_w_rows, a, a_stride, n_a_rows, out, out_stride, row_max);
}
void vec_dot_panels_q4_K_q8_K_unprefetched(int64_t n, const void* w, int64_t n_w_rows, const void* a,
                                          size_t a_stride, int64_t n_a_rows, float* out, int64_t out_stride,
                                          RunningMax* row_max) {
  dot_packed_panels<Q4K, false>(n, w, n_w_rows, a, a_stride, n_a_rows, out, out_stride, row_max);
}
void vec_dot_panels_q5_K_q8_K(int64_t n, const void* w, int64_t n_w_rows, const void* a, size_t a_stride,
                              int64_t n_a_rows, float* out, int64_t out_stride, RunningMax* row_max) {
  dot_packed_panels<Q5K, true>(n, w, n_w_rows, a, a_stride, n_a_rows, out, out_stride, row_max);
}
void vec_dot_panels_q5_K_q8_K_unprefetched(int64_t n, const void* w, int64_t n_w_rows, const void* a,
                                          size_t a_stride, int64_t n_a_rows, float* out, int64_t out_stride,
                                          RunningMax* row_max) {
  dot_packed_panels<Q5K, false>(n, w, n_w_rows, a, a_stride, n_a_rows, out, out_stride, row_max);
}
void vec_dot_panels_q6_K_q8_K(int64_t n, const void* w, int64_t n_w_rows, const void* a, size_t a_stride,
                              int64_t n_a_rows, float* out, int64_t out_stride, RunningMax* row_max) {
  dot_packed_panels<Q6K, true>(n, w, n_w_rows, a, a_stride, n_a_rows, out, out_stride, row_max);
}

void vec_dot_matrix_q4_K_q8_K(int64_t n, const void* w, size_t w_stride, int64_t n_w_rows, const void* a,
                              size_t a_stride, int64_t n_a_rows, float* out, int64_t out_stride) {
  dot_matrix<Q4K>(n, w, w_stride, n_w_rows, a, a_stride, n_a_rows, out, out_stride);
}
void vec_dot_matrix_q5_K_q8_K(int64_t n, const void* w, size_t w_stride, int64_t n_w_rows, const void* a,
                              size_t a_stride, int64_t n_a_rows, float* out, int64_t out_stride) {
  dot_matrix<Q5K>(n, w, w_stride, n_w_rows, a, a_stride, n_a_rows, out, out_stride);
}
void vec_dot_matrix_q6_K_q8_K(int64_t n, const void* w, size_t w_stride, int64_t n_w_rows, const void* a,
                              size_t a_stride, int64_t n_a_rows, float* out, int64_t out_stride) {
  dot_matrix<Q6K>(n, w, w_stride, n_w_rows, a, a_stride, n_a_rows, out, out_stride);
}

}  // namespace tokenmill::quant::avx512
