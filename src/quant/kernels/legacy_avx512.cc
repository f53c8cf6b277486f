// AVX-512 (VNNI) dot products of the legacy weight formats Q4_0, Q5_0 and Q8_0 with a
// Q8_0 activation row, two blocks per 512-bit step:
//
//   byte lanes  0..31: levels of block b      (scale d_b     in float lanes 0..7)
//   byte lanes 32..63: levels of block b + 1  (scale d_{b+1} in float lanes 8..15)
//
// vpdpbusd multiplies unsigned by signed bytes, so each weight is taken as its unsigned
// code u = level + k (Q4_0: the nibble, k = 8; Q5_0: the 5-bit value, k = 16; Q8_0: the
// byte xor 0x80, k = 128) and the accumulator starts at -k * (sum of each group of four
// activations): u * a summed from there is exactly sum(level * a). That start value
// depends only on the activations, so a tile of several weight rows computes it once.
//
// One template, `dot_tile<Block, kRows, kTokens>`, does every shape: a single dot
// product (1 x 1), one weight row against several activation rows (prefill), and four
// weight rows against one activation row (decode: each activation block is loaded and
// its correction and scale computed once for four rows). Every (row, token) result goes
// through the same operations in the same order, and all horizontal sums use one fixed
// tree (reduce_16 / reduce_4x16), so it is bit-identical whichever tile computed it: a
// token's logits do not depend on the batch it came in.

// GCC 12's AVX-512 headers seed some intrinsics with _mm512_undefined_*(), which
// -Wuninitialized then reports at every use: a known false positive.
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

#include <immintrin.h>

#include <cstddef>
#include <cstdint>

#include "quant/blocks.h"
#include "quant/kernels/simd_kernels.h"
#include "quant/kernels/x86_helpers.h"

