// Per-token quantities of one logits row: log-probabilities, the top-k tokens, and the
// comparison of a row against a reference distribution saved earlier (logits_file.h).
// Sums run in double: over 262,144 vocabulary entries float sums lose digits that KL
// divergences near zero need.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace tokenmill::eval {

// log(sum_v exp(logits[v])), computed stably.
double log_sum_exp(std::span<const float> logits);

// The k most probable token ids, most probable first (ties: lower id first).
std::vector<int32_t> top_k_tokens(std::span<const float> logits, int32_t k);

// A reference distribution restricted to its top-k tokens (as saved by --save-logits).
struct ReferenceToken {
  float target_log_prob = 0;             // log p(correct next token)
  std::span<const int32_t> top_ids;      // [k], most probable first
  std::span<const float> top_log_probs;  // [k]
};

struct TokenComparison {
  double kl_divergence = 0;  // KL(reference || current), see compare_to_reference
  bool same_top1 = false;    // argmax of the current row == the reference's top token
  double target_prob_delta = 0;  // p_current(correct) - p_reference(correct)
  double reference_tail_mass = 0;  // reference probability outside its top-k
};

// KL(P || Q) with P the reference and Q the current row, over the reference's top-k
// tokens plus one bucket for everything else:
//   sum_{i in top-k} p_i log(p_i / q_i) + p_rest log(p_rest / q_rest).
// By the log-sum inequality this is a lower bound of the full-vocabulary KL, equal to it
// when the reference's tail mass is zero; with k = 1024 the tail of a 262k vocabulary is
// typically well below 1% of the mass.
TokenComparison compare_to_reference(std::span<const float> logits, int32_t target, const ReferenceToken& reference);

// Mean, its standard error, and order statistics of a sample.
struct SampleSummary {
  double mean = 0;
  double standard_error = 0;
  double median = 0;
  double p99 = 0;
  double max = 0;
  int64_t n = 0;
};
SampleSummary summarize(std::vector<double> values);

}  // namespace tokenmill::eval
