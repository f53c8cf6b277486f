#include "engine/sampler.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <random>
#include <vector>

namespace tokenmill::engine {
namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();

SamplingParams seeded(uint64_t seed) {
  SamplingParams params;
  params.seed = seed;
  return params;
}

std::vector<float> random_logits(size_t n, uint64_t seed, float scale) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> normal(0.0f, scale);
  std::vector<float> logits(n);
  for (float& logit : logits) logit = normal(rng);
  return logits;
}

// Reference for the whole chain, written the slow obvious way: sort the full vocabulary,
// cut with top_k, then top_p, then min_p at temperature 1, then softmax(logit / T).
std::vector<double> reference_distribution(const std::vector<float>& logits,
                                           const SamplingParams& params) {
  const size_t n = logits.size();
  std::vector<int32_t> order(n);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](int32_t a, int32_t b) { return logits[a] > logits[b]; });
  const double max_logit = logits[order[0]];
  std::vector<double> p(n);
  double z = 0.0;
  for (size_t i = 0; i < n; ++i) z += std::exp(logits[i] - max_logit);
  for (size_t i = 0; i < n; ++i) p[i] = std::exp(logits[i] - max_logit) / z;

  size_t keep = n;
  if (params.top_k > 0) keep = std::min(keep, static_cast<size_t>(params.top_k));
  // As in llama.cpp, top_p renormalizes over what top_k kept.
  double kept_mass = 0.0;
  for (size_t i = 0; i < keep; ++i) kept_mass += p[order[i]];
  double cumulative = 0.0;
  for (size_t i = 0; i < keep; ++i) {
    cumulative += p[order[i]] / kept_mass;
    if (cumulative >= params.top_p) {
      keep = i + 1;
      break;
    }
  }
  for (size_t i = 0; i < keep; ++i) {
    if (p[order[i]] < params.min_p * p[order[0]]) {
      keep = i;
      break;
    }
  }
  std::vector<double> result(n, 0.0);
  double total = 0.0;
  for (size_t i = 0; i < keep; ++i) {
    result[order[i]] = std::exp((logits[order[i]] - max_logit) / params.temperature);
    total += result[order[i]];
  }
  for (double& r : result) r /= total;
  return result;
}

std::vector<double> empirical_distribution(const SamplingParams& params,
                                           std::vector<float> logits, int n_draws) {
  Sampler sampler(params);
  std::vector<double> counts(logits.size(), 0.0);
  for (int i = 0; i < n_draws; ++i) counts[sampler.sample(logits, {})] += 1.0;
  for (double& c : counts) c /= n_draws;
  return counts;
}

// ---- greedy ----------------------------------------------------------------------

TEST(SamplerTest, LogitBiasBansAndForcesTokensAndLeavesTheLogits) {
  SamplingParams params = seeded(5);
  params.logit_bias = {{3, -100.0f}, {1, 2.5f}};
  EXPECT_FALSE(params.picks_first_max());  // the fast greedy path would miss the bias
  std::vector<float> logits = {0.0f, 0.0f, 0.0f, 4.0f, 0.0f};  // token 3 the likeliest by far
  const std::vector<float> before = logits;
  Sampler sampler(params);
  int ones = 0;
  for (int i = 0; i < 5000; ++i) {
    const int32_t token = sampler.sample(logits, {});
    ASSERT_NE(token, 3);  // banned
    ones += token == 1;
  }
  EXPECT_GT(ones, 5000 * 0.7);  // e^2.5 against 1 + 1 + 1: about 80%
  EXPECT_EQ(logits, before);
  SamplingParams greedy;
  greedy.temperature = 0.0f;
  greedy.logit_bias = {{0, 100.0f}};
  greedy.repetition_penalty = 1.3f;  // bias and penalty on the same token both come undone
  Sampler forced(greedy);
  const std::vector<int32_t> previous = {0};
  EXPECT_EQ(forced.sample(logits, previous), 0);
  EXPECT_EQ(logits, before);
  SamplingParams bad;
  bad.logit_bias = {{0, 101.0f}};
  EXPECT_FALSE(bad.validate().ok());
}

TEST(SamplerTest, GreedyPicksArgmax) {
  SamplingParams params;
  params.temperature = 0.0f;
  Sampler sampler(params);
  std::vector<float> logits = {0.1f, 2.5f, -1.0f, 2.4f, 0.0f};
  EXPECT_EQ(sampler.sample(logits, {}), 1);
  std::vector<float> big = random_logits(1000, 7, 3.0f);
  const auto expected = std::max_element(big.begin(), big.end()) - big.begin();
  EXPECT_EQ(sampler.sample(big, {}), expected);
}

