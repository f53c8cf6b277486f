// How many positions a step that carries batch work may hold while interactive requests
// are about (EngineConfig::batch_latency_factor): such a step should last at most the
// factor times a one-token step, so that interactive streams keep their pace and a new
// request waits little for the step in flight.
//
// Two measurements, not the step-cost line alone, decide it:
//   - the one-token step: the measured duration of small steps without batch work (a line
//     fitted mostly to large steps misjudges small ones, by how much depends on the kernels);
//   - feedback: the measured duration of the limited steps against the target scales the
//     positions the line allows, so that the steps themselves keep to the target.
//
// Thread-safety: none; owned by the engine thread.
#pragma once

#include <cstdint>

#include "engine/speculation.h"

namespace tokenmill::engine {

class BatchStepLimit {
 public:
  explicit BatchStepLimit(double factor) : factor_(factor) {}

  // The positions the next step may hold if it carries batch work, from the fitted cost
  // of a step. REQUIRES: factor > 0 and interactive requests are about.
  int32_t positions(const StepCostModel& cost, int32_t max_positions) const;

  // A whole step took `seconds` for n_tokens positions. limited: it carried batch work
  // under positions(); small_interactive: it carried no batch work and few positions.
  void observe(int32_t n_tokens, double seconds, bool limited, bool small_interactive);

  // The target duration of a limited step (0 until a cost is known).
  double target_seconds(const StepCostModel& cost) const;

  // Steps of at most this many positions count as one-token steps (a few drafts on one
  // sequence cost about what one token does: the step reads the weights either way).
  static constexpr int32_t kSmallStep = 4;

 private:
  double factor_;
  double one_step_seconds_ = 0;  // moving average of small interactive steps; 0: none yet
  double scale_ = 1.0;           // feedback on the line's positions
};

}  // namespace tokenmill::engine
