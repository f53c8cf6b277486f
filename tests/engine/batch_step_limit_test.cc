// The positions a step with batch work may hold while interactive users are about: from
// the cost line at first, then from the measured one-token step and the measured
// duration of the limited steps themselves.
#include "engine/batch_step_limit.h"

#include <gtest/gtest.h>

namespace tokenmill::engine {
namespace {

// A line of 8 ms + 1 ms per position, well measured.
StepCostModel line() {
  StepCostModel cost;
  for (int i = 0; i < 200; ++i) {
    for (int32_t n : {1, 8, 32, 64}) cost.observe(n, 0.008 + 0.001 * n);
  }
  return cost;
}

TEST(BatchStepLimit, FollowsTheCostLineUntilSmallStepsAreMeasured) {
  const StepCostModel cost = line();
  BatchStepLimit limit(2.5);
  // 2.5 x 9 ms = 22.5 ms: 8 ms fixed, then 14.5 positions.
  EXPECT_NEAR(limit.target_seconds(cost), 0.0225, 0.001);
  EXPECT_NEAR(limit.positions(cost, 128), 14, 1);
  EXPECT_EQ(limit.positions(cost, 10), 10);
}

TEST(BatchStepLimit, AMeasuredOneTokenStepSetsTheTarget) {
  const StepCostModel cost = line();
  BatchStepLimit limit(2.5);
  for (int i = 0; i < 100; ++i) limit.observe(1, 0.012, /*limited=*/false, /*small_interactive=*/true);
  EXPECT_NEAR(limit.target_seconds(cost), 0.030, 0.001);  // 2.5 x 12 ms
  EXPECT_NEAR(limit.positions(cost, 128), 22, 1);          // (30 - 8) / 1
  // Large steps and steps with batch work are no one-token steps.
  limit.observe(40, 0.050, false, true);
  limit.observe(2, 0.002, true, false);
  EXPECT_NEAR(limit.target_seconds(cost), 0.030, 0.001);
}

TEST(BatchStepLimit, LimitedStepsThatOverrunTheTargetShrinkTheNextOnes) {
  const StepCostModel cost = line();
  BatchStepLimit limit(2.5);
  for (int i = 0; i < 100; ++i) limit.observe(1, 0.010, false, true);
  const int32_t first = limit.positions(cost, 128);
  // The steps take twice the target: the positions fall, step by step, then hold.
  int32_t previous = first;
  for (int i = 0; i < 5; ++i) {
    limit.observe(previous, 0.050, /*limited=*/true, false);
    const int32_t now = limit.positions(cost, 128);
    EXPECT_LT(now, previous);
    EXPECT_GE(now, previous * 0.8 - 1);  // at most a 25% change per step
    previous = now;
  }
  // Steps that end well inside the target give positions back, within bounds.
  for (int i = 0; i < 100; ++i) limit.observe(previous, 0.005, true, false);
  EXPECT_GT(limit.positions(cost, 128), first);
  EXPECT_LE(limit.positions(cost, 128), 4 * (first + 1));
  EXPECT_EQ(limit.positions(cost, 20), 20);
}

}  // namespace
}  // namespace tokenmill::engine
