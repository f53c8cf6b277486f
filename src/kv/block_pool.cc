#include "kv/block_pool.h"

#include <cassert>

namespace tokenmill::kv {

BlockPool::BlockPool(int32_t n_blocks) : ref_counts_(n_blocks, 0) {
  free_list_.reserve(n_blocks);
  for (int32_t id = n_blocks - 1; id >= 0; --id) free_list_.push_back(id);
}

std::optional<int32_t> BlockPool::allocate() {
  if (free_list_.empty()) return std::nullopt;
  const int32_t id = free_list_.back();
  free_list_.pop_back();
  ref_counts_[id] = 1;
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
  assert(ref_counts_[id] > 0);
  ++ref_counts_[id];
}

void BlockPool::release(int32_t id) {
  assert(ref_counts_[id] > 0);
  if (--ref_counts_[id] == 0) free_list_.push_back(id);
}

void BlockPool::release(const std::vector<int32_t>& ids) {
  for (int32_t id : ids) release(id);
}

}  // namespace tokenmill::kv
