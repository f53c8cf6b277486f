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

}  // namespace
}  // namespace tokenmill::kv
