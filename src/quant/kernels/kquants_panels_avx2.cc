// AVX2 matrix kernels of Q4_K, Q5_K and Q6_K against many Q8_K activation rows (prefill,
// batched decode): kquants_avx512.cc's panels in 8 lanes. int32 lane r of every vector
// below belongs to weight row r of an 8-row panel.
//
// Each panel's super-blocks are transposed once into a buffer (code vectors with lane r =
// four codes of row r, sub-block scales as int16 pairs) that every token tile then reads.
// Per token and sub-block, vpmaddubsw of the codes against the token's broadcast quant
// dwords gives int16 pair sums in every lane; up to kGroup of them are added as int16
// (codes below 16, 32, 64 and |a| <= 128 keep the sum under 2^15), and one vpmaddwd
// against (sc_j, sc_j) both widens and scales them. The minimum (or Q6_K's -32) terms are
// vpmaddwd of int16 pairs. No horizontal sums. The integers T_lo, T_hi and M, and the
// float steps on them, are those of kquants_avx2.cc's rows (see its top), so every
// (row, token) result has the same bits however many rows or tokens the call had.

#include <immintrin.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "quant/blocks.h"
#include "quant/kernels/kquant_panels.h"
#include "quant/kernels/scratch.h"
#include "quant/kernels/simd_kernels.h"
#include "quant/kernels/tiles_avx2.h"
#include "quant/kernels/x86_helpers.h"

namespace tokenmill::quant::avx2 {

namespace {

constexpr int kRows = 8;          // weight rows per panel: one int32 lane each
constexpr int kTokenBlock = kKQuantTokenBlock;
constexpr int64_t kMinPanelTokens = 4;  // fewer run kquants_avx2.cc's rows

// out[k] lane r = dword k of src[r] (32 bytes each).
void transpose_8x8(const uint8_t* const* src, __m256i* out) {
  __m256i t[8], u[8];
  for (int i = 0; i < 4; ++i) {
    const __m256i a = load_256(src[2 * i]), b = load_256(src[2 * i + 1]);
    t[2 * i] = _mm256_unpacklo_epi32(a, b);
    t[2 * i + 1] = _mm256_unpackhi_epi32(a, b);
  }
  for (int i = 0; i < 2; ++i) {  // rows 4i .. 4i + 3
    u[4 * i] = _mm256_unpacklo_epi64(t[4 * i], t[4 * i + 2]);
    u[4 * i + 1] = _mm256_unpackhi_epi64(t[4 * i], t[4 * i + 2]);
    u[4 * i + 2] = _mm256_unpacklo_epi64(t[4 * i + 1], t[4 * i + 3]);
    u[4 * i + 3] = _mm256_unpackhi_epi64(t[4 * i + 1], t[4 * i + 3]);
  }
  for (int k = 0; k < 4; ++k) {
    out[k] = _mm256_permute2x128_si256(u[k], u[4 + k], 0x20);
    out[k + 4] = _mm256_permute2x128_si256(u[k], u[4 + k], 0x31);
  }
}

// out[k] lane r = dword k of src[r] (16 bytes each).
void transpose_8x4(const uint8_t* const* src, __m256i* out) {
  __m256i v[4];
  for (int r = 0; r < 4; ++r) v[r] = _mm256_set_m128i(load_128(src[r + 4]), load_128(src[r]));
  const __m256i t0 = _mm256_unpacklo_epi32(v[0], v[1]), t1 = _mm256_unpackhi_epi32(v[0], v[1]);
  const __m256i t2 = _mm256_unpacklo_epi32(v[2], v[3]), t3 = _mm256_unpackhi_epi32(v[2], v[3]);
  out[0] = _mm256_unpacklo_epi64(t0, t2);
  out[1] = _mm256_unpackhi_epi64(t0, t2);
  out[2] = _mm256_unpacklo_epi64(t1, t3);
  out[3] = _mm256_unpackhi_epi64(t1, t3);
}

// The low (or high) 16 bits of every lane as an F16 value, converted to float.
__m256 halves_to_ps(__m256i v, bool high) {
  const __m256i bits = high ? _mm256_srli_epi32(v, 16) : _mm256_and_si256(v, _mm256_set1_epi32(0xffff));
  const __m256i packed = _mm256_permute4x64_epi64(_mm256_packus_epi32(bits, bits), _MM_SHUFFLE(3, 1, 2, 0));
  return _mm256_cvtph_ps(_mm256_castsi256_si128(packed));
}

// An int32 lane value v (|v| < 2^15) as the int16 pair (v, v).
__m256i twice_16(__m256i v) { return _mm256_or_si256(_mm256_and_si256(v, _mm256_set1_epi32(0xffff)), _mm256_slli_epi32(v, 16)); }

// Bytes i and i + 1 of every int32 lane as an int16 pair (zero-extended).
__m256i byte_pair(__m256i v, int i) {
  const __m256i low = _mm256_and_si256(_mm256_srli_epi32(v, 8 * i), _mm256_set1_epi32(0xff));
  const __m256i high = _mm256_and_si256(_mm256_srli_epi32(v, 8 * i + 8), _mm256_set1_epi32(0xff));
  return _mm256_or_si256(low, _mm256_slli_epi32(high, 16));
}

// A transposed super-block of 8 rows (kquant_panels.h); scales[j] lane r = (sc_j, sc_j)
// of row r as int16.
struct Vectors256 {
  using Int = __m256i;
  using Float = __m256;
};
template <int kSubBlocks, int kPairs>
using PanelOf = KQuantPanel<Vectors256, kSubBlocks, kPairs>;

// Q4_K / Q5_K: the head (d, dmin, 12 scale bytes) of 8 rows into d, dmin, scales, pairs
// (see kquants_avx512.cc's unpack_k4_scales_panel for the bit layout).
template <typename Panel>
void transpose_k4_head(const uint8_t* const* rows, Panel& panel) {
  __m256i head[4];  // [d | dmin], w0, w1, w2
  transpose_8x4(rows, head);
  panel.d = halves_to_ps(head[0], false);
  panel.dmin = halves_to_ps(head[0], true);
  const __m256i six_bits = _mm256_set1_epi8(0x3f), low_nibble = _mm256_set1_epi8(0x0f), bits_4_5 = _mm256_set1_epi8(0x30);
  const __m256i sc_0_3 = _mm256_and_si256(head[1], six_bits);
  const __m256i mn_0_3 = _mm256_and_si256(head[2], six_bits);
  const __m256i sc_4_7 = _mm256_or_si256(_mm256_and_si256(head[3], low_nibble),
                                         _mm256_and_si256(_mm256_srli_epi32(head[1], 2), bits_4_5));
  const __m256i mn_4_7 = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi32(head[3], 4), low_nibble),
                                         _mm256_and_si256(_mm256_srli_epi32(head[2], 2), bits_4_5));
  for (int j = 0; j < 4; ++j) {
    panel.scales[j] = twice_16(_mm256_and_si256(_mm256_srli_epi32(sc_0_3, 8 * j), _mm256_set1_epi32(0xff)));
    panel.scales[4 + j] = twice_16(_mm256_and_si256(_mm256_srli_epi32(sc_4_7, 8 * j), _mm256_set1_epi32(0xff)));
  }
  panel.pairs[0] = byte_pair(mn_0_3, 0);
  panel.pairs[1] = byte_pair(mn_0_3, 2);
  panel.pairs[2] = byte_pair(mn_4_7, 0);
  panel.pairs[3] = byte_pair(mn_4_7, 2);
}

