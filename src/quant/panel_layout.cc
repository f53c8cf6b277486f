#include "quant/panel_layout.h"

#include <cassert>
#include <cstring>
#include <vector>

#include "base/half.h"
#include "quant/blocks.h"
#include "quant/kernels_ref.h"
#include "quant/type_traits.h"

namespace tokenmill::quant {

namespace {

// One block of a panel: `codes` bytes of transposed quants (group g, bytes 4r .. 4r + 3
// for row r), then Q5_0's qh (4 bytes per row), then the 16 scales.
struct Layout {
  size_t block_bytes;  // of one row's block in the file
  size_t codes;        // transposed bytes: Q8_0 8 groups of codes, Q4_0 / Q5_0 4 groups of nibbles
  size_t qh;           // Q5_0: 64, else 0
  size_t scales() const { return codes + qh; }
  size_t panel_block() const { return kPanelRows * block_bytes; }
};

Layout layout_of(gguf::TensorType type) {
  switch (type) {
    case gguf::TensorType::kQ8_0: return {sizeof(BlockQ8_0), 8 * 64, 0};
    case gguf::TensorType::kQ4_0: return {sizeof(BlockQ4_0), 4 * 64, 0};
    case gguf::TensorType::kQ5_0: return {sizeof(BlockQ5_0), 4 * 64, 64};
    default: return {0, 0, 0};
  }
}

// Row r's quants of one block as the bytes to transpose (Q8_0: codes = qs ^ 0x80; the
// others: their packed nibbles), its scale, and (Q5_0) qh.
struct RowBlock {
  const uint8_t* bytes;
  uint16_t d;
  const uint8_t* qh;
};

RowBlock row_block(gguf::TensorType type, const uint8_t* block) {
  switch (type) {
    case gguf::TensorType::kQ8_0: {
      const auto* b = reinterpret_cast<const BlockQ8_0*>(block);
      return {reinterpret_cast<const uint8_t*>(b->qs), b->d, nullptr};
    }
    case gguf::TensorType::kQ4_0: {
      const auto* b = reinterpret_cast<const BlockQ4_0*>(block);
      return {b->qs, b->d, nullptr};
    }
    default: {
      const auto* b = reinterpret_cast<const BlockQ5_0*>(block);
      return {b->qs, b->d, b->qh};
    }
  }
}

// The K-quants' (and IQ4_XS's) layout: a panel super-block is its 16 rows' blocks interleaved dword by
// dword (whole dwords only; the rest of each block, Q6_K's d, follows row by row).
size_t k_quant_block_bytes(gguf::TensorType type) {
  switch (type) {
    case gguf::TensorType::kQ4_K: return sizeof(BlockQ4_K);
    case gguf::TensorType::kQ5_K: return sizeof(BlockQ5_K);
    case gguf::TensorType::kQ6_K: return sizeof(BlockQ6_K);
    case gguf::TensorType::kIQ4_XS: return sizeof(BlockIQ4_XS);
    default: return 0;
  }
}

// Where row r's block lies in a panel super-block of 16 blocks of `bytes` bytes: calls
// piece(block_offset, panel_offset, n) for each run of n bytes: its whole dwords 64 bytes
// apart from byte 4r on, then its tail (the bytes past them) at 16 * whole + tail * r.
template <typename Piece>
void for_each_piece(size_t bytes, int64_t r, Piece piece) {
  const size_t whole = bytes / 4 * 4, tail = bytes - whole;
  for (size_t i = 0; i < whole; i += 4) piece(i, 16 * i + 4 * static_cast<size_t>(r), size_t{4});
  if (tail != 0) piece(whole, kPanelRows * whole + tail * static_cast<size_t>(r), tail);
}

void pack_interleaved(size_t block_bytes, const uint8_t* rows, int64_t n_rows, size_t row_bytes, uint8_t* dst) {
  const int64_t n_blocks = static_cast<int64_t>(row_bytes / block_bytes);
  for (int64_t p = 0; p < n_rows / kPanelRows; ++p) {
    uint8_t* panel = dst + static_cast<size_t>(p) * kPanelRows * row_bytes;
    for (int64_t b = 0; b < n_blocks; ++b) {
      uint8_t* out = panel + static_cast<size_t>(b) * kPanelRows * block_bytes;
      for (int64_t r = 0; r < kPanelRows; ++r) {
        const uint8_t* block = rows + static_cast<size_t>(p * kPanelRows + r) * row_bytes + b * block_bytes;
        for_each_piece(block_bytes, r, [&](size_t from, size_t to, size_t n) { std::memcpy(out + to, block + from, n); });
      }
    }
  }
}

void dequantize_interleaved_row(gguf::TensorType type, size_t block_bytes, const uint8_t* panels, int64_t row,
                                int64_t n_cols, size_t row_bytes, float* out) {
  const uint8_t* panel = panels + static_cast<size_t>(row / kPanelRows) * kPanelRows * row_bytes;
  const int64_t r = row % kPanelRows;
  uint8_t block[sizeof(BlockQ6_K)];
  const TypeTraits& traits = type_traits(type);
  for (int64_t b = 0; b < n_cols / kSuperBlockSize; ++b) {
    const uint8_t* packed = panel + static_cast<size_t>(b) * kPanelRows * block_bytes;
    for_each_piece(block_bytes, r, [&](size_t to, size_t from, size_t n) { std::memcpy(block + to, packed + from, n); });
    traits.dequantize_row(block, out + kSuperBlockSize * b, kSuperBlockSize);
  }
}

// MXFP4: each row on its own, its blocks in groups of kMxfp4GroupBlocks (see the header).
constexpr int kMxGroupBlocks = kMxfp4GroupBlocks;

void pack_mxfp4_row(const uint8_t* src, size_t row_bytes, uint8_t* dst) {
  const auto* blocks = reinterpret_cast<const BlockMXFP4*>(src);
  const size_t n_blocks = row_bytes / sizeof(BlockMXFP4), full = n_blocks / kMxGroupBlocks;
  for (size_t g = 0; g < full; ++g) {
    uint8_t* group = dst + g * kMxGroupBlocks * sizeof(BlockMXFP4);
    for (int k = 0; k < kMxGroupBlocks; ++k) {
      const BlockMXFP4& block = blocks[g * kMxGroupBlocks + k];
      for (int i = 0; i < 4; ++i) std::memcpy(group + 32 * i + 4 * k, block.qs + 4 * i, 4);
      group[128 + k] = block.e;
    }
  }
  const size_t done = full * kMxGroupBlocks * sizeof(BlockMXFP4);
  std::memcpy(dst + done, src + done, row_bytes - done);
}

void unpack_mxfp4_row(const uint8_t* src, size_t row_bytes, uint8_t* dst) {
  auto* blocks = reinterpret_cast<BlockMXFP4*>(dst);
  const size_t n_blocks = row_bytes / sizeof(BlockMXFP4), full = n_blocks / kMxGroupBlocks;
  for (size_t g = 0; g < full; ++g) {
    const uint8_t* group = src + g * kMxGroupBlocks * sizeof(BlockMXFP4);
    for (int k = 0; k < kMxGroupBlocks; ++k) {
      BlockMXFP4& block = blocks[g * kMxGroupBlocks + k];
      for (int i = 0; i < 4; ++i) std::memcpy(block.qs + 4 * i, group + 32 * i + 4 * k, 4);
      block.e = group[128 + k];
    }
  }
  const size_t done = full * kMxGroupBlocks * sizeof(BlockMXFP4);
  std::memcpy(dst + done, src + done, row_bytes - done);
}

}  // namespace

bool has_panel_layout(gguf::TensorType type) {
  return layout_of(type).block_bytes != 0 || k_quant_block_bytes(type) != 0 || type == gguf::TensorType::kMXFP4;
}

void pack_panels(gguf::TensorType type, const uint8_t* rows, int64_t n_rows, size_t row_bytes, uint8_t* dst) {
  assert(has_panel_layout(type) && n_rows % kPanelRows == 0);
  if (type == gguf::TensorType::kMXFP4) {
    for (int64_t r = 0; r < n_rows; ++r) pack_mxfp4_row(rows + r * row_bytes, row_bytes, dst + r * row_bytes);
    return;
  }
  if (const size_t block_bytes = k_quant_block_bytes(type); block_bytes != 0) {
    pack_interleaved(block_bytes, rows, n_rows, row_bytes, dst);
    return;
  }
  const Layout layout = layout_of(type);
  assert(layout.scales() + kPanelRows * sizeof(uint16_t) == layout.panel_block());
  const uint8_t flip = type == gguf::TensorType::kQ8_0 ? 0x80 : 0x00;
  const int64_t n_blocks = static_cast<int64_t>(row_bytes / layout.block_bytes);
  for (int64_t p = 0; p < n_rows / kPanelRows; ++p) {
    uint8_t* panel = dst + static_cast<size_t>(p) * kPanelRows * row_bytes;
    for (int64_t b = 0; b < n_blocks; ++b) {
      uint8_t* out = panel + static_cast<size_t>(b) * layout.panel_block();
      for (int64_t r = 0; r < kPanelRows; ++r) {
        const uint8_t* src_row = rows + static_cast<size_t>(p * kPanelRows + r) * row_bytes;
        const RowBlock block = row_block(type, src_row + static_cast<size_t>(b) * layout.block_bytes);
        for (size_t g = 0; g < layout.codes / 64; ++g) {
          for (int i = 0; i < 4; ++i) out[64 * g + 4 * r + i] = block.bytes[4 * g + i] ^ flip;
        }
        if (block.qh != nullptr) std::memcpy(out + layout.codes + 4 * r, block.qh, 4);
        std::memcpy(out + layout.scales() + 2 * r, &block.d, sizeof block.d);
      }
    }
  }
}

void dequantize_panel_row(gguf::TensorType type, const uint8_t* panels, int64_t row, int64_t n_cols,
                          size_t row_bytes, float* out) {
  assert(has_panel_layout(type));
  if (type == gguf::TensorType::kMXFP4) {
    std::vector<uint8_t> plain(row_bytes);
    unpack_mxfp4_row(panels + static_cast<size_t>(row) * row_bytes, row_bytes, plain.data());
    ref::dequantize_row_mxfp4(plain.data(), out, n_cols);
    return;
  }
  if (const size_t block_bytes = k_quant_block_bytes(type); block_bytes != 0) {
    dequantize_interleaved_row(type, block_bytes, panels, row, n_cols, row_bytes, out);
    return;
  }
  const Layout layout = layout_of(type);
  const uint8_t* panel = panels + static_cast<size_t>(row / kPanelRows) * kPanelRows * row_bytes;
  const int64_t r = row % kPanelRows;
  for (int64_t b = 0; b < n_cols / 32; ++b) {
    const uint8_t* block = panel + static_cast<size_t>(b) * layout.panel_block();
    uint16_t d_bits;
    std::memcpy(&d_bits, block + layout.scales() + 2 * r, sizeof d_bits);
    const float d = f16_to_f32(d_bits);
    float* x = out + 32 * b;
    if (type == gguf::TensorType::kQ8_0) {
      for (int k = 0; k < 8; ++k) {
        for (int i = 0; i < 4; ++i) x[4 * k + i] = static_cast<float>(static_cast<int8_t>(block[64 * k + 4 * r + i] ^ 0x80)) * d;
      }
      continue;
    }
    // Byte j of the nibbles: element j (low) and 16 + j (high), as in the file.
    uint32_t qh = 0;
    if (type == gguf::TensorType::kQ5_0) std::memcpy(&qh, block + layout.codes + 4 * r, sizeof qh);
    const int offset = type == gguf::TensorType::kQ5_0 ? 16 : 8;
    for (int j = 0; j < 16; ++j) {
      const uint8_t byte = block[64 * (j / 4) + 4 * r + j % 4];
      const int low = (byte & 0x0f) | (((qh >> j) & 1) << 4);
      const int high = (byte >> 4) | (((qh >> (j + 16)) & 1) << 4);
      x[j] = static_cast<float>(low - offset) * d;
      x[j + 16] = static_cast<float>(high - offset) * d;
    }
  }
}

}  // namespace tokenmill::quant
