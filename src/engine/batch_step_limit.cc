#include "engine/batch_step_limit.h"

#include <algorithm>
#include <cmath>

namespace tokenmill::engine {

namespace {

// The moving average's weight of a new small step, and the feedback's bounds: one step
// moves the scale by at most 25%, and the scale stays within what a mismeasured line can
// plausibly be off by.
constexpr double kOneStepWeight = 0.1;
constexpr double kMaxStepChange = 1.25;
constexpr double kMinScale = 0.05, kMaxScale = 4.0;

}  // namespace

double BatchStepLimit::target_seconds(const StepCostModel& cost) const {
  const double one = one_step_seconds_ > 0 ? one_step_seconds_ : cost.step_seconds(1);
  return factor_ * one;
}

int32_t BatchStepLimit::positions(const StepCostModel& cost, int32_t max_positions) const {
  const double one = cost.step_seconds(1);
  const double per_position = cost.step_seconds(2) - one;
  if (!(per_position > 0)) return max_positions;
  const double fixed = one - per_position;
  const double on_line = (target_seconds(cost) - fixed) / per_position;
  return static_cast<int32_t>(std::clamp(on_line * scale_, 1.0, static_cast<double>(max_positions)));
}

void BatchStepLimit::observe(int32_t n_tokens, double seconds, bool limited, bool small_interactive) {
  if (!(seconds > 0)) return;
  if (small_interactive && n_tokens <= kSmallStep) {
    one_step_seconds_ = one_step_seconds_ > 0 ? one_step_seconds_ + kOneStepWeight * (seconds - one_step_seconds_)
                                              : seconds;
  }
  if (limited && one_step_seconds_ > 0) {
    // Halfway (in log terms) toward the scale that would have hit the target.
    const double correction = std::sqrt(factor_ * one_step_seconds_ / seconds);
    scale_ = std::clamp(scale_ * std::clamp(correction, 1 / kMaxStepChange, kMaxStepChange), kMinScale, kMaxScale);
  }
}

}  // namespace tokenmill::engine
