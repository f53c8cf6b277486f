// The last phase of an engine step: from a sequence's logits row to its stream. Draws the
// token (sampler, JSON grammar, the greedy pick the forward pass found), then turns it
// into an event: detokenized text through the stop-string filter, log-probabilities,
// end-of-generation and length limits, metrics (time to first token, inter-token
// latency), usage when the request's last choice ends. A choice that ends leaves the
// scheduler (its blocks go back to the pool).
//
// Thread-safety: draw() may run on several threads at once, one sequence each (the
// sampler and grammar are the sequence's own); everything else on the engine thread.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>

#include "engine/metrics.h"
#include "engine/scheduler.h"
#include "engine/sequence.h"
#include "engine/token_trie.h"
#include "tokenizer/tokenizer.h"

namespace tokenmill::engine {

// A sampled token and, when the request asks for them, its log-probabilities.
struct Draw {
  int32_t token = -1;  // -1: no token can continue the JSON output
  std::optional<TokenLogprobs> logprobs;
};

class OutputProcessor {
 public:
  OutputProcessor(const tokenizer::Tokenizer& tokenizer, int32_t max_context, EngineMetrics& metrics,
                  Scheduler& scheduler)
      : tokenizer_(tokenizer), max_context_(max_context), metrics_(metrics), scheduler_(scheduler) {}

  // Whether s's draw is first_max_index of its logits, whatever they are.
  static bool takes_pick(const Sequence& s);
  // Whether s's next draw reads its logits row: a draw that is not just the pick, its
  // logprobs, or the draw the other choices of a request fork from.
  static bool reads_logits(const Sequence& s);

  // s's next token from its logits (first_max: first_max_index of them when the caller
  // has it, else -1). The penalties look at `previous` (s's tokens when empty), and a
  // constrained output's mask at `grammar` (s's own when null): a draft's position is
  // drawn after the drafts before it.
  Draw draw(Sequence& s, std::span<float> logits, int32_t first_max = -1, std::span<const int32_t> previous = {},
            const OutputGrammar* grammar = nullptr) const;

  // Hands the drawn token to s's stream; ends the choice when it stops. Returns whether
  // s still runs (false: it ended, and is gone).
  bool emit(Sequence& s, Draw drawn);

  // Ends a choice for a reason other than its own token (cancelled, out of cache, an
  // error); with n > 1 before the fork, the choices that never began end with it.
  void finish(Sequence* s, FinishReason reason, const std::string& error);

 private:
  std::string flush_text(Sequence& s);
  void emit_final(Sequence& s, StreamEvent event, FinishReason reason);
  void complete_choice(Sequence& s, StreamEvent event);

  // The vocabulary's trie for whole-vocabulary grammar masks, built on first need.
  const std::shared_ptr<const TokenTrie>& token_trie() const;

  const tokenizer::Tokenizer& tokenizer_;
  mutable std::once_flag trie_once_;
  mutable std::shared_ptr<const TokenTrie> trie_;
  int32_t max_context_;
  EngineMetrics& metrics_;
  Scheduler& scheduler_;
};

}  // namespace tokenmill::engine