// Q4_K / Q5_K's 128 nibble bytes at `qs_offset` of 8 rows: chunk m (32 bytes) holds
// sub-block 2m in its low nibbles and 2m + 1 in its high ones.
template <typename Panel>
void transpose_k4_nibbles(const uint8_t* const* rows, size_t qs_offset, Panel& panel) {
  const __m256i low_nibble = _mm256_set1_epi8(0x0f);
  for (int m = 0; m < 4; ++m) {
    const uint8_t* src[kRows];
    for (int r = 0; r < kRows; ++r) src[r] = rows[r] + qs_offset + 32 * m;
    __m256i packed[8];
    transpose_8x8(src, packed);
    for (int k = 0; k < 8; ++k) {
      panel.codes[16 * m + k] = _mm256_and_si256(packed[k], low_nibble);
      panel.codes[16 * m + 8 + k] = _mm256_and_si256(_mm256_srli_epi32(packed[k], 4), low_nibble);
    }
  }
}

// Q4_K / Q5_K tokens: pairs[i] = (s_2i, s_2i+1), s_j = the sum of sub-block j's 32 quants.
void k4_token_pairs(const BlockQ8_K& y, int32_t* pairs) {
  for (int i = 0; i < 4; ++i) {
    const int32_t s0 = y.bsums[4 * i] + y.bsums[4 * i + 1], s1 = y.bsums[4 * i + 2] + y.bsums[4 * i + 3];
    pairs[i] = static_cast<int32_t>((static_cast<uint32_t>(s0) & 0xffffu) | (static_cast<uint32_t>(s1) << 16));
  }
}

