// The lattice points of the IQ1/IQ2/IQ3 formats (blocks.h): one row of values per index.
// The grids are fixed by the GGUF format; iq_grids.inc is generated from gguf-py's copy by
// tools/make_iq_grids.py.
#pragma once

#include <cstdint>

namespace tokenmill::quant {

extern const uint8_t kIq2XxsGrid[256][8];   // values 8, 25, 43
extern const uint8_t kIq2XsGrid[512][8];
extern const uint8_t kIq2SGrid[1024][8];
extern const uint8_t kIq3XxsGrid[256][4];   // values 4, 12, ..., 52, 62
extern const uint8_t kIq3SGrid[512][4];     // values 1, 3, ..., 15
extern const int8_t kIq1SGrid[2048][8];     // values -1, 0, 1 (IQ1_S and IQ1_M)

// The 8 sign bits of a group from its 7 stored ones: bit 7 set where the 7 hold an odd
// count of minus signs, so every pattern has an even count.
constexpr uint8_t iq_sign_pattern(uint32_t stored) {
  stored &= 0x7f;
  return static_cast<uint8_t>(stored | ((__builtin_popcount(stored) & 1) << 7));
}

}  // namespace tokenmill::quant
