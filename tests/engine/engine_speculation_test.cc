// Speculative decoding in the engine, on the tiny random model: drafts change no token
// (greedy decoding with and without them, one request at a time and many at once), the
// rejected positions' blocks and window slots all return under churn, and a request can
// opt out. The same for a draft model: a tiny model with the same vocabulary and other
// weights, whose drafts the target often rejects.
#include <gtest/gtest.h>

#include <memory>
#include <random>
#include <span>

#include "engine/draft_model.h"
#include "engine/engine.h"
#include "model/tiny_model.h"
#include "tiny_engine_model.h"

namespace tokenmill::engine {
namespace {

using std::chrono::milliseconds;

std::vector<int32_t> collect_tokens(const std::shared_ptr<RequestStream>& stream) {
  std::vector<int32_t> tokens;
  StreamEvent event;
  while (stream->wait_next(event, milliseconds(20000))) {
    tokens.insert(tokens.end(), event.token_ids.begin(), event.token_ids.end());
  }
  EXPECT_TRUE(stream->complete());
  return tokens;
}

// A prompt that repeats a random phrase (copy-heavy: n-gram drafts find it), or random.
std::vector<int32_t> prompt(std::mt19937& rng, int32_t n_vocab, bool repetitive) {
  std::uniform_int_distribution<int32_t> token(4, n_vocab - 1), length(3, 12), repeats(2, 5);
  std::vector<int32_t> p = {2};
  std::vector<int32_t> phrase;
  for (int32_t i = length(rng); i > 0; --i) phrase.push_back(token(rng));
  for (int32_t r = repetitive ? repeats(rng) : 1; r > 0; --r) p.insert(p.end(), phrase.begin(), phrase.end());
  for (int32_t i = length(rng); i > 0; --i) p.push_back(token(rng));
  return p;
}

class EngineSpeculationTest : public ::testing::Test {
 protected:
  void SetUp() override {
    tiny_ = testing::load_tiny_engine_model();
    ASSERT_NE(tiny_.model, nullptr);
    agreeing_ = testing::load_tiny_engine_model(testing::TinyDraft::kAgreeing, tiny_.model->backend().shared_thread_pool());
    disagreeing_ =
        testing::load_tiny_engine_model(testing::TinyDraft::kDisagreeing, tiny_.model->backend().shared_thread_pool());
    ASSERT_NE(agreeing_.model, nullptr);
    ASSERT_NE(disagreeing_.model, nullptr);
    std::mt19937 rng(5);
    for (int i = 0; i < 24; ++i) {
      Request r;
      r.prompt = prompt(rng, tiny_.model->config().n_vocab, i % 3 != 0);
      r.sampling.temperature = 0;
      r.max_tokens = 20 + 7 * (i % 6);
      r.ignore_eos = true;
      requests_.push_back(std::move(r));
    }
  }
  // draft: the draft model of SpecMode::kDraft.
  EngineConfig config(SpecMode mode, const testing::TinyEngineModel* draft = nullptr) const {
    EngineConfig c;
    c.ctx_total = 4096;
    c.max_context = 512;
    c.max_batch_tokens = 96;
    c.max_seqs = 32;
    c.speculative.mode = mode;
    if (mode == SpecMode::kDraft) c.speculative.draft_model = (draft ? draft : &disagreeing_)->model.get();
    // Every eligible sequence drafts, whatever it costs. The tiny model's greedy output
    // soon repeats one token: the drafts are that token with a wrong one among them now
    // and then, so that every draft position is both accepted and rejected.
    c.speculative.adaptive = false;
    c.speculative.drafter = [rng = std::make_shared<std::mt19937>(11)](std::span<const int32_t> tokens, int32_t k) {
      std::vector<int32_t> drafts(static_cast<size_t>(k), tokens.back());
      std::uniform_int_distribution<int32_t> position(0, 2 * k);
      const int32_t wrong = position(*rng);
      if (wrong < k) drafts[static_cast<size_t>(wrong)] = tokens.back() == 5 ? 6 : 5;
      return drafts;
    };
    return c;
  }
  // Every request's tokens, one at a time, then all at once; the metrics after both.
  struct Run {
    std::vector<std::vector<int32_t>> alone, together;
    EngineMetrics::Snapshot metrics;
  };
  Run run(const EngineConfig& c) const {
    Engine engine(*tiny_.model, *tiny_.tokenizer, c);
    Run out;
    for (const Request& r : requests_) out.alone.push_back(collect_tokens(*engine.submit(r)));
    std::vector<std::shared_ptr<RequestStream>> streams;
    for (const Request& r : requests_) streams.push_back(*engine.submit(r));
    for (auto& s : streams) out.together.push_back(collect_tokens(s));
    out.metrics = engine.metrics().snapshot();
    const Engine::PoolCounters pool = engine.pool_counters();
    EXPECT_EQ(pool.n_free, pool.n_blocks);
    EXPECT_EQ(pool.n_window_held, 0);
    EXPECT_EQ(pool.n_draft_free, pool.n_draft_blocks);
    return out;
  }
  testing::TinyEngineModel tiny_, agreeing_, disagreeing_;
  std::vector<Request> requests_;
};

TEST_F(EngineSpeculationTest, DraftsChangeNoGreedyToken) {
  const Run plain = run(config(SpecMode::kOff));
  const Run spec = run(config(SpecMode::kNgram));
  for (int i = 0; i < 3; ++i) { for (int32_t t : plain.alone[i]) std::printf("%d ", t); std::printf("\n"); }
  EXPECT_EQ(plain.metrics.spec_drafts_total, 0u);
  for (size_t i = 0; i < requests_.size(); ++i) {
    EXPECT_EQ(spec.alone[i], plain.alone[i]) << "request " << i << " alone";
    EXPECT_EQ(spec.together[i], plain.together[i]) << "request " << i << " together";
    EXPECT_EQ(plain.together[i], plain.alone[i]) << "request " << i;
  }
  // The drafts were really verified: many accepted, some rejected (and rolled back).
  const auto& m = spec.metrics;
  EXPECT_GT(m.spec_accepted_tokens_total, 50u);
  EXPECT_LT(m.spec_accepted_tokens_total, m.spec_draft_tokens_total);
  ASSERT_FALSE(m.spec_accepted_per_position.empty());
  EXPECT_LE(m.spec_accepted_per_position[0], m.spec_drafts_total);
  uint64_t per_position = 0;
  for (size_t i = 0; i < m.spec_accepted_per_position.size(); ++i) {
    per_position += m.spec_accepted_per_position[i];
    if (i > 0) {
      EXPECT_LE(m.spec_accepted_per_position[i], m.spec_accepted_per_position[i - 1]);
    }
  }
  EXPECT_EQ(per_position, m.spec_accepted_tokens_total);
  // Speculation yields the same tokens in fewer sequence-steps: the generation counter
  // counts each token once either way.
  EXPECT_EQ(m.generation_tokens_total, plain.metrics.generation_tokens_total);
}

// Sampled requests verify drafts by drawing at every draft position what plain decoding
// draws there, so a seeded request gives the same tokens with speculation or without,
// whatever the drafts, with temperature, top-k, top-p, min-p, penalties, n > 1 and
// logprobs on.
TEST_F(EngineSpeculationTest, SeededSamplingGivesTheSameTokensWithDrafts) {
  std::vector<Request> sampled = requests_;
  for (size_t i = 0; i < sampled.size(); ++i) {
    Request& r = sampled[i];
    r.sampling.temperature = 0.7f + 0.1f * static_cast<float>(i % 4);
    r.sampling.top_k = i % 3 == 0 ? 0 : 20;
    r.sampling.top_p = i % 2 == 0 ? 1.0f : 0.9f;
    r.sampling.min_p = i % 5 == 0 ? 0.05f : 0.0f;
    r.sampling.repetition_penalty = i % 4 == 1 ? 1.1f : 1.0f;
    r.sampling.presence_penalty = i % 4 == 2 ? 0.5f : 0.0f;
    r.sampling.seed = 1000 + i;
    r.sampling.logprobs = i % 6 == 0;
    r.n = i % 7 == 0 ? 3 : 1;
  }
  auto run_sampled = [&](SpecMode mode, EngineMetrics::Snapshot* metrics) {
    Engine engine(*tiny_.model, *tiny_.tokenizer, config(mode));
    std::vector<std::shared_ptr<RequestStream>> streams;
    for (const Request& r : sampled) streams.push_back(*engine.submit(r));
    std::vector<std::vector<std::vector<int32_t>>> tokens;  // [request][choice]
    std::vector<std::vector<std::vector<float>>> logprobs;  // [request][choice]
    for (size_t i = 0; i < streams.size(); ++i) {
      tokens.emplace_back(static_cast<size_t>(sampled[i].n));
      logprobs.emplace_back(static_cast<size_t>(sampled[i].n));
      StreamEvent e;
      while (streams[i]->wait_next(e, milliseconds(20000))) {
        auto& t = tokens.back()[static_cast<size_t>(e.choice)];
        t.insert(t.end(), e.token_ids.begin(), e.token_ids.end());
        for (const TokenLogprobs& lp : e.logprobs) logprobs.back()[static_cast<size_t>(e.choice)].push_back(lp.chosen.logprob);
      }
    }
    *metrics = engine.metrics().snapshot();
    return std::make_pair(tokens, logprobs);
  };
  EngineMetrics::Snapshot plain_metrics, spec_metrics;
  const auto plain = run_sampled(SpecMode::kOff, &plain_metrics);
  const auto spec = run_sampled(SpecMode::kNgram, &spec_metrics);
  for (size_t i = 0; i < sampled.size(); ++i) {
    EXPECT_EQ(spec.first[i], plain.first[i]) << "request " << i;
    EXPECT_EQ(spec.second[i], plain.second[i]) << "request " << i << " logprobs";
  }
  EXPECT_EQ(plain_metrics.spec_drafts_total, 0u);
  EXPECT_GT(spec_metrics.spec_accepted_tokens_total, 20u);
  EXPECT_LT(spec_metrics.spec_accepted_tokens_total, spec_metrics.spec_draft_tokens_total);
}

// The draft model's greedy drafts (one batched draft pass per draft position for every
// speculating sequence, each with its own cache in the draft's pool) change no token,
// whether the target accepts them (all cached draft positions kept) or rejects them (the
// draft's cache rolled back every step).
TEST_F(EngineSpeculationTest, DraftModelChangesNoGreedyToken) {
  const Run plain = run(config(SpecMode::kOff));
  for (const testing::TinyEngineModel* draft : {&agreeing_, &disagreeing_}) {
    ASSERT_EQ(draft_vocabulary_error(*tiny_.model, *tiny_.tokenizer, *draft->model, *draft->tokenizer), "");
    const Run spec = run(config(SpecMode::kDraft, draft));
    for (size_t i = 0; i < requests_.size(); ++i) {
      EXPECT_EQ(spec.alone[i], plain.alone[i]) << "request " << i << " alone";
      EXPECT_EQ(spec.together[i], plain.together[i]) << "request " << i << " together";
    }
    const auto& m = spec.metrics;
    std::printf("%s draft model: %llu of %llu drafts accepted in %llu verifications\n",
                draft == &agreeing_ ? "agreeing" : "disagreeing",
                static_cast<unsigned long long>(m.spec_accepted_tokens_total),
                static_cast<unsigned long long>(m.spec_draft_tokens_total),
                static_cast<unsigned long long>(m.spec_drafts_total));
    EXPECT_GT(m.spec_draft_tokens_total, 500u);
    if (draft == &agreeing_) {
      EXPECT_GT(m.spec_accepted_tokens_total, m.spec_draft_tokens_total * 9 / 10);
    } else {
      EXPECT_LT(m.spec_accepted_tokens_total, m.spec_draft_tokens_total / 10);
    }
  }
}

// Seeded sampling with a draft model whose distribution differs strongly from the
// target's gives the tokens (and so the distribution) of plain decoding.
TEST_F(EngineSpeculationTest, SeededSamplingWithADraftModelGivesThePlainTokens) {
  auto run_sampled = [&](SpecMode mode, EngineMetrics::Snapshot* metrics) {
    Engine engine(*tiny_.model, *tiny_.tokenizer, config(mode));
    std::vector<std::shared_ptr<RequestStream>> streams;
    for (size_t i = 0; i < requests_.size(); ++i) {
      Request r = requests_[i];
      r.sampling.temperature = 0.6f + 0.2f * static_cast<float>(i % 3);
      r.sampling.top_k = i % 2 == 0 ? 0 : 8;
      r.sampling.top_p = i % 3 == 0 ? 1.0f : 0.9f;
      r.sampling.seed = 500 + i;
      streams.push_back(*engine.submit(r));
    }
    std::vector<std::vector<int32_t>> tokens;
    for (auto& stream : streams) tokens.push_back(collect_tokens(stream));
    *metrics = engine.metrics().snapshot();
    return tokens;
  };
  EngineMetrics::Snapshot plain_metrics, spec_metrics;
  const auto plain = run_sampled(SpecMode::kOff, &plain_metrics);
  const auto spec = run_sampled(SpecMode::kDraft, &spec_metrics);
  for (size_t i = 0; i < plain.size(); ++i) EXPECT_EQ(spec[i], plain[i]) << "request " << i;
  EXPECT_GT(spec_metrics.spec_draft_tokens_total, 200u);
  EXPECT_LT(spec_metrics.spec_accepted_tokens_total, spec_metrics.spec_draft_tokens_total);
}

// A model with another vocabulary cannot draft: the error names the difference.
TEST_F(EngineSpeculationTest, ADraftModelWithAnotherVocabularyIsRefused) {
  auto other = model::testing::load_tiny_model(model::testing::tiny_llama_spec());
  ASSERT_TRUE(other.ok());
  const std::string error = draft_vocabulary_error(*tiny_.model, *tiny_.tokenizer, **other, *tiny_.tokenizer);
  EXPECT_NE(error.find("vocabulary"), std::string::npos) << error;
}

TEST_F(EngineSpeculationTest, ARequestCanOptOut) {
  Engine engine(*tiny_.model, *tiny_.tokenizer, config(SpecMode::kNgram));
  for (Request r : requests_) {
    r.speculative = false;
    collect_tokens(*engine.submit(r));
  }
  EXPECT_EQ(engine.metrics().snapshot().spec_drafts_total, 0u);
}

// Requests (1,000 with n-gram drafts) of random lengths (greedy ones speculate), some
// cancelled as they start, some sampled with n = 2, through a pool far too small for
// them: preemptions happen, drafts are accepted and rejected, and afterwards every block and window slot is free,
// the draft model's cache included.
EngineMetrics::Snapshot churn(const testing::TinyEngineModel& tiny_, EngineConfig c, int n_requests) {
  c.ctx_total = 16 * 14;
  c.max_context = 200;
  c.max_batch_tokens = 48;
  Engine engine(*tiny_.model, *tiny_.tokenizer, c);
  const int32_t n_vocab = tiny_.model->config().n_vocab;
  std::mt19937 rng(23);
  std::uniform_int_distribution<int32_t> gen_len(1, 60), coin(0, 9);
  std::vector<std::pair<std::shared_ptr<RequestStream>, bool>> live;
  for (int i = 0; i < n_requests; ++i) {
    Request r;
    r.prompt = prompt(rng, n_vocab, coin(rng) < 7);
    r.sampling.temperature = 0;
    r.max_tokens = gen_len(rng);
    r.ignore_eos = true;
    if (coin(rng) == 0) {
      r.sampling.temperature = 1.0f;
      r.n = 2;
    }
    auto stream = engine.submit(r);
    EXPECT_TRUE(stream.ok()) << stream.status().to_string();
    if (!stream.ok()) return {};
    live.push_back({*stream, coin(rng) < 2});
    if (live.size() >= 24 || i == n_requests - 1) {
      for (auto& [s, cancel] : live) {
        if (cancel) s->cancel();
      }
      for (auto& [s, cancel] : live) {
        StreamEvent e;
        while (s->wait_next(e, milliseconds(20000))) {
        }
        EXPECT_TRUE(s->complete());
      }
      live.clear();
    }
  }
  const EngineMetrics::Snapshot m = engine.metrics().snapshot();
  EXPECT_GT(m.preemptions_total, 0u);
  const Engine::PoolCounters pool = engine.pool_counters();
  EXPECT_EQ(pool.n_free, pool.n_blocks);
  EXPECT_EQ(pool.n_window_held, 0);
  EXPECT_EQ(pool.n_draft_free, pool.n_draft_blocks);
  std::printf("speculative churn: %llu preemptions, %llu of %llu drafts accepted\n",
              static_cast<unsigned long long>(m.preemptions_total),
              static_cast<unsigned long long>(m.spec_accepted_tokens_total),
              static_cast<unsigned long long>(m.spec_draft_tokens_total));
  return m;
}

TEST_F(EngineSpeculationTest, EveryBlockAndSlotReturnsAfterSpeculativeChurn) {
  const EngineMetrics::Snapshot m = churn(tiny_, config(SpecMode::kNgram), 1000);
  EXPECT_GT(m.spec_accepted_tokens_total, 0u);
  EXPECT_LT(m.spec_accepted_tokens_total, m.spec_draft_tokens_total);
}

TEST_F(EngineSpeculationTest, EveryDraftCacheBlockReturnsAfterChurn) {
  // Each draft position is a pass of the draft model (slower): fewer requests, once with
  // drafts the target accepts and once with drafts it rejects.
  const EngineMetrics::Snapshot accepted = churn(tiny_, config(SpecMode::kDraft, &agreeing_), 200);
  EXPECT_GT(accepted.spec_accepted_tokens_total, 1000u);
  const EngineMetrics::Snapshot rejected = churn(tiny_, config(SpecMode::kDraft, &disagreeing_), 200);
  EXPECT_GT(rejected.spec_draft_tokens_total, rejected.spec_accepted_tokens_total + 1000);
}

}  // namespace
}  // namespace tokenmill::engine
