#include "engine/step_batch.h"

#include <algorithm>

#include "engine/output_processor.h"

namespace tokenmill::engine {

StepBatch build_step_batch(const SchedulerOutput& plan) {
  StepBatch p;
  int32_t n_rows = 0;
  for (const ScheduledSequence& item : plan.scheduled) {
    Sequence* s = item.sequence;
    const int32_t first = s->n_computed, end = s->n_computed + item.n_new - item.n_drafts;
    std::vector<int32_t> step_tokens(s->tokens.begin() + first, s->tokens.begin() + end);
    step_tokens.insert(step_tokens.end(), s->drafts.begin(), s->drafts.begin() + item.n_drafts);
    p.batch.add_sequence(std::move(step_tokens), first, s->blocks.table, false);
    const int32_t first_token = p.batch.n_tokens() - item.n_new;
    if (s->wants_prompt_logprobs()) {
      // Positions q whose next token q + 1 is a prompt token not scored yet.
      for (int32_t q = std::max(first, s->next_prompt_logprob - 1); q < std::min(end, s->n_prompt - 1); ++q) {
        p.batch.output_tokens.push_back(first_token + (q - first));
        p.prompt_rows.push_back({s, q, n_rows++});
      }
    }
    if (end == static_cast<int32_t>(s->tokens.size())) {  // caught up: it draws (a pick per draft too)
      for (int32_t j = item.n_drafts; j >= 0; --j) p.batch.output_tokens.push_back(p.batch.n_tokens() - 1 - j);
      p.samples.push_back(s);
      p.takes_first_max = p.takes_first_max || OutputProcessor::takes_pick(*s);
      p.needs_logits = p.needs_logits || OutputProcessor::reads_logits(*s);
      p.sample_rows.push_back(n_rows);
      p.sample_drafts.push_back(item.n_drafts);
      n_rows += 1 + item.n_drafts;
    }
  }
  p.needs_logits = p.needs_logits || !p.prompt_rows.empty();
  return p;
}

}  // namespace tokenmill::engine
