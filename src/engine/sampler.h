// Picks the next token from one row of logits, in the order of llama.cpp's common sampler
// chain:
//
//   penalties -> top_k -> top_p -> min_p -> temperature -> softmax -> draw
//
// So, as in llama.cpp, top_p and min_p see probabilities at temperature 1 (top_p's
// renormalized over what top_k kept), and the temperature only shapes the final draw
// among the tokens that survive.
//
// Speed: nothing sorts the whole vocabulary. One pass finds the max logit; with top_k or
// top_p a histogram pass (counts, or probability mass, per 1/1024 of the logit range)
// finds how far below the max the cut can reach; a last pass keeps only the candidates
// above that bound (and above the min_p bound, and above one below which all tokens
// together weigh less than 1e-10 of the most likely one). top_k then uses nth_element
// on those, and top_p sorts a prefix that grows 8x until it holds the nucleus.
//
// Determinism: the same seed, parameters and inputs give the same tokens on every
// platform. The generator is std::mt19937_64 (its output is fixed by the standard); the
// uniform double is made from its raw bits here, not by std::uniform_real_distribution
// (whose output differs between standard libraries); candidates are ordered by
// (logit descending, id ascending), a total order, before anything depends on order.
// Each non-greedy sample() consumes exactly one 64-bit draw; greedy consumes none.
#pragma once

#include <cstdint>
#include <random>
#include <span>
#include <utility>
#include <vector>

#include "engine/sampling_params.h"

namespace tokenmill::engine {

// Thread-safety: none; one Sampler per sequence, used by the engine thread.
class Sampler {
 public:
  // REQUIRES: params.validate().ok()
  explicit Sampler(const SamplingParams& params);

  // Returns the id of the next token, in [0, logits.size()).
  //   logits          [n_vocab] raw model output for this position. Penalties are
  //                   applied in place and undone before return, so on return it holds
  //                   the raw logits again (ready for compute_logprobs).
  //   previous_tokens the tokens the penalties look at (prompt and/or generated, the
  //                   caller's choice), oldest first. Ids outside [0, n_vocab) are ignored.
  // -inf logits (masked tokens) are never chosen unless every logit is -inf, in which
  // case token 0 is returned. NaN logits are never chosen.
  // REQUIRES: !logits.empty()
  int32_t sample(std::span<float> logits, std::span<const int32_t> previous_tokens);

  // The first step of sample(), exposed so tests can see exactly which logits change:
  // penalizes logits in place and leaves them penalized (sample() undoes it).
  void apply_penalties(std::span<float> logits, std::span<const int32_t> previous_tokens);

  const SamplingParams& params() const { return params_; }
  // The seed in use: params().seed, or the random one chosen when it was unset.
  uint64_t seed() const { return seed_; }

 private:
  struct Candidate {
    int32_t id;
    float logit;
  };

  int32_t sample_penalized(std::span<const float> logits);
  // The steps of sample_penalized, in order. max_logit is the largest logit (not -inf).
  //
  // The min_relative that collect_candidates cuts at: a tail bound, tightened by min_p
  // (unless top_p is on) and by the histogram when cut_top_k or cut_top_p; with
  // cut_top_p, *top_p_total gets bound_by_histogram's sum.
  double candidate_bound(std::span<const float> logits, float max_logit, double log_min_p,
                         bool cut_top_k, bool cut_top_p, double* top_p_total);
  // candidates_ = the tokens with logit - max_logit >= min_relative, in id order.
  void collect_candidates(std::span<const float> logits, float max_logit, double min_relative);
  // Applies top_k to candidates_ and returns n_sorted: candidates_[0, n_sorted) are then
  // the most likely ones in more_likely order (0 when top_k cut nothing).
  size_t keep_top_k();
  // Keeps the shortest more_likely prefix of candidates_ whose exp(logit - max_logit)
  // sums to >= target, sorting only as far as it needs beyond n_sorted.
  void keep_nucleus(float max_logit, double target, size_t n_sorted);
  // The tempered draw among candidates_ at `uniform`; fallback if rounding reaches the end.
  int32_t draw(double uniform, float max_logit, int32_t fallback);
  // A tighter min_relative (see candidate_bound) that still keeps every token top_k,
  // or top_p when `top_p`, can keep; with `top_p`, also the sum of exp(logit - max_logit)
  // over all tokens within min_relative, which top_p normalizes by.
  double bound_by_histogram(std::span<const float> logits, float max_logit, double min_relative,
                            bool top_p, double* top_p_total);
  // Uniform in [0, 1) from the top 53 bits of one generator output.
  double next_uniform();

  SamplingParams params_;
  uint64_t seed_;
  std::mt19937_64 rng_;
  // Scratch, kept between calls so that sampling does not allocate in steady state.
  std::vector<Candidate> candidates_;
  std::vector<double> weights_;                               // [candidates_.size()]
  std::vector<uint32_t> bin_counts_;                          // [1024] histogram
  std::vector<double> bin_mass_;                              // [1024]
  std::vector<std::pair<int32_t, int32_t>> token_positions_;  // (token, position)
  std::vector<std::pair<int32_t, float>> penalty_undo_;       // (token, raw logit)
};

// Log-probabilities for OpenAI's logprobs / top_logprobs: log_softmax over the whole
// vocabulary of the raw logits (before penalties and temperature).
struct TokenLogprob {
  int32_t token = 0;
  float logprob = 0.0f;
};

struct TokenLogprobs {
  TokenLogprob chosen;
  std::vector<TokenLogprob> top;  // [min(n_top, n_vocab)], most likely first, ties by id
};

// REQUIRES: !logits.empty(), 0 <= chosen < logits.size(), n_top >= 0, and at least one
// finite logit.
TokenLogprobs compute_logprobs(std::span<const float> logits, int32_t chosen, int n_top);

}  // namespace tokenmill::engine
