// AMX tiles for the Q4_K and Q6_K kernels: per super-block, 16 tokens against 16 weight
// rows, the two parts of each half of T (amx_tiles.h) as four result tiles, each the sum
// of two tdpbssd over 64 quants (tile A: the tokens' quants; tile B: the rows' weight
// parts). Everything after T (the minima or offsets and the float steps) is the AVX-512
// panel kernel's, so each (row, token) result has that kernel's bits.

#include <immintrin.h>

#include <cstdint>

#include "quant/blocks.h"
#include "quant/kernels/amx_tiles.h"

namespace tokenmill::quant::amx {

namespace {

// Tiles 0-3: the four result parts (16 tokens x 16 int32); 4: quants (16 tokens x 64
// bytes); 5, 6: a slice's high and low weight parts (16 rows of 64 bytes).
alignas(64) constexpr TileConfig kBlockSumsTileConfig = full_tiles_config(7);

constexpr int kRowBytes = 64;

// Slice m of a super-block into tiles 4 (the tokens' 64 quants) and 5, 6 (the weight parts).
__attribute__((always_inline)) inline void load_slice(const uint8_t* codes, const int8_t* quants, int m) {
  _tile_loadd(4, quants + 64 * m, kSuperBlockSize);
  _tile_loadd(5, codes + 2 * m * kSliceBytes, kRowBytes);
  _tile_loadd(6, codes + (2 * m + 1) * kSliceBytes, kRowBytes);
}

}  // namespace

void begin_block_sums() { _tile_loadconfig(&kBlockSumsTileConfig); }

void start_block_sums(const uint8_t* codes, const int8_t* quants) {
  _tile_zero(0);
  _tile_zero(1);
  _tile_zero(2);
  _tile_zero(3);
  // Slices 0, 1 (half 0) into tiles 0 and 1; slices 2, 3 into tiles 2 and 3.
#pragma GCC unroll 4
  for (int m = 0; m < 4; ++m) {
    load_slice(codes, quants, m);
    if (m < 2) {
      _tile_dpbssd(0, 4, 5);
      _tile_dpbssd(1, 4, 6);
    } else {
      _tile_dpbssd(2, 4, 5);
      _tile_dpbssd(3, 4, 6);
    }
  }
}

void store_block_sums(int32_t* sums) {
  _tile_stored(0, sums, kRowBytes);
  _tile_stored(1, sums + kTileTokens * 16, kRowBytes);
  _tile_stored(2, sums + 2 * kTileTokens * 16, kRowBytes);
  _tile_stored(3, sums + 3 * kTileTokens * 16, kRowBytes);
}

}  // namespace tokenmill::quant::amx
