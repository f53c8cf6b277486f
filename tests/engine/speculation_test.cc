// The pieces of speculative decoding that do not need a model: the n-gram drafter, the
// verification by drawing, the acceptance and step-cost estimates and the draft allocation.
#include "engine/speculation.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "engine/sampler.h"

namespace tokenmill::engine {
namespace {

using Tokens = std::vector<int32_t>;

TEST(NgramDrafts, ContinueTheMostRecentOccurrenceOfTheLongestSuffix) {
  // ... 1 2 3 [7 8] ... 9 2 3 [5 6] ... 2 3: the suffix "2 3" last occurred before 5 6.
  const Tokens tokens = {1, 2, 3, 7, 8, 9, 2, 3, 5, 6, 4, 2, 3};
  EXPECT_EQ(propose_ngram_drafts(tokens, 2, 4, 8), (Tokens{5, 6, 4, 2, 3}));
  EXPECT_EQ(propose_ngram_drafts(tokens, 2, 4, 2), (Tokens{5, 6}));
  // A longer suffix wins over a more recent shorter one: "1 2 3" occurred only at the start.
  const Tokens longer = {1, 2, 3, 7, 8, 0, 2, 3, 9, 1, 2, 3};
  EXPECT_EQ(propose_ngram_drafts(longer, 2, 3, 3), (Tokens{7, 8, 0}));
}

TEST(NgramDrafts, NothingWhenNoSuffixRecurs) {
  EXPECT_TRUE(propose_ngram_drafts(Tokens{1, 2, 3, 4, 5}, 1, 4, 8).empty());
  EXPECT_TRUE(propose_ngram_drafts(Tokens{}, 1, 4, 8).empty());
  EXPECT_TRUE(propose_ngram_drafts(Tokens{7}, 1, 4, 8).empty());
  // "5" recurs but shorter suffixes than ngram_min are not tried.
  EXPECT_TRUE(propose_ngram_drafts(Tokens{5, 1, 2, 5}, 2, 4, 8).empty());
  EXPECT_EQ(propose_ngram_drafts(Tokens{5, 1, 2, 5}, 1, 4, 8), (Tokens{1, 2, 5}));
}

TEST(AcceptanceEstimate, FollowsVerificationsAndFadesBackToThePrior) {
  AcceptanceEstimate e;
  EXPECT_DOUBLE_EQ(e.rate(), 0.5);
  for (int i = 0; i < 20; ++i) e.observe(4, 4);
  EXPECT_GT(e.rate(), 0.95);
  for (int i = 0; i < 40; ++i) e.observe(4, 0);
  EXPECT_LT(e.rate(), 0.2);
  for (int i = 0; i < 200; ++i) e.decay();
  EXPECT_NEAR(e.rate(), 0.5, 0.01);
}

TEST(StepCostModel, FitsTheLineOfTheMeasuredSteps) {
  StepCostModel cost;
  for (int i = 0; i < 50; ++i) {
    for (int32_t n : {1, 4, 16, 32}) cost.observe(n, 0.004 + 0.001 * n);
  }
  // The measured steps outweigh the prior (a fixed part of 6 positions' worth) by far.
  EXPECT_NEAR(cost.step_seconds(1), 0.005, 5e-5);
  EXPECT_NEAR(cost.step_seconds(64), 0.068, 5e-4);
  // One stream: one more position costs 1/5 of the step, so a draft must be accepted 20%
  // of the time to pay; 16 streams: 16 * 1 / 20 = 80%.
  EXPECT_NEAR(cost.break_even(1, 1), 0.2, 5e-3);
  EXPECT_NEAR(cost.break_even(16, 16), 0.8, 5e-3);
  // One step far off the line moves it little.
  StepCostModel before = cost;
  cost.observe(32, 1.0);
  EXPECT_NEAR(cost.step_seconds(32), before.step_seconds(32), 0.1 * before.step_seconds(32));
}

TEST(AllocateDrafts, GivesPositionsToTheLikeliestDraftsWhileTheyPay) {
  StepCostModel cost;
  for (int i = 0; i < 50; ++i) {
    for (int32_t n : {1, 4, 16, 32}) cost.observe(n, 0.004 + 0.001 * n);
  }
  // One stream that is usually right: drafts while 0.9^k stays above the break-even (with
  // its margin), which rises as the step grows: 6 (0.9^7 = 0.48 < 1.15 * 5.1 * 1 / 11).
  const std::vector<double> one = {0.9};
  const std::vector<int32_t> limit8 = {8};
  EXPECT_EQ(allocate_drafts(one, limit8, 1, cost), (std::vector<int32_t>{6}));
  const std::vector<int32_t> limit3 = {3};
  EXPECT_EQ(allocate_drafts(one, limit3, 1, cost), (std::vector<int32_t>{3}));
  // One that is usually wrong gets none.
  const std::vector<double> poor = {0.15};
  EXPECT_EQ(allocate_drafts(poor, limit8, 1, cost), (std::vector<int32_t>{0}));
  // Sixteen streams: only near-certain drafts pay, and the likelier sequence gets more.
  std::vector<double> rates(16, 0.5);
  rates[3] = 0.98;
  const std::vector<int32_t> limits(16, 8);
  const std::vector<int32_t> k = allocate_drafts(rates, limits, 16, cost);
  EXPECT_GT(k[3], 0);
  for (size_t i = 0; i < k.size(); ++i) {
    if (i != 3) {
      EXPECT_EQ(k[i], 0) << i;
    }
  }
  // A sequence that may not speculate (limit 0 or rate 0) gets none.
  const std::vector<double> mixed = {0.9, 0.0};
  const std::vector<int32_t> mixed_limits = {0, 8};
  EXPECT_EQ(allocate_drafts(mixed, mixed_limits, 2, cost), (std::vector<int32_t>{0, 0}));
}

// Verification by drawing keeps the target's distribution whatever the drafts: 20,000
// seeded samplers (temperature 0.7, top-k 4) verify the drafts {5, 0} - token 5 is outside
// the target's top 4, token 0 unlikely at the second position - and the emitted tokens at
// both positions follow the target's distributions (chi-square, p > 0.01); the first draft
// is never accepted, and with temperature 1 and no top-k it is accepted with p(5).
struct Drawn {
  int32_t token;
};

double chi_square(const std::vector<int>& counts, const std::vector<double>& expected_p) {
  double n = 0, chi = 0;
  for (int c : counts) n += c;
  for (size_t i = 0; i < counts.size(); ++i) {
    if (expected_p[i] == 0) {
      EXPECT_EQ(counts[i], 0) << "token " << i << " has no probability";
      continue;
    }
    const double e = n * expected_p[i];
    chi += (counts[i] - e) * (counts[i] - e) / e;
  }
  return chi;
}

std::vector<double> target(const std::vector<double>& p, double temperature, int top_k) {
  std::vector<size_t> order(p.size());
  for (size_t i = 0; i < p.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return p[a] > p[b]; });
  std::vector<double> out(p.size(), 0.0);
  double total = 0;
  for (int i = 0; i < (top_k > 0 ? top_k : static_cast<int>(p.size())); ++i) {
    out[order[i]] = std::exp(std::log(p[order[i]]) / temperature);
    total += out[order[i]];
  }
  for (double& v : out) v /= total;
  return out;
}

TEST(VerifyByDrawing, EmittedTokensFollowTheTargetWhateverTheDrafts) {
  const std::vector<double> p0 = {0.4, 0.25, 0.15, 0.1, 0.07, 0.03}, p1 = {0.05, 0.2, 0.3, 0.25, 0.12, 0.08};
  auto logits_of = [](const std::vector<double>& p) {
    std::vector<float> l;
    for (double v : p) l.push_back(static_cast<float>(std::log(v)));
    return l;
  };
  const std::vector<int32_t> drafts = {5, 0};
  for (const auto& [temperature, top_k] : {std::pair{0.7f, 4}, std::pair{1.0f, 0}}) {
    std::vector<int> first(6, 0), second(6, 0);
    int accepted_first = 0;
    const int kDraws = 20000;
    for (int seed = 0; seed < kDraws; ++seed) {
      SamplingParams params;
      params.temperature = temperature;
      params.top_k = top_k;
      params.top_p = 1.0f;
      params.seed = static_cast<uint64_t>(seed);
      Sampler sampler(params);
      const auto out = verify_by_drawing<Drawn>(drafts, [&](size_t j) {
        std::vector<float> logits = logits_of(j == 0 ? p0 : p1);
        return Drawn{sampler.sample(logits, {})};
      });
      ++first[static_cast<size_t>(out[0].token)];
      if (out.size() > 1) {
        ++accepted_first;
        ++second[static_cast<size_t>(out[1].token)];
      }
    }
    const std::vector<double> t0 = target(p0, temperature, top_k), t1 = target(p1, temperature, top_k);
    const int df0 = (top_k > 0 ? top_k : 6) - 1;
    const double critical = df0 == 3 ? 11.345 : 15.086;  // chi-square quantile 0.99
    EXPECT_LT(chi_square(first, t0), critical) << "temperature " << temperature;
    if (top_k > 0) {
      EXPECT_EQ(accepted_first, 0);  // the draft is outside the target's top k
    } else {
      EXPECT_NEAR(accepted_first, kDraws * t0[5], 4 * std::sqrt(kDraws * t0[5]));
      EXPECT_LT(chi_square(second, t1), critical);
    }
  }
}

TEST(SpeculativeConfig, RefusesOutOfRangeSettings) {
  SpeculativeConfig c;
  EXPECT_STREQ(speculative_config_error(c), "");
  c.draft_max = 0;
  EXPECT_STRNE(speculative_config_error(c), "");
  c.draft_max = kMaxDrafts + 1;
  EXPECT_STRNE(speculative_config_error(c), "");
  c = SpeculativeConfig{};
  c.ngram_min = 5;
  c.ngram_max = 4;
  EXPECT_STRNE(speculative_config_error(c), "");
}

}  // namespace
}  // namespace tokenmill::engine