namespace tokenmill::quant::avx512 {

namespace {

// Nibbles of two consecutive legacy blocks, each in element order (values 0..15).
__m512i unpack_nibbles_pair(const uint8_t* qs_0, const uint8_t* qs_1) {
  const __m256i packed = _mm256_set_m128i(load_128(qs_1), load_128(qs_0));
  // [lo_0, lo_1, hi_0, hi_1] in 128-bit lanes, reordered to [lo_0, hi_0, lo_1, hi_1].
  const __m512i both = combine_256(packed, _mm256_srli_epi16(packed, 4));
  const __m512i ordered = _mm512_shuffle_i64x2(both, both, _MM_SHUFFLE(3, 1, 2, 0));
  return _mm512_and_si512(ordered, _mm512_set1_epi8(0x0f));
}

__m256i unpack_nibbles(const uint8_t* qs) { return unpack_legacy_nibbles(qs); }

// Codes<Block>: the unsigned codes of two consecutive weight blocks (pair) or of one
// (single), and kOffset = k, the amount by which every code exceeds its level.
template <typename Block>
struct Codes;

template <>
struct Codes<BlockQ8_0> {
  static constexpr char kOffset = static_cast<char>(0x80);  // k = 128
  static __m512i pair(const BlockQ8_0* b) {
    return _mm512_xor_si512(combine_256(load_256(b[0].qs), load_256(b[1].qs)), _mm512_set1_epi8(kOffset));
  }
  static __m256i single(const BlockQ8_0& b) { return _mm256_xor_si256(load_256(b.qs), _mm256_set1_epi8(kOffset)); }
};

template <>
struct Codes<BlockQ4_0> {
  static constexpr char kOffset = 8;
  static __m512i pair(const BlockQ4_0* b) { return unpack_nibbles_pair(b[0].qs, b[1].qs); }
  static __m256i single(const BlockQ4_0& b) { return unpack_nibbles(b.qs); }
};

// Q5_0: the code is the 5-bit q itself, nibble + 16 where qh has bit 4 (qh is exactly a
// byte mask of "bit 4 set" in element order).
template <>
struct Codes<BlockQ5_0> {
  static constexpr char kOffset = 16;
  static __m512i pair(const BlockQ5_0* b) {
    const __m512i nibbles = unpack_nibbles_pair(b[0].qs, b[1].qs);
    const __mmask64 bit4 =
        static_cast<__mmask64>(load_u32(b[0].qh)) | (static_cast<__mmask64>(load_u32(b[1].qh)) << 32);
    return _mm512_mask_add_epi8(nibbles, bit4, nibbles, _mm512_set1_epi8(16));
  }
  static __m256i single(const BlockQ5_0& b) {
    const __m256i nibbles = unpack_nibbles(b.qs);
    return _mm256_mask_add_epi8(nibbles, static_cast<__mmask32>(load_u32(b.qh)), nibbles, _mm256_set1_epi8(16));
  }
};

// [half(d_0) x 8, half(d_1) x 8] as floats.
__m512 scale_pair(uint16_t d_0, uint16_t d_1) {
  const __m256i halves = _mm256_mask_set1_epi16(_mm256_set1_epi16(static_cast<int16_t>(d_0)), 0xff00,
                                                static_cast<int16_t>(d_1));
  return _mm512_cvtph_ps(halves);
}

// The horizontal sum every kernel here ends with: lanes i + i+8, then i + i+4, then
// i + i+2, then 0 + 1 (float addition commutes, so reduce_4x16 reproduces it exactly).
float reduce_16(__m512 v) {
  const __m256 s8 = _mm256_add_ps(_mm512_castps512_ps256(v), _mm512_extractf32x8_ps(v, 1));
  const __m128 s4 = _mm_add_ps(_mm256_castps256_ps128(s8), _mm256_extractf128_ps(s8, 1));
  const __m128 s2 = _mm_add_ps(s4, _mm_movehl_ps(s4, s4));
  return _mm_cvtss_f32(_mm_add_ss(s2, _mm_movehdup_ps(s2)));
}

// reduce_16 of four vectors at once: [reduce_16(a), reduce_16(b), reduce_16(c), reduce_16(d)].
__m128 reduce_4x16(__m512 a, __m512 b, __m512 c, __m512 d) {
  // s8 of a and b side by side: 128-bit quarters [a0 a1 b0 b1] + [a2 a3 b2 b3].
  const __m512 ab = _mm512_add_ps(_mm512_shuffle_f32x4(a, b, _MM_SHUFFLE(1, 0, 1, 0)),
                                  _mm512_shuffle_f32x4(a, b, _MM_SHUFFLE(3, 2, 3, 2)));
  const __m512 cd = _mm512_add_ps(_mm512_shuffle_f32x4(c, d, _MM_SHUFFLE(1, 0, 1, 0)),
                                  _mm512_shuffle_f32x4(c, d, _MM_SHUFFLE(3, 2, 3, 2)));
  // s4 of a, b, c, d in quarters 0..3: lower half of each s8 + upper half.
  const __m512 s4 = _mm512_add_ps(_mm512_shuffle_f32x4(ab, cd, _MM_SHUFFLE(2, 0, 2, 0)),
                                  _mm512_shuffle_f32x4(ab, cd, _MM_SHUFFLE(3, 1, 3, 1)));
  const __m512 s2 = _mm512_add_ps(s4, _mm512_permute_ps(s4, _MM_SHUFFLE(1, 0, 3, 2)));
  const __m512 s1 = _mm512_add_ps(s2, _mm512_permute_ps(s2, _MM_SHUFFLE(2, 3, 0, 1)));
  return _mm512_castps512_ps128(_mm512_permutexvar_ps(_mm512_setr_epi32(0, 4, 8, 12, 0, 0, 0, 0, 0, 0, 0, 0, 0,
                                                                           0, 0, 0),
                                                       s1));
}

// acc[t] += the per-lane partial sums of dot(weight row x, activation row t), t < kTokens.
template <typename Block, int kTokens>
void accumulate_row(int64_t n_blocks, const Block* x, const uint8_t* a, size_t a_stride, __m512* acc) {
  const __m512i offset_bytes = _mm512_set1_epi8(Codes<Block>::kOffset);
  auto activation_blocks = [&](int t) { return reinterpret_cast<const BlockQ8_0*>(a + t * a_stride); };
  int64_t b = 0;
  for (; b + 2 <= n_blocks; b += 2) {
    const __m512i codes = Codes<Block>::pair(x + b);
    const __m512 weight_scales = scale_pair(x[b].d, x[b + 1].d);
    for (int t = 0; t < kTokens; ++t) {
      const BlockQ8_0* y = activation_blocks(t) + b;
      const __m512i levels = combine_256(load_256(y[0].qs), load_256(y[1].qs));
      const __m512i start = _mm512_sub_epi32(_mm512_setzero_si512(),
                                             _mm512_dpbusd_epi32(_mm512_setzero_si512(), offset_bytes, levels));
      const __m512i isum = _mm512_dpbusd_epi32(start, codes, levels);
      const __m512 d = _mm512_mul_ps(weight_scales, scale_pair(y[0].d, y[1].d));
      acc[t] = _mm512_fmadd_ps(d, _mm512_cvtepi32_ps(isum), acc[t]);
    }
  }
  if (b < n_blocks) {  // an odd last block, in the lower 256 bits
    const __m256i codes = Codes<Block>::single(x[b]);
    const float weight_scale = half_to_float(x[b].d);
    for (int t = 0; t < kTokens; ++t) {
      const BlockQ8_0& y = activation_blocks(t)[b];
      const __m256i levels = load_256(y.qs);
      const __m256i start = _mm256_sub_epi32(
          _mm256_setzero_si256(), _mm256_dpbusd_epi32(_mm256_setzero_si256(), _mm512_castsi512_si256(offset_bytes), levels));
      const __m256 d = _mm256_set1_ps(weight_scale * half_to_float(y.d));
      const __m256 last = _mm256_mul_ps(d, _mm256_cvtepi32_ps(_mm256_dpbusd_epi32(start, codes, levels)));
      acc[t] = _mm512_add_ps(acc[t], _mm512_zextps256_ps512(last));
    }
  }
}

// out[t * out_stride + r] = dot(weight row r, activation row t) for r < kRows,
// t < kTokens; w_stride and a_stride in bytes.
//
// With four rows, each activation pair is loaded and its start value and scales made
// once for all four. The rows are read block by block side by side, four streams a few
// hundred bytes apart that the hardware prefetcher does not follow (a third of the DRAM
// bandwidth, measured), so the kernel prefetches the tile kPrefetchTiles ahead itself,
// as one sequential stream spread over the loop.
template <typename Block, int kRows, int kTokens>
void dot_tile(int64_t n_blocks, const uint8_t* w, size_t w_stride, const uint8_t* a, size_t a_stride, float* out,
              int64_t out_stride) {
  static_assert(kRows == 1 || kRows == 4, "results are reduced one at a time or four at a time");
  __m512 acc[kRows][kTokens];
  for (int r = 0; r < kRows; ++r) {
    for (int t = 0; t < kTokens; ++t) acc[r][t] = _mm512_setzero_ps();
  }
  if constexpr (kRows == 1) {
    accumulate_row<Block, kTokens>(n_blocks, reinterpret_cast<const Block*>(w), a, a_stride, acc[0]);
  } else {
    constexpr int kPrefetchTiles = 2;
    const size_t tile_bytes = kRows * w_stride;
    const char* prefetch = reinterpret_cast<const char*>(w) + kPrefetchTiles * tile_bytes;
    const size_t n_pairs = static_cast<size_t>(n_blocks / 2);
    // Cache lines of the tile to prefetch per pair step, rounded up.
    const size_t lines_per_step = n_pairs > 0 ? (tile_bytes / 64 + n_pairs) / n_pairs : 0;
    const __m512i offset_bytes = _mm512_set1_epi8(Codes<Block>::kOffset);
    auto weight_blocks = [&](int r) { return reinterpret_cast<const Block*>(w + r * w_stride); };
    auto activation_blocks = [&](int t) { return reinterpret_cast<const BlockQ8_0*>(a + t * a_stride); };
    int64_t b = 0;
    for (; b + 2 <= n_blocks; b += 2) {
      for (size_t i = 0; i < lines_per_step; ++i, prefetch += 64) _mm_prefetch(prefetch, _MM_HINT_T0);
      __m512i codes[kRows];
      __m512 weight_scales[kRows];
      for (int r = 0; r < kRows; ++r) {
        const Block* x = weight_blocks(r) + b;
        codes[r] = Codes<Block>::pair(x);
        weight_scales[r] = scale_pair(x[0].d, x[1].d);
      }
      for (int t = 0; t < kTokens; ++t) {
        const BlockQ8_0* y = activation_blocks(t) + b;
        const __m512i levels = combine_256(load_256(y[0].qs), load_256(y[1].qs));
        const __m512i start = _mm512_sub_epi32(_mm512_setzero_si512(),
                                               _mm512_dpbusd_epi32(_mm512_setzero_si512(), offset_bytes, levels));
        const __m512 activation_scales = scale_pair(y[0].d, y[1].d);
        for (int r = 0; r < kRows; ++r) {
          const __m512i isum = _mm512_dpbusd_epi32(start, codes[r], levels);
          const __m512 d = _mm512_mul_ps(weight_scales[r], activation_scales);
          acc[r][t] = _mm512_fmadd_ps(d, _mm512_cvtepi32_ps(isum), acc[r][t]);
        }
      }
    }
    if (b < n_blocks) {  // an odd last block: the single-row code for each row
      for (int r = 0; r < kRows; ++r) {
        accumulate_row<Block, kTokens>(1, weight_blocks(r) + b, a + b * sizeof(BlockQ8_0), a_stride, acc[r]);
      }
    }
  }
  for (int t = 0; t < kTokens; ++t) {
    if constexpr (kRows == 4) {
      _mm_storeu_ps(out + t * out_stride, reduce_4x16(acc[0][t], acc[1][t], acc[2][t], acc[3][t]));
    } else {
      out[t * out_stride] = reduce_16(acc[0][t]);
    }
  }
}

template <typename Block>
float dot_row(int64_t n, const void* w, const void* a) {
  float result;
  dot_tile<Block, 1, 1>(n / kLegacyBlockSize, static_cast<const uint8_t*>(w), 0, static_cast<const uint8_t*>(a), 0,
                        &result, 0);
  return result;
}

// Tiles: up to four weight rows against up to four activation rows.
constexpr int kTokenTile = 4;
constexpr int kRowTile = 4;

template <typename Block>
void dot_rows(int64_t n, const void* w, const void* a, size_t a_stride, int64_t n_a_rows, float* out,
              int64_t out_stride) {
  const auto* weights = static_cast<const uint8_t*>(w);
  const auto* activations = static_cast<const uint8_t*>(a);
  const int64_t n_blocks = n / kLegacyBlockSize;
  int64_t t = 0;
  for (; t + kTokenTile <= n_a_rows; t += kTokenTile) {
    dot_tile<Block, 1, kTokenTile>(n_blocks, weights, 0, activations + t * a_stride, a_stride, out + t * out_stride,
                                   out_stride);
  }
  for (; t < n_a_rows; ++t) {
    dot_tile<Block, 1, 1>(n_blocks, weights, 0, activations + t * a_stride, a_stride, out + t * out_stride,
                          out_stride);
  }
}

template <typename Block>
void dot_matrix(int64_t n, const void* w, size_t w_stride, int64_t n_w_rows, const void* a, size_t a_stride,
                int64_t n_a_rows, float* out, int64_t out_stride) {
  const auto* weights = static_cast<const uint8_t*>(w);
  const auto* activations = static_cast<const uint8_t*>(a);
  const int64_t n_blocks = n / kLegacyBlockSize;
  const int64_t n_tiled_rows = n_w_rows / kRowTile * kRowTile;
  const int64_t panel = panel_rows(w_stride, kRowTile);
  // Cache panels of whole row tiles (x86_helpers.h); token tiles pass over each panel.
  for (int64_t r0 = 0; r0 < n_tiled_rows; r0 += panel) {
    const int64_t r1 = r0 + panel < n_tiled_rows ? r0 + panel : n_tiled_rows;
    int64_t t = 0;
    for (; t + kTokenTile <= n_a_rows; t += kTokenTile) {
      for (int64_t r = r0; r < r1; r += kRowTile) {
        dot_tile<Block, kRowTile, kTokenTile>(n_blocks, weights + r * w_stride, w_stride, activations + t * a_stride,
                                              a_stride, out + t * out_stride + r, out_stride);
      }
    }
    for (; t < n_a_rows; ++t) {
      for (int64_t r = r0; r < r1; r += kRowTile) {
        dot_tile<Block, kRowTile, 1>(n_blocks, weights + r * w_stride, w_stride, activations + t * a_stride, a_stride,
                                     out + t * out_stride + r, out_stride);
      }
    }
  }
  for (int64_t r = n_tiled_rows; r < n_w_rows; ++r) {
    dot_rows<Block>(n, weights + r * w_stride, a, a_stride, n_a_rows, out + r, out_stride);
  }
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