// Formats: kSubBlocks, kDwords (4-code dwords per sub-block), kGroup (pair sums added as
// int16 before widening), kPairs, kHasMin, kSubBlockOrder (T_lo's sub-blocks, then
// T_hi's: kquants_avx2.cc's split), Panel, transpose(rows, panel), token_pairs(y, pairs).
struct Q4K {
  using Block = BlockQ4_K;
  static constexpr int kSubBlocks = 8, kDwords = 8, kGroup = 8, kPairs = 4;
  static constexpr bool kHasMin = true;
  static constexpr int kSubBlockOrder[kSubBlocks] = {0, 1, 2, 3, 4, 5, 6, 7};
  using Panel = PanelOf<kSubBlocks, kPairs>;
  static void token_pairs(const BlockQ8_K& y, int32_t* pairs) { k4_token_pairs(y, pairs); }
  static void transpose(const uint8_t* const* rows, Panel& panel) {
    transpose_k4_head(rows, panel);
    transpose_k4_nibbles(rows, offsetof(Block, qs), panel);
  }
};

// Q4_K's panel (its scales, minima and nibbles) plus 16 where bit j of qh[l] is set
// (element 32j + l).
struct Q5K : Q4K {
  using Block = BlockQ5_K;
  static constexpr int kGroup = 4;
  static constexpr int kSubBlockOrder[kSubBlocks] = {0, 1, 4, 5, 2, 3, 6, 7};
  static void transpose(const uint8_t* const* rows, Panel& panel) {
    transpose_k4_head(rows, panel);
    transpose_k4_nibbles(rows, offsetof(Block, qs), panel);
    const uint8_t* src[kRows];
    for (int r = 0; r < kRows; ++r) src[r] = rows[r] + offsetof(Block, qh);
    __m256i qh[8];  // lane r of qh[k] = qh bytes 4k .. 4k + 3 of row r
    transpose_8x8(src, qh);
    const __m256i ones = _mm256_set1_epi8(1);
    for (int j = 0; j < 8; ++j) {
      for (int k = 0; k < 8; ++k) {
        const __m256i bit = _mm256_and_si256(_mm256_srli_epi32(qh[k], j), ones);
        panel.codes[8 * j + k] = _mm256_or_si256(panel.codes[8 * j + k], _mm256_slli_epi32(bit, 4));
      }
    }
  }
};

struct Q6K {
  using Block = BlockQ6_K;
  static constexpr int kSubBlocks = 16, kDwords = 4, kGroup = 2, kPairs = 8;
  static constexpr bool kHasMin = false;
  static constexpr int kSubBlockOrder[kSubBlocks] = {0, 1, 4, 5, 8, 9, 12, 13, 2, 3, 6, 7, 10, 11, 14, 15};
  using Panel = PanelOf<kSubBlocks, kPairs>;
  // The token's group sums as they are, pairs (bsums_2i, bsums_2i+1).
  static void token_pairs(const BlockQ8_K& y, int32_t* pairs) { std::memcpy(pairs, y.bsums, sizeof y.bsums); }
  // Element 128h + 32g + 4k .. + 3 (h, g, k < 2, 4, 8) is codes[32h + 8g + k]: its low
  // four bits are nibble g / 2 of ql[64h + 32 (g % 2) + 4k ..], its high two bits
  // 2g, 2g + 1 of qh[32h + 4k ..] (blocks.h).
  static void transpose(const uint8_t* const* rows, Panel& panel) {
    const __m256i low_nibble = _mm256_set1_epi8(0x0f), two_bits = _mm256_set1_epi8(0x03);
    const uint8_t* src[kRows];
    for (int h = 0; h < 2; ++h) {
      __m256i ql[2][8], qh[8];
      for (int c = 0; c < 2; ++c) {
        for (int r = 0; r < kRows; ++r) src[r] = rows[r] + offsetof(Block, ql) + 64 * h + 32 * c;
        transpose_8x8(src, ql[c]);
      }
      for (int r = 0; r < kRows; ++r) src[r] = rows[r] + offsetof(Block, qh) + 32 * h;
      transpose_8x8(src, qh);
      for (int g = 0; g < 4; ++g) {
        for (int k = 0; k < 8; ++k) {
          const __m256i low = _mm256_and_si256(_mm256_srli_epi32(ql[g % 2][k], 4 * (g / 2)), low_nibble);
          const __m256i high = _mm256_and_si256(_mm256_srli_epi32(qh[k], 2 * g), two_bits);
          panel.codes[32 * h + 8 * g + k] = _mm256_or_si256(low, _mm256_slli_epi32(high, 4));
        }
      }
    }
    for (int r = 0; r < kRows; ++r) src[r] = rows[r] + offsetof(Block, scales);
    __m256i packed[4];  // lane r of packed[i] = scales 4i .. 4i + 3 of row r
    transpose_8x4(src, packed);
    __m256i sc[16];
    for (int j = 0; j < 16; ++j) {
      sc[j] = _mm256_srai_epi32(_mm256_slli_epi32(packed[j / 4], 24 - 8 * (j % 4)), 24);
      panel.scales[j] = twice_16(sc[j]);
    }
    // The -32 of every level: pairs (-32 sc_2i, -32 sc_2i+1) against the token's bsums.
    for (int i = 0; i < 8; ++i) {
      const __m256i low = _mm256_sub_epi32(_mm256_setzero_si256(), _mm256_slli_epi32(sc[2 * i], 5));
      const __m256i high = _mm256_sub_epi32(_mm256_setzero_si256(), _mm256_slli_epi32(sc[2 * i + 1], 5));
      panel.pairs[i] = _mm256_or_si256(_mm256_and_si256(low, _mm256_set1_epi32(0xffff)), _mm256_slli_epi32(high, 16));
    }
    alignas(16) uint16_t d[kRows];
    for (int r = 0; r < kRows; ++r) std::memcpy(&d[r], rows[r] + offsetof(Block, d), sizeof(uint16_t));
    panel.d = _mm256_cvtph_ps(load_128(d));
    panel.dmin = _mm256_setzero_ps();
  }
};

