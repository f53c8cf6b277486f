// The KV blocks of every sequence, on top of the block pool: growing a sequence's block
// table as it gets longer, finding a new sequence's longest cached prefix, registering
// full blocks so later sequences can reuse them, sharing blocks between the choices of
// one prompt and copying a shared block before it is written (copy-on-write).
//
// With a window (a model with sliding-window layers), each block also has a window slot
// (kv/window_slots.h) for those layers' keys and values while the sequence can still see
// it: a sequence computed up to position p holds the slots of the blocks from the one
// holding p - window + 1 on, and lets go of older ones as it grows (commit()). A cached
// prefix is reused only as far as its last `window` positions still have their slots.
//
// Thread-safety: not thread-safe; owned by the engine thread.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <utility>
#include <vector>

#include "kv/block_pool.h"
#include "kv/disk_block_store.h"
#include "kv/window_slots.h"

namespace tokenmill::kv {

// A block's contents to copy into another before the other is written (copy-on-write).
struct BlockCopy {
  int32_t from;
  int32_t to;
};

// A block of a matched prefix found on disk, not in memory (kv/disk_block_store.h): a
// fresh block in the sequence's table that the caller fills from the file before the
// sequence runs, then hands to finish_disk_reads().
struct DiskBlockRead {
  int32_t index = 0;  // in the sequence's table
  int32_t block = 0;
  uint64_t hash = 0;
  uint64_t parent_hash = 0;
  bool need_window = false;  // seen by the prefix's next token: its window slot is attached and must be filled
};

// A block commit() registered, for the disk tier to write (its tokens copied: the block
// may be reused before the write).
struct RegisteredBlock {
  int32_t block = 0;
  uint64_t hash = 0;
  uint64_t parent_hash = 0;
  std::vector<int32_t> tokens;
};

// One sequence's view of the cache.
struct SequenceBlocks {
  std::vector<int32_t> table;    // block ids by position / block_size
  std::vector<uint64_t> hashes;  // chained hashes of the leading full blocks registered so far
  int32_t window_begin = 0;      // with a window: table[window_begin ..] hold their window slots
};

// Sliding-window layers' memory: positions seen by a window (0: no window layers) and
// the slots that hold them.
struct WindowConfig {
  int32_t positions = 0;
  int32_t n_slots = 0;
};

class KvCacheManager {
 public:
  KvCacheManager(int32_t n_blocks, int32_t block_size, bool prefix_caching, WindowConfig window = {});

  int32_t block_size() const { return block_size_; }
  const BlockPool& pool() const { return pool_; }
  bool has_window() const { return window_positions_ > 0; }
  const WindowSlots& windows() const { return windows_; }
  int32_t blocks_for(int32_t n_positions) const { return (n_positions + block_size_ - 1) / block_size_; }

  // For a sequence holding no blocks: takes the cached blocks that hold the longest
  // prefix of tokens made of whole blocks and no longer than max_tokens. Returns the
  // number of tokens they cover (0 without prefix caching). With a window, the prefix
  // ends where the blocks its next token sees all have their window slots.
  //
  // With a disk tier (set_disk) and disk_reads given, the prefix goes on past memory
  // with the blocks the tier holds (as many as free blocks and window slots allow): each
  // gets a fresh block, listed in disk_reads, and the tokens returned count them.
  int32_t match_prefix(SequenceBlocks& seq, std::span<const int32_t> tokens, int32_t max_tokens,
                       std::vector<DiskBlockRead>* disk_reads = nullptr);
  // The disk reads of match_prefix are over: the first n_ok are in place and get
  // registered. If any failed, every block of the sequence goes back (the registered
  // ones stay cached, so matching again finds them) and the result is false.
  bool finish_disk_reads(SequenceBlocks& seq, std::span<const int32_t> tokens, const std::vector<DiskBlockRead>& reads,
                         size_t n_ok);

  // The disk tier the prefix cache goes on to, or nullptr. With one, commit() records
  // each block it registers for take_registered().
  void set_disk(DiskBlockStore* disk) { disk_ = disk; }
  DiskBlockStore* disk() const { return disk_; }
  // The blocks registered since the last call, oldest first.
  std::vector<RegisteredBlock> take_registered() { return std::exchange(registered_, {}); }

  // Grows the table to hold n_positions (each new block with its window slot). All-or-
  // nothing: false (and no change) when too few blocks (or window slots) are free.
  bool grow(SequenceBlocks& seq, int32_t n_positions);
  // Blocks grow() would need to allocate.
  int32_t blocks_needed(const SequenceBlocks& seq, int32_t n_positions) const;

  // Registers the full blocks among tokens[0, n_computed) that are not registered yet,
  // and lets go of the window slots no token from n_computed on can see.
  void commit(SequenceBlocks& seq, std::span<const int32_t> tokens, int32_t n_computed);

  // Makes positions [first, n_positions) writable by this sequence: grows the table to
  // hold n_positions, and replaces every block among those positions that is shared
  // with another sequence (the choices of one prompt share their blocks until they
  // write) by a fresh block, appending {old, fresh} to `copies`: the caller copies those
  // contents before it writes. All-or-nothing: false, and no change, when too few blocks
  // (or window slots) are free for the growth and the copies together.
  bool reserve_writes(SequenceBlocks& seq, int32_t first, int32_t n_positions, std::vector<BlockCopy>& copies);

  // The single-block step of reserve_writes: if the block holding `position` is shared,
  // replaces it by a fresh block and returns {old, new}. nullopt both when it is already
  // private and when no block is free, so a step's writes go through reserve_writes,
  // which reserves the copies with the growth.
  std::optional<std::pair<int32_t, int32_t>> make_writable(SequenceBlocks& seq, int32_t position);

  // Shrinks the table to the blocks holding positions [0, n_positions): the blocks past
  // them (a step's rejected draft positions) and their window slots go back to the pool.
  // REQUIRES: those blocks are the sequence's own and unregistered (positions past what
  // commit() has seen).
  void truncate(SequenceBlocks& seq, int32_t n_positions);

  // Another sequence holding the same blocks (the choices of one prompt).
  SequenceBlocks fork(const SequenceBlocks& seq);

  // Returns every block of the sequence to the pool (cached ones stay findable).
  void free(SequenceBlocks& seq);

  // Fraction of blocks (or of window slots, if more) held by sequences.
  double usage() const;

 private:
  // The first table index a token at `position` sees (0 without a window).
  int32_t first_visible_block(int32_t position) const;
  // Window slots needed to grow by n blocks.
  bool windows_fit(int32_t n) const { return !has_window() || windows_.n_free() >= n; }

  int32_t block_size_;
  bool prefix_caching_;
  BlockPool pool_;
  int32_t window_positions_;
  WindowSlots windows_;
  DiskBlockStore* disk_ = nullptr;
  std::vector<RegisteredBlock> registered_;  // with a disk tier: since take_registered()
};

}  // namespace tokenmill::kv
