// The real default model against llama.cpp: first-step logits and 64 greedy tokens per
// prompt, from fixtures written by tools/make_model_fixtures.py.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>
#include <fstream>
#include <numeric>
#include <nlohmann/json.hpp>

#include "model/model.h"
#include "model/test_paths.h"

namespace tokenmill::model {
namespace {

using nlohmann::json;

json load_fixture() {
  std::ifstream in(std::string(TOKENMILL_FIXTURES_DIR) + "/model/gemma3_greedy.json");
  EXPECT_TRUE(in.good()) << "missing fixture tests/fixtures/model/gemma3_greedy.json";
  return json::parse(in);
}

std::unique_ptr<Model> load_default_model() {
  const std::string path = tokenmill::testing::default_model_path();
  auto model = load_model(path, LoadOptions{});
  if (!model.ok()) {
    ADD_FAILURE() << "cannot load the default model (" << model.status().to_string()
                  << "); run scripts/setup to fetch it";
    return nullptr;
  }
  return std::move(model).value();
}

int32_t argmax(const float* v, int32_t n) { return static_cast<int32_t>(std::max_element(v, v + n) - v); }

std::vector<int32_t> top_k_ids(const std::vector<float>& logits, int k) {
  std::vector<int32_t> ids(logits.size());
  std::iota(ids.begin(), ids.end(), 0);
  std::partial_sort(ids.begin(), ids.begin() + k, ids.end(),
                    [&](int32_t a, int32_t b) { return logits[a] > logits[b] || (logits[a] == logits[b] && a < b); });
  ids.resize(k);
  return ids;
}

class Gemma3Golden : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    model_ = load_default_model().release();
    fixture_ = new json(load_fixture());
  }
  static void TearDownTestSuite() {
    delete model_;
    delete fixture_;
  }
  static Model* model_;
  static json* fixture_;
};
Model* Gemma3Golden::model_ = nullptr;
json* Gemma3Golden::fixture_ = nullptr;

// llama.cpp's own kernels disagree with each other by up to ~0.3 logits on this model
// (repacked vs plain weights, batched vs token-at-a-time prompts; see
// tools/make_model_fixtures.py). Two tokens closer than this are a tie that arithmetic
// order alone decides, in llama.cpp as in any engine.
constexpr float kNearTie = 0.35f;
// Largest |our logit - llama.cpp's| allowed over each prompt's top-64 tokens. Measured:
// 0.98 (on c_code; llama.cpp itself lands 0.46 from exact arithmetic there and we 0.73).
// This model is numerically touchy: F16 rounding of the KV cache alone moves its logits
// by tenths, in both engines.
constexpr float kMaxLogitError = 1.25f;
// Largest change allowed in the gap between two of a prompt's top-64 tokens, ours vs
// llama.cpp's: measured 1.24 at most (first step, any kernel path; both engines round
// activations to 8 bits, differently). The greedy test uses the same budget.
constexpr float kMaxGapChange = 1.5f;
// Membership in the top-10 is judged with a wider tie: llama.cpp's own kernel paths put
// one prompt's top logit anywhere from 23.91 to 24.31 (batched prompt, token at a time,
// no repacking, flash attention), and two tokens' differences move by as much in
// opposite directions; the order of two tokens closer than this changes with summation
// order (it did on "numbers" when the Q4_K
// kernel regrouped its sums: 653 and 236770 swapped places 10 and 11, 0.04 apart).
constexpr float kTopTenTie = 0.6f;

