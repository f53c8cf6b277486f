// The draft-model drafter of speculative decoding (SpecMode::kDraft, docs/speculative.md):
// a smaller model with the target's vocabulary proposes each speculating sequence's next
// tokens as its own greedy continuation. All sequences draft together: one forward pass
// of the draft per draft position, each reading the draft's weights once for all of them.
//
// Each sequence keeps its positions in the draft's own paged KV cache between steps,
// with the tokens they were computed for. At the next call the cached tokens are compared
// with the sequence's: what the target rejected (and anything after it) is dropped, and
// only the tokens accepted since are computed again before drafting.
//
//   step n:   tokens t0..t9            -> cache t0..t9 + d0 d1 d2 (d3 proposed, not cached)
//   target accepts d0 d1, emits x      -> tokens t0..t9 d0 d1 x
//   step n+1: keep t0..t9 d0 d1, compute x, draft from there
//
// Greedy drafts make the drafter deterministic, so verification by drawing (speculation.h)
// keeps every token exactly what plain decoding would give, whatever the draft model is.
//
// Running out of cache blocks is not an error: the caches of sequences that do not draft
// this step go first, then a sequence that still does not fit gets no drafts.
//
// Thread-safety: none; owned by the engine thread (through DraftProposer).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "engine/speculation.h"
#include "kv/block_pool.h"
#include "model/model.h"
#include "ops/kv_storage.h"
#include "tokenizer/tokenizer.h"

namespace tokenmill::engine {

class DraftModel {
 public:
  // n_blocks: the draft cache's blocks of kBlockSize positions, for all sequences.
  DraftModel(model::Model& model, int32_t n_blocks);

  static constexpr int32_t kBlockSize = 16;
  // Positions one catch-up pass computes at most (the prompt of a new sequence comes in
  // passes of this size).
  static constexpr int32_t kCatchUpChunk = 512;

  struct Ask {
    uint64_t key = 0;                  // the sequence (stable while it runs)
    std::span<const int32_t> tokens;   // its prompt and output so far (not empty)
    int32_t n_drafts = 0;              // drafts wanted (>= 1)
  };
  // The drafts of each ask, in order: n_drafts tokens (fewer or none when the cache has no
  // room, or when the draft model fails).
  std::vector<std::vector<int32_t>> propose(std::span<const Ask> asks);

  // Frees the cache of every sequence whose key is not in live (finished, preempted).
  void retain(std::span<const uint64_t> live);

  // The bytes of KV cache a draft model with n_blocks commits.
  static int64_t kv_cache_bytes(const model::Model& model, int32_t n_blocks);

  // The measured cost of the draft's passes (seconds against positions).
  const StepCostModel& pass_cost() const { return pass_cost_; }

  int32_t n_blocks() const { return pool_.n_blocks(); }
  int32_t n_free_blocks() const { return pool_.n_free(); }
  int64_t kv_bytes() const { return kv_.shape().total_bytes(); }
  int32_t n_cached_sequences() const { return static_cast<int32_t>(cached_.size()); }

 private:
  // A sequence's cache: tokens[i]'s keys and values are at position i of table.
  struct Cached {
    std::vector<int32_t> tokens;
    std::vector<int32_t> table;
  };

  // Keeps the first n_keep cached tokens of c and returns the blocks past them.
  void truncate(Cached& c, int32_t n_keep);
  // Grows c's table to cover n_positions, first freeing the caches not in `keep`
  // (sequences of this call). False when even that leaves too few blocks.
  bool reserve(Cached& c, int32_t n_positions, std::span<const Ask> keep);
  void forget(Cached& c);

  model::Model& model_;
  ops::KvStorage kv_;
  kv::BlockPool pool_;
  std::unordered_map<uint64_t, Cached> cached_;
  StepCostModel pass_cost_;
  std::vector<float> logits_;    // unused: every pass asks for the greedy picks only
  std::vector<int32_t> picks_;   // [outputs of a pass]
};

// Why `draft` cannot draft for `target` ("" when it can): the same number of output rows,
// and the same token under every id.
std::string draft_vocabulary_error(const model::Model& target, const tokenizer::Tokenizer& target_tokens,
                                   const model::Model& draft, const tokenizer::Tokenizer& draft_tokens);

}  // namespace tokenmill::engine
