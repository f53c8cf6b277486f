// AVX-512 (VNNI) dot products of Q4_K, Q5_K and Q6_K with Q8_K activation rows, sixteen
// weight rows at a time: int32 lane r of every vector below belongs to weight row r of a
// 16-row group. The integers and float steps that define every result are
// kquant_packed_x86-inl.h's (T_lo, T_hi, M per row, token and super-block); three paths
// compute them:
//
//   Repacked matrices (quant/panel_layout.h's packed panels), every token count: the
//   packed body of kquant_packed_x86-inl.h on 16-lane vectors, reading the panels in
//   place. Per token and sub-block a chain of vpdpbusd against the token's broadcast
//   quant dwords gives isum_j in every lane at once, one vpmulld + vpaddd applies sc_j;
//   the min (or -32) terms are vpdpwssd of int16 pairs. No horizontal sums.
//
//   Rows in the file's layout, many tokens (prefill, batched decode): each 16-row panel
//   is packed into a buffer once (16 x 16 dword transposes), then the same body.
//
//   Rows in the file's layout, up to a few tokens (decode): each row is read once, in
//   order, and multiplied in place with the single-row scheme (64 quants per step,
//   kquants_avx2.cc's layout), each super-block unpacked once for all the tokens; its 16
//   int32 partial sums per super-block and token are kept, and the 16 rows' partial sums
//   are then added down to vectors with lane r = row r (reduce_rows).
//
// All run the same float steps on the same integers, so every (row, token) result has
// the same bits whatever the layout or the number of rows or tokens in the call: a
// token's logits do not depend on its batch. (Any fixed order of the float steps gives
// batch invariance; the split of T keeps the Gemma 3 golden test against llama.cpp inside
// its budget: with T unsplit the worst gap change there was 1.51-1.69 against 1.5.)

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
#include "quant/kernels/amx_tiles.h"
#include "quant/kernels/kquant_panels.h"
#include "quant/panel_layout.h"
#include "quant/kernels/scratch.h"
#include "quant/kernels/simd_kernels.h"
#include "quant/kernels/panel_transpose_avx512.h"
#include "quant/kernels/x86_helpers.h"