TEST_F(Gemma3Golden, FirstStepLogitsMatchLlamaCpp) {
  ASSERT_NE(model_, nullptr);
  const int32_t n_vocab = model_->config().n_vocab;
  float worst_abs = 0.0f;
  float worst_gap = 0.0f;  // |(ours_i - ours_j) - (theirs_i - theirs_j)| over top-64 pairs
  double worst_relative = 0.0;
  int n_identical_top10 = 0;
  for (const json& c : (*fixture_)["cases"]) {
    std::vector<int32_t> prompt = c["prompt_tokens"].get<std::vector<int32_t>>();
    ops::KvStorage kv(model_->kv_shape(16));
    std::vector<int32_t> table(16);
    std::iota(table.begin(), table.end(), 0);
    Batch batch;
    batch.add_sequence(prompt, 0, table, true);
    std::vector<float> logits;
    ASSERT_TRUE(model_->forward(batch, kv, logits).ok());
    ASSERT_EQ(logits.size(), static_cast<size_t>(n_vocab));

    auto expected_ids = c["first_logits_top_ids"].get<std::vector<int32_t>>();
    auto expected_values = c["first_logits_top_values"].get<std::vector<float>>();
    std::vector<int32_t> ours = top_k_ids(logits, 10);
    const std::vector<int32_t> theirs(expected_ids.begin(), expected_ids.begin() + 10);
    if (ours == theirs) ++n_identical_top10;
    // Same top-10 up to the order of near-ties: every token of llama.cpp's top-10 that
    // clears its 10th logit by more than a tie must be in ours, and in the same place
    // relative to every token it clearly beats.
    for (size_t i = 0; i < 10; ++i) {
      if (expected_values[i] - expected_values[10] < kTopTenTie) continue;
      EXPECT_NE(std::find(ours.begin(), ours.end(), expected_ids[i]), ours.end())
          << c["name"] << ": llama.cpp's top-10 token " << expected_ids[i] << " is not in ours";
    }
    for (size_t i = 0; i < expected_ids.size(); ++i) {
      for (size_t j = 0; j < i; ++j) {
        const float ours_gap = logits[expected_ids[j]] - logits[expected_ids[i]];
        worst_gap = std::max(worst_gap, std::abs(ours_gap - (expected_values[j] - expected_values[i])));
      }
      const float diff = std::abs(logits[expected_ids[i]] - expected_values[i]);
      worst_abs = std::max(worst_abs, diff);
      worst_relative = std::max(worst_relative, static_cast<double>(diff) / std::abs(expected_values[0]));
    }
    if (std::getenv("TOKENMILL_DEBUG_LOGITS")) {
      for (int i = 0; i < 10; ++i) {
        std::printf("  %s #%d: llama.cpp %d=%.4f  ours %d=%.4f (ours at llama's id %.4f)\n",
                    c["name"].get<std::string>().c_str(), i, expected_ids[i], expected_values[i], ours[i],
                    logits[ours[i]], logits[expected_ids[i]]);
      }
    }
  }
  std::printf("first-step logits vs llama.cpp over each prompt's top-64: max abs diff %.4f, max diff relative to "
              "the top logit %.4f, max change of a gap between two tokens %.4f; identical top-10 order on %d of %zu "
              "prompts\n",
              worst_abs, worst_relative, worst_gap, n_identical_top10, (*fixture_)["cases"].size());
  EXPECT_LT(worst_abs, kMaxLogitError);
  EXPECT_LT(worst_gap, kMaxGapChange);
}

// Both engines against exact arithmetic (tools/make_exact_reference.py: float64 numpy on
// the same dequantized weights). Ours must stay at least as close as llama.cpp.
TEST_F(Gemma3Golden, FirstStepLogitsCloseToExactArithmetic) {
  ASSERT_NE(model_, nullptr);
  std::ifstream in(std::string(TOKENMILL_FIXTURES_DIR) + "/model/gemma3_exact_f64.json");
  ASSERT_TRUE(in.good()) << "missing fixture tests/fixtures/model/gemma3_exact_f64.json";
  const json exact = json::parse(in);
  float ours_worst = 0.0f, llama_worst = 0.0f;
  size_t i_case = 0;
  for (const json& c : (*fixture_)["cases"]) {
    const json& e = exact["cases"][i_case++];
    ASSERT_EQ(e["name"], c["name"]);
    std::vector<int32_t> prompt = c["prompt_tokens"].get<std::vector<int32_t>>();
    ops::KvStorage kv(model_->kv_shape(16));
    std::vector<int32_t> table(16);
    std::iota(table.begin(), table.end(), 0);
    Batch batch;
    batch.add_sequence(prompt, 0, table, true);
    std::vector<float> logits;
    ASSERT_TRUE(model_->forward(batch, kv, logits).ok());
    auto ids = e["top_ids"].get<std::vector<int32_t>>();
    auto values = e["top_values"].get<std::vector<double>>();
    auto llama_ids = c["first_logits_top_ids"].get<std::vector<int32_t>>();
    auto llama_values = c["first_logits_top_values"].get<std::vector<float>>();
    for (size_t i = 0; i < ids.size(); ++i) {
      ours_worst = std::max(ours_worst, static_cast<float>(std::abs(logits[ids[i]] - values[i])));
      auto it = std::find(llama_ids.begin(), llama_ids.end(), ids[i]);
      if (it != llama_ids.end()) {
        llama_worst = std::max(llama_worst, static_cast<float>(std::abs(llama_values[it - llama_ids.begin()] - values[i])));
      }
    }
    EXPECT_EQ(top_k_ids(logits, 1)[0], ids[0]) << c["name"] << ": top token differs from exact arithmetic";
    if (std::getenv("TOKENMILL_DEBUG_LOGITS")) {
      std::printf("  %s: ours-exact top1 %.4f vs %.4f, llama top1 %.4f\n", c["name"].get<std::string>().c_str(),
                  logits[ids[0]], values[0], llama_values[0]);
    }
  }
  std::printf("first-step logits vs exact float64 arithmetic (top-64 of each prompt): tokenmill max abs diff %.4f, "
              "llama.cpp %.4f\n", ours_worst, llama_worst);
  EXPECT_LE(ours_worst, 1.5f * llama_worst);
}

