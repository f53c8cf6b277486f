#include "kv/kv_cache_manager.h"

#include <algorithm>
#include <cassert>

namespace tokenmill::kv {

KvCacheManager::KvCacheManager(int32_t n_blocks, int32_t block_size, bool prefix_caching, WindowConfig window)
    : block_size_(block_size),
      prefix_caching_(prefix_caching),
      pool_(n_blocks),
      window_positions_(window.positions),
      windows_(window.positions > 0 ? window.n_slots : 0, window.positions > 0 ? n_blocks : 0) {}

int32_t KvCacheManager::first_visible_block(int32_t position) const {
  if (!has_window()) return 0;
  return std::max(0, position - window_positions_ + 1) / block_size_;
}

int32_t KvCacheManager::match_prefix(SequenceBlocks& seq, std::span<const int32_t> tokens, int32_t max_tokens,
                                     std::vector<DiskBlockRead>* disk_reads) {
  assert(seq.table.empty());
  if (!prefix_caching_) return 0;
  const int32_t n_full = std::min<int32_t>(static_cast<int32_t>(tokens.size()), max_tokens) / block_size_;
  auto block_tokens = [&](int32_t b) { return tokens.subspan(static_cast<size_t>(b) * block_size_, block_size_); };
  uint64_t parent = 0;
  for (int32_t b = 0; b < n_full; ++b) {
    const uint64_t hash = BlockPool::block_hash(parent, block_tokens(b));
    auto id = pool_.take_cached(hash, block_tokens(b));
    if (!id) break;
    seq.table.push_back(*id);
    seq.hashes.push_back(hash);
    parent = hash;
  }
  const auto n_memory = static_cast<int32_t>(seq.table.size());
  // Then the blocks on disk, each to be read into a fresh block.
  struct OnDisk {
    uint64_t hash;
    bool has_window;
  };
  std::vector<OnDisk> on_disk;
  if (disk_ != nullptr && disk_reads != nullptr && n_memory < n_full) {
    for (int32_t b = n_memory; b < n_full && static_cast<int32_t>(on_disk.size()) < pool_.n_free(); ++b) {
      const uint64_t hash = BlockPool::block_hash(parent, block_tokens(b));
      auto info = disk_->find(hash);
      if (!info) break;
      on_disk.push_back({hash, info->has_window});
      parent = hash;
    }
    if (on_disk.empty()) disk_->count_miss();
  }
  int32_t n = n_memory + static_cast<int32_t>(on_disk.size());
  if (has_window()) {
    // The next token (at position n * block_size) sees blocks first_visible_block(..) ..
    // n - 1, whose window parts must all be there (a memory block's slot still attached,
    // a disk block's file with its window part, and a free slot to read it into); else
    // the prefix ends before the last block that lacks it, and that is checked again.
    for (;;) {
      const int32_t first = first_visible_block(n * block_size_);
      int32_t missing = -1;
      int32_t n_slots_needed = 0;  // disk blocks to attach, plus memory ones whose slot is unheld
      for (int32_t i = n - 1; i >= first; --i) {
        const bool present = i < n_memory ? windows_.slot_of(seq.table[i]) >= 0 : on_disk[i - n_memory].has_window;
        if (!present) {
          missing = i;
          break;
        }
        n_slots_needed += i >= n_memory || windows_.holders(seq.table[i]) == 0;
      }
      if (missing >= 0) {
        n = missing;
      } else if (n > n_memory && n_slots_needed > windows_.n_free()) {
        --n;  // too few free slots for the window of the disk part: a shorter prefix
      } else {
        break;
      }
    }
  }
  for (int32_t i = n_memory - 1; i >= n; --i) pool_.release(seq.table[i]);
  if (n < n_memory) {
    seq.table.resize(n);
    seq.hashes.resize(n);
  }
  const int32_t n_disk = std::max(0, n - n_memory);
  on_disk.resize(n_disk);
  if (has_window()) {
    seq.window_begin = first_visible_block(n * block_size_);
    for (int32_t i = seq.window_begin; i < std::min(n, n_memory); ++i) windows_.hold(seq.table[i]);
  }
  if (n_disk > 0) {
    auto ids = pool_.allocate(n_disk);
    assert(ids);  // at most n_free were looked up
    uint64_t parent_hash = n_memory > 0 ? seq.hashes.back() : 0;
    for (int32_t k = 0; k < n_disk; ++k) {
      const int32_t index = n_memory + k, id = (*ids)[k];
      const bool visible = has_window() && index >= seq.window_begin;
      if (has_window()) {
        windows_.detach(id);  // a reused block's old contents are gone, and so is their window part
        if (visible) {
          const int32_t blocks[] = {id};
          const bool attached = windows_.attach(blocks);
          assert(attached);
          (void)attached;
        }
      }
      seq.table.push_back(id);
      disk_reads->push_back({index, id, on_disk[k].hash, parent_hash, visible});
      parent_hash = on_disk[k].hash;
    }
  }
  return n * block_size_;
}

bool KvCacheManager::finish_disk_reads(SequenceBlocks& seq, std::span<const int32_t> tokens,
                                       const std::vector<DiskBlockRead>& reads, size_t n_ok) {
  for (size_t k = 0; k < n_ok; ++k) {
    const DiskBlockRead& read = reads[k];
    assert(static_cast<int32_t>(seq.hashes.size()) == read.index);
    pool_.register_cached(read.block, read.hash,
                          tokens.subspan(static_cast<size_t>(read.index) * block_size_, block_size_));
    seq.hashes.push_back(read.hash);
  }
  if (n_ok == reads.size()) return true;
  free(seq);
  return false;
}

int32_t KvCacheManager::blocks_needed(const SequenceBlocks& seq, int32_t n_positions) const {
  return std::max(0, blocks_for(n_positions) - static_cast<int32_t>(seq.table.size()));
}

bool KvCacheManager::grow(SequenceBlocks& seq, int32_t n_positions) {
  const int32_t n = blocks_needed(seq, n_positions);
  if (n == 0) return true;
  if (!windows_fit(n)) return false;
  auto ids = pool_.allocate(n);
  if (!ids) return false;
  if (has_window()) {
    // A reused block's old contents are gone, and so is their window part.
    for (int32_t id : *ids) windows_.detach(id);
    const bool attached = windows_.attach(*ids);
    assert(attached);
    (void)attached;
  }
  seq.table.insert(seq.table.end(), ids->begin(), ids->end());
  return true;
}

void KvCacheManager::commit(SequenceBlocks& seq, std::span<const int32_t> tokens, int32_t n_computed) {
  if (has_window()) {
    const int32_t first = std::min<int32_t>(first_visible_block(n_computed), static_cast<int32_t>(seq.table.size()));
    for (; seq.window_begin < first; ++seq.window_begin) windows_.release(seq.table[seq.window_begin]);
  }
  if (!prefix_caching_) return;
  const int32_t n_full = n_computed / block_size_;
  uint64_t parent = seq.hashes.empty() ? 0 : seq.hashes.back();
  for (int32_t b = static_cast<int32_t>(seq.hashes.size()); b < n_full; ++b) {
    auto block_tokens = tokens.subspan(static_cast<size_t>(b) * block_size_, block_size_);
    const uint64_t hash = BlockPool::block_hash(parent, block_tokens);
    pool_.register_cached(seq.table[b], hash, block_tokens);
    if (disk_ != nullptr) {
      registered_.push_back({seq.table[b], hash, parent, std::vector<int32_t>(block_tokens.begin(), block_tokens.end())});
    }
    seq.hashes.push_back(hash);
    parent = hash;
  }
}

bool KvCacheManager::reserve_writes(SequenceBlocks& seq, int32_t first, int32_t n_positions,
                                    std::vector<BlockCopy>& copies) {
  const int32_t n_grow = blocks_needed(seq, n_positions);
  const int32_t end = std::min(blocks_for(n_positions), static_cast<int32_t>(seq.table.size()));
  int32_t n_shared = 0;
  for (int32_t index = first / block_size_; index < end; ++index) n_shared += pool_.ref_count(seq.table[index]) > 1;
  if (pool_.n_free() < n_grow + n_shared || !windows_fit(n_grow + n_shared)) return false;
  for (int32_t index = first / block_size_; index < end; ++index) {
    if (auto copy = make_writable(seq, index * block_size_)) copies.push_back({copy->first, copy->second});
  }
  const bool grown = grow(seq, n_positions);
  assert(grown);
  (void)grown;
  return true;
}

std::optional<std::pair<int32_t, int32_t>> KvCacheManager::make_writable(SequenceBlocks& seq, int32_t position) {
  const int32_t index = position / block_size_;
  assert(index < static_cast<int32_t>(seq.table.size()));
  const int32_t old_id = seq.table[index];
  if (pool_.ref_count(old_id) == 1) return std::nullopt;
  if (!windows_fit(1)) return std::nullopt;
  auto fresh = pool_.allocate();
  if (!fresh) return std::nullopt;
  if (has_window()) {
    windows_.detach(*fresh);
    const int32_t blocks[] = {*fresh};
    const bool attached = windows_.attach(blocks);
    assert(attached);
    (void)attached;
    // The block being written is visible, so its old window slot was held.
    assert(index >= seq.window_begin);
    windows_.release(old_id);
  }
  seq.table[index] = *fresh;
  pool_.release(old_id);
  // A block being written is not full yet, so it was never registered: hashes stay valid.
  return std::make_pair(old_id, *fresh);
}

void KvCacheManager::truncate(SequenceBlocks& seq, int32_t n_positions) {
  const int32_t keep = blocks_for(n_positions);
  assert(static_cast<int32_t>(seq.hashes.size()) <= keep);
  for (int32_t index = static_cast<int32_t>(seq.table.size()) - 1; index >= keep; --index) {
    const int32_t id = seq.table[index];
    assert(pool_.ref_count(id) == 1);
    if (has_window() && index >= seq.window_begin) windows_.release(id);
    pool_.release(id);
  }
  if (keep < static_cast<int32_t>(seq.table.size())) seq.table.resize(keep);
}

SequenceBlocks KvCacheManager::fork(const SequenceBlocks& seq) {
  for (int32_t id : seq.table) pool_.retain(id);
  if (has_window()) {
    for (size_t i = seq.window_begin; i < seq.table.size(); ++i) windows_.hold(seq.table[i]);
  }
  return seq;
}

void KvCacheManager::free(SequenceBlocks& seq) {
  if (has_window()) {
    // Oldest first: attach() takes the least recently released slots first, so the
    // slots at the end of the sequence (those a continuation of it needs) last longest.
    for (size_t i = seq.window_begin; i < seq.table.size(); ++i) windows_.release(seq.table[i]);
  }
  pool_.release(seq.table);
  seq.table.clear();
  seq.hashes.clear();
  seq.window_begin = 0;
}

double KvCacheManager::usage() const {
  double used = pool_.n_blocks() ? double(pool_.n_used()) / pool_.n_blocks() : 0.0;
  if (has_window() && windows_.n_slots() > 0) used = std::max(used, double(windows_.n_held()) / windows_.n_slots());
  return used;
}

}  // namespace tokenmill::kv
