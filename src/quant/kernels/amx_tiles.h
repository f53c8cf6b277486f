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

}  // namespace tokenmill::quant::amx
