// Per-token statistics, the reference-logits file and the window plan, without a model.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <random>
#include <unistd.h>

#include "eval/logits_file.h"
#include "eval/token_stats.h"
#include "eval/windows.h"

namespace tokenmill::eval {
namespace {

namespace fs = std::filesystem;

std::vector<float> random_logits(int32_t n, uint32_t seed, float sigma = 3.0f) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist(0.0f, sigma);
  std::vector<float> v(n);
  for (float& x : v) x = dist(rng);
  return v;
}

// A reference record of `logits` kept to its top k, as the file stores it.
struct OwnedReference {
  std::vector<int32_t> ids;
  std::vector<float> log_probs;
  float target_log_prob;
  ReferenceToken view() const { return {target_log_prob, ids, log_probs}; }
};
OwnedReference reference_of(const std::vector<float>& logits, int32_t k, int32_t target) {
  OwnedReference r;
  const double lse = log_sum_exp(logits);
  r.ids = top_k_tokens(logits, k);
  for (int32_t id : r.ids) r.log_probs.push_back(static_cast<float>(logits[id] - lse));
  r.target_log_prob = static_cast<float>(logits[target] - lse);
  return r;
}

TEST(TokenStats, LogSumExpIsStable) {
  const std::vector<float> big = {1000.0f, 1000.0f};
  EXPECT_NEAR(log_sum_exp(big), 1000.0 + std::log(2.0), 1e-9);
  const std::vector<float> mixed = {0.0f, -1e30f, std::log(3.0f)};
  EXPECT_NEAR(log_sum_exp(mixed), std::log(4.0), 1e-6);
}

TEST(TokenStats, TopKIsSortedWithStableTies) {
  const std::vector<float> logits = {0.5f, 2.0f, 2.0f, -1.0f, 3.0f};
  EXPECT_EQ(top_k_tokens(logits, 3), (std::vector<int32_t>{4, 1, 2}));
  EXPECT_EQ(top_k_tokens(logits, 10).size(), 5u);
}

TEST(TokenStats, SameDistributionHasZeroDivergence) {
  const std::vector<float> logits = random_logits(5000, 1);
  const OwnedReference ref = reference_of(logits, 64, 17);
  const TokenComparison c = compare_to_reference(logits, 17, ref.view());
  EXPECT_NEAR(c.kl_divergence, 0.0, 1e-6);
  EXPECT_TRUE(c.same_top1);
  EXPECT_NEAR(c.target_prob_delta, 0.0, 1e-7);
  EXPECT_GT(c.reference_tail_mass, 0.0);
}

TEST(TokenStats, TopKDivergenceIsALowerBoundThatTightensWithK) {
  const int32_t n = 2000;
  const std::vector<float> p = random_logits(n, 2);
  std::vector<float> q = p;
  std::mt19937 rng(3);
  std::normal_distribution<float> noise(0.0f, 0.3f);
  for (float& v : q) v += noise(rng);
  // Full KL(P || Q).
  const double lse_p = log_sum_exp(p), lse_q = log_sum_exp(q);
  double full = 0;
  for (int32_t i = 0; i < n; ++i) full += std::exp(p[i] - lse_p) * ((p[i] - lse_p) - (q[i] - lse_q));
  double previous = 0;
  for (int32_t k : {8, 64, 512, n}) {
    const double kl = compare_to_reference(q, 0, reference_of(p, k, 0).view()).kl_divergence;
    EXPECT_LE(kl, full + 1e-5) << k;  // stored log-probabilities are floats
    EXPECT_GE(kl, previous - 1e-6) << k;
    previous = kl;
  }
  EXPECT_NEAR(previous, full, 1e-5);
}

TEST(TokenStats, TopOneDisagreementAndProbabilityDelta) {
  const std::vector<float> p = {3.0f, 1.0f, 0.0f};
  const std::vector<float> q = {1.0f, 3.0f, 0.0f};
  const TokenComparison c = compare_to_reference(q, 0, reference_of(p, 3, 0).view());
  EXPECT_FALSE(c.same_top1);
  EXPECT_LT(c.target_prob_delta, -0.5);
  EXPECT_GT(c.kl_divergence, 0.5);
}

TEST(TokenStats, Summary) {
  std::vector<double> v;
  for (int i = 1; i <= 101; ++i) v.push_back(i);
  const SampleSummary s = summarize(v);
  EXPECT_DOUBLE_EQ(s.mean, 51.0);
  EXPECT_DOUBLE_EQ(s.median, 51.0);
  EXPECT_DOUBLE_EQ(s.p99, 100.0);
  EXPECT_DOUBLE_EQ(s.max, 101.0);
  EXPECT_NEAR(s.standard_error, std::sqrt(858.5 / 101.0), 1e-9);
  EXPECT_EQ(summarize({}).n, 0);
}

TEST(Windows, PlanFollowsLlamaCpp) {
  auto plan = plan_windows(1300, 512, 0);
  ASSERT_TRUE(plan.ok());
  EXPECT_EQ(plan->n_windows, 2);
  EXPECT_EQ(plan->first_scored, 256);
  EXPECT_EQ(plan->n_scored_per_window(), 255);
  EXPECT_EQ(plan_windows(5000, 512, 3)->n_windows, 3);
  auto short_text = plan_windows(100, 512, 0);
  ASSERT_FALSE(short_text.ok());
  EXPECT_NE(short_text.status().message().find("fewer than one context"), std::string::npos);
  EXPECT_FALSE(plan_windows(5000, 8, 0).ok());

  const std::vector<int32_t> tokens = {2, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24,
                                       25, 26, 27, 28, 29, 30, 31, 32, 33, 34, 35, 36, 37, 38, 39, 40};
  auto p16 = plan_windows(static_cast<int64_t>(tokens.size()), 16, 0);
  ASSERT_TRUE(p16.ok());
  const std::vector<int32_t> second = window_tokens(tokens, *p16, 1, 2);
  EXPECT_EQ(second.size(), 16u);
  EXPECT_EQ(second[0], 2);   // BOS replaces the window's first token
  EXPECT_EQ(second[1], 26);
}

class LogitsFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    path_ = (fs::temp_directory_path() / ("tm_logits_" + std::to_string(getpid()) + ".tmlg")).string();
  }
  void TearDown() override { fs::remove(path_); }
  std::string path_;
};

