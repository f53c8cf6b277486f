#include "engine/sampler.h"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <limits>

#include "base/first_max.h"

namespace tokenmill::engine {
namespace {

constexpr float kNegInf = -std::numeric_limits<float>::infinity();

// Without top_k or min_p, a candidate is dropped when its weight relative to the most
// likely token is below exp(-(log(n_vocab) + kTailMargin)): all dropped tokens together
// then weigh under exp(-kTailMargin) ~ 1e-10 of the top token, far below what a float
// sum of the rest can resolve, so dropping them changes no result.
constexpr double kTailMargin = 23.0;

// The one order every order-dependent step uses: more likely first, lower id on ties.
// A total order, so sorted results are the same under every standard library.
template <typename C>
bool more_likely(const C& a, const C& b) {
  return a.logit > b.logit || (a.logit == b.logit && a.id < b.id);
}

// exp(x) for x <= 0: a token's weight relative to the most likely one. float's exp is
// several times faster than double's, and its 1-ulp error is far below what sampling or
// printed logprobs can show; the sums of these weights stay in double.
double relative_weight(double x) { return std::exp(static_cast<float>(x)); }

// more_likely as the comparator the sorts take.
constexpr auto by_likelihood = [](const auto& a, const auto& b) { return more_likely(a, b); };

uint64_t random_seed() {
  std::random_device device;
  return (static_cast<uint64_t>(device()) << 32) ^ device();
}

}  // namespace

Sampler::Sampler(const SamplingParams& params)
    : params_(params), seed_(params.seed ? *params.seed : random_seed()), rng_(seed_) {
  assert(params.validate().ok());
}

double Sampler::next_uniform() {
  return static_cast<double>(rng_() >> 11) * 0x1.0p-53;
}

int32_t Sampler::sample(std::span<float> logits, std::span<const int32_t> previous_tokens) {
  assert(!logits.empty());
  apply_penalties(logits, previous_tokens);
  const int32_t token = sample_penalized(logits);
  // Newest first: a token both biased and penalized gets its raw logit back last.
  for (auto it = penalty_undo_.rbegin(); it != penalty_undo_.rend(); ++it) logits[it->first] = it->second;
  return token;
}

void Sampler::apply_penalties(std::span<float> logits,
                              std::span<const int32_t> previous_tokens) {
  penalty_undo_.clear();
  for (const auto& [id, bias] : params_.logit_bias) {
    if (id < 0 || static_cast<size_t>(id) >= logits.size()) continue;
    penalty_undo_.emplace_back(id, logits[id]);
    logits[id] = bias <= -100.0f ? kNegInf : logits[id] + bias;
  }
  const bool repetition = params_.repetition_penalty_active();
  const bool openai = params_.openai_penalties_active();
  if (!repetition && !openai) return;

  // The repetition penalty looks at the last `window` tokens; the OpenAI penalties at all.
  const size_t n_previous = previous_tokens.size();
  const size_t window = params_.penalty_last_n < 0
                            ? n_previous
                            : std::min(n_previous, static_cast<size_t>(params_.penalty_last_n));
  const size_t first_in_window = n_previous - window;
  const size_t first = openai ? 0 : first_in_window;

  // Sorting (token, position) pairs groups each token's occurrences, in order, without a
  // vocabulary-sized count array.
  token_positions_.clear();
  for (size_t i = first; i < n_previous; ++i) {
    const int32_t token = previous_tokens[i];
    if (token < 0 || static_cast<size_t>(token) >= logits.size()) continue;
    token_positions_.emplace_back(token, static_cast<int32_t>(i));
  }
  std::sort(token_positions_.begin(), token_positions_.end());

  for (size_t begin = 0; begin < token_positions_.size();) {
    const int32_t token = token_positions_[begin].first;
    size_t end = begin + 1;
    while (end < token_positions_.size() && token_positions_[end].first == token) ++end;
    const size_t count = end - begin;
    const size_t last_position = static_cast<size_t>(token_positions_[end - 1].second);

    float logit = logits[token];
    penalty_undo_.emplace_back(token, logit);
    if (repetition && last_position >= first_in_window) {
      // llama.cpp: dividing a negative logit would make the token more likely.
      logit = logit > 0.0f ? logit / params_.repetition_penalty
                           : logit * params_.repetition_penalty;
    }
    if (openai) {
      logit -= static_cast<float>(count) * params_.frequency_penalty + params_.presence_penalty;
    }
    logits[token] = logit;
    begin = end;
  }
}

int32_t Sampler::sample_penalized(std::span<const float> logits) {
  if (params_.is_greedy()) return first_max_index(logits);

  // Drawn first, so that every non-greedy call consumes exactly one draw whatever the
  // number of candidates.
  const double uniform = next_uniform();
  const int32_t best = first_max_index(logits);
  const float max_logit = logits[best];
  if (!(max_logit > kNegInf)) return best;  // everything masked

  const double log_min_p =
      params_.min_p > 0.0f ? std::log(static_cast<double>(params_.min_p)) : -HUGE_VAL;
  const bool top_p_on = params_.top_p < 1.0f;
  // top_p after top_k normalizes over the top_k survivors, which are few already, so the
  // histogram pass cuts for only one of the two.
  const bool cut_top_k = params_.top_k > 0 && static_cast<size_t>(params_.top_k) < logits.size();
  const bool cut_top_p = top_p_on && !cut_top_k;
  double top_p_total = 0.0;  // with cut_top_p: sum of exp(logit - max_logit) over all candidates
  const double min_relative =
      candidate_bound(logits, max_logit, log_min_p, cut_top_k, cut_top_p, &top_p_total);
  collect_candidates(logits, max_logit, min_relative);

  const size_t n_sorted = keep_top_k();
  if (top_p_on && candidates_.size() > 1) {
    double total = top_p_total;
    if (!cut_top_p) {
      for (const Candidate& c : candidates_) {
        total += relative_weight(static_cast<double>(c.logit) - max_logit);
      }
    }
    keep_nucleus(max_logit, params_.top_p * total, n_sorted);
  }
  if (top_p_on && params_.min_p > 0.0f) {
    std::erase_if(candidates_, [&](const Candidate& c) {
      return static_cast<double>(c.logit) - max_logit < log_min_p;
    });
  }
  return draw(uniform, max_logit, best);
}

double Sampler::candidate_bound(std::span<const float> logits, float max_logit, double log_min_p,
                                bool cut_top_k, bool cut_top_p, double* top_p_total) {
  // Keep tokens with logit - max_logit >= min_relative. The tail bound is widened by the
  // temperature so that it also holds for the final tempered draw. min_p is exactly such
  // a bound (p >= min_p * p_max  <=>  logit - max_logit >= log(min_p)); top_k and min_p
  // both keep a prefix of the candidates in more_likely order, so they commute and min_p
  // can cut here. top_p does not commute with min_p: it normalizes over what survives
  // top_k, including tokens min_p drops later, so with top_p on, min_p waits for it.
  const double temperature = params_.temperature;
  const bool top_p_on = params_.top_p < 1.0f;
  double min_relative =
      -(std::log(static_cast<double>(logits.size())) + kTailMargin) * std::max(1.0, temperature);
  if (!top_p_on) min_relative = std::max(min_relative, log_min_p);

  // top_k and top_p need only the head of the distribution; a histogram pass finds how
  // far down it reaches, so that what follows works on a few hundred candidates, not on
  // the whole vocabulary.
  if (cut_top_k || cut_top_p) {
    min_relative = bound_by_histogram(logits, max_logit, min_relative, cut_top_p, top_p_total);
  }
  return min_relative;
}

void Sampler::collect_candidates(std::span<const float> logits, float max_logit, double min_relative) {
  candidates_.clear();
  for (size_t i = 0; i < logits.size(); ++i) {
    if (static_cast<double>(logits[i]) - max_logit >= min_relative) {
      candidates_.push_back({static_cast<int32_t>(i), logits[i]});
    }
  }
}

size_t Sampler::keep_top_k() {
  if (params_.top_k <= 0 || static_cast<size_t>(params_.top_k) >= candidates_.size()) return 0;
  std::nth_element(candidates_.begin(), candidates_.begin() + params_.top_k, candidates_.end(),
                   by_likelihood);
  candidates_.resize(static_cast<size_t>(params_.top_k));
  std::sort(candidates_.begin(), candidates_.end(), by_likelihood);
  return candidates_.size();
}

void Sampler::keep_nucleus(float max_logit, double target, size_t n_sorted) {
  // Sort a prefix that grows 8x until it holds the nucleus: peaked distributions stop
  // after one small partial sort.
  double cumulative = 0.0;
  size_t n_keep = 0;
  while (n_keep < candidates_.size()) {
    if (n_keep == n_sorted) {
      const size_t next = std::min(candidates_.size(), std::max<size_t>(64, n_sorted * 8));
      std::partial_sort(candidates_.begin() + static_cast<ptrdiff_t>(n_sorted),
                        candidates_.begin() + static_cast<ptrdiff_t>(next), candidates_.end(),
                        by_likelihood);
      n_sorted = next;
    }
    cumulative += relative_weight(static_cast<double>(candidates_[n_keep].logit) - max_logit);
    ++n_keep;
    if (cumulative >= target) break;
  }
  candidates_.resize(n_keep);
}

int32_t Sampler::draw(double uniform, float max_logit, int32_t fallback) {
  // Candidates are in id order (nothing sorted them) or in more_likely order: either way
  // an order fixed by the inputs alone, which the draw depends on.
  const double temperature = params_.temperature;
  weights_.resize(candidates_.size());
  double total = 0.0;
  for (size_t i = 0; i < candidates_.size(); ++i) {
    const double below_max = static_cast<double>(candidates_[i].logit) - max_logit;
    weights_[i] = relative_weight(below_max / temperature);
    total += weights_[i];
  }
  const double target = uniform * total;
  double cumulative = 0.0;
  for (size_t i = 0; i < candidates_.size(); ++i) {
    cumulative += weights_[i];
    if (target < cumulative) return candidates_[i].id;
  }
  return fallback;  // only when rounding put target at total
}

double Sampler::bound_by_histogram(std::span<const float> logits, float max_logit,
                                   double min_relative, bool top_p, double* top_p_total) {
  // Bin b holds the logits with (max_logit - logit) * scale in [b, b + 1).
  constexpr size_t kBins = 1024;
  const double span = -min_relative;
  if (!(span > 0.0) || !std::isfinite(span)) return min_relative;
  const double scale = kBins / span;
  bin_counts_.assign(kBins, 0);
  if (top_p) bin_mass_.assign(kBins, 0.0);
  for (const float logit : logits) {
    const double below_max = static_cast<double>(max_logit) - logit;
    if (!(below_max <= span)) continue;  // the tail, -inf and NaN
    const size_t bin = std::min(kBins - 1, static_cast<size_t>(below_max * scale));
    ++bin_counts_[bin];
    if (top_p) bin_mass_[bin] += relative_weight(-below_max);
  }

  // The last bin the cut can reach, given the counts (top_k) or masses (top_p) above it.
  size_t last = kBins - 1;
  if (top_p) {
    double total = 0.0;
    for (const double mass : bin_mass_) total += mass;
    *top_p_total = total;
    const double target = params_.top_p * total;
    double cumulative = 0.0;
    for (size_t b = 0; b < kBins; ++b) {
      cumulative += bin_mass_[b];
      if (cumulative >= target) {
        last = b;
        break;
      }
    }
  } else {
    size_t cumulative = 0;
    for (size_t b = 0; b < kBins; ++b) {
      cumulative += bin_counts_[b];
      if (cumulative >= static_cast<size_t>(params_.top_k)) {
        last = b;
        break;
      }
    }
  }
  // One bin of margin, so that rounding at a bin edge or in the order of summation can
  // never cut a token the exact top_k / top_p below would keep.
  return std::max(min_relative, -static_cast<double>(last + 2) / scale);
}

TokenLogprobs compute_logprobs(std::span<const float> logits, int32_t chosen, int n_top) {
  assert(!logits.empty());
  assert(chosen >= 0 && static_cast<size_t>(chosen) < logits.size());
  assert(n_top >= 0);

  const float max_logit = logits[first_max_index(logits)];
  assert(max_logit > kNegInf);
  double sum = 0.0;
  for (const float logit : logits) {
    // `>` skips -inf, which adds nothing, and NaN, which would poison the sum.
    if (logit > kNegInf) sum += relative_weight(static_cast<double>(logit) - max_logit);
  }
  const double log_normalizer = max_logit + std::log(sum);

  TokenLogprobs result;
  result.chosen = {chosen, static_cast<float>(logits[chosen] - log_normalizer)};

  // The n_top best in more_likely order, kept sorted by insertion: n_top is small (OpenAI's <= 20)
  // and most logits fail the first comparison with the current worst.
  struct Entry {
    int32_t id;
    float logit;
  };
  const size_t n_want = std::min(static_cast<size_t>(n_top), logits.size());
  std::vector<Entry> best;
  best.reserve(n_want + 1);
  for (size_t i = 0; i < logits.size() && n_want > 0; ++i) {
    const Entry entry{static_cast<int32_t>(i), logits[i]};
    if (std::isnan(entry.logit)) continue;
    if (best.size() == n_want && !more_likely(entry, best.back())) continue;
    if (best.size() == n_want) best.pop_back();
    const auto position =
        std::upper_bound(best.begin(), best.end(), entry,
                         [](const Entry& a, const Entry& b) { return more_likely(a, b); });
    best.insert(position, entry);
  }
  result.top.reserve(best.size());
  for (const Entry& entry : best) {
    result.top.push_back({entry.id, static_cast<float>(entry.logit - log_normalizer)});
  }
  return result;
}

}  // namespace tokenmill::engine
