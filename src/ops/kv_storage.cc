#include "ops/kv_storage.h"

#include <algorithm>
#include <cassert>

#include "base/large_buffer.h"

namespace tokenmill::ops {

const char* kv_type_name(KvType type) { return type == KvType::kF16 ? "f16" : "q8_0"; }

std::optional<KvType> parse_kv_type(std::string_view name) {
  if (name == "f16") return KvType::kF16;
  if (name == "q8_0") return KvType::kQ8_0;
  return std::nullopt;
}

int32_t KvShape::n_windowed_layers() const {
  return static_cast<int32_t>(std::count(windowed_layers.begin(), windowed_layers.end(), true));
}

int64_t KvShape::total_bytes() const {
  const int64_t n_windowed = n_windowed_layers();
  const int64_t slots = (n_layers - n_windowed) * static_cast<int64_t>(n_blocks) + n_windowed * n_window_slots;
  return 2ll * slots * block_size * row_bytes();
}

KvStorage::KvStorage(const KvShape& shape) : shape_(shape) {
  assert(shape.type != KvType::kQ8_0 || shape.head_dim % kKvQ8Block == 0);
  for (int32_t l = 0; l < shape.n_layers; ++l) {
    const int32_t n = shape.is_windowed(l) ? shape.n_window_slots : shape.n_blocks;
    const size_t per_layer = static_cast<size_t>(n) * shape.block_size * static_cast<size_t>(shape.row_bytes());
    // Committed now, as zeros: left to first touch, the page faults land in decode steps
    // (in a fresh server's first minutes, ~3% of a 16-stream step's time).
    memory_.push_back(allocate_large_buffer(2 * per_layer, Commit::kNow));
    keys_.push_back(memory_.back().get());
    values_.push_back(keys_.back() + per_layer);
  }
}

void KvStorage::copy_block(int32_t from, int32_t to) {
  const size_t n = static_cast<size_t>(shape_.block_size) * static_cast<size_t>(shape_.row_bytes());
  for (int32_t l = 0; l < shape_.n_layers; ++l) {
    std::copy_n(keys_[l] + offset(l, from, 0), n, keys_[l] + offset(l, to, 0));
    std::copy_n(values_[l] + offset(l, from, 0), n, values_[l] + offset(l, to, 0));
  }
}

}  // namespace tokenmill::ops
