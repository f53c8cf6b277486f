#include "kv/kv_cache_manager.h"

#include <gtest/gtest.h>

#include <numeric>

namespace tokenmill::kv {
namespace {

constexpr int32_t kBlock = 4;

std::vector<int32_t> iota_tokens(int32_t n, int32_t first = 0) {
  std::vector<int32_t> t(n);
  std::iota(t.begin(), t.end(), first);
  return t;
}

TEST(KvCacheManager, GrowIsAllOrNothing) {
  KvCacheManager kv(3, kBlock, true);
  SequenceBlocks seq;
  EXPECT_TRUE(kv.grow(seq, 5));  // 2 blocks
  EXPECT_EQ(seq.table, (std::vector<int32_t>{0, 1}));
  SequenceBlocks other;
  EXPECT_FALSE(kv.grow(other, 8));  // needs 2, 1 free
  EXPECT_TRUE(other.table.empty());
  EXPECT_EQ(kv.pool().n_free(), 1);
}

TEST(KvCacheManager, CommittedPrefixIsReusedAfterFree) {
  KvCacheManager kv(8, kBlock, true);
  const auto tokens = iota_tokens(10);
  SequenceBlocks first;
  ASSERT_TRUE(kv.grow(first, 10));
  kv.commit(first, tokens, 10);  // blocks 0 and 1 are full
  EXPECT_EQ(first.hashes.size(), 2u);
  const auto first_table = first.table;
  kv.free(first);
  EXPECT_EQ(kv.pool().n_cached_free(), 2);

  SequenceBlocks second;
  EXPECT_EQ(kv.match_prefix(second, tokens, 9), 8);
  EXPECT_EQ(second.table, (std::vector<int32_t>{first_table[0], first_table[1]}));
}

TEST(KvCacheManager, MatchStopsAtFirstDifferentBlockAndAtMaxTokens) {
  KvCacheManager kv(8, kBlock, true);
  const auto tokens = iota_tokens(12);
  SequenceBlocks a;
  ASSERT_TRUE(kv.grow(a, 12));
  kv.commit(a, tokens, 12);
  auto other = tokens;
  other[5] = 99;  // second block differs
  SequenceBlocks b;
  EXPECT_EQ(kv.match_prefix(b, other, 11), 4);
  SequenceBlocks c;
  EXPECT_EQ(kv.match_prefix(c, tokens, 7), 4);  // a whole-block prefix no longer than 7
}

TEST(KvCacheManager, NoMatchWithoutPrefixCaching) {
  KvCacheManager kv(8, kBlock, false);
  const auto tokens = iota_tokens(8);
  SequenceBlocks a;
  ASSERT_TRUE(kv.grow(a, 8));
  kv.commit(a, tokens, 8);
  kv.free(a);
  SequenceBlocks b;
  EXPECT_EQ(kv.match_prefix(b, tokens, 8), 0);
}

TEST(KvCacheManager, ForkSharesAndCopyOnWriteSeparates) {
  KvCacheManager kv(8, kBlock, true);
  SequenceBlocks parent;
  ASSERT_TRUE(kv.grow(parent, 6));  // blocks 0, 1 (the second half full)
  SequenceBlocks child = kv.fork(parent);
  EXPECT_EQ(kv.pool().ref_count(parent.table[1]), 2);
  auto copy = kv.make_writable(child, 6);
  ASSERT_TRUE(copy.has_value());
  EXPECT_EQ(copy->first, parent.table[1]);
  EXPECT_NE(child.table[1], parent.table[1]);
  EXPECT_EQ(kv.pool().ref_count(parent.table[1]), 1);
  EXPECT_FALSE(kv.make_writable(parent, 6).has_value());  // now private
  kv.free(parent);
  kv.free(child);
  EXPECT_EQ(kv.pool().n_free(), 8);
}

// reserve_writes counts the copy of a shared block with the growth: with no block free
// for the copy it changes nothing and says so, instead of leaving the block shared.
TEST(KvCacheManager, ReserveWritesCopiesSharedBlocksOrChangesNothing) {
  KvCacheManager kv(3, kBlock, true);
  SequenceBlocks parent;
  ASSERT_TRUE(kv.grow(parent, 6));  // blocks 0, 1 (the second half full)
  SequenceBlocks child = kv.fork(parent);
  SequenceBlocks other;
  ASSERT_TRUE(kv.grow(other, 1));  // the last free block
  std::vector<BlockCopy> copies;
  const std::vector<int32_t> before = child.table;
  EXPECT_FALSE(kv.reserve_writes(child, 6, 7, copies));
  EXPECT_EQ(child.table, before);
  EXPECT_TRUE(copies.empty());
  EXPECT_EQ(kv.pool().ref_count(parent.table[1]), 2);
  kv.free(other);
  ASSERT_TRUE(kv.reserve_writes(child, 6, 7, copies));
  ASSERT_EQ(copies.size(), 1u);
  EXPECT_EQ(copies[0].from, parent.table[1]);
  EXPECT_EQ(copies[0].to, child.table[1]);
  EXPECT_EQ(kv.pool().ref_count(parent.table[1]), 1);
  // Private now: writing further into it (and growing by a block) copies nothing.
  copies.clear();
  kv.free(parent);
  ASSERT_TRUE(kv.reserve_writes(child, 7, 9, copies));
  EXPECT_TRUE(copies.empty());
  EXPECT_EQ(child.table.size(), 3u);
  kv.free(child);
  EXPECT_EQ(kv.pool().n_free(), 3);
}

}  // namespace
}  // namespace tokenmill::kv

