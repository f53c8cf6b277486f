// AMX tiles for the packed legacy formats (Q8_0, and Q4_0 / Q5_0 rebuilt in Q8_0's
// layout) against 16 staged Q8_0 activation rows.
//
// Per block, one tdpbssd multiplies the 16 tokens' 32 quants (tile A: 16 rows x 32
// bytes, straight from the staging buffer) by the panel's 16 rows of signed levels (tile
// B: 8 rows x 64 bytes, the packed layout's eight code vectors less the format's offset:
// row k, bytes 4r .. 4r + 3 = levels 4k .. 4k + 3 of weight row r) into a 16 x 16 int32
// tile whose row t, stored and loaded as one vector, has lane r = sum(level * a) for
// weight row r: the AVX-512 kernel's isum, whose start (-k * sum(a)) the levels already
// paid. From there the float steps are that kernel's, acc = fma(float(isum), d_r * d_t,
// acc), block by block. Integer sums are exact, so every (row, token) result has the
// AVX-512 kernel's bits: a token's logits do not depend on which kernel or batch
// computed them.

#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

#include <immintrin.h>

#include <cstdint>

#include "quant/kernels/legacy_packed_avx512.h"
#include "quant/kernels/x86_helpers.h"

namespace tokenmill::quant::amx {

namespace {

// Tile registers (GCC's tile intrinsics paste their number into the instruction, so the
// calls below spell them as literals): 0 = A, tokens x quants; 1 = B, codes, four per
// int32 column; 2 = C, tokens x weight rows, int32.
constexpr int kTileA = 0, kTileB = 1, kTileC = 2;

constexpr TileConfig tile_config() {
  TileConfig config;
  config.rows[kTileA] = kTileTokens;
  config.bytes_per_row[kTileA] = kLegacyBlockSize;
  config.rows[kTileB] = kLegacyBlockSize / 4;
  config.bytes_per_row[kTileB] = avx512::kPanel * 4;
  config.rows[kTileC] = kTileTokens;
  config.bytes_per_row[kTileC] = avx512::kPanel * sizeof(int32_t);
  for (int tile = 0; tile < 3; ++tile) {  // the second set, tiles 3-5, shaped as 0-2
    config.rows[3 + tile] = config.rows[tile];
    config.bytes_per_row[3 + tile] = config.bytes_per_row[tile];
  }
  return config;
}

alignas(64) constexpr TileConfig kTileConfig = tile_config();

// One block's integer sums: sums[t * 16 + r] = sum over the block of level(r) * a(t).
// Two sets of tile registers (kSet 0: tiles 0-2, 1: tiles 3-5) so that consecutive blocks
// do not wait on one result tile.
template <int kSet>
__attribute__((always_inline)) inline void block_sums(const uint8_t* quants, const uint8_t* levels, int32_t* sums) {
  constexpr int kRowBytes = avx512::kPanel * 4;
  if constexpr (kSet == 0) {
    _tile_loadd(0, quants, kLegacyBlockSize);
    _tile_loadd(1, levels, kRowBytes);
    _tile_zero(2);
    _tile_dpbssd(2, 0, 1);
    _tile_stored(2, sums, kRowBytes);
  } else {
    _tile_loadd(3, quants, kLegacyBlockSize);
    _tile_loadd(4, levels, kRowBytes);
    _tile_zero(5);
    _tile_dpbssd(5, 3, 4);
    _tile_stored(5, sums, kRowBytes);
  }
}

// Blocks whose integer sums are computed (tiles) before their float steps (vectors): the
// tile instructions are asm statements that clobber memory, so interleaving them with the
// float steps kept the accumulators in memory instead of registers.
constexpr int kChunkBlocks = 8;

}  // namespace

void begin_tiles() { _tile_loadconfig(&kTileConfig); }

void end_tiles() { _tile_release(); }

void dot_packed_tile(int64_t n_blocks, const uint8_t* codes, const uint8_t* panel, avx512::StagedTokens tokens,
                     float* out, int64_t out_stride, const avx512::PrefetchShare& prefetch, RunningMax* row_max,
                     int64_t first_column) {
  __m512 acc[kTileTokens];
  for (int t = 0; t < kTileTokens; ++t) acc[t] = _mm512_setzero_ps();
  alignas(64) int32_t sums[kChunkBlocks][kTileTokens * avx512::kPanel];
  for (int64_t b0 = 0; b0 < n_blocks; b0 += kChunkBlocks) {
    const int n_chunk = n_blocks - b0 < kChunkBlocks ? static_cast<int>(n_blocks - b0) : kChunkBlocks;
    for (int i = 0; i < n_chunk; i += 2) {
      const int64_t b = b0 + i;
      block_sums<0>(tokens.block_quants(b), codes + b * avx512::kPackedQ8CodesBytes, sums[i]);
      if (i + 1 < n_chunk) {
        block_sums<1>(tokens.block_quants(b + 1), codes + (b + 1) * avx512::kPackedQ8CodesBytes, sums[i + 1]);
      }
    }
    prefetch.fetch_steps(b0, b0 + n_chunk);
    for (int i = 0; i < n_chunk; ++i) {
      const int64_t b = b0 + i;
      const __m512 scales =
          _mm512_cvtph_ps(load_256(panel + b * avx512::kPackedQ8BlockBytes + avx512::kPackedQ8CodesBytes));
      for (int t = 0; t < kTileTokens; ++t) {
        const __m512i isum = _mm512_load_si512(sums[i] + t * avx512::kPanel);
        const float d = tokens.token(b, t).d;
        acc[t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(isum), _mm512_mul_ps(scales, _mm512_set1_ps(d)), acc[t]);
      }
    }
  }
  if (out != nullptr) {
    for (int t = 0; t < kTileTokens; ++t) _mm512_storeu_ps(out + t * out_stride, acc[t]);
  }
  if (row_max != nullptr) {
    for (int t = 0; t < kTileTokens; ++t) fold_running_max(acc[t], first_column, row_max[t]);
  }
}

}  // namespace tokenmill::quant::amx
