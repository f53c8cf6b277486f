// The 16-row panel layout of a weight matrix: the form the AVX-512 legacy kernels
// transpose every block into at run time (quant/kernels/legacy_avx512.cc), stored once
// at load instead, so that matmuls read it directly (in order, with no transposition).
//
// Q8_0, Q4_0 and Q5_0. A matrix of n_rows (a multiple of 16) rows is a sequence of panels
// of 16 rows, each 16 * row_bytes bytes (the same size as in the file); panel p holds rows
// 16p .. 16p + 15 block by block, each block 16 * sizeof(block) bytes:
//   Q8_0 (544 bytes): 8 groups of 64: group k, bytes 4r .. 4r + 3 = quants 4k .. 4k + 3 of
//        row r as unsigned codes (each quant xor 0x80); then the 16 rows' d (F16, row r at
//        512 + 2r)
//   Q4_0 (288) / Q5_0 (352): 4 groups of 64: group j, bytes 4r .. 4r + 3 = bytes 4j .. 4j + 3
//        of row r's packed nibbles; Q5_0 then the 16 rows' qh (4 bytes each); then the d's
// Q4_K, Q5_K, Q6_K and IQ4_XS (their own kernels' layout, also the file's size): each
// super-block of a panel is its 16 rows' blocks interleaved dword by dword, 16 *
// sizeof(block) bytes: group i (64 bytes), bytes 4r .. 4r + 3 = bytes 4i .. 4i + 3 of row
// r's block, for every whole dword of the block (Q4_K 36, Q5_K 44, Q6_K 52, IQ4_XS 34); then Q6_K's last two
//   bytes (d) of the 16 rows, row r at 16 * 208 + 2r.
// A 64-byte group is then one vector with lane r = row r, as a 16 x 16 dword transpose of
// the rows would give it.
// MXFP4 (its AVX-512 kernel's layout, the file's size): each row on its own, its blocks in
// groups of 8 (136 bytes): 32-byte chunk i (i < 4), bytes 4k .. 4k + 3 = qs bytes 4i ..
// 4i + 3 of the group's block k; then the 8 blocks' exponents. The row's last
// n_blocks % 8 blocks follow as in the file.
// The kernels' results on this layout are bit-identical to theirs on the file's rows.
#pragma once

#include <cstddef>
#include <cstdint>

#include "gguf/tensor_type.h"

namespace tokenmill::quant {

inline constexpr int64_t kPanelRows = 16;
inline constexpr int kMxfp4GroupBlocks = 8;  // MXFP4: blocks regrouped together (see above)

// A packed matrix as the panel kernels walk it: n_blocks blocks a row, each block of a
// panel block_bytes (16 rows' blocks), so the panel of rows r0 .. r0 + 15 is panel_bytes
// from base + r0 / 16 * panel_bytes.
struct PanelMatrix {
  const uint8_t* base;
  int64_t n_blocks;
  int64_t panel_bytes;

  PanelMatrix(const void* w, int64_t blocks, size_t block_bytes)
      : base(static_cast<const uint8_t*>(w)), n_blocks(blocks), panel_bytes(blocks * static_cast<int64_t>(block_bytes)) {}
  const uint8_t* panel(int64_t r0) const { return base + r0 / kPanelRows * panel_bytes; }
};

// Whether `type` has a panel layout (and n_rows must still be a multiple of kPanelRows).
bool has_panel_layout(gguf::TensorType type);

// rows [n_rows, row_bytes] in the file's layout -> dst (n_rows * row_bytes bytes).
// REQUIRES: has_panel_layout(type), n_rows % kPanelRows == 0.
void pack_panels(gguf::TensorType type, const uint8_t* rows, int64_t n_rows, size_t row_bytes, uint8_t* dst);

// Row `row` of a packed matrix as n_cols floats (what dequantize_row gives for the row).
void dequantize_panel_row(gguf::TensorType type, const uint8_t* panels, int64_t row, int64_t n_cols,
                          size_t row_bytes, float* out);

}  // namespace tokenmill::quant
