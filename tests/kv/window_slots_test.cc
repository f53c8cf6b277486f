#include "kv/window_slots.h"

#include <gtest/gtest.h>

#include <vector>

namespace tokenmill::kv {
namespace {

TEST(WindowSlots, AttachHandsOutLowestSlotsAllOrNothing) {
  WindowSlots w(3, 10);
  const std::vector<int32_t> blocks = {7, 2};
  ASSERT_TRUE(w.attach(blocks));
  EXPECT_EQ(w.slot_of(7), 0);
  EXPECT_EQ(w.slot_of(2), 1);
  EXPECT_EQ(w.slot_of(3), -1);
  EXPECT_EQ(w.holders(7), 1);
  EXPECT_EQ(w.n_held(), 2);
  const std::vector<int32_t> two_more = {3, 4};
  EXPECT_FALSE(w.attach(two_more));  // one slot free
  EXPECT_EQ(w.slot_of(3), -1);
  EXPECT_EQ(w.n_free(), 1);
}

TEST(WindowSlots, ReleasedSlotsStayAttachedUntilTakenLeastRecentlyReleasedFirst) {
  WindowSlots w(3, 10);
  const std::vector<int32_t> blocks = {0, 1, 2};
  ASSERT_TRUE(w.attach(blocks));
  w.release(1);
  w.release(0);
  EXPECT_EQ(w.n_free(), 2);
  EXPECT_EQ(w.slot_of(1), 1);  // still attached: its positions are still there
  const std::vector<int32_t> next = {5};
  ASSERT_TRUE(w.attach(next));
  EXPECT_EQ(w.slot_of(5), 1);   // block 1 was released first
  EXPECT_EQ(w.slot_of(1), -1);  // and lost its window part
  EXPECT_EQ(w.slot_of(0), 0);
}

TEST(WindowSlots, HoldTakesAReleasedSlotBack) {
  WindowSlots w(2, 4);
  const std::vector<int32_t> blocks = {0, 1};
  ASSERT_TRUE(w.attach(blocks));
  w.release(0);
  w.hold(0);  // another sequence sees block 0 again
  EXPECT_EQ(w.holders(0), 1);
  EXPECT_EQ(w.n_free(), 0);
  const std::vector<int32_t> more = {2};
  EXPECT_FALSE(w.attach(more));
  w.hold(1);
  w.release(1);
  EXPECT_EQ(w.holders(1), 1);
  EXPECT_EQ(w.n_free(), 0);
}

TEST(WindowSlots, DetachFreesAnUnheldSlotForAnyBlock) {
  WindowSlots w(2, 4);
  const std::vector<int32_t> blocks = {3};
  ASSERT_TRUE(w.attach(blocks));
  w.release(3);
  w.detach(3);
  EXPECT_EQ(w.slot_of(3), -1);
  EXPECT_EQ(w.n_free(), 2);
  w.detach(2);  // none attached: nothing happens
  EXPECT_EQ(w.n_free(), 2);
  const std::vector<int32_t> both = {0, 1};
  EXPECT_TRUE(w.attach(both));
}

}  // namespace
}  // namespace tokenmill::kv
