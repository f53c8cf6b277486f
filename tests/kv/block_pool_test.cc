#include "kv/block_pool.h"

#include <gtest/gtest.h>

namespace tokenmill::kv {
namespace {

TEST(BlockPool, HandsOutLowestIdsFirst) {
  BlockPool pool(4);
  EXPECT_EQ(pool.allocate(), 0);
  EXPECT_EQ(pool.allocate(), 1);
  EXPECT_EQ(pool.n_free(), 2);
  EXPECT_EQ(pool.n_used(), 2);
}

TEST(BlockPool, ReturnsNulloptWhenEmpty) {
  BlockPool pool(2);
  ASSERT_TRUE(pool.allocate(2).has_value());
  EXPECT_FALSE(pool.allocate().has_value());
  EXPECT_FALSE(pool.allocate(1).has_value());
}

TEST(BlockPool, AllOrNothing) {
  BlockPool pool(3);
  EXPECT_FALSE(pool.allocate(4).has_value());
  EXPECT_EQ(pool.n_free(), 3);
  auto ids = pool.allocate(3);
  ASSERT_TRUE(ids.has_value());
  EXPECT_EQ(*ids, (std::vector<int32_t>{0, 1, 2}));
}

TEST(BlockPool, SharedBlockIsFreedByLastHolder) {
  BlockPool pool(2);
  const int32_t id = *pool.allocate();
  pool.retain(id);
  EXPECT_EQ(pool.ref_count(id), 2);
  pool.release(id);
  EXPECT_EQ(pool.n_free(), 1);
  pool.release(id);
  EXPECT_EQ(pool.n_free(), 2);
  EXPECT_EQ(pool.ref_count(id), 0);
}

TEST(BlockPool, ReleasedBlockIsReused) {
  BlockPool pool(3);
  auto ids = *pool.allocate(3);
  pool.release(ids[1]);
  EXPECT_EQ(pool.allocate(), 1);
}

}  // namespace
}  // namespace tokenmill::kv

namespace tokenmill::kv {
namespace {

std::vector<int32_t> block_tokens(int32_t first) {
  std::vector<int32_t> t(16);
  for (int32_t i = 0; i < 16; ++i) t[i] = first + i;
  return t;
}

TEST(BlockPoolPrefixCache, ReleasedCachedBlockIsFoundAgain) {
  BlockPool pool(4);
  const int32_t id = *pool.allocate();
  const auto tokens = block_tokens(100);
  const uint64_t h = BlockPool::block_hash(0, tokens);
  pool.register_cached(id, h, tokens);
  pool.release(id);
  EXPECT_EQ(pool.n_free(), 4);
  EXPECT_EQ(pool.n_cached_free(), 1);
  EXPECT_EQ(pool.take_cached(h, tokens), id);
  EXPECT_EQ(pool.ref_count(id), 1);
  EXPECT_EQ(pool.n_cached_free(), 0);
}

TEST(BlockPoolPrefixCache, SharedWhileHeld) {
  BlockPool pool(2);
  const int32_t id = *pool.allocate();
  const auto tokens = block_tokens(0);
  const uint64_t h = BlockPool::block_hash(0, tokens);
  pool.register_cached(id, h, tokens);
  EXPECT_EQ(pool.take_cached(h, tokens), id);
  EXPECT_EQ(pool.ref_count(id), 2);
}

TEST(BlockPoolPrefixCache, HashChainsOnParent) {
  const auto tokens = block_tokens(7);
  EXPECT_NE(BlockPool::block_hash(0, tokens), BlockPool::block_hash(1, tokens));
}

TEST(BlockPoolPrefixCache, CollisionWithOtherTokensIsAMiss) {
  BlockPool pool(2);
  const int32_t id = *pool.allocate();
  pool.register_cached(id, 42, block_tokens(0));
  EXPECT_FALSE(pool.take_cached(42, block_tokens(1)).has_value());
  EXPECT_FALSE(pool.take_cached(43, block_tokens(0)).has_value());
}

TEST(BlockPoolPrefixCache, UncachedBlocksAreReusedBeforeCachedOnes) {
  BlockPool pool(3);
  auto ids = *pool.allocate(3);  // 0, 1, 2
  pool.register_cached(ids[0], 10, block_tokens(0));
  pool.release(ids);  // frees 2, 1 (uncached) and 0 (cached)
  EXPECT_EQ(pool.allocate(), 1);
  EXPECT_EQ(pool.allocate(), 2);
  EXPECT_EQ(pool.allocate(), 0);  // the cached block goes last, and loses its entry
  EXPECT_FALSE(pool.is_cached(0));
  EXPECT_FALSE(pool.take_cached(10, block_tokens(0)).has_value());
}

TEST(BlockPoolPrefixCache, EvictsLeastRecentlyReleasedFirst) {
  BlockPool pool(3);
  auto ids = *pool.allocate(3);
  for (int32_t i = 0; i < 3; ++i) pool.register_cached(ids[i], 100 + i, block_tokens(16 * i));
  pool.release(ids[1]);
  pool.release(ids[0]);
  pool.release(ids[2]);
  // LRU order: 1, 0, 2
  EXPECT_EQ(pool.allocate(), 1);
  EXPECT_EQ(pool.allocate(), 0);
  EXPECT_TRUE(pool.is_cached(2));
  EXPECT_EQ(pool.take_cached(102, block_tokens(32)), 2);
}

TEST(BlockPoolPrefixCache, ReleasingASequenceEvictsItsTailFirst) {
  BlockPool pool(3);
  auto ids = *pool.allocate(3);
  for (int32_t i = 0; i < 3; ++i) pool.register_cached(ids[i], 100 + i, block_tokens(16 * i));
  pool.release(ids);
  EXPECT_EQ(pool.allocate(), 2);  // the last block of the sequence goes first
  EXPECT_EQ(pool.allocate(), 1);
  EXPECT_EQ(pool.allocate(), 0);
}

}  // namespace
}  // namespace tokenmill::kv
