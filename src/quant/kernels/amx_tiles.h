// What every AMX kernel file shares: the tile configuration operand and the tokens a tile
// holds. Only files compiled with AMX (*_amx.cc) and the AVX-512 files they share types
// with include this header.
#pragma once

#include <cstdint>

namespace tokenmill::quant::amx {

// Tokens per AMX tile: the rows of its activation and result tiles.
inline constexpr int kTileTokens = 16;

// The 64-byte LDTILECFG operand (palette 1). Keep each kernel's instance static: GCC 12's
// _tile_loadconfig does not tell the compiler it reads its operand, and the stores
// filling a local one were dropped.
struct TileConfig {
  uint8_t palette = 1;
  uint8_t start_row = 0;
  uint8_t reserved[14] = {};
  uint16_t bytes_per_row[16] = {};
  uint8_t rows[16] = {};
};
static_assert(sizeof(TileConfig) == 64);

// Tiles 0 .. n_tiles - 1 each 16 rows of 64 bytes (the largest tile: 16 x 64 int8, or 16
// x 16 int32).
constexpr TileConfig full_tiles_config(int n_tiles) {
  TileConfig config;
  for (int tile = 0; tile < n_tiles; ++tile) {
    config.rows[tile] = 16;
    config.bytes_per_row[tile] = 64;
  }
  return config;
}

// legacy_amx.cc: loads this thread's tile configuration / releases the tiles, around every
// run of tile kernel calls on a thread. One configuration serves every tile kernel: A is
// 16 tokens x 32 quant bytes, B 8 rows of 64 bytes (four codes of each of 16 weight rows
// a row), C 16 tokens x 16 int32 sums.
void begin_tiles();
void end_tiles();

// kquant_amx.cc: a Q4_K super-block's T (sum_j sc_j * isum_j) on tiles, for the AVX-512
// panel kernel, as two exact parts: sc_j = 8 * (sc_j >> 3) + (sc_j & 7), each part times a
// code (at most 7 * 15) fitting a signed byte, so the scales ride in the weight tiles and
// each half of T is one tile sum over 128 quants. The codes of one super-block as the
// tiles read them: four slices of 64 quants (sub-blocks 2m, 2m + 1), each as two 16-row x
// 64-byte tiles, high part then low part; row k lane r = codes 4k .. 4k + 3 of weight row r
// of the slice times its sub-block's part.
inline constexpr int kQ4KSliceBytes = 16 * 64;
inline constexpr int kQ4KBlockCodesBytes = 4 * 2 * kQ4KSliceBytes;
// Loads the tile configuration of q4_k_block_sums (end_tiles releases it).
void begin_q4_k_tiles();
// For super-blocks b < n_blocks (codes: kQ4KBlockCodesBytes each; token t's 256 quants at
// quants + b * quants_block_stride + t * 256): sums[((b * 4 + c) * kTileTokens + t) * 16 + r]
// for row r and token t: c = 0 / 1 the high / low part of T over sub-blocks 0-3, c = 2 / 3
// over sub-blocks 4-7.
void q4_k_block_sums(int n_blocks, const uint8_t* codes, const int8_t* quants, int64_t quants_block_stride,
                     int32_t* sums);

}  // namespace tokenmill::quant::amx
