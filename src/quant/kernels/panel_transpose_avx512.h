// 16 rows side by side turned into vectors with one int32 lane per row (lane r = row r),
// and the token tiling, for the AVX-512 panel kernels (legacy_avx512.cc, kquants_avx512.cc).
//
// For *_avx512.cc files only: internal linkage, as x86_helpers.h explains.
#pragma once

#if !defined(__AVX512F__) || !defined(__AVX512BW__)
#error "panel_transpose_avx512.h is for files compiled with -mavx512* (name them *_avx512.cc)"
#endif

#include <immintrin.h>

#include <cstdint>
#include <type_traits>

#include "quant/kernels/x86_helpers.h"

namespace tokenmill::quant {
namespace {

// 16 x 16 bytes as four vectors, lane r of vector j = bytes 4j .. 4j + 3 of row r.
inline void transpose_16x16(const uint8_t* const* src, __m512i* out) {
  __m512i z[4];  // z[q] 128-bit lanes: rows q, 4 + q, 8 + q, 12 + q
  for (int q = 0; q < 4; ++q) {
    __m512i v = _mm512_castsi128_si512(load_128(src[q]));
    v = _mm512_inserti32x4(v, load_128(src[4 + q]), 1);
    v = _mm512_inserti32x4(v, load_128(src[8 + q]), 2);
    z[q] = _mm512_inserti32x4(v, load_128(src[12 + q]), 3);
  }
  const __m512i t0 = _mm512_unpacklo_epi32(z[0], z[1]);
  const __m512i t1 = _mm512_unpackhi_epi32(z[0], z[1]);
  const __m512i t2 = _mm512_unpacklo_epi32(z[2], z[3]);
  const __m512i t3 = _mm512_unpackhi_epi32(z[2], z[3]);
  out[0] = _mm512_unpacklo_epi64(t0, t2);
  out[1] = _mm512_unpackhi_epi64(t0, t2);
  out[2] = _mm512_unpacklo_epi64(t1, t3);
  out[3] = _mm512_unpackhi_epi64(t1, t3);
}

// The first 8 bytes of one block of each row as two vectors, lane r of vector j = bytes
// 4j .. 4j + 3 of row r (transpose_16x16's first two outputs; 8-byte loads).
__attribute__((always_inline)) inline void transpose_16x8(const uint8_t* const* src, __m512i* out) {
  __m512i z[4];
  for (int q = 0; q < 4; ++q) {
    __m512i v = _mm512_castsi128_si512(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(src[q])));
    v = _mm512_inserti32x4(v, _mm_loadl_epi64(reinterpret_cast<const __m128i*>(src[4 + q])), 1);
    v = _mm512_inserti32x4(v, _mm_loadl_epi64(reinterpret_cast<const __m128i*>(src[8 + q])), 2);
    z[q] = _mm512_inserti32x4(v, _mm_loadl_epi64(reinterpret_cast<const __m128i*>(src[12 + q])), 3);
  }
  const __m512i t0 = _mm512_unpacklo_epi32(z[0], z[1]);
  const __m512i t2 = _mm512_unpacklo_epi32(z[2], z[3]);
  out[0] = _mm512_unpacklo_epi64(t0, t2);
  out[1] = _mm512_unpackhi_epi64(t0, t2);
}

// 16 x 32 bytes as eight vectors, lane r of vector k = bytes 4k .. 4k + 3 of row r: an
// 8 x 8 dword transpose in each 256-bit half.
inline void transpose_16x32(const uint8_t* const* src, __m512i* out) {
  // z[i] = [row i | row i + 4], z[4 + i] = [row i + 8 | row i + 12] (i < 4).
  __m512i z[8];
  for (int i = 0; i < 4; ++i) {
    z[i] = combine_256(load_256(src[i]), load_256(src[i + 4]));
    z[i + 4] = combine_256(load_256(src[i + 8]), load_256(src[i + 12]));
  }
  __m512i u[8];
  for (int g = 0; g < 2; ++g) {
    const __m512i t0 = _mm512_unpacklo_epi32(z[4 * g + 0], z[4 * g + 1]);
    const __m512i t1 = _mm512_unpackhi_epi32(z[4 * g + 0], z[4 * g + 1]);
    const __m512i t2 = _mm512_unpacklo_epi32(z[4 * g + 2], z[4 * g + 3]);
    const __m512i t3 = _mm512_unpackhi_epi32(z[4 * g + 2], z[4 * g + 3]);
    u[4 * g + 0] = _mm512_unpacklo_epi64(t0, t2);
    u[4 * g + 1] = _mm512_unpackhi_epi64(t0, t2);
    u[4 * g + 2] = _mm512_unpacklo_epi64(t1, t3);
    u[4 * g + 3] = _mm512_unpackhi_epi64(t1, t3);
  }
  // u[k] 128-bit lanes: [rows 0-3 dword k | rows 0-3 dword k + 4 | rows 4-7 dword k |
  // rows 4-7 dword k + 4]; u[4 + k] the same for rows 8-15.
  for (int k = 0; k < 4; ++k) {
    out[k] = _mm512_shuffle_i64x2(u[k], u[4 + k], _MM_SHUFFLE(2, 0, 2, 0));
    out[k + 4] = _mm512_shuffle_i64x2(u[k], u[4 + k], _MM_SHUFFLE(3, 1, 3, 1));
  }
}

// Calls tile(n, first token) over n_tokens tokens in the fewest tiles of at most kMax,
// their sizes differing by at most one (16 tokens: 6, 5, 5), n as a
// std::integral_constant.
template <int kMax, typename Tile>
void for_balanced_token_tiles(int64_t n_tokens, Tile&& tile) {
  const int64_t n_tiles = (n_tokens + kMax - 1) / kMax;
  int64_t t = 0;
  for (int64_t i = 0; i < n_tiles; ++i) {
    const int64_t left = n_tiles - i;
    const int size = static_cast<int>((n_tokens - t + left - 1) / left);
    dispatch_tile_size<kMax>(size, t, tile);
    t += size;
  }
}

}  // namespace
}  // namespace tokenmill::quant
