// base/first_max.h: the greedy pick. (Ties across a whole vocabulary: sampler_test.cc.)
#include "base/first_max.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

namespace tokenmill {
namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();

TEST(FirstMaxIndex, FirstOfTheLargestInLanesAndTail) {
  std::vector<float> v(100, -1.0f);
  v[83] = 5.0f;  // past the last full stride of 16
  v[99] = 5.0f;
  EXPECT_EQ(first_max_index(v), 83);
  v[17] = 5.0f;  // a lane ahead of the tail
  v[1] = 5.0f;
  EXPECT_EQ(first_max_index(v), 1);
}

TEST(FirstMaxIndex, NanNeverWinsAndNothingAboveMinusInfinityGivesZero) {
  const float nan = std::nanf("");
  EXPECT_EQ(first_max_index(std::vector<float>{nan, 1.0f, nan, 2.0f, nan}), 3);
  EXPECT_EQ(first_max_index(std::vector<float>(40, -kInf)), 0);
  EXPECT_EQ(first_max_index(std::vector<float>{nan, -kInf, nan}), 0);
  EXPECT_EQ(first_max_index(std::vector<float>{}), 0);
  std::vector<float> v(33, -kInf);
  v[32] = kInf;
  EXPECT_EQ(first_max_index(v), 32);
}

}  // namespace
}  // namespace tokenmill
