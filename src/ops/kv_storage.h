// The memory behind a paged KV cache: for every layer, one array of fixed-size blocks of
// keys and one of values, stored as F16 (as llama.cpp's default cache type).
//
//   keys[layer]: [n_blocks, block_size, n_kv_heads * head_dim]   (F16)
//   values[layer]: the same shape
//
// Which block holds which positions of which sequence is decided above this layer (kv/):
// here a block id is just an index.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace tokenmill::ops {

struct KvShape {
  int32_t n_layers = 0;
  int32_t n_blocks = 0;
  int32_t block_size = 16;
  int32_t n_kv_heads = 0;
  int32_t head_dim = 0;

  int64_t row_elements() const { return static_cast<int64_t>(n_kv_heads) * head_dim; }
  // Bytes of keys plus values over all layers.
  int64_t total_bytes() const {
    return 2ll * n_layers * n_blocks * block_size * row_elements() * static_cast<int64_t>(sizeof(uint16_t));
  }
};

class KvStorage {
 public:
  explicit KvStorage(const KvShape& shape);

  const KvShape& shape() const { return shape_; }

  // The F16 row [n_kv_heads * head_dim] for one position slot.
  uint16_t* key_row(int32_t layer, int32_t block, int32_t slot) { return keys_[layer].data() + offset(block, slot); }
  uint16_t* value_row(int32_t layer, int32_t block, int32_t slot) { return values_[layer].data() + offset(block, slot); }
  const uint16_t* key_row(int32_t layer, int32_t block, int32_t slot) const {
    return keys_[layer].data() + offset(block, slot);
  }
  const uint16_t* value_row(int32_t layer, int32_t block, int32_t slot) const {
    return values_[layer].data() + offset(block, slot);
  }

  // Copies one block's keys and values in every layer (copy-on-write).
  void copy_block(int32_t from, int32_t to);

 private:
  size_t offset(int32_t block, int32_t slot) const {
    return (static_cast<size_t>(block) * shape_.block_size + slot) * shape_.row_elements();
  }

  KvShape shape_;
  std::vector<std::vector<uint16_t>> keys_;    // [n_layers][n_blocks * block_size * row_elements]
  std::vector<std::vector<uint16_t>> values_;  // same
};

}  // namespace tokenmill::ops
