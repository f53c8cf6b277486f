// The prefix cache going on to a disk tier: which blocks a match reads from disk, how
// finishing the reads registers them, and how the window limits a disk prefix.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <numeric>

#include "kv/kv_cache_manager.h"

namespace tokenmill::kv {
namespace {

constexpr int32_t kBlock = 4;

struct TempStore {
  TempStore() {
    char name[] = "/tmp/tokenmill-kv-match-XXXXXX";
    dir = mkdtemp(name);
    store = std::move(DiskBlockStore::open({dir, 1 << 20, "m", [] { return DiskFingerprint{1, 1}; }})).value();
    store->wait_ready();
  }
  ~TempStore() {
    store.reset();
    std::filesystem::remove_all(dir);
  }
  // Writes what commit() registered, each block with or without its window part.
  void write(KvCacheManager& kv, std::vector<bool> with_window = {}) {
    auto registered = kv.take_registered();
    for (size_t i = 0; i < registered.size(); ++i) {
      const RegisteredBlock& r = registered[i];
      DiskBlockHeader h;
      h.hash = r.hash;
      h.parent_hash = r.parent_hash;
      h.tokens = r.tokens;
      h.has_window = with_window.empty() || with_window[i];
      h.base_bytes = 8;
      std::vector<uint8_t> file = begin_disk_block(h);
      file.resize(file.size() + 8);
      store->spill(r.hash, h.has_window, std::move(file));
    }
    store->flush();
  }
  std::string dir;
  std::unique_ptr<DiskBlockStore> store;
};

std::vector<int32_t> iota_tokens(int32_t n) {
  std::vector<int32_t> t(n);
  std::iota(t.begin(), t.end(), 100);
  return t;
}

// Fills every block of the pool with something else, so no prefix is left in memory.
void flush_memory(KvCacheManager& kv) {
  SequenceBlocks other;
  ASSERT_TRUE(kv.grow(other, kv.pool().n_free() * kBlock));
  kv.free(other);
  ASSERT_EQ(kv.pool().n_cached_free(), 0);
}

TEST(KvCacheManagerDisk, CommitRecordsRegisteredBlocksWithTheirParents) {
  TempStore disk;
  KvCacheManager kv(8, kBlock, true);
  kv.set_disk(disk.store.get());
  const auto tokens = iota_tokens(13);
  SequenceBlocks seq;
  ASSERT_TRUE(kv.grow(seq, 13));
  kv.commit(seq, tokens, 13);
  const auto registered = kv.take_registered();
  ASSERT_EQ(registered.size(), 3u);
  EXPECT_EQ(registered[0].parent_hash, 0u);
  EXPECT_EQ(registered[1].parent_hash, registered[0].hash);
  EXPECT_EQ(registered[2].parent_hash, registered[1].hash);
  EXPECT_EQ(registered[2].block, seq.table[2]);
  EXPECT_EQ(registered[2].tokens, std::vector<int32_t>(tokens.begin() + 8, tokens.begin() + 12));
  EXPECT_TRUE(kv.take_registered().empty());
}

TEST(KvCacheManagerDisk, APrefixEvictedFromMemoryIsFoundOnDiskAndRegisteredOnceRead) {
  TempStore disk;
  KvCacheManager kv(6, kBlock, true);
  kv.set_disk(disk.store.get());
  const auto tokens = iota_tokens(13);
  SequenceBlocks first;
  ASSERT_TRUE(kv.grow(first, 13));
  kv.commit(first, tokens, 13);
  disk.write(kv);
  kv.free(first);
  flush_memory(kv);

  SequenceBlocks seq;
  std::vector<DiskBlockRead> reads;
  EXPECT_EQ(kv.match_prefix(seq, tokens, 12, &reads), 12);
  ASSERT_EQ(reads.size(), 3u);
  EXPECT_EQ(seq.table.size(), 3u);
  EXPECT_TRUE(seq.hashes.empty());  // registered only once read
  for (int32_t i = 0; i < 3; ++i) {
    EXPECT_EQ(reads[i].index, i);
    EXPECT_EQ(reads[i].block, seq.table[i]);
  }
  EXPECT_EQ(reads[1].parent_hash, reads[0].hash);
  ASSERT_TRUE(kv.finish_disk_reads(seq, tokens, reads, 3));
  EXPECT_EQ(seq.hashes.size(), 3u);
  kv.free(seq);

  SequenceBlocks again;  // now in memory: no disk reads
  std::vector<DiskBlockRead> none;
  EXPECT_EQ(kv.match_prefix(again, tokens, 12, &none), 12);
  EXPECT_TRUE(none.empty());
}

TEST(KvCacheManagerDisk, MemoryFirstThenDiskAndAFailedReadKeepsWhatWasRead) {
  TempStore disk;
  KvCacheManager kv(6, kBlock, true);
  kv.set_disk(disk.store.get());
  const auto tokens = iota_tokens(13);
  SequenceBlocks first;
  ASSERT_TRUE(kv.grow(first, 13));
  kv.commit(first, tokens, 13);
  disk.write(kv);
  kv.free(first);
  flush_memory(kv);
  SequenceBlocks head;  // the first block back in memory
  std::vector<DiskBlockRead> reads;
  ASSERT_EQ(kv.match_prefix(head, std::span<const int32_t>(tokens).first(5), 4, &reads), 4);
  ASSERT_TRUE(kv.finish_disk_reads(head, tokens, reads, reads.size()));
  kv.free(head);

  SequenceBlocks seq;
  reads.clear();
  EXPECT_EQ(kv.match_prefix(seq, tokens, 12, &reads), 12);
  ASSERT_EQ(reads.size(), 2u);  // blocks 1 and 2; block 0 came from memory
  EXPECT_EQ(reads[0].index, 1);
  EXPECT_EQ(reads[0].parent_hash, seq.hashes[0]);
  const int32_t free_before = kv.pool().n_free();
  EXPECT_FALSE(kv.finish_disk_reads(seq, tokens, reads, 1));  // block 2's read failed
  EXPECT_TRUE(seq.table.empty());
  EXPECT_EQ(kv.pool().n_free(), free_before + 3);
  SequenceBlocks retry;  // blocks 0 and 1 are in memory now
  std::vector<DiskBlockRead> more;
  EXPECT_EQ(kv.match_prefix(retry, tokens, 12, &more), 12);
  EXPECT_EQ(more.size(), 1u);
}

TEST(KvCacheManagerDisk, NoDiskLookupWithoutAReadList) {
  TempStore disk;
  KvCacheManager kv(6, kBlock, true);
  kv.set_disk(disk.store.get());
  const auto tokens = iota_tokens(9);
  SequenceBlocks first;
  ASSERT_TRUE(kv.grow(first, 9));
  kv.commit(first, tokens, 9);
  disk.write(kv);
  kv.free(first);
  flush_memory(kv);
  SequenceBlocks seq;
  EXPECT_EQ(kv.match_prefix(seq, tokens, 8), 0);
  EXPECT_EQ(disk.store->counters().misses, 0u);
}

TEST(KvCacheManagerDisk, TheWindowOfADiskPrefixNeedsTheWindowParts) {
  TempStore disk;
  // A window of 8 positions: the token after a 12-token prefix sees blocks 1 and 2.
  KvCacheManager kv(8, kBlock, true, {8, 8});
  kv.set_disk(disk.store.get());
  const auto tokens = iota_tokens(17);
  SequenceBlocks first;
  ASSERT_TRUE(kv.grow(first, 17));
  kv.commit(first, tokens, 16);
  disk.write(kv, {true, true, false, true});  // block 2 was written without its window part
  kv.free(first);
  flush_memory(kv);

  SequenceBlocks seq;
  std::vector<DiskBlockRead> reads;
  // 16 tokens would need blocks 2 and 3 whole; 12 would need 1 and 2; 8 needs 0 and 1.
  EXPECT_EQ(kv.match_prefix(seq, tokens, 16, &reads), 8);
  ASSERT_EQ(reads.size(), 2u);
  EXPECT_TRUE(reads[0].need_window);
  EXPECT_TRUE(reads[1].need_window);
  EXPECT_GE(kv.windows().slot_of(reads[0].block), 0);
  EXPECT_GE(kv.windows().slot_of(reads[1].block), 0);
  ASSERT_TRUE(kv.finish_disk_reads(seq, tokens, reads, 2));
  kv.free(seq);
  EXPECT_EQ(kv.windows().n_held(), 0);
}

TEST(KvCacheManagerDisk, BlocksBeforeTheWindowAreReadWithoutTheirWindowPart) {
  TempStore disk;
  KvCacheManager kv(8, kBlock, true, {8, 8});
  kv.set_disk(disk.store.get());
  const auto tokens = iota_tokens(17);
  SequenceBlocks first;
  ASSERT_TRUE(kv.grow(first, 17));
  kv.commit(first, tokens, 16);
  disk.write(kv, {false, true, true, true});
  kv.free(first);
  flush_memory(kv);
  SequenceBlocks seq;
  std::vector<DiskBlockRead> reads;
  EXPECT_EQ(kv.match_prefix(seq, tokens, 12, &reads), 12);
  ASSERT_EQ(reads.size(), 3u);
  EXPECT_FALSE(reads[0].need_window);
  EXPECT_LT(kv.windows().slot_of(reads[0].block), 0);
  EXPECT_TRUE(reads[2].need_window);
  EXPECT_EQ(seq.window_begin, 1);
  ASSERT_TRUE(kv.finish_disk_reads(seq, tokens, reads, 3));
  kv.free(seq);
}

}  // namespace
}  // namespace tokenmill::kv