TEST(SamplerTest, GreedyBreaksTiesByLowestId) {
  SamplingParams params;
  params.temperature = 0.0f;
  Sampler sampler(params);
  std::vector<float> logits = {1.0f, 3.0f, -2.0f, 3.0f, 3.0f};
  EXPECT_EQ(sampler.sample(logits, {}), 1);
}

TEST(SamplerTest, GreedyTiesAcrossAWholeVocabularyPickTheLowestId) {
  SamplingParams params;
  params.temperature = 0.0f;
  Sampler sampler(params);
  // Ties placed so that the later copy sits in an earlier position of a 16-wide stride,
  // and in the part past the last full stride.
  for (const auto& [first, second] : std::vector<std::pair<int, int>>{{37, 66}, {5, 1000}, {998, 1001}, {1000, 1002}}) {
    std::vector<float> logits = random_logits(1003, static_cast<uint32_t>(first), 3.0f);
    logits[first] = 50.0f;
    logits[second] = 50.0f;
    logits[3] = std::nanf("");
    EXPECT_EQ(sampler.sample(logits, {}), first) << first << " and " << second;
  }
}

TEST(SamplerTest, MaskedLogitsAreNeverChosen) {
  for (float temperature : {0.0f, 1.0f, 1000.0f}) {
    SamplingParams params = seeded(3);
    params.temperature = temperature;
    Sampler sampler(params);
    std::vector<float> logits(50, -kInf);
    logits[17] = -30.0f;
    for (int i = 0; i < 100; ++i) ASSERT_EQ(sampler.sample(logits, {}), 17);
    std::vector<float> all_masked(50, -kInf);
    EXPECT_EQ(sampler.sample(all_masked, {}), 0);
  }
}

TEST(SamplerTest, NanLogitsAreNeverChosen) {
  SamplingParams params = seeded(4);
  Sampler sampler(params);
  std::vector<float> logits = {std::nanf(""), 0.0f, std::nanf(""), 0.0f};
  for (int i = 0; i < 200; ++i) {
    const int32_t token = sampler.sample(logits, {});
    ASSERT_TRUE(token == 1 || token == 3) << token;
  }
}

// ---- determinism -----------------------------------------------------------------

TEST(SamplerTest, SameSeedSameSequenceDifferentSeedDifferent) {
  const std::vector<float> logits = random_logits(64, 11, 1.0f);
  auto draw_sequence = [&](uint64_t seed) {
    SamplingParams params = seeded(seed);
    params.top_p = 0.95f;
    Sampler sampler(params);
    std::vector<float> row = logits;
    std::vector<int32_t> tokens;
    for (int i = 0; i < 200; ++i) tokens.push_back(sampler.sample(row, tokens));
    return tokens;
  };
  EXPECT_EQ(draw_sequence(42), draw_sequence(42));
  EXPECT_NE(draw_sequence(42), draw_sequence(43));
}

TEST(SamplerTest, UnsetSeedIsReportedAndReproduces) {
  SamplingParams params;  // seed unset: random
  Sampler first(params);
  Sampler replay(seeded(first.seed()));
  const std::vector<float> logits = random_logits(32, 5, 1.0f);
  for (int i = 0; i < 50; ++i) {
    std::vector<float> a = logits, b = logits;
    ASSERT_EQ(first.sample(a, {}), replay.sample(b, {}));
  }
}

// Pins the draw arithmetic (mt19937_64 bits -> double -> walk in id order). If this
// changes, every seeded request in the wild changes its output.
TEST(SamplerTest, SeededDrawsArePinned) {
  Sampler sampler(seeded(1234));
  std::vector<float> logits(10, 0.0f);  // uniform over 10 tokens
  std::mt19937_64 rng(1234);
  for (int i = 0; i < 20; ++i) {
    const double u = static_cast<double>(rng() >> 11) * 0x1.0p-53;
    ASSERT_EQ(sampler.sample(logits, {}), static_cast<int32_t>(u * 10.0)) << i;
  }
}

// ---- filters ---------------------------------------------------------------------

