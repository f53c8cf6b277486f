// The index of the KV blocks a disk tier holds: for each chained block hash, the size of
// its file and whether it carries the sliding-window layers' part, in least-recently-used
// order. Bookkeeping only: the files themselves are kv/disk_block_store.h's.
//
// Eviction keeps the total under a byte budget: insert() and shrink_to() return the
// hashes to delete, least recently used first. A block used again (touch()) moves to
// the back; a block inserted moves there too.
//
// Thread-safety: not thread-safe; the store guards it with its mutex.
#pragma once

#include <cstdint>
#include <list>
#include <optional>
#include <unordered_map>
#include <vector>

namespace tokenmill::kv {

struct DiskBlockInfo {
  int64_t n_bytes = 0;
  bool has_window = false;  // the file carries the sliding-window layers' part too
};

class DiskBlockIndex {
 public:
  explicit DiskBlockIndex(int64_t max_bytes) : max_bytes_(max_bytes) {}

  int64_t max_bytes() const { return max_bytes_; }
  int64_t used_bytes() const { return used_bytes_; }
  int64_t n_blocks() const { return static_cast<int64_t>(entries_.size()); }

  std::optional<DiskBlockInfo> find(uint64_t hash) const;
  // Marks hash as used now (no-op when absent).
  void touch(uint64_t hash);
  struct Evicted {
    uint64_t hash;
    DiskBlockInfo info;
  };
  // Adds (or replaces) hash as the most recently used block, and returns the blocks
  // evicted to stay within max_bytes, oldest first. A block larger than the whole
  // budget is not kept: it is returned itself.
  std::vector<Evicted> insert(uint64_t hash, DiskBlockInfo info);
  void erase(uint64_t hash);
  // Evicts least recently used blocks until at most max_bytes are used.
  std::vector<Evicted> shrink_to(int64_t max_bytes);

 private:
  struct Entry {
    DiskBlockInfo info;
    std::list<uint64_t>::iterator position;
  };

  int64_t max_bytes_;
  int64_t used_bytes_ = 0;
  std::unordered_map<uint64_t, Entry> entries_;
  std::list<uint64_t> lru_;  // least recently used first
};

}  // namespace tokenmill::kv
