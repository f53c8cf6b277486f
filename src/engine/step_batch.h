// The prepare phase of an engine step, as data: the scheduled tokens (and drafts) of
// every sequence flattened into one model::Batch, and what each of its logits rows is
// for - a sequence's draw (one row per draft position too) or a prompt token's
// log-probability.
#pragma once

#include <cstdint>
#include <vector>

#include "engine/scheduler.h"
#include "engine/sequence.h"
#include "model/batch.h"

namespace tokenmill::engine {

struct PromptRow {
  Sequence* sequence;
  int32_t position;  // its logits give the log-probability of the prompt token after it
  int32_t row;
};

struct StepBatch {
  model::Batch batch;
  std::vector<Sequence*> samples;      // the sequences that draw a token this step
  std::vector<int32_t> sample_rows;    // the logits row of each (its first, with drafts)
  std::vector<int32_t> sample_drafts;  // drafts each carries: rows sample_rows[i] .. + drafts
  std::vector<PromptRow> prompt_rows;
  bool takes_first_max = false;  // some draw is just the greedy pick
  bool needs_logits = false;     // some draw, or a prompt logprob, reads logits
};

// The batch of a planned step. A sequence draws when the step brings it up to its last
// token; prompt positions whose next token's log-probability is due get rows too.
StepBatch build_step_batch(const SchedulerOutput& plan);

}  // namespace tokenmill::engine