TEST(SamplerTest, TopKOneEqualsGreedy) {
  for (uint64_t seed = 0; seed < 20; ++seed) {
    std::vector<float> logits = random_logits(500, seed, 2.0f);
    SamplingParams params = seeded(seed);
    params.top_k = 1;
    params.temperature = 5.0f;
    Sampler sampler(params);
    const auto expected = std::max_element(logits.begin(), logits.end()) - logits.begin();
    ASSERT_EQ(sampler.sample(logits, {}), expected);
  }
}

TEST(SamplerTest, TinyTopPEqualsGreedy) {
  for (uint64_t seed = 0; seed < 20; ++seed) {
    std::vector<float> logits = random_logits(500, seed + 100, 2.0f);
    SamplingParams params = seeded(seed);
    params.top_p = 1e-6f;
    params.temperature = 5.0f;
    Sampler sampler(params);
    const auto expected = std::max_element(logits.begin(), logits.end()) - logits.begin();
    ASSERT_EQ(sampler.sample(logits, {}), expected);
  }
}

TEST(SamplerTest, TemperatureNearZeroApproachesGreedy) {
  SamplingParams params = seeded(9);
  params.temperature = 1e-3f;
  Sampler sampler(params);
  std::vector<float> logits = {1.0f, 1.2f, 0.9f, 1.1f};
  for (int i = 0; i < 1000; ++i) ASSERT_EQ(sampler.sample(logits, {}), 1);
}

TEST(SamplerTest, TopKKeepsOnlyTheKMostLikely) {
  SamplingParams params = seeded(5);
  params.top_k = 2;
  const std::vector<float> logits = {0.0f, 1.0f, 0.5f, 0.9f, -1.0f};
  const auto freq = empirical_distribution(params, logits, 5000);
  EXPECT_EQ(freq[0] + freq[2] + freq[4], 0.0);
  EXPECT_NEAR(freq[1], std::exp(1.0) / (std::exp(1.0) + std::exp(0.9)), 0.03);
}

TEST(SamplerTest, TopPKeepsTheNucleus) {
  SamplingParams params = seeded(6);
  params.top_p = 0.7f;  // probabilities 0.5, 0.3, 0.15, 0.05: the nucleus is {0, 1}
  const std::vector<float> logits = {std::log(0.5f), std::log(0.3f), std::log(0.15f),
                                     std::log(0.05f)};
  const auto freq = empirical_distribution(params, logits, 5000);
  EXPECT_EQ(freq[2] + freq[3], 0.0);
  EXPECT_NEAR(freq[0], 0.5 / 0.8, 0.03);
}

TEST(SamplerTest, MinPDropsTokensBelowTheFractionOfTheTop) {
  SamplingParams params = seeded(7);
  params.min_p = 0.25f;  // probabilities 0.5, 0.3, 0.15, 0.05: cut below 0.125
  const std::vector<float> logits = {std::log(0.5f), std::log(0.3f), std::log(0.15f),
                                     std::log(0.05f)};
  const auto freq = empirical_distribution(params, logits, 10000);
  EXPECT_EQ(freq[3], 0.0);
  EXPECT_NEAR(freq[0], 0.5 / 0.95, 0.02);
  EXPECT_NEAR(freq[1], 0.3 / 0.95, 0.02);
  EXPECT_NEAR(freq[2], 0.15 / 0.95, 0.02);

  params.min_p = 1.0f;  // only the top token
  const auto only_top = empirical_distribution(params, logits, 1000);
  EXPECT_EQ(only_top[0], 1.0);
}

// top_p normalizes over everything top_k kept, before min_p drops anything: with
// probabilities 0.5, 0.26, 0.24 the nucleus for 0.6 is {0, 1}, and min_p = 0.5 (cut below
// 0.25) then drops token 2 only. Had min_p cut first, top_p would see 0.5 / 0.76 >= 0.6
// and keep token 0 alone.
TEST(SamplerTest, TopPRunsBeforeMinP) {
  SamplingParams params = seeded(12);
  params.top_p = 0.6f;
  params.min_p = 0.5f;
  const std::vector<float> logits = {std::log(0.5f), std::log(0.26f), std::log(0.24f)};
  const auto freq = empirical_distribution(params, logits, 5000);
  EXPECT_EQ(freq[2], 0.0);
  EXPECT_NEAR(freq[1], 0.26 / 0.76, 0.03);
}

