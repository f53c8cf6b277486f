// The engine's state for one choice of one request: its tokens (prompt, then generated),
// how many of them are already in the KV cache, its blocks, sampler and text filters.
// The rule that drives scheduling: a sequence is computed up to n_computed; each step
// brings n_computed closer to tokens.size(), and when they meet, a token is sampled.
#pragma once

#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "base/timer.h"
#include "engine/request.h"
#include "engine/request_stream.h"
#include "engine/output_grammar.h"
#include "engine/sampler.h"
#include "engine/speculation.h"
#include "engine/stop_strings.h"
#include "kv/kv_cache_manager.h"
#include "tokenizer/incremental_decoder.h"

namespace tokenmill::engine {

// Shared by the choices of one request.
struct RequestState {
  Request request;
  std::shared_ptr<RequestStream> stream;
  Timer since_submit;
  bool first_token_seen = false;
  double time_to_first_token_s = 0;
  bool forked = false;           // choices 1..n-1 exist (created when the prompt is done)
  int32_t n_cached_tokens = 0;   // prompt tokens found in the prefix cache at admission
  int32_t n_completion_tokens = 0;
  int32_t n_choices_finished = 0;
  int32_t n_accepted_prediction = 0;  // Request::prediction tokens accepted as drafts
};

struct Sequence {
  std::shared_ptr<RequestState> state;
  int32_t choice = 0;
  uint64_t arrival = 0;             // admission order; preemption picks the newest
  std::vector<int32_t> tokens;      // prompt then generated
  int32_t n_prompt = 0;
  int32_t n_computed = 0;           // tokens whose keys and values are in the cache
  int32_t n_generated = 0;
  bool admitted_before = false;     // prefix-cache statistics count the first admission only
  kv::SequenceBlocks blocks;
  // While its cached prefix is read back from the disk tier: the reads and their progress
  // (the sequence waits, holding those blocks, until the load is done).
  std::vector<kv::DiskBlockRead> disk_reads;
  std::shared_ptr<kv::DiskLoad> disk_load;
  std::unique_ptr<Sampler> sampler;
  std::unique_ptr<tokenizer::IncrementalDecoder> decoder;
  std::unique_ptr<StopStringFilter> stop_filter;
  // Request::json_object / json_schema: what the output may continue with.
  std::unique_ptr<OutputGrammar> json;
  double last_token_time = 0;       // seconds since submit, for inter-token latency
  // Request::prompt_logprobs: the next prompt token whose log-probability is due (from 1),
  // and those computed but not sent yet (they go with the choice's first event).
  int32_t next_prompt_logprob = 1;
  std::vector<TokenLogprobs> pending_prompt_logprobs;
  // Speculative decoding: the tokens proposed to follow `tokens` this step (computed
  // with the pending token, never part of `tokens` until accepted), and how often this
  // sequence's drafts have been accepted.
  std::vector<int32_t> drafts;
  bool drafts_from_prediction = false;
  AcceptanceEstimate acceptance;
  std::unique_ptr<PredictionTracker> prediction;  // with Request::prediction

  bool wants_prompt_logprobs() const { return state->request.prompt_logprobs && next_prompt_logprob < n_prompt; }
  // Tokens one step may compute for this sequence: prompt positions whose logits are all
  // kept (prompt logprobs) go kMaxLogitRows at a time, so that the logits stay small.
  static constexpr int32_t kMaxLogitRows = 32;
  int32_t max_step_tokens() const { return wants_prompt_logprobs() ? kMaxLogitRows : INT32_MAX; }
  // Prompt tokens a cached prefix may cover: those before the first position whose
  // logits are still needed.
  int32_t max_cached_tokens() const {
    const int32_t all = static_cast<int32_t>(tokens.size()) - 1;
    return state->request.prompt_logprobs ? std::min(all, next_prompt_logprob - 1) : all;
  }

  bool loading_from_disk() const { return disk_load != nullptr; }
  int32_t n_pending() const { return static_cast<int32_t>(tokens.size()) - n_computed; }

  // n > 1: the first choice's first draw is where choices 1..n-1 are created (they share
  // the prompt's blocks and sample from the same logits). Until then only choice 0 exists.
  bool forks_on_next_draw() const { return choice == 0 && state->request.n > 1 && !state->forked; }
  bool is_batch() const { return state->request.priority == Priority::kBatch; }
};

// A request's first choice, its prompt still to compute (arrival: the admission order).
std::unique_ptr<Sequence> first_choice(std::shared_ptr<RequestState> state, uint64_t arrival,
                                       const tokenizer::Tokenizer& tokenizer);

// Choice `choice` (1 .. n - 1) of parent's request, created when the parent's prompt is
// done: the same tokens and computed positions in `blocks` (shared with the parent:
// KvCacheManager::fork), its own sampler seeded seed + choice, decoder, stop filter and
// grammar.
std::unique_ptr<Sequence> next_choice(const Sequence& parent, int32_t choice, uint64_t arrival,
                                      kv::SequenceBlocks blocks, const tokenizer::Tokenizer& tokenizer);

}  // namespace tokenmill::engine