inline __m256i broadcast_dword(const int8_t* p) {
  return _mm256_set1_epi32(static_cast<int>(load_u32(reinterpret_cast<const uint8_t*>(p))));
}

// out[t * out_stride + r] for the panel's first n_rows rows and kTokens tokens.
template <typename Format, int kTokens>
void dot_panel(int64_t n_blocks, const typename Format::Panel* panel, StagedTokens tokens, int64_t n_rows, float* out,
               int64_t out_stride, PrefetchCursor& prefetch) {
  __m256 acc[kTokens];
  for (int t = 0; t < kTokens; ++t) acc[t] = _mm256_setzero_ps();
  for (int64_t b = 0; b < n_blocks; ++b) {
    prefetch.step();
    const typename Format::Panel& p = panel[b];
    const int8_t* q = tokens.block_quants(b);
    const TokenBlock* meta = tokens.block_meta(b);
    __m256i total[kTokens];
    for (int t = 0; t < kTokens; ++t) total[t] = _mm256_setzero_si256();
    for (int i = 0; i < Format::kPairs; ++i) {
      for (int t = 0; t < kTokens; ++t) {
        total[t] = _mm256_add_epi32(total[t], _mm256_madd_epi16(p.pairs[i], _mm256_set1_epi32(meta[t].pairs[i])));
      }
    }
    if constexpr (Format::kHasMin) {  // that was M; T_lo starts from zero (Q6_K: from its -32 terms)
      for (int t = 0; t < kTokens; ++t) {
        acc[t] = _mm256_fnmadd_ps(_mm256_cvtepi32_ps(total[t]), _mm256_mul_ps(p.dmin, _mm256_set1_ps(meta[t].d)), acc[t]);
        total[t] = _mm256_setzero_si256();
      }
    }
#pragma GCC unroll 2
    for (int half = 0; half < 2; ++half) {
#pragma GCC unroll 8
      for (int s = 0; s < Format::kSubBlocks / 2; ++s) {
        const int j = Format::kSubBlockOrder[half * Format::kSubBlocks / 2 + s];
#pragma GCC unroll 4
        for (int g = 0; g < Format::kDwords; g += Format::kGroup) {
          __m256i pairs[kTokens];
          for (int t = 0; t < kTokens; ++t) pairs[t] = _mm256_setzero_si256();
#pragma GCC unroll 8
          for (int k = g; k < g + Format::kGroup; ++k) {
            const int dword = j * Format::kDwords + k;
            const __m256i codes = p.codes[dword];
            for (int t = 0; t < kTokens; ++t) {
              pairs[t] = _mm256_add_epi16(
                  pairs[t], _mm256_maddubs_epi16(codes, broadcast_dword(q + t * kSuperBlockSize + 4 * dword)));
            }
          }
          for (int t = 0; t < kTokens; ++t) total[t] = _mm256_add_epi32(total[t], _mm256_madd_epi16(pairs[t], p.scales[j]));
        }
      }
      for (int t = 0; t < kTokens; ++t) {
        acc[t] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(total[t]), _mm256_mul_ps(p.d, _mm256_set1_ps(meta[t].d)), acc[t]);
        total[t] = _mm256_setzero_si256();
      }
    }
  }
  for (int t = 0; t < kTokens; ++t) {
    if (n_rows == kRows) {
      _mm256_storeu_ps(out + t * out_stride, acc[t]);
    } else {
      alignas(32) float lanes[kRows];
      _mm256_store_ps(lanes, acc[t]);
      for (int64_t r = 0; r < n_rows; ++r) out[t * out_stride + r] = lanes[r];
    }
  }
}

