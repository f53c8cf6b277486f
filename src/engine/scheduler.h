// Picks what one forward pass computes. Running sequences come first, oldest first, each
// with all its pending tokens (one, when decoding, and the drafts it carries) as far as
// the token budget allows - drafts are dropped before anything else is given up;
// then waiting sequences are admitted in arrival order, their prompts cut into chunks
// that fit what is left of the budget (chunked prefill: a long prompt never stalls the
// running streams for more than a step). A newly admitted sequence first takes the
// longest cached prefix of its tokens. With a disk tier, the part of that prefix found
// on disk is read back first: the sequence waits in the queue, holding its blocks, while
// others are admitted past it, and goes on when the reads are done (or, if one failed,
// matches its prefix again).
//
// When a running sequence needs a block and none is free, the newest running sequence
// is preempted: its blocks go back to the pool (its full blocks stay cached) and it waits
// at the front of the queue to be recomputed, which its cached prefix makes cheap.
//
// Two priority classes (Request::priority): each step serves the running interactive
// sequences, then admits waiting interactive ones (preempting the newest batch sequence
// when max_seqs are running), and only then the running and waiting batch sequences,
// with the budget left. Preemption takes the newest batch sequence before any
// interactive one. With interactive requests only, this is the order above. A batch
// token limit (set_batch_token_limit) caps the positions of a step that carries batch
// work: batch sequences get what the interactive ones leave of it, and nothing in a step
// that computes an interactive prompt.
//
// Thread-safety: not thread-safe; owned by the engine thread.
#pragma once

#include <climits>
#include <cstdint>
#include <deque>
#include <memory>
#include <vector>

#include "engine/kv_disk_tier.h"
#include "engine/sequence.h"
#include "kv/kv_cache_manager.h"

namespace tokenmill::engine {

struct SchedulerConfig {
  int32_t max_batch_tokens = 256;
  int32_t max_seqs = 64;
};

struct ScheduledSequence {
  Sequence* sequence;
  // Positions computed this step: tokens[n_computed, n_computed + n_new - n_drafts), then
  // the sequence's drafts (the first n_drafts of them; the scheduler trims the rest).
  int32_t n_new;
  int32_t n_drafts = 0;
  // Shared blocks among those positions, replaced by private ones when the step was
  // planned: their contents must be copied, in this order, before the step writes.
  std::vector<kv::BlockCopy> copies;
};

struct SchedulerOutput {
  std::vector<ScheduledSequence> scheduled;
  std::vector<Sequence*> preempted;       // this step, in the order they were preempted
  std::vector<Sequence*> cannot_fit;      // running alone and still out of blocks: must finish
  std::vector<Sequence*> newly_admitted;  // first admission, with their cached-prefix size set
};

class Scheduler {
 public:
  Scheduler(SchedulerConfig config, kv::KvCacheManager& kv);

  // The prefix cache's disk tier, or nullptr (none).
  void set_disk_tier(KvDiskTier* tier) { disk_ = tier; }
  // Waiting sequences whose prefix is being read from disk.
  int32_t n_loading() const;

  void add_waiting(std::unique_ptr<Sequence> sequence);
  // Running sequences created outside admission (the extra choices of a request).
  void add_running(std::unique_ptr<Sequence> sequence);
  SchedulerOutput schedule();
  // Positions, interactive ones included, beyond which a step takes no batch work
  // (INT32_MAX: none; the token budget still holds).
  void set_batch_token_limit(int32_t n) { batch_token_limit_ = n; }
  // Removes a sequence (finished or cancelled) and frees its blocks.
  void remove(Sequence* sequence);

  const std::vector<std::unique_ptr<Sequence>>& running() const { return running_; }
  const std::deque<std::unique_ptr<Sequence>>& waiting() const { return waiting_; }
  bool idle() const { return running_.empty() && waiting_.empty(); }

 private:
  // Frees the newest running sequence other than `keep` (a batch one if any) and moves
  // it to the waiting queue's front; false if there is none (batch_only: if there is no
  // batch one).
  bool preempt_newest(const Sequence* keep, SchedulerOutput& out, bool batch_only = false);
  // Schedules the running sequences of one class, oldest first.
  void schedule_running(bool batch, int32_t& budget, SchedulerOutput& out);
  // Admits waiting sequences of one class in queue order.
  void admit_waiting(bool batch, int32_t& budget, SchedulerOutput& out);
  // Takes in the disk reads that are done: their blocks join the cache, or (one failed)
  // the sequence lets go of its blocks to match again.
  void finish_disk_loads();
  // Waiting sequences whose disk reads are done but which were not admitted this step let
  // go of their blocks (which stay cached: matching again finds them in memory). Held
  // while waiting, they could keep from the sequences before them, or from the running
  // ones, the very blocks those need, and no one would move.
  void release_read_prefixes();

  SchedulerConfig config_;
  kv::KvCacheManager& kv_;
  KvDiskTier* disk_ = nullptr;
  std::vector<std::unique_ptr<Sequence>> running_;  // oldest first
  std::deque<std::unique_ptr<Sequence>> waiting_;   // next to admit first
  int32_t batch_token_limit_ = INT32_MAX;
};

}  // namespace tokenmill::engine
