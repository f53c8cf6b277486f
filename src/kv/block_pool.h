// A pool of fixed-size KV blocks identified by index, with reference counts so that
// several sequences can share a block (a common prefix, or n > 1 samples of one prompt).
// It only does bookkeeping: the memory behind a block id lives in ops::KvStorage.
//
// Running out is not an error here: allocate() returns nullopt and the caller (the
// scheduler) decides whether to wait or preempt.
//
// Thread-safety: not thread-safe; owned by the engine thread.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

namespace tokenmill::kv {

class BlockPool {
 public:
  explicit BlockPool(int32_t n_blocks);

  int32_t n_blocks() const { return static_cast<int32_t>(ref_counts_.size()); }
  int32_t n_free() const { return static_cast<int32_t>(free_list_.size()); }
  int32_t n_used() const { return n_blocks() - n_free(); }

  // A free block with reference count 1, or nullopt when none is left. Lowest ids are
  // handed out first, so tests can assert exact ids.
  std::optional<int32_t> allocate();
  // All-or-nothing: n blocks, or none (and nullopt) if fewer than n are free.
  std::optional<std::vector<int32_t>> allocate(int32_t n);

  // Another holder of an allocated block.  REQUIRES: ref_count(id) > 0.
  void retain(int32_t id);
  // Drops one reference; the block is free again when none are left.
  // REQUIRES: ref_count(id) > 0.
  void release(int32_t id);
  void release(const std::vector<int32_t>& ids);

  int32_t ref_count(int32_t id) const { return ref_counts_[id]; }

 private:
  std::vector<int32_t> ref_counts_;  // [n_blocks]
  std::vector<int32_t> free_list_;   // free ids, highest first so pop_back yields the lowest
};

}  // namespace tokenmill::kv
