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

// kquant_amx.cc: a K-quant super-block's T (amx_tiles' callers: the packed Q4_K panels
// and the Q6_K matrix kernel, kquants_avx512.cc) on tiles, as two halves of 128 quants,
// each the sum of two exact parts of the weights that fit a signed byte:
// - Q4_K: the scale split sc_j = 8 * (sc_j >> 3) + (sc_j & 7), each part times a code (at
//   most 7 * 15); half h is sub-blocks 4h .. 4h + 3, T_h = 8 * high + low;
// - Q6_K: each weight w = sc_j * q (|w| <= 128 * 63) split w = 64 * (w >> 6) + (w & 63);
//   half 0 is the sub-blocks with bit 1 of j clear (PackedQ6K's T_lo), half 1 the others,
//   T_h = 64 * high + low (before the -32 terms).
// So the scales ride in the weight tiles and each part of a half is one tile sum. The
// codes of one super-block as the tiles read them: four slices of 64 quants (slices 2h,
// 2h + 1 are half h), each as two 16-row x 64-byte tiles, high part then low part; row k
// lane r = the parts of quants 4k .. 4k + 3 of the slice, of weight row r. The tokens'
// quants of slice m are bytes 64m .. 64m + 63 of their 256 (for Q6_K, in the halves'
// order: the caller reorders them).
inline constexpr int kSliceBytes = 16 * 64;
inline constexpr int kBlockCodesBytes = 4 * 2 * kSliceBytes;
// Loads the tile configuration of the block sums (end_tiles releases it).
void begin_block_sums();
// One super-block's sums in two calls, so that the caller's float steps of the previous
// super-block run while the tile unit computes: start_block_sums(codes, quants) with
// the block's codes (kBlockCodesBytes) and its 16 tokens' 256 quants each (256 bytes
// apart) starts them; store_block_sums(sums) then writes sums[(c * kTileTokens + t) * 16
// + r] for row r and token t: c = 0 / 1 the high / low part of half 0, c = 2 / 3 of
// half 1. Between the two, no other tile work on the thread.
void start_block_sums(const uint8_t* codes, const int8_t* quants);
void store_block_sums(int32_t* sums);

}  // namespace tokenmill::quant::amx
