// The memory behind a paged KV cache: for every layer, one array of fixed-size blocks of
// keys and one of values, stored as F16 (as llama.cpp's default cache type) or Q8_0
// (half the bytes, as llama.cpp's -ctk / -ctv q8_0).
//
//   keys[layer]: [n_blocks, block_size, row]   row: n_kv_heads * head_dim values, as
//                F16, or as Q8_0 blocks of 32 (one F16 scale, 32 int8) - each kv head's
//                head_dim / 32 blocks in turn
//   values[layer]: the same shape
//
// Layers marked windowed (sliding-window layers, when the cache keeps only their window)
// have n_window_slots slots of block_size positions instead, and block b's positions of
// such a layer live in slot slot_of_block[b] of a map bound by the owner of the cache
// (kv/window_slots.h keeps it). Everything else addresses them by block as usual.
//
// Which block holds which positions of which sequence is decided above this layer (kv/):
// here a block id is just an index.
#pragma once

#include <cassert>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string_view>
#include <vector>

#include "ops/kv_type.h"

namespace tokenmill::ops {

// "f16" / "q8_0" (the names --kv-type takes).
const char* kv_type_name(KvType type);
std::optional<KvType> parse_kv_type(std::string_view name);

struct KvShape {
  int32_t n_layers = 0;
  int32_t n_blocks = 0;
  int32_t block_size = 16;
  int32_t n_kv_heads = 0;
  int32_t head_dim = 0;
  std::vector<bool> windowed_layers;  // [n_layers] or empty (none)
  int32_t n_window_slots = 0;         // slots of the windowed layers
  KvType type = KvType::kF16;         // Q8_0 requires head_dim % kKvQ8Block == 0

  int64_t row_elements() const { return static_cast<int64_t>(n_kv_heads) * head_dim; }
  // Bytes of n values (n a multiple of kKvQ8Block for Q8_0): of one kv head, of a row.
  int64_t bytes_of(int64_t n) const { return type == KvType::kF16 ? 2 * n : n / kKvQ8Block * kKvQ8BlockBytes; }
  int64_t row_bytes() const { return bytes_of(row_elements()); }
  bool is_windowed(int32_t layer) const { return !windowed_layers.empty() && windowed_layers[layer]; }
  int32_t n_windowed_layers() const;
  // Bytes of keys plus values over all layers.
  int64_t total_bytes() const;
};

class KvStorage {
 public:
  explicit KvStorage(const KvShape& shape);
  KvStorage(const KvStorage&) = delete;  // the memory is shared by pointers: no copies
  KvStorage& operator=(const KvStorage&) = delete;
  KvStorage(KvStorage&&) = default;
  KvStorage& operator=(KvStorage&&) = default;

  const KvShape& shape() const { return shape_; }

  // The window slot of every block ([n_blocks], -1 where a block has none), owned by the
  // caller and kept alive while this storage is used. REQUIRES: windowed layers.
  void bind_window_slots(const std::vector<int32_t>* slot_of_block) { slot_of_block_ = slot_of_block; }

  // The row (shape().row_bytes() bytes, in shape().type) for one position slot.
  uint8_t* key_row(int32_t layer, int32_t block, int32_t slot) { return keys_[layer] + offset(layer, block, slot); }
  uint8_t* value_row(int32_t layer, int32_t block, int32_t slot) { return values_[layer] + offset(layer, block, slot); }
  const uint8_t* key_row(int32_t layer, int32_t block, int32_t slot) const {
    return keys_[layer] + offset(layer, block, slot);
  }
  const uint8_t* value_row(int32_t layer, int32_t block, int32_t slot) const {
    return values_[layer] + offset(layer, block, slot);
  }

  // Copies one block's keys and values in every layer (copy-on-write); in windowed
  // layers, from's window slot to to's.
  void copy_block(int32_t from, int32_t to);

 private:
  size_t offset(int32_t layer, int32_t block, int32_t slot) const {
    if (shape_.is_windowed(layer)) {
      assert(slot_of_block_ != nullptr && (*slot_of_block_)[block] >= 0);
      block = (*slot_of_block_)[block];
    }
    return (static_cast<size_t>(block) * shape_.block_size + slot) * static_cast<size_t>(shape_.row_bytes());
  }

  KvShape shape_;
  // Per layer [n_blocks (or n_window_slots) * block_size * row_bytes], zeroed, in
  // huge-page memory (base/large_buffer.h): attention streams it every step.
  std::vector<std::shared_ptr<uint8_t[]>> memory_;
  std::vector<uint8_t*> keys_;    // [n_layers]
  std::vector<uint8_t*> values_;  // [n_layers]
  const std::vector<int32_t>* slot_of_block_ = nullptr;
};

}  // namespace tokenmill::ops
