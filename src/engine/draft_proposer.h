// The propose phase of an engine step with speculative decoding (docs/speculative.md):
// which running sequences carry drafts into the step, how many, and from which drafter;
// and what a verification teaches it (acceptance, the cost of a step).
//
// Thread-safety: none; owned by the engine thread.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "engine/draft_model.h"
#include "engine/metrics.h"
#include "engine/sequence.h"
#include "engine/speculation.h"

namespace tokenmill::engine {

class DraftProposer {
 public:
  // REQUIRES: speculative_config_error(config) is "". n_draft_blocks: the draft model's
  // cache (SpecMode::kDraft), in DraftModel::kBlockSize positions.
  DraftProposer(SpeculativeConfig config, int32_t max_context, int32_t n_draft_blocks);

  // Sets each running sequence's drafts for the step (none for most): as many as its
  // acceptance rate makes worth their positions (allocate_drafts, with the measured step
  // costs), within the tokens it may still generate.
  void propose(const std::vector<std::unique_ptr<Sequence>>& running);

  // A forward pass of n_tokens positions, n_outputs of them with an output row, took
  // `seconds`. Steps whose every position is an output row (decode, drafts) fit the
  // step-cost line.
  void observe_step(int32_t n_tokens, size_t n_outputs, double seconds);
  // The fitted cost of a step (seconds against positions).
  const StepCostModel& step_cost() const { return step_cost_; }

  // Frees what the drafter keeps for sequences no longer running (the draft model's cache
  // of finished, cancelled and preempted ones). Called after every step.
  void forget_departed(const std::vector<std::unique_ptr<Sequence>>& running);
  // SpecMode::kDraft's drafter; null otherwise.
  const DraftModel* draft_model() const { return draft_model_.get(); }

  // s's k drafts were verified and `accepted` of them kept.
  void verified(Sequence& s, int32_t k, int32_t accepted, EngineMetrics& metrics) const;

 private:
  // Whether s may carry drafts: a decoding sequence with a drafter, not opted out, not
  // under a JSON grammar (whose state a draft would have to advance before it is verified).
  bool may_speculate(const Sequence& s) const;
  // Up to k drafts for s: from its request's prediction first, else from the configured
  // drafter (n-gram over its own tokens, unless speculation is off). The draft model's
  // drafts are not made here: they come for all sequences at once (propose).
  std::vector<int32_t> draft(Sequence& s, int32_t k) const;

  SpeculativeConfig config_;
  std::unique_ptr<DraftModel> draft_model_;  // SpecMode::kDraft
  int32_t max_context_;
  StepCostModel step_cost_;
};

}  // namespace tokenmill::engine
