#include "eval/token_stats.h"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace tokenmill::eval {

double log_sum_exp(std::span<const float> logits) {
  const float max = *std::max_element(logits.begin(), logits.end());
  double sum = 0.0;
  for (float v : logits) sum += std::exp(static_cast<double>(v) - max);
  return max + std::log(sum);
}

std::vector<int32_t> top_k_tokens(std::span<const float> logits, int32_t k) {
  const int32_t n = static_cast<int32_t>(logits.size());
  k = std::min(k, n);
  std::vector<int32_t> ids(n);
  std::iota(ids.begin(), ids.end(), 0);
  auto more_probable = [&](int32_t a, int32_t b) { return logits[a] > logits[b] || (logits[a] == logits[b] && a < b); };
  std::partial_sort(ids.begin(), ids.begin() + k, ids.end(), more_probable);
  ids.resize(k);
  return ids;
}

TokenComparison compare_to_reference(std::span<const float> logits, int32_t target, const ReferenceToken& reference) {
  const double lse = log_sum_exp(logits);
  TokenComparison out;
  double p_top = 0.0, q_top = 0.0;
  for (size_t i = 0; i < reference.top_ids.size(); ++i) {
    const double lp = reference.top_log_probs[i];
    const double lq = logits[reference.top_ids[i]] - lse;
    const double p = std::exp(lp);
    out.kl_divergence += p * (lp - lq);
    p_top += p;
    q_top += std::exp(lq);
  }
  // Probabilities are sums of rounded terms: clamp the tail masses into (0, 1].
  constexpr double kTiny = 1e-12;
  const double p_rest = std::max(0.0, 1.0 - p_top);
  const double q_rest = std::max(kTiny, 1.0 - q_top);
  if (p_rest > kTiny) out.kl_divergence += p_rest * std::log(p_rest / q_rest);
  out.kl_divergence = std::max(0.0, out.kl_divergence);
  out.reference_tail_mass = p_rest;

  const auto argmax = std::max_element(logits.begin(), logits.end()) - logits.begin();
  out.same_top1 = !reference.top_ids.empty() && argmax == reference.top_ids[0];
  out.target_prob_delta = std::exp(logits[target] - lse) - std::exp(static_cast<double>(reference.target_log_prob));
  return out;
}

SampleSummary summarize(std::vector<double> values) {
  SampleSummary s;
  s.n = static_cast<int64_t>(values.size());
  if (values.empty()) return s;
  s.mean = std::accumulate(values.begin(), values.end(), 0.0) / s.n;
  double var = 0.0;
  for (double v : values) var += (v - s.mean) * (v - s.mean);
  s.standard_error = s.n > 1 ? std::sqrt(var / (s.n - 1) / s.n) : 0.0;
  std::sort(values.begin(), values.end());
  auto quantile = [&](double q) {
    const double pos = q * (s.n - 1);
    const size_t lo = static_cast<size_t>(pos);
    const size_t hi = std::min(lo + 1, values.size() - 1);
    return values[lo] + (pos - lo) * (values[hi] - values[lo]);
  };
  s.median = quantile(0.5);
  s.p99 = quantile(0.99);
  s.max = values.back();
  return s;
}

}  // namespace tokenmill::eval
