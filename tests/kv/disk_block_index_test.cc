#include "kv/disk_block_index.h"

#include <gtest/gtest.h>

namespace tokenmill::kv {
namespace {

std::vector<uint64_t> hashes(const std::vector<DiskBlockIndex::Evicted>& evicted) {
  std::vector<uint64_t> out;
  for (const auto& e : evicted) out.push_back(e.hash);
  return out;
}

TEST(DiskBlockIndex, EvictsLeastRecentlyUsedFirstToStayWithinBudget) {
  DiskBlockIndex index(300);
  EXPECT_TRUE(index.insert(1, {100, true}).empty());
  EXPECT_TRUE(index.insert(2, {100, false}).empty());
  EXPECT_TRUE(index.insert(3, {100, true}).empty());
  EXPECT_EQ(index.used_bytes(), 300);
  index.touch(1);  // order of use now 2, 3, 1
  EXPECT_EQ(hashes(index.insert(4, {150, true})), (std::vector<uint64_t>{2, 3}));
  EXPECT_EQ(index.used_bytes(), 250);
  EXPECT_FALSE(index.find(2));
  EXPECT_FALSE(index.find(3));
  ASSERT_TRUE(index.find(1));
  EXPECT_TRUE(index.find(1)->has_window);
  EXPECT_EQ(index.find(4)->n_bytes, 150);
}

TEST(DiskBlockIndex, EvictedBlocksCarryTheirInfo) {
  DiskBlockIndex index(100);
  index.insert(7, {60, false});
  const auto evicted = index.insert(8, {60, true});
  ASSERT_EQ(evicted.size(), 1u);
  EXPECT_EQ(evicted[0].hash, 7u);
  EXPECT_EQ(evicted[0].info.n_bytes, 60);
  EXPECT_FALSE(evicted[0].info.has_window);
}

TEST(DiskBlockIndex, ReinsertReplacesAndMovesToTheBack) {
  DiskBlockIndex index(250);
  index.insert(1, {100, false});
  index.insert(2, {100, false});
  index.insert(1, {120, true});  // replaced: 2 is now the oldest
  EXPECT_EQ(index.n_blocks(), 2);
  EXPECT_EQ(index.used_bytes(), 220);
  EXPECT_EQ(hashes(index.insert(3, {100, false})), (std::vector<uint64_t>{2}));
}

TEST(DiskBlockIndex, ABlockLargerThanTheBudgetIsNotKept) {
  DiskBlockIndex index(50);
  EXPECT_EQ(hashes(index.insert(9, {80, false})), (std::vector<uint64_t>{9}));
  EXPECT_EQ(index.n_blocks(), 0);
  EXPECT_EQ(index.used_bytes(), 0);
}

TEST(DiskBlockIndex, ShrinkToAndErase) {
  DiskBlockIndex index(1000);
  for (uint64_t h = 1; h <= 5; ++h) index.insert(h, {100, false});
  index.erase(3);
  index.erase(42);  // absent: no-op
  EXPECT_EQ(index.used_bytes(), 400);
  EXPECT_EQ(hashes(index.shrink_to(200)), (std::vector<uint64_t>{1, 2}));
  index.touch(42);
  EXPECT_EQ(index.n_blocks(), 2);
}

}  // namespace
}  // namespace tokenmill::kv