TEST(SamplerTest, EmpiricalDistributionMatchesSoftmaxOverTemperature) {
  const std::vector<float> logits = {1.0f, 0.2f, -0.5f, 0.8f, 1.5f, -2.0f};
  for (float temperature : {0.5f, 1.0f, 1.7f}) {
    SamplingParams params = seeded(1000 + static_cast<uint64_t>(temperature * 10));
    params.temperature = temperature;
    const auto freq = empirical_distribution(params, logits, 20000);
    const auto expected = reference_distribution(logits, params);
    for (size_t i = 0; i < logits.size(); ++i) {
      EXPECT_NEAR(freq[i], expected[i], 0.015) << "T=" << temperature << " token " << i;
    }
  }
}

TEST(SamplerTest, CombinedFiltersMatchTheReferenceChain) {
  const std::vector<float> logits = random_logits(12, 77, 1.0f);
  SamplingParams params = seeded(8);
  params.top_k = 8;
  params.top_p = 0.8f;
  params.min_p = 0.2f;
  params.temperature = 1.5f;
  const auto freq = empirical_distribution(params, logits, 20000);
  const auto expected = reference_distribution(logits, params);
  for (size_t i = 0; i < logits.size(); ++i) {
    if (expected[i] == 0.0) {
      EXPECT_EQ(freq[i], 0.0) << "token " << i;
    } else {
      EXPECT_NEAR(freq[i], expected[i], 0.015) << "token " << i;
    }
  }
}

// ---- penalties -------------------------------------------------------------------

TEST(SamplerTest, RepetitionPenaltyUsesLlamaCppRuleOverTheLastN) {
  SamplingParams params;
  params.repetition_penalty = 2.0f;
  params.penalty_last_n = 3;
  Sampler sampler(params);
  std::vector<float> logits = {1.0f, -1.0f, 4.0f, 0.0f, 3.0f, 5.0f};
  // Token 5 is outside the last 3; tokens 2 and 1 repeat (penalized once each); 99 and -1
  // are not in the vocabulary and are ignored.
  const std::vector<int32_t> previous = {5, 99, 2, 1, 2, -1};
  sampler.apply_penalties(logits, previous);
  EXPECT_EQ(logits, (std::vector<float>{1.0f, -2.0f, 2.0f, 0.0f, 3.0f, 5.0f}));

  params.penalty_last_n = -1;  // all previous tokens
  Sampler all(params);
  std::vector<float> logits_all = {1.0f, -1.0f, 4.0f, 0.0f, 3.0f, 5.0f};
  all.apply_penalties(logits_all, previous);
  EXPECT_EQ(logits_all, (std::vector<float>{1.0f, -2.0f, 2.0f, 0.0f, 3.0f, 2.5f}));
}

TEST(SamplerTest, PresenceAndFrequencyPenaltiesUseOpenAiRule) {
  SamplingParams params;
  params.presence_penalty = 0.5f;
  params.frequency_penalty = 0.25f;
  params.penalty_last_n = 2;  // only limits the repetition penalty, which is off
  Sampler sampler(params);
  std::vector<float> logits = {1.0f, 1.0f, 1.0f, 1.0f};
  const std::vector<int32_t> previous = {0, 0, 0, 2};
  sampler.apply_penalties(logits, previous);
  // token 0: 1 - 3 * 0.25 - 0.5; token 2: 1 - 0.25 - 0.5; tokens 1, 3 unseen.
  EXPECT_EQ(logits, (std::vector<float>{-0.25f, 1.0f, 0.25f, 1.0f}));
}

TEST(SamplerTest, RepetitionPenaltyAppliesBeforeOpenAiPenalties) {
  SamplingParams params;
  params.repetition_penalty = 2.0f;
  params.frequency_penalty = 1.0f;
  Sampler sampler(params);
  std::vector<float> logits = {4.0f, 4.0f};
  const std::vector<int32_t> previous = {0, 0};
  sampler.apply_penalties(logits, previous);
  EXPECT_EQ(logits, (std::vector<float>{4.0f / 2.0f - 2.0f, 4.0f}));
}

TEST(SamplerTest, PenaltiesSteerTheDrawAndLogitsAreRestored) {
  SamplingParams params;
  params.temperature = 0.0f;
  params.presence_penalty = 2.0f;
  Sampler sampler(params);
  std::vector<float> logits = {3.0f, 2.0f, 0.0f};
  const std::vector<float> raw = logits;
  const std::vector<int32_t> previous = {0};
  EXPECT_EQ(sampler.sample(logits, previous), 1);  // 3 - 2 < 2
  EXPECT_EQ(logits, raw);
  EXPECT_EQ(sampler.sample(logits, {}), 0);
}

// ---- validate --------------------------------------------------------------------

