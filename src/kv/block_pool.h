// A pool of fixed-size KV blocks identified by index, with reference counts so several
// sequences can share a block, and a prefix cache: a full block can be registered under
// the hash of its contents (chained with its parent block's hash, so equal hashes mean
// equal prefixes), and stays findable after its last holder releases it, until the pool
// needs the block for something else.
//
// Free blocks wait in an LRU queue: allocate() takes the least recently released one
// (dropping whatever prefix it cached), so the blocks of a prefix used a moment ago are
// the last to be overwritten. Blocks that never held a cached prefix are reused first.
//
// The pool only does bookkeeping: the memory behind a block id lives in ops::KvStorage.
// Running out is not an error: allocate() returns nullopt and the caller decides whether
// to wait or preempt.
//
// Thread-safety: not thread-safe; owned by the engine thread.
#pragma once

#include <cstdint>
#include <list>
#include <optional>
#include <span>
#include <unordered_map>
#include <vector>

namespace tokenmill::kv {

class BlockPool {
 public:
  explicit BlockPool(int32_t n_blocks);

  int32_t n_blocks() const { return static_cast<int32_t>(blocks_.size()); }
  // Blocks no sequence holds (including cached ones, which allocate() may reuse).
  int32_t n_free() const { return static_cast<int32_t>(free_uncached_.size() + free_cached_.size()); }
  int32_t n_used() const { return n_blocks() - n_free(); }
  // Free blocks that still hold a findable prefix.
  int32_t n_cached_free() const { return static_cast<int32_t>(free_cached_.size()); }

  // A block with reference count 1, or nullopt when none is free. Uncached free blocks go
  // first (lowest id first, so tests can assert exact ids), then the least recently
  // released cached block, whose cache entry is dropped.
  std::optional<int32_t> allocate();
  // All-or-nothing: n blocks, or none (and nullopt) if fewer than n are free.
  std::optional<std::vector<int32_t>> allocate(int32_t n);

  // Another holder of a block.  REQUIRES: ref_count(id) > 0.
  void retain(int32_t id);
  // Drops one reference; the block becomes free when none are left (and stays findable
  // by its hash if it has one).  REQUIRES: ref_count(id) > 0.
  void release(int32_t id);
  // Releases in reverse order, so a sequence's last blocks are evicted before its first
  // (a later request is likelier to share the beginning of a prompt than its end).
  void release(const std::vector<int32_t>& ids);

  int32_t ref_count(int32_t id) const { return blocks_[id].ref_count; }

  // --- prefix cache ---
  // The hash of a full block: its tokens chained with the parent block's hash (0 for the
  // first block of a sequence).
  static uint64_t block_hash(uint64_t parent_hash, std::span<const int32_t> tokens);
  // Registers a held, full block under hash. A block with this hash already cached stays
  // the canonical one (this block is simply not registered).  REQUIRES: ref_count(id) > 0.
  void register_cached(int32_t id, uint64_t hash, std::span<const int32_t> tokens);
  // The block cached under hash whose tokens equal `tokens` (guarding against hash
  // collisions), retained for the caller; nullopt if none.
  std::optional<int32_t> take_cached(uint64_t hash, std::span<const int32_t> tokens);
  bool is_cached(int32_t id) const { return blocks_[id].hash.has_value(); }

 private:
  struct Block {
    int32_t ref_count = 0;
    std::optional<uint64_t> hash;
    std::vector<int32_t> tokens;                 // the cached block's tokens, to verify hits
    std::list<int32_t>::iterator free_position;  // valid while free and cached
  };

  void evict(int32_t id);

  std::vector<Block> blocks_;                      // [n_blocks]
  std::vector<int32_t> free_uncached_;             // highest id first, so pop_back yields the lowest
  std::list<int32_t> free_cached_;                 // least recently released first
  std::unordered_map<uint64_t, int32_t> by_hash_;  // hash -> block id
};

}  // namespace tokenmill::kv