TEST_F(LogitsFileTest, RoundTripAndCorruption) {
  LogitsFileHeader header{300, 16, 8, 2, 20};
  std::vector<int32_t> tokens(32);
  for (int i = 0; i < 32; ++i) tokens[i] = i * 7 % 300;
  {
    auto writer = LogitsFileWriter::create(path_, header, tokens);
    ASSERT_TRUE(writer.ok());
    for (uint64_t i = 0; i < header.n_scored(); ++i) {
      const std::vector<float> logits = random_logits(300, static_cast<uint32_t>(100 + i));
      ASSERT_TRUE((*writer)->add(logits, static_cast<int32_t>(i)).ok());
    }
    EXPECT_FALSE(fs::exists(path_));  // nothing at the path until finish()
    ASSERT_TRUE((*writer)->finish().ok());
  }
  auto file = LogitsFile::read(path_);
  ASSERT_TRUE(file.ok()) << file.status().to_string();
  EXPECT_EQ(file->header().n_scored(), 14u);
  EXPECT_TRUE(std::equal(tokens.begin(), tokens.end(), file->tokens().begin()));
  const std::vector<float> logits = random_logits(300, 103);
  const ReferenceToken r = file->record(3);
  EXPECT_EQ(r.top_ids[0], top_k_tokens(logits, 1)[0]);
  EXPECT_NEAR(compare_to_reference(logits, 3, r).kl_divergence, 0.0, 1e-6);

  // Truncated by one byte, and not a logits file at all.
  fs::resize_file(path_, fs::file_size(path_) - 1);
  auto truncated = LogitsFile::read(path_);
  ASSERT_FALSE(truncated.ok());
  EXPECT_NE(truncated.status().message().find("truncated"), std::string::npos);
  std::ofstream(path_, std::ios::trunc) << "GGUF and more";
  EXPECT_FALSE(LogitsFile::read(path_).ok());
}

TEST_F(LogitsFileTest, UnfinishedWriterLeavesNothing) {
  LogitsFileHeader header{300, 16, 8, 1, 4};
  std::vector<int32_t> tokens(16, 1);
  {
    auto writer = LogitsFileWriter::create(path_, header, tokens);
    ASSERT_TRUE(writer.ok());
    EXPECT_FALSE((*writer)->finish().ok());  // no records written
  }
  EXPECT_FALSE(fs::exists(path_));
  for (const auto& entry : fs::directory_iterator(fs::temp_directory_path())) {
    EXPECT_EQ(entry.path().string().find(path_ + ".tmp"), std::string::npos);
  }
}

}  // namespace
}  // namespace tokenmill::eval
