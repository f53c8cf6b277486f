#include "kv/disk_block_index.h"

namespace tokenmill::kv {

std::optional<DiskBlockInfo> DiskBlockIndex::find(uint64_t hash) const {
  auto it = entries_.find(hash);
  if (it == entries_.end()) return std::nullopt;
  return it->second.info;
}

void DiskBlockIndex::touch(uint64_t hash) {
  auto it = entries_.find(hash);
  if (it == entries_.end()) return;
  lru_.splice(lru_.end(), lru_, it->second.position);
}

std::vector<DiskBlockIndex::Evicted> DiskBlockIndex::insert(uint64_t hash, DiskBlockInfo info) {
  erase(hash);
  lru_.push_back(hash);
  entries_.emplace(hash, Entry{info, std::prev(lru_.end())});
  used_bytes_ += info.n_bytes;
  return shrink_to(max_bytes_);
}

void DiskBlockIndex::erase(uint64_t hash) {
  auto it = entries_.find(hash);
  if (it == entries_.end()) return;
  used_bytes_ -= it->second.info.n_bytes;
  lru_.erase(it->second.position);
  entries_.erase(it);
}

std::vector<DiskBlockIndex::Evicted> DiskBlockIndex::shrink_to(int64_t max_bytes) {
  std::vector<Evicted> evicted;
  while (used_bytes_ > max_bytes && !lru_.empty()) {
    const uint64_t oldest = lru_.front();
    evicted.push_back({oldest, entries_.at(oldest).info});
    erase(oldest);
  }
  return evicted;
}

}  // namespace tokenmill::kv