namespace tokenmill::quant::avx512 {

namespace {

constexpr int kPanel = 16;       // weight rows per panel: one int32 lane each
constexpr int kTokenTile = 8;    // tokens whose accumulators stay in registers
constexpr int kTokenBlock = kKQuantTokenBlock;

// The 16-lane vectors of kquant_packed_x86-inl.h.
struct V {
  using I = __m512i;
  using F = __m512;
  static constexpr int kLanes = 16;
  static constexpr int kTokenTile = 8;
  static I load(const uint8_t* p) { return _mm512_loadu_si512(p); }
  static F load_f16(const uint8_t* p) { return _mm512_cvtph_ps(load_256(p)); }
  static I table16(const uint8_t* t) { return _mm512_maskz_broadcast_i32x4(0xffff, _mm_loadu_si128(reinterpret_cast<const __m128i*>(t))); }
  static I lookup16(I table, I index) { return _mm512_shuffle_epi8(table, index); }
  static I abs8(I a) { return _mm512_abs_epi8(a); }
  static I sign8(I a, I b) {  // AVX-512 has no vpsignb
    const I negated = _mm512_mask_sub_epi8(a, _mm512_movepi8_mask(b), _mm512_setzero_si512(), a);
    return _mm512_maskz_mov_epi8(_mm512_test_epi8_mask(b, b), negated);
  }
  static I broadcast4(const int8_t* p) {
    int32_t x;
    std::memcpy(&x, p, sizeof x);
    return _mm512_set1_epi32(x);
  }
  static F f16_low(I x) { return _mm512_cvtph_ps(_mm512_cvtepi32_epi16(x)); }
  static constexpr bool kInt16Sums = false;
  static I dot4(I part, I u, I s) { return _mm512_dpbusd_epi32(part, u, s); }
  static I scale_operand(I sc) { return sc; }
  static I scale_sum(I part, I scale) { return _mm512_mullo_epi32(part, scale); }
  static I dot2(I acc, I a, I b) { return _mm512_dpwssd_epi32(acc, a, b); }
  static I and_(I a, I b) { return _mm512_and_si512(a, b); }
  static I or_(I a, I b) { return _mm512_or_si512(a, b); }
  static I add(I a, I b) { return _mm512_add_epi32(a, b); }
  static I sub(I a, I b) { return _mm512_sub_epi32(a, b); }
  static I srli(I a, int n) { return _mm512_srli_epi32(a, n); }
  static I slli(I a, int n) { return _mm512_slli_epi32(a, n); }
  static I srai(I a, int n) { return _mm512_srai_epi32(a, n); }
  static I set1_8(int8_t v) { return _mm512_set1_epi8(v); }
  static I set1_32(int32_t v) { return _mm512_set1_epi32(v); }
  static I zero() { return _mm512_setzero_si512(); }
  static F cvt(I a) { return _mm512_cvtepi32_ps(a); }
  static F fma(F a, F b, F c) { return _mm512_fmadd_ps(a, b, c); }
  static F fnmadd(F a, F b, F c) { return _mm512_fnmadd_ps(a, b, c); }
  static F mul(F a, F b) { return _mm512_mul_ps(a, b); }
  static F set1_ps(float v) { return _mm512_set1_ps(v); }
  static F load_ps(const float* p) { return _mm512_loadu_ps(p); }
  static void store(float* out, F x, int n) { _mm512_mask_storeu_ps(out, static_cast<__mmask16>((1u << n) - 1), x); }
  static void fold_max(F x, int64_t first_column, RunningMax& m) { fold_running_max(x, first_column, m); }
};

#include "quant/kernels/kquant_packed_x86-inl.h"
// With fewer tokens than Format::kMinPanelTokens a call reads the rows in place, each
// super-block unpacked once for up to kRowTokens tokens; from there on transposing
// 16-row panels pays (Q6_K's costlier transposition moves its crossing one token up).
constexpr int kRowTokens = 4;

// The single-token path's software prefetch distance (x86_helpers.h's prefetch_ahead).
constexpr int64_t kPrefetchBytes = 8192;

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
// Formats: the packed ones of kquant_packed_x86-inl.h (constants, token_pairs, header,
// code) with the row kernels' parts:
//   head(block): a 32-bit word whose f16 halves are d (low) and dmin (high, Q4_K/Q5_K)
//   RowSums::of(x, y): one row's super-block against one token in place, 16 int32 lanes:
//     Q4_K / Q5_K [8 lanes summing to T | 8 lanes summing to M], Q6_K 16 summing to T.

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

// The single-row scheme leaves sub-block j's sums in int32 lanes 2j, 2j + 1: lanes 0..7
// are T_lo's sub-blocks and 8..15 T_hi's, kSubBlockOrder {0 .. 7}.
struct Q4K : PackedQ4K {
  static constexpr bool kRegroupsTokens = true;  // the single-row path reads permute_for_q4_K's layout
  static constexpr int64_t kMinPanelTokens = 4;

  static uint32_t head(const Block& x) { return load_u32(reinterpret_cast<const uint8_t*>(&x.d)); }

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

// Q5_K: Q4_K's nibbles plus 16 where bit j of qh[l] is set (element 32j + l). Bytes 0..31
// of the single-row scheme's step p are sub-blocks 4p, 4p + 1 (T_lo), bytes 32..63 4p + 2,
// 4p + 3 (T_hi): kSubBlockOrder {0, 1, 4, 5, 2, 3, 6, 7}.
struct Q5K : PackedQ5K {
  static constexpr bool kRegroupsTokens = false;
  static constexpr int64_t kMinPanelTokens = 4;

  static uint32_t head(const Block& x) { return load_u32(reinterpret_cast<const uint8_t*>(&x.d)); }

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
struct Q6K : PackedQ6K {
  static constexpr bool kRegroupsTokens = false;
  static constexpr int64_t kMinPanelTokens = 5;