namespace tokenmill::kv {
namespace {

// Window of 6 positions, blocks of 4: a token at position p sees blocks (p - 5) / 4 ..
constexpr int32_t kWindow = 6;

// Rejected draft positions: the blocks past the accepted length go back to the pool
// unregistered (a later prefix lookup never finds a rejected token), the rest stays.
TEST(KvCacheManager, TruncateReturnsTheBlocksPastTheAcceptedPositions) {
  KvCacheManager kv(8, kBlock, true);
  SequenceBlocks seq;
  auto tokens = iota_tokens(6);
  ASSERT_TRUE(kv.grow(seq, 6 + 7));  // 6 tokens and 7 draft positions: 4 blocks
  EXPECT_EQ(seq.table.size(), 4u);
  kv.commit(seq, tokens, 5);  // the pending token and 2 accepted drafts are not all in yet
  kv.truncate(seq, 6);
  EXPECT_EQ(seq.table.size(), 2u);
  EXPECT_EQ(kv.pool().n_free(), 6);
  EXPECT_EQ(kv.pool().n_cached_free(), 0);
  kv.truncate(seq, 6);  // nothing more to let go
  EXPECT_EQ(seq.table.size(), 2u);
  kv.free(seq);
  EXPECT_EQ(kv.pool().n_free(), 8);
  EXPECT_EQ(kv.pool().n_cached_free(), 1);  // only the one full block of accepted tokens
}

TEST(KvCacheManagerWindow, GrowingSequenceLetsGoOfBlocksOutOfTheWindow) {
  KvCacheManager kv(16, kBlock, true, {kWindow, 16});
  const auto tokens = iota_tokens(40);
  SequenceBlocks seq;
  int32_t max_held = 0;
  for (int32_t n = 1; n <= 40; ++n) {
    ASSERT_TRUE(kv.grow(seq, n));
    kv.commit(seq, tokens, n);  // computed up to n; the next token is at position n
    EXPECT_EQ(seq.window_begin, std::max(0, n - kWindow + 1) / kBlock) << n;
    max_held = std::max(max_held, kv.windows().n_held());
  }
  EXPECT_EQ(seq.table.size(), 10u);  // every block is kept for the full layers
  EXPECT_LE(max_held, 3);            // but at most 3 window slots at once
  for (int32_t i = 0; i < seq.window_begin; ++i) EXPECT_EQ(kv.windows().holders(seq.table[i]), 0);
  kv.free(seq);
  EXPECT_EQ(kv.windows().n_held(), 0);
  EXPECT_EQ(kv.pool().n_free(), 16);
}

TEST(KvCacheManagerWindow, TruncateReleasesTheWindowSlotsOfDroppedBlocks) {
  KvCacheManager kv(8, kBlock, true, {2 * kBlock, 6});
  SequenceBlocks seq;
  ASSERT_TRUE(kv.grow(seq, 3 * kBlock));
  EXPECT_EQ(kv.windows().n_held(), 3);
  kv.truncate(seq, kBlock + 1);
  EXPECT_EQ(seq.table.size(), 2u);
  EXPECT_EQ(kv.windows().n_held(), 2);
  kv.free(seq);
  EXPECT_EQ(kv.windows().n_held(), 0);
  EXPECT_EQ(kv.pool().n_free(), 8);
}

TEST(KvCacheManagerWindow, ALongSequenceNeedsFewSlots) {
  // 4 slots for 16 blocks: one sequence of 64 positions still fits.
  KvCacheManager kv(16, kBlock, true, {kWindow, 4});
  const auto tokens = iota_tokens(64);
  SequenceBlocks seq;
  for (int32_t n = 1; n <= 64; ++n) {
    ASSERT_TRUE(kv.grow(seq, n)) << n;
    kv.commit(seq, tokens, n);
  }
  EXPECT_EQ(seq.table.size(), 16u);
  kv.free(seq);
}

TEST(KvCacheManagerWindow, PrefixIsReusedWithItsWindowSlots) {
  KvCacheManager kv(16, kBlock, true, {kWindow, 16});
  const auto tokens = iota_tokens(20);
  SequenceBlocks first;
  ASSERT_TRUE(kv.grow(first, 20));
  kv.commit(first, tokens, 20);
  const auto table = first.table;
  kv.free(first);
  SequenceBlocks second;
  EXPECT_EQ(kv.match_prefix(second, tokens, 19), 16);
  // Position 16 sees positions 11..16: blocks 2 and 3 hold their slots again.
  EXPECT_EQ(second.window_begin, 2);
  EXPECT_EQ(kv.windows().holders(table[2]), 1);
  EXPECT_EQ(kv.windows().holders(table[3]), 1);
  EXPECT_EQ(kv.windows().holders(table[1]), 0);
  kv.free(second);
  EXPECT_EQ(kv.windows().n_held(), 0);
}

TEST(KvCacheManagerWindow, PrefixEndsBeforeABlockThatLostItsWindowSlot) {
  KvCacheManager kv(16, kBlock, true, {kWindow, 5});
  const auto tokens = iota_tokens(20);
  SequenceBlocks first;
  for (int32_t n = 1; n <= 20; ++n) {
    ASSERT_TRUE(kv.grow(first, n));
    kv.commit(first, tokens, n);
  }
  const auto table = first.table;  // 5 blocks; slots of blocks 0..2 released as it grew
  kv.free(first);                  // then those of blocks 3 and 4
  // Another sequence takes three slots: those released first (blocks 0, 1, 2) go.
  SequenceBlocks other;
  ASSERT_TRUE(kv.grow(other, 12));
  EXPECT_EQ(kv.windows().slot_of(table[2]), -1);
  EXPECT_GE(kv.windows().slot_of(table[3]), 0);
  // A full match (16 positions) needs blocks 2 and 3; block 2 lost its slot, so the
  // prefix stops before it... and a prefix of 8 positions needs blocks 0 and 1, also
  // gone: nothing is reused.
  SequenceBlocks second;
  EXPECT_EQ(kv.match_prefix(second, tokens, 19), 0);
  EXPECT_TRUE(second.table.empty());
  EXPECT_EQ(kv.pool().n_cached_free(), 5);  // the full layers' blocks are all still cached
  kv.free(other);
  EXPECT_EQ(kv.windows().n_held(), 0);
}

TEST(KvCacheManagerWindow, ForkAndCopyOnWriteKeepSlotsBalanced) {
  KvCacheManager kv(16, kBlock, true, {kWindow, 16});
  const auto tokens = iota_tokens(10);
  SequenceBlocks parent;
  ASSERT_TRUE(kv.grow(parent, 10));
  kv.commit(parent, tokens, 10);
  SequenceBlocks child = kv.fork(parent);
  const int32_t shared = parent.table[2];
  EXPECT_EQ(kv.windows().holders(shared), 2);
  auto copy = kv.make_writable(child, 10);
  ASSERT_TRUE(copy.has_value());
  EXPECT_EQ(copy->first, shared);
  EXPECT_EQ(kv.windows().holders(shared), 1);
  EXPECT_EQ(kv.windows().holders(copy->second), 1);
  EXPECT_NE(kv.windows().slot_of(copy->second), kv.windows().slot_of(shared));
  kv.free(child);
  kv.free(parent);
  EXPECT_EQ(kv.windows().n_held(), 0);
  EXPECT_EQ(kv.pool().n_free(), 16);
}

}  // namespace
}  // namespace tokenmill::kv
