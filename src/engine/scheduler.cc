#include "engine/scheduler.h"

#include <algorithm>

namespace tokenmill::engine {

Scheduler::Scheduler(SchedulerConfig config, kv::KvCacheManager& kv) : config_(config), kv_(kv) {}

void Scheduler::add_waiting(std::unique_ptr<Sequence> sequence) { waiting_.push_back(std::move(sequence)); }

void Scheduler::add_running(std::unique_ptr<Sequence> sequence) { running_.push_back(std::move(sequence)); }

void Scheduler::remove(Sequence* sequence) {
  kv_.free(sequence->blocks);
  auto same = [&](const std::unique_ptr<Sequence>& s) { return s.get() == sequence; };
  auto it = std::find_if(running_.begin(), running_.end(), same);
  if (it != running_.end()) {
    running_.erase(it);
    return;
  }
  auto wit = std::find_if(waiting_.begin(), waiting_.end(), same);
  if (wit != waiting_.end()) waiting_.erase(wit);
}

bool Scheduler::preempt_newest(const Sequence* keep, SchedulerOutput& out, bool batch_only) {
  auto newest = running_.end();
  for (bool batch : {true, false}) {
    for (auto it = running_.begin(); it != running_.end(); ++it) {
      if (it->get() == keep || (*it)->is_batch() != batch) continue;
      if (newest == running_.end() || (*it)->arrival > (*newest)->arrival) newest = it;
    }
    if (newest != running_.end() || batch_only) break;
  }
  if (newest == running_.end()) return false;
  Sequence* victim = newest->get();
  // Already scheduled this step? Then it is dropped from the batch too.
  auto& sched = out.scheduled;
  sched.erase(std::remove_if(sched.begin(), sched.end(), [&](const ScheduledSequence& s) { return s.sequence == victim; }),
              sched.end());
  kv_.commit(victim->blocks, victim->tokens, victim->n_computed);
  kv_.free(victim->blocks);
  victim->n_computed = 0;
  out.preempted.push_back(victim);
  waiting_.push_front(std::move(*newest));
  running_.erase(newest);
  return true;
}

void Scheduler::schedule_running(bool batch, int32_t& budget, SchedulerOutput& out) {
  for (size_t i = 0; i < running_.size() && budget > 0; ++i) {
    Sequence* seq = running_[i].get();
    if (seq->is_batch() != batch) continue;
    if (std::any_of(out.scheduled.begin(), out.scheduled.end(),
                    [&](const ScheduledSequence& s) { return s.sequence == seq; })) {
      continue;  // admitted this step
    }
    int32_t n_new = std::min({seq->n_pending(), budget, seq->max_step_tokens()});
    if (n_new <= 0) continue;
    // Drafts ride along only in the budget left and in blocks no running sequence will
    // miss (a block each kept free for them): drafts never displace a token or cause a
    // preemption.
    const int32_t n_drafts = std::min<int32_t>(static_cast<int32_t>(seq->drafts.size()), budget - n_new);
    const int32_t spare = kv_.pool().n_free() - static_cast<int32_t>(running_.size());
    std::vector<kv::BlockCopy> copies;
    if (n_drafts > 0 && kv_.blocks_needed(seq->blocks, seq->n_computed + n_new + n_drafts) <= spare &&
        kv_.reserve_writes(seq->blocks, seq->n_computed, seq->n_computed + n_new + n_drafts, copies)) {
      seq->drafts.resize(static_cast<size_t>(n_drafts));
      out.scheduled.push_back({seq, n_new + n_drafts, n_drafts, std::move(copies)});
      budget -= n_new + n_drafts;
      continue;
    }
    seq->drafts.clear();
    // The step's blocks, copies of shared ones included, or preemption until they fit.
    bool fits = kv_.reserve_writes(seq->blocks, seq->n_computed, seq->n_computed + n_new, copies);
    while (!fits && preempt_newest(seq, out)) {
      // preempt_newest may have removed a sequence before index i; find seq again.
      i = std::find_if(running_.begin(), running_.end(), [&](const auto& s) { return s.get() == seq; }) -
          running_.begin();
      fits = kv_.reserve_writes(seq->blocks, seq->n_computed, seq->n_computed + n_new, copies);
    }
    if (!fits) {
      // Blocks that waiting sequences hold (prefixes read, or being read, from disk) come
      // back by the next step or once the reads are done (release_read_prefixes): until
      // then the sequence waits rather than ends.
      const bool blocks_held_by_waiting = std::any_of(
          waiting_.begin(), waiting_.end(), [](const auto& w) { return !w->blocks.table.empty(); });
      if (!blocks_held_by_waiting) out.cannot_fit.push_back(seq);
      continue;
    }
    out.scheduled.push_back({seq, n_new, 0, std::move(copies)});
    budget -= n_new;
  }
  // Budget spent by sequences preempted after they were scheduled comes back only next
  // step; keeping the loop simple matters more than that token.
}

void Scheduler::admit_waiting(bool batch, int32_t& budget, SchedulerOutput& out) {
  for (auto it = waiting_.begin(); budget > 0 && it != waiting_.end();) {
    Sequence* seq = it->get();
    if (seq->is_batch() != batch) {
      ++it;
      continue;
    }
    if (static_cast<int32_t>(running_.size()) >= config_.max_seqs) {
      // An interactive request takes the place of the newest batch sequence.
      const size_t index = static_cast<size_t>(it - waiting_.begin());
      if (batch || !preempt_newest(nullptr, out, /*batch_only=*/true)) break;
      it = waiting_.begin() + static_cast<std::ptrdiff_t>(index + 1);  // the preempted one went to the front
      continue;
    }
    if (seq->loading_from_disk()) {
      ++it;  // its prefix is still being read
      continue;
    }
    if (seq->n_computed == 0 && seq->blocks.table.empty()) {
      // At least one token is always computed, so the last position's logits exist.
      seq->n_computed = kv_.match_prefix(seq->blocks, seq->tokens, seq->max_cached_tokens(),
                                         disk_ != nullptr ? &seq->disk_reads : nullptr);
      if (!seq->disk_reads.empty()) {
        seq->disk_load = disk_->start_reads(seq->disk_reads, seq->tokens);
        ++it;
        continue;
      }
    }
    const int32_t n_new = std::min({seq->n_pending(), budget, seq->max_step_tokens()});
    std::vector<kv::BlockCopy> copies;
    if (!kv_.reserve_writes(seq->blocks, seq->n_computed, seq->n_computed + n_new, copies)) {
      // Not enough blocks: give back the cached prefix it took and try again next step.
      kv_.free(seq->blocks);
      seq->n_computed = 0;
      break;
    }
    if (!seq->admitted_before) out.newly_admitted.push_back(seq);
    out.scheduled.push_back({seq, n_new, 0, std::move(copies)});
    budget -= n_new;
    running_.push_back(std::move(*it));
    it = waiting_.erase(it);
  }
}

int32_t Scheduler::n_loading() const {
  return static_cast<int32_t>(
      std::count_if(waiting_.begin(), waiting_.end(), [](const auto& s) { return s->loading_from_disk(); }));
}

void Scheduler::finish_disk_loads() {
  for (const auto& seq : waiting_) {
    if (!seq->loading_from_disk() || !seq->disk_load->done()) continue;
    if (!kv_.finish_disk_reads(seq->blocks, seq->tokens, seq->disk_reads, seq->disk_load->n_ok())) seq->n_computed = 0;
    seq->disk_reads.clear();
    seq->disk_load.reset();
  }
}

void Scheduler::release_read_prefixes() {
  for (const auto& seq : waiting_) {
    if (seq->loading_from_disk() || seq->blocks.table.empty()) continue;
    kv_.free(seq->blocks);
    seq->n_computed = 0;
  }
}

SchedulerOutput Scheduler::schedule() {
  SchedulerOutput out;
  finish_disk_loads();
  int32_t budget = config_.max_batch_tokens;
  // Interactive first: running, then waiting; batch work takes what is left.
  schedule_running(/*batch=*/false, budget, out);
  admit_waiting(/*batch=*/false, budget, out);
  const int32_t interactive = config_.max_batch_tokens - budget;
  int32_t batch_budget = std::min(budget, std::max(0, batch_token_limit_ - interactive));
  // Under a batch token limit, a step that computes an interactive prompt carries no
  // batch work: the new request's first token waits for the whole step, and a batch
  // decode position costs several prompt positions (its logits cover the vocabulary).
  auto computes_prompt = [](const ScheduledSequence& s) { return s.sequence->n_pending() > 1; };
  if (batch_token_limit_ != INT32_MAX && std::any_of(out.scheduled.begin(), out.scheduled.end(), computes_prompt)) {
    batch_budget = 0;
  }
  schedule_running(/*batch=*/true, batch_budget, out);
  admit_waiting(/*batch=*/true, batch_budget, out);
  release_read_prefixes();
  return out;
}

}  // namespace tokenmill::engine