  // d is the block's last two bytes: read with the two before it, shifted down.
  static uint32_t head(const Block& x) {
    return load_u32(reinterpret_cast<const uint8_t*>(&x.d) - 2) >> 16;
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
      prefetch_ahead<kPrefetchBytes>(x + b);
      const typename Format::RowSums::Unpacked unpacked = row_sums.unpack(x[b]);
      heads[b * kPanel + r] = Format::head(x[b]);
      if constexpr (kPerEntry == 1) {
        for (int t = 0; t < kTokens; ++t) {
          _mm512_store_si512(token_out[t] + b * kPanel + r, row_sums.of(unpacked, tokens[t][b]));
        }
      } else {
        const bool two = b + 1 < n_blocks;
        if (two) {
          prefetch_ahead<kPrefetchBytes>(x + b + 1);
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

// Rows in the file's layout: the next panel's rows (contiguous) are prefetched in order
// (PrefetchCursor) while this one is computed, an equal share with every super-block
// packed and every super-block of every tile: 16 rows side by side are 16 streams, which
// the hardware prefetcher does not follow well, and prefetches issued in one phase only
// leave the memory idle in the other.

// Every shape of rows in the file's layout goes through here.
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
        dot_packed_panel<Format, decltype(tile)::value>(n_blocks, panel, tokens.from(t), n_rows,
                                                        out + (t0 + t) * out_stride + r0, out_stride, prefetch,
                                                        nullptr, 0);
      });
    }
  }
}

// ---------------------------------------------------------------------------------------
// AMX (CpuFeatures::has_amx_kernels()): Q4_K's packed panels and Q6_K's rows. Whole tiles
// of amx::kTileTokens staged tokens take T's halves from the tiles (amx::start_block_sums),
// every other step as dot_packed_block takes it, in the same order, so the bits are the
// same; fewer tokens (decode, a block's last few) run dot_packed_panel as without AMX.
// Each panel's weights are unpacked once per block of staged tokens into the tiles'
// layout (amx_tiles.h), the sub-block scales multiplied in.

// What differs between the formats on tiles: unpack writes one packed super-block's tile
// codes, tile_quants gives the staged tokens' quants in the slices' order, and T's half
// is 2^kHighShift * high + low.
template <typename Format>
struct TileForm;

// Each byte of c times s's 16-bit lane (every product below 256).
__attribute__((always_inline)) inline V::I bytes_times(V::I c, V::I s16) {
  const V::I even = _mm512_mullo_epi16(V::and_(c, V::set1_32(0x00ff00ff)), s16);
  const V::I odd = _mm512_mullo_epi16(V::and_(c, V::set1_32(0xff00ff00)), s16);
  return V::or_(even, odd);
}

template <>
struct TileForm<PackedQ4K> {
  static constexpr int kHighShift = 3;
  static const int8_t* tile_quants(const StagedTokens& tokens, int64_t) { return tokens.quants; }
  static void unpack(const uint8_t* block, uint8_t* codes) {
    const auto p = PackedQ4K::header(block, 0);
#pragma GCC unroll 8
    for (int j = 0; j < PackedQ4K::kSubBlocks; ++j) {
      const V::I sc = PackedQ4K::scale(p, j);
      const V::I high = V::srli(sc, 3), low = V::and_(sc, V::set1_32(7));
      const V::I high16 = V::or_(high, V::slli(high, 16)), low16 = V::or_(low, V::slli(low, 16));
      uint8_t* slice = codes + j / 2 * 2 * amx::kSliceBytes + j % 2 * 8 * 64;
#pragma GCC unroll 8
      for (int k = 0; k < 8; ++k) {
        const V::I c = PackedQ4K::code(block, 0, 8 * j + k);
        _mm512_store_si512(slice + 64 * k, bytes_times(c, high16));
        _mm512_store_si512(slice + amx::kSliceBytes + 64 * k, bytes_times(c, low16));
      }
    }
  }
};

// Unsigned code bytes c times each lane's scale sc (an int32 lane, row r's), w = sc * c as
// int16 (even bytes, then odd ones), stored split as two tile rows of bytes: w >> 6 at `row`
// and w & 63 a slice further (the formats whose |w| >> 6 fits a signed byte).
__attribute__((always_inline)) inline void store_split_products(V::I c, V::I sc, uint8_t* row) {
  const V::I low_bytes = V::set1_32(0x00ff00ff), six_bits = V::set1_32(0x003f003f);
  const V::I sc16 = V::or_(V::and_(sc, V::set1_32(0xffff)), V::slli(sc, 16));
  const V::I even = _mm512_mullo_epi16(V::and_(c, low_bytes), sc16);
  const V::I odd = _mm512_mullo_epi16(V::and_(V::srli(c, 8), low_bytes), sc16);
  const V::I high = V::or_(V::and_(_mm512_srai_epi16(even, 6), low_bytes), _mm512_slli_epi16(_mm512_srai_epi16(odd, 6), 8));
  const V::I low = V::or_(V::and_(even, six_bits), _mm512_slli_epi16(V::and_(odd, six_bits), 8));
  _mm512_store_si512(row, high);
  _mm512_store_si512(row + amx::kSliceBytes, low);
}

// A super-block's tile codes as split products (store_split_products): slice m, tile row k
// from code dword dword_at(m, k), of sub-block dword / Format::kDwords.
template <typename Format, typename DwordAt>
__attribute__((always_inline)) inline void unpack_split_products(const uint8_t* block, uint8_t* codes, DwordAt dword_at) {
  const auto p = Format::header(block, 0);
#pragma GCC unroll 4
  for (int m = 0; m < 4; ++m) {
#pragma GCC unroll 16
    for (int k = 0; k < 16; ++k) {
      const int i = dword_at(m, k);
      store_split_products(Format::code(block, 0, i), Format::scale(p, i / Format::kDwords),
                           codes + 2 * m * amx::kSliceBytes + 64 * k);
    }
  }
}

// Q6_K's halves are sub-blocks j with bit 1 clear (quants 0-31, 64-95, 128-159, 192-223)
// and the rest: slice m, tile row k is code dword i = (2 (m % 2) + k / 8) * 16 + 8 (m / 2) + k % 8.
template <>
struct TileForm<PackedQ6K> {
  static constexpr int kHighShift = 6;
  // The staged quants with each super-block's 32-byte chunks 0, 2, 4, 6 first, then 1, 3, 5, 7.
  static const int8_t* tile_quants(const StagedTokens& tokens, int64_t n_blocks) {
    const size_t bytes = static_cast<size_t>(n_blocks * tokens.stride) * kSuperBlockSize;
    auto* reordered = static_cast<int8_t*>(thread_scratch(ScratchSlot::kTileQuants, bytes));
    for (size_t offset = 0; offset < bytes; offset += kSuperBlockSize) {
      for (int c = 0; c < 8; ++c) {
        std::memcpy(reordered + offset + 32 * c, tokens.quants + offset + 32 * (2 * (c % 4) + c / 4), 32);
      }
    }
    return reordered;
  }
  static void unpack(const uint8_t* block, uint8_t* codes) {
    unpack_split_products<PackedQ6K>(block, codes, [](int m, int k) { return (2 * (m % 2) + k / 8) * 16 + 8 * (m / 2) + k % 8; });
  }
};

// IQ4_XS: the unsigned codes (level + 128, PackedIQ4XS's vpdpbusd form) times s_j - 32
// (|w| <= 241 * 32, so w >> 6 fits a signed byte), split as Q6_K's; the -128 of every
// level stays in the pair terms, as in the panel kernel. Its halves are sub-blocks 0-3 and
// 4-7 (the staged order): slice m, tile row k is code dword 16m + k.
template <>
struct TileForm<PackedIQ4XS> {
  static constexpr int kHighShift = 6;
  static const int8_t* tile_quants(const StagedTokens& tokens, int64_t) { return tokens.quants; }
  static void unpack(const uint8_t* block, uint8_t* codes) {
    unpack_split_products<PackedIQ4XS>(block, codes, [](int m, int k) { return 16 * m + k; });
  }
};

// One packed super-block's float steps for the tile's tokens from its four tile sums.
template <typename Format>
__attribute__((always_inline)) inline void add_tile_block(const uint8_t* block, const int32_t* sums,
                                                          const TokenBlock* meta, Accumulator* acc) {
  const auto p = Format::header(block, 0);
  for (int t = 0; t < amx::kTileTokens; ++t) {
    V::I pair_terms = V::zero();  // Q4_K: M; Q6_K, IQ4_XS: the -32 / -128 terms, part of T_lo
    for (int i = 0; i < Format::kPairs; ++i) pair_terms = V::dot2(pair_terms, p.pairs[i], V::set1_32(meta[t].pairs[i]));
    if constexpr (Format::kHasMin) acc[t].add_min(pair_terms, p.dmin, meta[t].d);
    V::I halves[2];
    for (int h = 0; h < 2; ++h) {
      const auto part = [&](int c) {
        return V::load(reinterpret_cast<const uint8_t*>(sums + ((2 * h + c) * amx::kTileTokens + t) * 16));
      };
      halves[h] = V::add(V::slli(part(0), TileForm<Format>::kHighShift), part(1));
    }
    if constexpr (!Format::kHasMin) halves[0] = V::add(pair_terms, halves[0]);
    if constexpr (Format::kOneTotal) {
      acc[t].add_half(V::add(halves[0], halves[1]), p.d, meta[t].d);
    } else {
      acc[t].add_half(halves[0], p.d, meta[t].d);
      acc[t].add_half(halves[1], p.d, meta[t].d);
    }
  }
}

// n_w_rows rows as packed panels (panel_at(r0): the panel of rows r0 .. r0 + 15, of which
// the first min(16, n_w_rows - r0) are stored) against n_a_rows >= amx::kTileTokens tokens.
// row_max only with whole panels.
template <typename Format, typename PanelAt>
void dot_panels_on_tiles(int64_t n_blocks, PanelAt panel_at, int64_t n_w_rows, const uint8_t* activations,
                         size_t a_stride, int64_t n_a_rows, float* out, int64_t out_stride, RunningMax* row_max) {
  constexpr size_t kBlockBytes = kPanelRows * sizeof(typename Format::Block);
  auto* codes = static_cast<uint8_t*>(
      thread_scratch(ScratchSlot::kTileCodes, static_cast<size_t>(n_blocks) * amx::kBlockCodesBytes));
  alignas(64) int32_t sums[2][4 * amx::kTileTokens * 16];
  amx::begin_block_sums();
  for (int64_t t0 = 0; t0 < n_a_rows; t0 += kKQuantTokenBlock) {
    const int64_t n_tokens = n_a_rows - t0 < kKQuantTokenBlock ? n_a_rows - t0 : kKQuantTokenBlock;
    const StagedTokens tokens = stage_tokens<Format>(n_blocks, activations + t0 * a_stride, a_stride, n_tokens);
    const int64_t n_tiled = n_tokens / amx::kTileTokens * amx::kTileTokens;
    const int8_t* tile_quants = n_tiled > 0 ? TileForm<Format>::tile_quants(tokens, n_blocks) : nullptr;
    for (int64_t r0 = 0; r0 < n_w_rows; r0 += kPanelRows) {
      const uint8_t* panel = panel_at(r0);
      const int n_rows = static_cast<int>(n_w_rows - r0 < kPanelRows ? n_w_rows - r0 : kPanelRows);
      for (int64_t b = 0; b < n_blocks && n_tiled > 0; ++b) {
        TileForm<Format>::unpack(panel + b * kBlockBytes, codes + b * amx::kBlockCodesBytes);
      }
      for (int64_t t = 0; t < n_tiled; t += amx::kTileTokens) {
        const StagedTokens tile = tokens.from(t);
        Accumulator acc[amx::kTileTokens];
        auto quants_of = [&](int64_t b) { return tile_quants + (b * tokens.stride + t) * kSuperBlockSize; };
        // Super-block b's tile sums run while b - 1's float steps do.
        amx::start_block_sums(codes, quants_of(0));
        amx::store_block_sums(sums[0]);
        for (int64_t b = 1; b <= n_blocks; ++b) {
          if (b < n_blocks) amx::start_block_sums(codes + b * amx::kBlockCodesBytes, quants_of(b));
          add_tile_block<Format>(panel + (b - 1) * kBlockBytes, sums[(b - 1) % 2], tile.block_meta(b - 1), acc);
          if (b < n_blocks) amx::store_block_sums(sums[b % 2]);
        }
        for (int k = 0; k < amx::kTileTokens; ++k) {
          if (out != nullptr) V::store(out + (t0 + t + k) * out_stride + r0, acc[k].sum, n_rows);
          if (row_max != nullptr) V::fold_max(acc[k].sum, r0, row_max[t0 + t + k]);
        }
      }
      const int64_t n_rest = n_tokens - n_tiled;
      PrefetchCursor prefetch(panel, 0, 0, 1);
      for_token_tiles<V::kTokenTile>(n_rest, [&](auto size, int64_t t) {
        const int64_t first = n_tiled + t;
        dot_packed_panel<Format, decltype(size)::value>(
            n_blocks, panel, tokens.from(first), n_rows,
            out != nullptr ? out + (t0 + first) * out_stride + r0 : nullptr, out_stride, prefetch,
            row_max != nullptr ? row_max + t0 + first : nullptr, r0);
      });
    }
  }
  amx::end_tiles();
}

// Repacked Q4_K, Q6_K or IQ4_XS panels.
template <typename Format, bool kPrefetch>
void dot_k_quant_panels_amx(int64_t n, const void* w, int64_t n_w_rows, const void* a, size_t a_stride,
                            int64_t n_a_rows, float* out, int64_t out_stride, RunningMax* row_max) {
  if (n_a_rows < amx::kTileTokens) {
    dot_packed_panels<Format, kPrefetch>(n, w, n_w_rows, a, a_stride, n_a_rows, out, out_stride, row_max);
    return;
  }
  const PanelMatrix panels(w, n / kSuperBlockSize, kPanelRows * sizeof(typename Format::Block));
  dot_panels_on_tiles<Format>(
      panels.n_blocks, [&](int64_t r0) { return panels.panel(r0); }, n_w_rows, static_cast<const uint8_t*>(a),
      a_stride, n_a_rows, out, out_stride, row_max);
}

// Q6_K rows in the file's layout: each 16-row panel packed into a buffer per block of
// staged tokens (rows past n_w_rows repeat the last one), as dot_matrix<Q6K> does.
void dot_q6_k_matrix_amx(int64_t n, const void* w, size_t w_stride, int64_t n_w_rows, const void* a,
                         size_t a_stride, int64_t n_a_rows, float* out, int64_t out_stride) {
  if (n_a_rows < amx::kTileTokens) {
    dot_matrix<Q6K>(n, w, w_stride, n_w_rows, a, a_stride, n_a_rows, out, out_stride);
    return;
  }
  constexpr size_t kBlockBytes = kPanel * sizeof(BlockQ6_K);
  const int64_t n_blocks = n / kSuperBlockSize;
  const auto* weights = static_cast<const uint8_t*>(w);
  auto* panel = static_cast<uint8_t*>(thread_scratch(ScratchSlot::kPanel, kBlockBytes * static_cast<size_t>(n_blocks)));
  auto pack = [&](int64_t r0) {
    const int64_t n_rows = n_w_rows - r0 < kPanel ? n_w_rows - r0 : kPanel;
    const uint8_t* rows[kPanel];
    for (int r = 0; r < kPanel; ++r) rows[r] = weights + (r0 + (r < n_rows ? r : n_rows - 1)) * w_stride;
    for (int64_t b = 0; b < n_blocks; ++b) {
      pack_super_block<BlockQ6_K>(rows, panel + static_cast<size_t>(b) * kBlockBytes);
      for (int r = 0; r < kPanel; ++r) rows[r] += sizeof(BlockQ6_K);
    }
    return static_cast<const uint8_t*>(panel);
  };
  dot_panels_on_tiles<PackedQ6K>(n_blocks, pack, n_w_rows, static_cast<const uint8_t*>(a), a_stride, n_a_rows, out,
                                 out_stride, nullptr);
}

}  // namespace

TM_PACKED_KQUANT_ENTRIES()

TM_DOT_MATRIX_ENTRY(vec_dot_matrix_q4_K_q8_K, dot_matrix<Q4K>)
TM_DOT_MATRIX_ENTRY(vec_dot_matrix_q5_K_q8_K, dot_matrix<Q5K>)
TM_DOT_MATRIX_ENTRY(vec_dot_matrix_q6_K_q8_K, dot_matrix<Q6K>)

}  // namespace tokenmill::quant::avx512

namespace tokenmill::quant::amx {

TM_DOT_PANELS_ENTRY(vec_dot_panels_q4_K_q8_K, avx512::dot_k_quant_panels_amx<avx512::PackedQ4K, true>)
TM_DOT_PANELS_ENTRY(vec_dot_panels_q4_K_q8_K_unprefetched, avx512::dot_k_quant_panels_amx<avx512::PackedQ4K, false>)
TM_DOT_PANELS_ENTRY(vec_dot_panels_q6_K_q8_K, avx512::dot_k_quant_panels_amx<avx512::PackedQ6K, true>)
TM_DOT_PANELS_ENTRY(vec_dot_panels_q6_K_q8_K_unprefetched, avx512::dot_k_quant_panels_amx<avx512::PackedQ6K, false>)
TM_DOT_PANELS_ENTRY(vec_dot_panels_iq4_xs_q8_K, avx512::dot_k_quant_panels_amx<avx512::PackedIQ4XS, true>)
TM_DOT_PANELS_ENTRY(vec_dot_panels_iq4_xs_q8_K_unprefetched, avx512::dot_k_quant_panels_amx<avx512::PackedIQ4XS, false>)
TM_DOT_MATRIX_ENTRY(vec_dot_matrix_q6_K_q8_K, avx512::dot_q6_k_matrix_amx)

}  // namespace tokenmill::quant::amx
