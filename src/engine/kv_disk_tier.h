// The engine's side of the prefix cache's disk tier (kv/disk_block_store.h): what a
// block's keys and values are in bytes (ops::KvStorage), written when the block is
// registered and read back into the blocks a matched prefix found on disk.
//
// Blocks are written when commit() registers them (write-through), not when memory
// evicts them: the sliding-window layers' part is still in its slot then, a process
// killed later loses nothing, and an eviction costs nothing. A file's payload:
//
//   base part:   for each full-attention layer, its block_size key rows, then value rows
//   window part: the same for each sliding-window layer (from the block's window slot),
//                present when the slot was attached at the write
//
// Thread-safety: engine thread only (the store does its file work on its own thread).
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "kv/disk_block_store.h"
#include "kv/kv_cache_manager.h"
#include "ops/kv_storage.h"

namespace tokenmill::engine {

// The model file's contents and the cache layout: blocks written under another
// fingerprint are never read (hashes the whole file: call it off the engine thread).
kv::DiskFingerprint kv_disk_fingerprint(std::span<const uint8_t> model_file, const ops::KvShape& shape);

class KvDiskTier {
 public:
  KvDiskTier(kv::DiskBlockStore& store, ops::KvStorage& storage, kv::KvCacheManager& kv);

  kv::DiskBlockStore& store() { return store_; }
  // Queues the blocks registered since the last call that the store lacks.
  void spill_registered();
  // Starts reading a matched prefix's disk blocks (KvCacheManager::match_prefix) into
  // their blocks and window slots.
  std::shared_ptr<kv::DiskLoad> start_reads(const std::vector<kv::DiskBlockRead>& reads,
                                            std::span<const int32_t> tokens);

 private:
  // The block's rows as payload segments: the base part, then (with_window) the window part.
  std::vector<std::span<uint8_t>> segments(int32_t block, bool with_window);

  kv::DiskBlockStore& store_;
  ops::KvStorage& storage_;
  kv::KvCacheManager& kv_;
  int64_t block_bytes_per_layer_;  // keys or values of one layer: block_size rows
  int64_t base_bytes_ = 0;
  int64_t window_bytes_ = 0;
};

}  // namespace tokenmill::engine
