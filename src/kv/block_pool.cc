#include "kv/block_pool.h"

#include <xxhash.h>

#include <algorithm>
#include <cassert>

namespace tokenmill::kv {

BlockPool::BlockPool(int32_t n_blocks) : blocks_(n_blocks) {
  free_uncached_.reserve(n_blocks);
  for (int32_t id = n_blocks - 1; id >= 0; --id) free_uncached_.push_back(id);
}

std::optional<int32_t> BlockPool::allocate() {
  int32_t id;
  if (!free_uncached_.empty()) {
    id = free_uncached_.back();
    free_uncached_.pop_back();
  } else if (!free_cached_.empty()) {
    id = free_cached_.front();
    free_cached_.pop_front();
    evict(id);
  } else {
    return std::nullopt;
  }
  blocks_[id].ref_count = 1;
  return id;
}

std::optional<std::vector<int32_t>> BlockPool::allocate(int32_t n) {
  if (n > n_free()) return std::nullopt;
  std::vector<int32_t> ids;
  ids.reserve(n);
  for (int32_t i = 0; i < n; ++i) ids.push_back(*allocate());
  return ids;
}

void BlockPool::retain(int32_t id) {
  assert(blocks_[id].ref_count > 0);
  ++blocks_[id].ref_count;
}

void BlockPool::release(int32_t id) {
  Block& b = blocks_[id];
  assert(b.ref_count > 0);
  if (--b.ref_count > 0) return;
  if (b.hash) {
    free_cached_.push_back(id);
    b.free_position = std::prev(free_cached_.end());
  } else {
    free_uncached_.push_back(id);
  }
}

void BlockPool::release(const std::vector<int32_t>& ids) {
  for (auto it = ids.rbegin(); it != ids.rend(); ++it) release(*it);
}

uint64_t BlockPool::block_hash(uint64_t parent_hash, std::span<const int32_t> tokens) {
  return XXH3_64bits_withSeed(tokens.data(), tokens.size_bytes(), parent_hash);
}

void BlockPool::register_cached(int32_t id, uint64_t hash, std::span<const int32_t> tokens) {
  Block& b = blocks_[id];
  assert(b.ref_count > 0);
  if (b.hash || by_hash_.count(hash)) return;
  b.hash = hash;
  b.tokens.assign(tokens.begin(), tokens.end());
  by_hash_.emplace(hash, id);
}

std::optional<int32_t> BlockPool::take_cached(uint64_t hash, std::span<const int32_t> tokens) {
  auto it = by_hash_.find(hash);
  if (it == by_hash_.end()) return std::nullopt;
  const int32_t id = it->second;
  Block& b = blocks_[id];
  if (!std::equal(b.tokens.begin(), b.tokens.end(), tokens.begin(), tokens.end())) return std::nullopt;
  if (b.ref_count == 0) {
    free_cached_.erase(b.free_position);
    b.ref_count = 1;
  } else {
    ++b.ref_count;
  }
  return id;
}

void BlockPool::evict(int32_t id) {
  Block& b = blocks_[id];
  if (!b.hash) return;
  by_hash_.erase(*b.hash);
  b.hash.reset();
  b.tokens.clear();
}

}  // namespace tokenmill::kv