// An abandonable pass (the engine's batch work beside interactive users) cuts the
// output projection, a panel-packed Q8_0 matrix here, into slices: the logits and greedy
// picks must be the one-pass path's, bit for bit.
TEST_F(Gemma3Golden, AnAbandonablePassGivesThePlainLogitsAndPicks) {
  ASSERT_NE(model_, nullptr);
  ops::KvStorage kv(model_->kv_shape(8));
  Batch batch;
  batch.add_sequence({2, 818, 5279, 529, 7001}, 0, {0, 1}, true);
  batch.add_sequence({2, 9259, 236764}, 0, {2, 3}, true);
  batch.add_sequence({2, 106, 2364, 107}, 0, {4, 5}, true);
  std::vector<float> plain, sliced;
  std::vector<int32_t> plain_picks, sliced_picks;
  ASSERT_TRUE(model_->forward(batch, kv, plain, &plain_picks).ok());
  std::atomic<bool> stop{false};
  batch.abandon = &stop;
  ASSERT_TRUE(model_->forward(batch, kv, sliced, &sliced_picks).ok());
  ASSERT_EQ(sliced.size(), plain.size());
  EXPECT_EQ(std::memcmp(sliced.data(), plain.data(), plain.size() * sizeof(float)), 0);
  EXPECT_EQ(sliced_picks, plain_picks);
  std::vector<int32_t> picks_only;
  ASSERT_TRUE(model_->forward(batch, kv, sliced, &picks_only, /*argmax_only=*/true).ok());
  EXPECT_EQ(picks_only, plain_picks);
}

TEST_F(Gemma3Golden, GreedyTokensMatchLlamaCpp) {
  ASSERT_NE(model_, nullptr);
  const int32_t n_vocab = model_->config().n_vocab;
  int n_cases_identical = 0;
  int n_near_tie_divergences = 0;  // first divergences where llama.cpp's own margin was < kNearTie
  size_t n_tokens_compared = 0, n_tokens_total = 0;
  for (const json& c : (*fixture_)["cases"]) {
    std::vector<int32_t> prompt = c["prompt_tokens"].get<std::vector<int32_t>>();
    auto expected = c["generated_tokens"].get<std::vector<int32_t>>();
    auto margins = c["step_margins"].get<std::vector<float>>();
    const int32_t n_blocks = static_cast<int32_t>((prompt.size() + expected.size()) / 16 + 1);
    ops::KvStorage kv(model_->kv_shape(n_blocks));
    std::vector<int32_t> table(n_blocks);
    std::iota(table.begin(), table.end(), 0);

    std::vector<int32_t> generated;
    std::vector<float> our_gaps;  // per step: our logit of our token - our logit of llama.cpp's
    std::vector<float> logits;
    Batch prefill;
    prefill.add_sequence(prompt, 0, table, true);
    ASSERT_TRUE(model_->forward(prefill, kv, logits).ok());
    int32_t pos = static_cast<int32_t>(prompt.size());
    while (generated.size() < expected.size()) {
      const int32_t next = argmax(logits.data(), n_vocab);
      our_gaps.push_back(logits[next] - logits[expected[generated.size()]]);
      generated.push_back(next);
      Batch step;
      step.add_sequence({next}, pos++, table, true);
      ASSERT_TRUE(model_->forward(step, kv, logits).ok());
    }
    n_tokens_total += expected.size();
    if (generated == expected) {
      ++n_cases_identical;
      n_tokens_compared += expected.size();
      continue;
    }
    // The first disagreement must be a close call for both engines: llama.cpp's margin
    // for its token plus ours for our token (a lower bound on how much the gap between
    // the two changed) within the gap budget the first-step test measures. After it the
    // two continuations are different texts and are not compared.
    const size_t first_diff = std::mismatch(generated.begin(), generated.end(), expected.begin()).first -
                              generated.begin();
    n_tokens_compared += first_diff;
    if (margins[first_diff] < kNearTie) ++n_near_tie_divergences;
    EXPECT_LT(margins[first_diff] + our_gaps[first_diff], kMaxGapChange)
        << c["name"] << ": first different token at step " << first_diff << " (ours " << generated[first_diff]
        << ", llama.cpp " << expected[first_diff] << "): llama.cpp's top-2 margin " << margins[first_diff]
        << ", ours " << our_gaps[first_diff];
  }
  std::printf("greedy: %d of %zu prompts identical to llama.cpp for all 64 tokens; %zu of %zu tokens identical "
              "before the first divergence; %d of the divergences at a llama.cpp margin < %.2f\n",
              n_cases_identical, (*fixture_)["cases"].size(), n_tokens_compared, n_tokens_total,
              n_near_tie_divergences, kNearTie);
}

}  // namespace
}  // namespace tokenmill::model