TEST(SamplingParamsTest, DefaultsAreValid) {
  EXPECT_TRUE(SamplingParams{}.validate().ok());
  SamplingParams greedy;
  greedy.temperature = 0.0f;
  EXPECT_TRUE(greedy.is_greedy());
  EXPECT_TRUE(greedy.validate().ok());
}

TEST(SamplingParamsTest, ValidateNamesFieldRangeAndValue) {
  SamplingParams params;
  params.temperature = -0.5f;
  Status status = params.validate();
  EXPECT_EQ(status.code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(status.message(), "temperature must be a finite number >= 0 (0 = greedy), got -0.5");

  struct Case {
    void (*set)(SamplingParams&);
    const char* expected_message;
  };
  const Case cases[] = {
      {[](SamplingParams& p) { p.temperature = std::nanf(""); }, "temperature must be"},
      {[](SamplingParams& p) { p.temperature = kInf; }, "temperature must be"},
      {[](SamplingParams& p) { p.top_k = -1; }, "top_k must be >= 0 (0 = off), got -1"},
      {[](SamplingParams& p) { p.top_p = 0.0f; }, "top_p must be in (0, 1] (1 = off), got 0"},
      {[](SamplingParams& p) { p.top_p = 1.5f; }, "top_p must be in (0, 1] (1 = off), got 1.5"},
      {[](SamplingParams& p) { p.min_p = -0.1f; }, "min_p must be in [0, 1] (0 = off), got -0.1"},
      {[](SamplingParams& p) { p.min_p = 2.0f; }, "min_p must be in [0, 1] (0 = off), got 2"},
      {[](SamplingParams& p) { p.repetition_penalty = 0.0f; },
       "repetition_penalty must be a finite number > 0 (1 = off), got 0"},
      {[](SamplingParams& p) { p.penalty_last_n = -2; },
       "penalty_last_n must be >= -1 (-1 = all previous tokens, 0 = off), got -2"},
      {[](SamplingParams& p) { p.presence_penalty = 2.5f; },
       "presence_penalty must be in [-2, 2] (0 = off), got 2.5"},
      {[](SamplingParams& p) { p.frequency_penalty = -3.0f; },
       "frequency_penalty must be in [-2, 2] (0 = off), got -3"},
      {[](SamplingParams& p) { p.top_logprobs = 21; }, "top_logprobs must be in [0, 20], got 21"},
  };
  for (const Case& c : cases) {
    SamplingParams bad;
    c.set(bad);
    const Status s = bad.validate();
    EXPECT_EQ(s.code(), ErrorCode::kInvalidArgument) << c.expected_message;
    EXPECT_EQ(s.message().rfind(c.expected_message, 0), 0u)
        << "got: " << s.message() << "\nwanted prefix: " << c.expected_message;
  }
}

// ---- logprobs --------------------------------------------------------------------

TEST(LogprobsTest, SumToOneAndMatchLogSoftmax) {
  const std::vector<float> logits = random_logits(100, 21, 3.0f);
  const TokenLogprobs all = compute_logprobs(logits, 5, 100);
  ASSERT_EQ(all.top.size(), 100u);
  double total = 0.0;
  for (const TokenLogprob& t : all.top) total += std::exp(static_cast<double>(t.logprob));
  EXPECT_NEAR(total, 1.0, 1e-5);

  double z = 0.0;
  for (float l : logits) z += std::exp(static_cast<double>(l));
  EXPECT_NEAR(all.chosen.logprob, logits[5] - std::log(z), 1e-5);
  EXPECT_EQ(all.chosen.token, 5);
}

TEST(LogprobsTest, TopNIsOrderedMostLikelyFirstWithTiesById) {
  const std::vector<float> logits = {0.5f, 2.0f, -1.0f, 2.0f, 1.0f, -kInf, 3.0f};
  const TokenLogprobs result = compute_logprobs(logits, 2, 4);
  ASSERT_EQ(result.top.size(), 4u);
  EXPECT_EQ(result.top[0].token, 6);
  EXPECT_EQ(result.top[1].token, 1);
  EXPECT_EQ(result.top[2].token, 3);
  EXPECT_EQ(result.top[3].token, 4);
  EXPECT_EQ(result.top[1].logprob, result.top[2].logprob);
  for (size_t i = 1; i < result.top.size(); ++i) {
    EXPECT_LE(result.top[i].logprob, result.top[i - 1].logprob);
  }
  EXPECT_LT(result.chosen.logprob, result.top[3].logprob);

  // More alternatives than tokens: all of them, the masked one last at -inf.
  const TokenLogprobs every = compute_logprobs(logits, 5, 20);
  ASSERT_EQ(every.top.size(), logits.size());
  EXPECT_EQ(every.top.back().token, 5);
  EXPECT_EQ(every.chosen.logprob, -kInf);
  EXPECT_TRUE(compute_logprobs(logits, 0, 0).top.empty());
}

TEST(LogprobsTest, LargeLogitsDoNotOverflow) {
  const std::vector<float> logits = {1000.0f, 999.0f, -1000.0f};
  const TokenLogprobs result = compute_logprobs(logits, 0, 2);
  EXPECT_NEAR(result.chosen.logprob, -std::log1p(std::exp(-1.0)), 1e-6);
  EXPECT_TRUE(std::isfinite(result.top[1].logprob));
}

// ---- a real vocabulary size --------------------------------------------------------

// Gemma's 262,144 tokens: a peaked distribution like a model's (a few strong tokens over
// a wide noisy tail). Correctness only; speed is what the sampler's design guarantees.
TEST(SamplerTest, FullGemmaVocabularyTopP) {
  constexpr size_t kVocab = 262144;
  std::vector<float> logits = random_logits(kVocab, 31, 2.0f);
  const int32_t strong[] = {123, 70000, 262143, 4242};
  const float boost[] = {14.0f, 13.5f, 13.0f, 11.0f};
  for (int i = 0; i < 4; ++i) logits[strong[i]] = boost[i];

  SamplingParams params = seeded(2024);
  params.top_p = 0.9f;
  const std::vector<double> expected = reference_distribution(logits, params);
  size_t nucleus = 0;
  for (double p : expected) nucleus += p > 0.0;
  ASSERT_GE(nucleus, 2u);

  Sampler sampler(params);
  std::vector<int32_t> previous;
  for (int i = 0; i < 200; ++i) {
    const int32_t token = sampler.sample(logits, previous);
    ASSERT_GT(expected[token], 0.0) << "token " << token << " is outside the nucleus";
    previous.push_back(token);
  }

  // Flat logits: the nucleus is most of the vocabulary, the geometric sort goes to the end.
  std::vector<float> flat = random_logits(kVocab, 32, 0.1f);
  const std::vector<double> flat_expected = reference_distribution(flat, params);
  for (int i = 0; i < 5; ++i) ASSERT_GT(flat_expected[sampler.sample(flat, {})], 0.0);

  // No filters at all, and min_p alone.
  SamplingParams plain = seeded(7);
  Sampler plain_sampler(plain);
  const int32_t any = plain_sampler.sample(logits, {});
  EXPECT_GE(any, 0);
  EXPECT_LT(any, static_cast<int32_t>(kVocab));
  SamplingParams min_p = seeded(8);
  min_p.min_p = 0.05f;
  Sampler min_p_sampler(min_p);
  const std::vector<double> min_p_expected = reference_distribution(logits, min_p);
  for (int i = 0; i < 50; ++i) ASSERT_GT(min_p_expected[min_p_sampler.sample(logits, {})], 0.0);
}

TEST(SamplerTest, FullGemmaVocabularyTopK) {
  constexpr size_t kVocab = 262144;
  const std::vector<float> logits = random_logits(kVocab, 41, 3.0f);
  SamplingParams params = seeded(5);
  params.top_k = 50;
  params.temperature = 100.0f;  // nearly uniform over the 50, so many of them show up
  const std::vector<double> expected = reference_distribution(logits, params);
  Sampler sampler(params);
  std::vector<int32_t> seen;
  for (int i = 0; i < 500; ++i) {
    std::vector<float> row = logits;
    const int32_t token = sampler.sample(row, {});
    ASSERT_GT(expected[token], 0.0) << "token " << token << " is not in the top 50";
    seen.push_back(token);
  }
  std::sort(seen.begin(), seen.end());
  EXPECT_GT(std::unique(seen.begin(), seen.end()) - seen.begin(), 40);

  // All logits equal: the top 10 are ids 0..9 (ties go to the lowest id).
  const std::vector<float> equal(kVocab, 0.5f);
  params.top_k = 10;
  Sampler tie_sampler(params);
  for (int i = 0; i < 200; ++i) {
    std::vector<float> row = equal;
    ASSERT_LT(tie_sampler.sample(row, {}), 10);
  }
}

}  // namespace
}  // namespace tokenmill::engine
