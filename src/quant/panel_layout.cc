#include "quant/panel_layout.h"

#include <cassert>
#include <cstring>

#include "base/half.h"
#include "quant/blocks.h"

namespace tokenmill::quant {

namespace {

constexpr size_t kCodeBytes = 8 * 64;                                          // 8 groups x 16 rows x 4 bytes
constexpr size_t kPanelBlockBytes = kCodeBytes + kPanelRows * sizeof(uint16_t);  // + 16 scales
static_assert(kPanelBlockBytes == kPanelRows * sizeof(BlockQ8_0));

}  // namespace

bool has_panel_layout(gguf::TensorType type) { return type == gguf::TensorType::kQ8_0; }

void pack_panels(gguf::TensorType type, const uint8_t* rows, int64_t n_rows, size_t row_bytes, uint8_t* dst) {
  assert(has_panel_layout(type) && n_rows % kPanelRows == 0);
  (void)type;
  const int64_t n_blocks = static_cast<int64_t>(row_bytes / sizeof(BlockQ8_0));
  for (int64_t p = 0; p < n_rows / kPanelRows; ++p) {
    uint8_t* panel = dst + static_cast<size_t>(p) * kPanelRows * row_bytes;
    for (int64_t b = 0; b < n_blocks; ++b) {
      uint8_t* out = panel + static_cast<size_t>(b) * kPanelBlockBytes;
      for (int64_t r = 0; r < kPanelRows; ++r) {
        const auto& block =
            reinterpret_cast<const BlockQ8_0*>(rows + static_cast<size_t>(p * kPanelRows + r) * row_bytes)[b];
        for (int k = 0; k < 8; ++k) {
          for (int i = 0; i < 4; ++i) {
            out[64 * k + 4 * r + i] = static_cast<uint8_t>(block.qs[4 * k + i]) ^ 0x80;
          }
        }
        std::memcpy(out + kCodeBytes + 2 * r, &block.d, sizeof block.d);
      }
    }
  }
}

void dequantize_panel_row(gguf::TensorType type, const uint8_t* panels, int64_t row, int64_t n_cols,
                          size_t row_bytes, float* out) {
  assert(has_panel_layout(type));
  (void)type;
  const uint8_t* panel = panels + static_cast<size_t>(row / kPanelRows) * kPanelRows * row_bytes;
  const int64_t r = row % kPanelRows;
  for (int64_t b = 0; b < n_cols / 32; ++b) {
    const uint8_t* block = panel + static_cast<size_t>(b) * kPanelBlockBytes;
    uint16_t d_bits;
    std::memcpy(&d_bits, block + kCodeBytes + 2 * r, sizeof d_bits);
    const float d = f16_to_f32(d_bits);
    for (int k = 0; k < 8; ++k) {
      for (int i = 0; i < 4; ++i) {
        const auto level = static_cast<int8_t>(block[64 * k + 4 * r + i] ^ 0x80);
        out[32 * b + 4 * k + i] = static_cast<float>(level) * d;
      }
    }
  }
}

}  // namespace tokenmill::quant
