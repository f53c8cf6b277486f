#include "kv/kv_cache_manager.h"

#include <cassert>

namespace tokenmill::kv {

KvCacheManager::KvCacheManager(int32_t n_blocks, int32_t block_size, bool prefix_caching)
    : block_size_(block_size), prefix_caching_(prefix_caching), pool_(n_blocks) {}

int32_t KvCacheManager::match_prefix(SequenceBlocks& seq, std::span<const int32_t> tokens, int32_t max_tokens) {
  assert(seq.table.empty());
  if (!prefix_caching_) return 0;
  const int32_t n_full = std::min<int32_t>(static_cast<int32_t>(tokens.size()), max_tokens) / block_size_;
  uint64_t parent = 0;
  for (int32_t b = 0; b < n_full; ++b) {
    auto block_tokens = tokens.subspan(static_cast<size_t>(b) * block_size_, block_size_);
    const uint64_t hash = BlockPool::block_hash(parent, block_tokens);
    auto id = pool_.take_cached(hash, block_tokens);
    if (!id) break;
    seq.table.push_back(*id);
    seq.hashes.push_back(hash);
    parent = hash;
  }
  return static_cast<int32_t>(seq.table.size()) * block_size_;
}

int32_t KvCacheManager::blocks_needed(const SequenceBlocks& seq, int32_t n_positions) const {
  return std::max(0, blocks_for(n_positions) - static_cast<int32_t>(seq.table.size()));
}

bool KvCacheManager::grow(SequenceBlocks& seq, int32_t n_positions) {
  const int32_t n = blocks_needed(seq, n_positions);
  if (n == 0) return true;
  auto ids = pool_.allocate(n);
  if (!ids) return false;
  seq.table.insert(seq.table.end(), ids->begin(), ids->end());
  return true;
}

void KvCacheManager::commit(SequenceBlocks& seq, std::span<const int32_t> tokens, int32_t n_computed) {
  if (!prefix_caching_) return;
  const int32_t n_full = n_computed / block_size_;
  uint64_t parent = seq.hashes.empty() ? 0 : seq.hashes.back();
  for (int32_t b = static_cast<int32_t>(seq.hashes.size()); b < n_full; ++b) {
    auto block_tokens = tokens.subspan(static_cast<size_t>(b) * block_size_, block_size_);
    const uint64_t hash = BlockPool::block_hash(parent, block_tokens);
    pool_.register_cached(seq.table[b], hash, block_tokens);
    seq.hashes.push_back(hash);
    parent = hash;
  }
}

std::optional<std::pair<int32_t, int32_t>> KvCacheManager::make_writable(SequenceBlocks& seq, int32_t position) {
  const int32_t index = position / block_size_;
  assert(index < static_cast<int32_t>(seq.table.size()));
  const int32_t old_id = seq.table[index];
  if (pool_.ref_count(old_id) == 1) return std::nullopt;
  auto fresh = pool_.allocate();
  if (!fresh) return std::nullopt;
  seq.table[index] = *fresh;
  pool_.release(old_id);
  // A block being written is not full yet, so it was never registered: hashes stay valid.
  return std::make_pair(old_id, *fresh);
}

SequenceBlocks KvCacheManager::fork(const SequenceBlocks& seq) {
  for (int32_t id : seq.table) pool_.retain(id);
  return seq;
}

void KvCacheManager::free(SequenceBlocks& seq) {
  pool_.release(seq.table);
  seq.table.clear();
  seq.hashes.clear();
}

}  // namespace tokenmill::kv
