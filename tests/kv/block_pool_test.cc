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