template <typename Format>
void dot_matrix(int64_t n, const void* w, size_t w_stride, int64_t n_w_rows, const void* a, size_t a_stride,
                int64_t n_a_rows, float* out, int64_t out_stride, VecDotRowsFn rows_kernel) {
  const auto* weights = static_cast<const uint8_t*>(w);
  const auto* activations = static_cast<const uint8_t*>(a);
  if (n_a_rows < kMinPanelTokens) {
    for (int64_t r = 0; r < n_w_rows; ++r) {
      rows_kernel(n, weights + r * w_stride, activations, a_stride, n_a_rows, out + r, out_stride);
    }
    return;
  }
  using Panel = typename Format::Panel;
  const int64_t n_blocks = n / kSuperBlockSize;
  auto* panel = static_cast<Panel*>(thread_scratch(ScratchSlot::kPanel, sizeof(Panel) * n_blocks));
  for (int64_t t0 = 0; t0 < n_a_rows; t0 += kTokenBlock) {
    const int64_t n_tokens = n_a_rows - t0 < kTokenBlock ? n_a_rows - t0 : kTokenBlock;
    const StagedTokens tokens = stage_tokens<Format>(n_blocks, activations + t0 * a_stride, a_stride, n_tokens);
    for (int64_t r0 = 0; r0 < n_w_rows; r0 += kRows) {
      const int64_t n_rows = n_w_rows - r0 < kRows ? n_w_rows - r0 : kRows;
      const int64_t after = n_w_rows - r0 - n_rows;
      const int64_t n_next = after < kRows ? after : kRows;
      // The next panel streams in over this one's transposition and all its tiles.
      const int64_t n_tiles = (n_tokens + kAvx2TokenTile - 1) / kAvx2TokenTile;
      PrefetchCursor prefetch(weights + (r0 + n_rows) * w_stride, 0, n_next * static_cast<int64_t>(w_stride),
                              n_blocks * (1 + n_tiles));
      transpose_panel<Format, kRows>(n_blocks, weights + r0 * w_stride, w_stride, n_rows, panel, prefetch);
      for_avx2_token_tiles(n_tokens, [&](auto tile, int64_t t) {
        dot_panel<Format, decltype(tile)::value>(n_blocks, panel, tokens.from(t), n_rows,
                                                 out + (t0 + t) * out_stride + r0, out_stride, prefetch);
      });
    }
  }
}

}  // namespace

void vec_dot_matrix_q4_K_q8_K(int64_t n, const void* w, size_t w_stride, int64_t n_w_rows, const void* a,
                              size_t a_stride, int64_t n_a_rows, float* out, int64_t out_stride) {
  dot_matrix<Q4K>(n, w, w_stride, n_w_rows, a, a_stride, n_a_rows, out, out_stride, vec_dot_rows_q4_K_q8_K);
}
void vec_dot_matrix_q5_K_q8_K(int64_t n, const void* w, size_t w_stride, int64_t n_w_rows, const void* a,
                              size_t a_stride, int64_t n_a_rows, float* out, int64_t out_stride) {
  dot_matrix<Q5K>(n, w, w_stride, n_w_rows, a, a_stride, n_a_rows, out, out_stride, vec_dot_rows_q5_K_q8_K);
}
void vec_dot_matrix_q6_K_q8_K(int64_t n, const void* w, size_t w_stride, int64_t n_w_rows, const void* a,
                              size_t a_stride, int64_t n_a_rows, float* out, int64_t out_stride) {
  dot_matrix<Q6K>(n, w, w_stride, n_w_rows, a, a_stride, n_a_rows, out, out_stride, vec_dot_rows_q6_K_q8_K);
}

}  // namespace tokenmill::quant::avx2
