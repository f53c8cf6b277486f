// The serving engine on a tiny random model: batch invariance, prefix caching, n > 1,
// stop strings, preemption and block accounting under churn.
#include "engine/engine.h"

#include <gtest/gtest.h>

#include <random>
#include <thread>

#include "tiny_engine_model.h"

namespace tokenmill::engine {
namespace {

using std::chrono::milliseconds;

struct Completion {
  std::vector<std::vector<int32_t>> tokens;  // per choice
  std::vector<std::string> text;
  std::vector<FinishReason> finish;
  Usage usage;
};

Completion collect(const std::shared_ptr<RequestStream>& stream, int32_t n_choices) {
  Completion c;
  c.tokens.resize(n_choices);
  c.text.resize(n_choices);
  c.finish.resize(n_choices, FinishReason::kError);
  StreamEvent event;
  for (;;) {
    if (!stream->wait_next(event, milliseconds(20000))) break;
    c.tokens[event.choice].insert(c.tokens[event.choice].end(), event.token_ids.begin(), event.token_ids.end());
    c.text[event.choice] += event.text;
    if (event.finish) c.finish[event.choice] = *event.finish;
  }
  EXPECT_TRUE(stream->complete());
  c.usage = stream->usage();
  return c;
}

Request greedy_request(std::vector<int32_t> prompt, int32_t max_tokens) {
  Request r;
  r.prompt = std::move(prompt);
  r.sampling.temperature = 0;
  r.max_tokens = max_tokens;
  r.ignore_eos = true;
  return r;
}

std::vector<int32_t> random_prompt(std::mt19937& rng, int32_t length, int32_t n_vocab) {
  std::uniform_int_distribution<int32_t> token(4, n_vocab - 1);
  std::vector<int32_t> p = {2};
  while (static_cast<int32_t>(p.size()) < length) p.push_back(token(rng));
  return p;
}

class EngineTest : public ::testing::Test {
 protected:
  void SetUp() override {
    tiny_ = testing::load_tiny_engine_model();
    ASSERT_NE(tiny_.model, nullptr);
    n_vocab_ = tiny_.model->config().n_vocab;
  }
  EngineConfig small_config() {
    EngineConfig c;
    c.ctx_total = 2048;
    c.max_context = 512;
    c.max_batch_tokens = 64;
    c.max_seqs = 32;
    return c;
  }
  testing::TinyEngineModel tiny_;
  int32_t n_vocab_ = 0;
};

TEST_F(EngineTest, BatchedGreedyEqualsOneAtATime) {
  std::mt19937 rng(3);
  std::vector<std::vector<int32_t>> prompts;
  for (int i = 0; i < 16; ++i) prompts.push_back(random_prompt(rng, 3 + i * 5, n_vocab_));

  std::vector<std::vector<int32_t>> alone;
  {
    Engine engine(*tiny_.model, *tiny_.tokenizer, small_config());
    for (const auto& p : prompts) {
      auto stream = engine.submit(greedy_request(p, 12));
      ASSERT_TRUE(stream.ok());
      alone.push_back(collect(*stream, 1).tokens[0]);
    }
  }
  Engine engine(*tiny_.model, *tiny_.tokenizer, small_config());
  std::vector<std::shared_ptr<RequestStream>> streams;
  for (const auto& p : prompts) streams.push_back(*engine.submit(greedy_request(p, 12)));
  for (size_t i = 0; i < prompts.size(); ++i) {
    EXPECT_EQ(collect(streams[i], 1).tokens[0], alone[i]) << "prompt " << i;
  }
}

TEST_F(EngineTest, RepeatedPromptHitsThePrefixCache) {
  Engine engine(*tiny_.model, *tiny_.tokenizer, small_config());
  std::mt19937 rng(5);
  const auto prompt = random_prompt(rng, 70, n_vocab_);
  auto first = collect(*engine.submit(greedy_request(prompt, 6)), 1);
  auto second = collect(*engine.submit(greedy_request(prompt, 6)), 1);
  EXPECT_EQ(first.usage.cached_tokens, 0);
  EXPECT_EQ(second.usage.cached_tokens, 64);  // whole 16-token blocks, leaving the last token to compute
  EXPECT_EQ(first.tokens, second.tokens);
  const auto m = engine.metrics().snapshot();
  EXPECT_EQ(m.prefix_cache_hits_total, 64u);
  EXPECT_EQ(m.prefix_cache_queries_total, 2u * 69u);
}

TEST_F(EngineTest, ChoicesShareThePromptAndDiffer) {
  Engine engine(*tiny_.model, *tiny_.tokenizer, small_config());
  std::mt19937 rng(9);
  const auto prompt = random_prompt(rng, 21, n_vocab_);
  Request r = greedy_request(prompt, 10);
  r.n = 3;
  r.sampling.temperature = 50.0f;  // a random tiny model is peaked; flatten it so draws differ
  r.sampling.seed = 11;
  auto sampled = collect(*engine.submit(r), 3);
  EXPECT_NE(sampled.tokens[0], sampled.tokens[1]);
  EXPECT_EQ(sampled.usage.completion_tokens, 30);
  // Greedy choices of one request all equal the single greedy answer.
  auto single = collect(*engine.submit(greedy_request(prompt, 10)), 1);
  Request g = greedy_request(prompt, 10);
  g.n = 3;
  auto triple = collect(*engine.submit(g), 3);
  for (int c = 0; c < 3; ++c) EXPECT_EQ(triple.tokens[c], single.tokens[0]);
  auto pool = engine.pool_counters();
  EXPECT_EQ(pool.n_free, pool.n_blocks);
}

TEST_F(EngineTest, StopStringCutsTheText) {
  Engine engine(*tiny_.model, *tiny_.tokenizer, small_config());
  std::mt19937 rng(13);
  const auto prompt = random_prompt(rng, 9, n_vocab_);
  auto full = collect(*engine.submit(greedy_request(prompt, 24)), 1);
  // Pick a stop string from the middle of the full text, at a character boundary.
  const std::string& text = full.text[0];
  ASSERT_GT(text.size(), 8u);
  size_t cut = text.size() / 2;
  while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80) --cut;
  const std::string stop = text.substr(cut, 3);
  Request r = greedy_request(prompt, 24);
  r.stop = {stop};
  auto stopped = collect(*engine.submit(r), 1);
  EXPECT_EQ(stopped.finish[0], FinishReason::kStop);
  EXPECT_EQ(stopped.text[0], text.substr(0, text.find(stop)));
  EXPECT_EQ(full.finish[0], FinishReason::kLength);
}

TEST_F(EngineTest, RequestsPastTheirDeadlineEndAsIfCutByMaxTokens) {
  EngineConfig config = small_config();
  config.request_timeout_seconds = 1e-6;  // past by the time the engine first looks
  Engine engine(*tiny_.model, *tiny_.tokenizer, config);
  std::mt19937 rng(5);
  std::vector<std::shared_ptr<RequestStream>> streams;
  for (int i = 0; i < 40; ++i) streams.push_back(*engine.submit(greedy_request(random_prompt(rng, 20, n_vocab_), 400)));
  for (auto& stream : streams) {
    const Completion c = collect(stream, 1);
    EXPECT_EQ(c.finish[0], FinishReason::kLength);
    EXPECT_LT(c.tokens[0].size(), 400u);
  }
  const Engine::PoolCounters pool = engine.pool_counters();
  EXPECT_EQ(pool.n_free, pool.n_blocks);
  EXPECT_EQ(pool.n_window_held, 0);
}

TEST_F(EngineTest, RejectsBadRequests) {
  Engine engine(*tiny_.model, *tiny_.tokenizer, small_config());
  EXPECT_FALSE(engine.submit(greedy_request({}, 4)).ok());
  EXPECT_FALSE(engine.submit(greedy_request({2, n_vocab_}, 4)).ok());
  EXPECT_FALSE(engine.submit(greedy_request({2, 5}, 10000)).ok());
  Request r = greedy_request({2, 5}, 4);
  r.n = 9;
  EXPECT_FALSE(engine.submit(r).ok());
  r.n = 1;
  r.sampling.top_p = 2;
  EXPECT_FALSE(engine.submit(r).ok());
}

// Echo + logprobs: every prompt token after the first gets its log-probability given the
// ones before it. Each equals what the same position yields as a generated token: the
// greedy token after prompt[0, k) and its logprob, then prompt[0, k) + that token with
// prompt logprobs, scores the appended token exactly so (batch invariance), across the
// 32-position chunks such prompts are computed in, and with n = 2.
TEST_F(EngineTest, PromptLogprobsScoreEachPromptTokenAsGenerationWould) {
  Engine engine(*tiny_.model, *tiny_.tokenizer, small_config());
  std::mt19937 rng(3);
  const std::vector<int32_t> base = random_prompt(rng, 70, n_vocab_);
  Request first = greedy_request(base, 1);
  first.sampling.logprobs = true;
  first.sampling.top_logprobs = 3;
  auto generated = *engine.submit(first);
  StreamEvent e;
  ASSERT_TRUE(generated->wait_next(e, milliseconds(20000)));
  ASSERT_EQ(e.logprobs.size(), 1u);
  EXPECT_TRUE(e.prompt_logprobs.empty());  // not asked for
  const TokenLogprobs expected = e.logprobs[0];
  while (generated->wait_next(e, milliseconds(20000))) {
  }

  std::vector<int32_t> scored_prompt = base;
  scored_prompt.push_back(expected.chosen.token);
  Request echo = greedy_request(scored_prompt, 2);
  echo.sampling.logprobs = true;
  echo.sampling.top_logprobs = 3;
  echo.sampling.temperature = 1.0f;
  echo.sampling.seed = 9;
  echo.n = 2;
  echo.prompt_logprobs = true;
  auto stream = *engine.submit(echo);
  std::vector<bool> first_event(2, true);
  while (stream->wait_next(e, milliseconds(20000))) {
    ASSERT_TRUE(e.choice == 0 || e.choice == 1);
    if (!first_event[e.choice]) {
      EXPECT_TRUE(e.prompt_logprobs.empty());
      continue;
    }
    first_event[e.choice] = false;
    ASSERT_EQ(e.prompt_logprobs.size(), scored_prompt.size() - 1) << "choice " << e.choice;
    for (size_t k = 1; k < scored_prompt.size(); ++k) {
      const TokenLogprobs& lp = e.prompt_logprobs[k - 1];
      EXPECT_EQ(lp.chosen.token, scored_prompt[k]);
      EXPECT_LE(lp.chosen.logprob, 0.0f);
      ASSERT_EQ(lp.top.size(), 3u);
      EXPECT_GE(lp.top[0].logprob, lp.chosen.logprob);
    }
    const TokenLogprobs& last = e.prompt_logprobs.back();
    EXPECT_EQ(last.chosen.logprob, expected.chosen.logprob);
    ASSERT_EQ(last.top.size(), expected.top.size());
    for (size_t i = 0; i < last.top.size(); ++i) {
      EXPECT_EQ(last.top[i].token, expected.top[i].token);
      EXPECT_EQ(last.top[i].logprob, expected.top[i].logprob);
    }
  }
  EXPECT_FALSE(first_event[0] || first_event[1]);
  EXPECT_EQ(stream->usage().cached_tokens, 0);  // a scored prompt is computed whole
}

// The tiny Gemma 3's local layers see 4 positions: with window slots for two sequences
// only (7 slots for 24 blocks), requests of random lengths, some with n = 2 (shared
// blocks, copy-on-write), four at a time, give the tokens of a cache that keeps every
// position, and prefixes are reused with their window slots.
TEST_F(EngineTest, WindowedCacheGivesTheTokensOfTheFullCache) {
  std::mt19937 rng(5);
  std::uniform_int_distribution<int32_t> prompt_len(2, 90), gen_len(1, 40), coin(0, 3);
  std::vector<Request> requests;
  for (int i = 0; i < 24; ++i) {
    auto prompt = random_prompt(rng, prompt_len(rng), n_vocab_);
    if (i % 3 == 2) prompt.insert(prompt.begin(), requests.back().prompt.begin(), requests.back().prompt.end());
    Request r = greedy_request(prompt, gen_len(rng));
    if (coin(rng) == 0) {
      r.sampling.temperature = 1.0f;
      r.sampling.seed = 7 + i;
      r.n = 2;
    }
    requests.push_back(r);
  }
  auto run = [&](bool window_kv, int64_t* cached) {
    EngineConfig config = small_config();
    config.ctx_total = 16 * 24;
    config.max_context = 200;
    config.max_batch_tokens = 48;
    config.max_seqs = 2;
    config.window_kv = window_kv;
    Engine engine(*tiny_.model, *tiny_.tokenizer, config);
    const auto pool = engine.pool_counters();
    if (window_kv) {
      EXPECT_LT(pool.n_window_slots, pool.n_blocks);
    }
    std::vector<std::vector<int32_t>> out;
    for (size_t i = 0; i < requests.size(); i += 4) {
      std::vector<std::shared_ptr<RequestStream>> streams;
      for (size_t j = i; j < i + 4 && j < requests.size(); ++j) streams.push_back(*engine.submit(requests[j]));
      for (auto& stream : streams) {
        // Each choice's tokens, choice after choice: how the events of the choices
        // interleave depends on the steps (speculation may give one choice several tokens
        // in a step), the tokens of each do not.
        std::vector<std::vector<int32_t>> by_choice(2);
        StreamEvent e;
        while (stream->wait_next(e, milliseconds(20000))) {
          auto& tokens = by_choice[static_cast<size_t>(e.choice)];
          tokens.insert(tokens.end(), e.token_ids.begin(), e.token_ids.end());
        }
        std::vector<int32_t> tokens = by_choice[0];
        tokens.push_back(-1);
        tokens.insert(tokens.end(), by_choice[1].begin(), by_choice[1].end());
        out.push_back(tokens);
        *cached += stream->usage().cached_tokens;
      }
    }
    const auto after = engine.pool_counters();
    EXPECT_EQ(after.n_free, after.n_blocks);
    EXPECT_EQ(after.n_window_held, 0);
    return out;
  };
  int64_t cached_full = 0, cached_windowed = 0;
  const auto full = run(false, &cached_full);
  const auto windowed = run(true, &cached_windowed);
  ASSERT_EQ(full.size(), windowed.size());
  for (size_t i = 0; i < full.size(); ++i) EXPECT_EQ(windowed[i], full[i]) << "request " << i;
  EXPECT_GT(cached_windowed, 0);
  std::printf("cached prompt tokens: %lld with every position kept, %lld with windows only\n",
              static_cast<long long>(cached_full), static_cast<long long>(cached_windowed));
}

// The choices of one prompt share its last, partly filled block until each writes its
// first token there. Through a pool that runs out exactly then (four requests of eight
// seeded choices in 24 blocks), every choice must still give the tokens it gives with
// blocks to spare: the copy of the shared block is reserved with the step, or the
// sequence waits (preemption), never written in place.
TEST_F(EngineTest, ChoicesUnderMemoryPressureGiveTheTokensOfAnUnconstrainedRun) {
  std::mt19937 rng(23);
  std::vector<Request> requests;
  for (int i = 0; i < 4; ++i) {
    Request r = greedy_request(random_prompt(rng, 20 + 3 * i, n_vocab_), 24);
    r.n = 8;
    r.sampling.temperature = 50.0f;  // flatten the peaked tiny model so the choices differ
    r.sampling.seed = 100 + i;
    requests.push_back(r);
  }
  auto run = [&](const EngineConfig& config, uint64_t* preemptions) {
    Engine engine(*tiny_.model, *tiny_.tokenizer, config);
    std::vector<std::shared_ptr<RequestStream>> streams;
    for (const Request& r : requests) streams.push_back(*engine.submit(r));
    std::vector<std::vector<std::vector<int32_t>>> tokens;
    for (auto& stream : streams) tokens.push_back(collect(stream, 8).tokens);
    *preemptions = engine.metrics().snapshot().preemptions_total;
    return tokens;
  };
  uint64_t unconstrained_preemptions = 0, constrained_preemptions = 0;
  const auto expected = run(small_config(), &unconstrained_preemptions);
  EngineConfig tight = small_config();
  tight.ctx_total = 16 * 24;  // 24 blocks for 32 sequences of up to 3 blocks each
  const auto got = run(tight, &constrained_preemptions);
  EXPECT_EQ(unconstrained_preemptions, 0u);
  EXPECT_GT(constrained_preemptions, 0u);
  for (size_t r = 0; r < requests.size(); ++r) {
    for (int c = 0; c < 8; ++c) EXPECT_EQ(got[r][c], expected[r][c]) << "request " << r << " choice " << c;
  }
  std::printf("choices under pressure: %llu preemptions\n", static_cast<unsigned long long>(constrained_preemptions));
}

// Many requests of random lengths, some cancelled mid-way, through a pool too small for
// all of them at once: every request ends, preemption happens, and every block returns.
TEST_F(EngineTest, EveryBlockReturnsAfterChurn) {
  EngineConfig config = small_config();
  config.ctx_total = 16 * 24;  // 24 blocks
  config.max_context = 200;
  config.max_batch_tokens = 48;
  Engine engine(*tiny_.model, *tiny_.tokenizer, config);
  std::mt19937 rng(17);
  std::uniform_int_distribution<int32_t> prompt_len(2, 90), gen_len(1, 40), coin(0, 9);
  struct Live {
    std::shared_ptr<RequestStream> stream;
    bool cancel;
  };
  int n_finished = 0, n_cancelled = 0;
  const int kRequests = 1000;
  std::vector<Live> live;
  for (int i = 0; i < kRequests; ++i) {
    Request r = greedy_request(random_prompt(rng, prompt_len(rng), n_vocab_), gen_len(rng));
    if (coin(rng) == 0) {
      r.sampling.temperature = 1.0f;
      r.n = 2;
    }
    auto stream = engine.submit(r);
    ASSERT_TRUE(stream.ok()) << stream.status().to_string();
    live.push_back({*stream, coin(rng) < 2});
    if (live.size() >= 24 || i == kRequests - 1) {
      // Cancel some right away (as a client that disconnects), drain the rest.
      for (auto& l : live) {
        if (l.cancel) l.stream->cancel();
      }
      for (auto& l : live) {
        StreamEvent e;
        while (l.stream->wait_next(e, milliseconds(20000))) {
          if (e.finish && *e.finish == FinishReason::kCancelled) ++n_cancelled;
        }
        EXPECT_TRUE(l.stream->complete());
        ++n_finished;
      }
      live.clear();
    }
  }
  EXPECT_EQ(n_finished, kRequests);
  EXPECT_GT(n_cancelled, 0);
  // The engine thread may still be finishing its last step.
  for (int i = 0; i < 100 && engine.metrics().snapshot().requests_running > 0; ++i) {
    std::this_thread::sleep_for(milliseconds(10));
  }
  auto pool = engine.pool_counters();
  EXPECT_EQ(pool.n_free, pool.n_blocks) << "blocks leaked";
  EXPECT_GT(pool.n_window_slots, 0);  // the tiny Gemma 3 has sliding-window layers
  EXPECT_EQ(pool.n_window_held, 0) << "window slots leaked";
  const auto m = engine.metrics().snapshot();
  EXPECT_GT(m.preemptions_total, 0u);
  std::printf("churn: %d requests, %d cancelled choices, %llu preemptions, %d cached free blocks\n", kRequests,
              n_cancelled, static_cast<unsigned long long>(m.preemptions_total), pool.n_cached);
}

}  // namespace
}  // namespace tokenmill::engine

namespace tokenmill::engine {
namespace {

// Batch-class requests fill what interactive ones leave: with every sequence slot held by
// batch work, an interactive request is admitted at once (a batch sequence waits), and
// every request still gets the tokens it gets alone.
TEST_F(EngineTest, InteractiveRequestsTakeThePlaceOfBatchWork) {
  EngineConfig config = small_config();
  config.max_seqs = 2;
  std::mt19937 rng(11);
  const std::vector<int32_t> interactive_prompt = random_prompt(rng, 9, n_vocab_);
  std::vector<std::vector<int32_t>> batch_prompts;
  for (int i = 0; i < 4; ++i) batch_prompts.push_back(random_prompt(rng, 12 + i, n_vocab_));

  // What each request gets alone (one engine at a time: engines on one model must not overlap).
  Completion alone;
  std::vector<Completion> batch_alone;
  {
    Engine engine(*tiny_.model, *tiny_.tokenizer, config);
    alone = collect(*engine.submit(greedy_request(interactive_prompt, 16)), 1);
    for (const auto& prompt : batch_prompts) batch_alone.push_back(collect(*engine.submit(greedy_request(prompt, 200)), 1));
  }
  Engine engine(*tiny_.model, *tiny_.tokenizer, config);
  std::vector<std::shared_ptr<RequestStream>> batch;
  for (const auto& prompt : batch_prompts) {
    Request r = greedy_request(prompt, 200);
    r.priority = Priority::kBatch;
    batch.push_back(*engine.submit(std::move(r)));
  }
  // Let the batch work fill both slots: each of the first two has produced a token (the
  // step limit may admit the second a step or more after the first).
  std::vector<StreamEvent> first_events(2);
  for (size_t i = 0; i < first_events.size(); ++i) {
    ASSERT_TRUE(batch[i]->wait_next(first_events[i], milliseconds(20000)));
  }
  const auto interactive = engine.submit(greedy_request(interactive_prompt, 16));
  ASSERT_TRUE(interactive.ok());
  const Completion got = collect(*interactive, 1);
  EXPECT_EQ(got.tokens, alone.tokens);
  // The interactive request finished while every batch request still had work left.
  int still_running = 0;
  for (const auto& stream : batch) still_running += stream->complete() ? 0 : 1;
  EXPECT_EQ(still_running, 4);
  EXPECT_GT(engine.metrics().snapshot().preemptions_total, 0u);
  for (size_t i = 0; i < batch.size(); ++i) {
    Completion c = collect(batch[i], 1);
    if (i < first_events.size()) {
      const auto& ids = first_events[i].token_ids;
      c.tokens[0].insert(c.tokens[0].begin(), ids.begin(), ids.end());
    }
    EXPECT_EQ(c.finish[0], FinishReason::kLength);
    EXPECT_EQ(c.tokens, batch_alone[i].tokens) << "batch " << i;
  }
}

}  // namespace
}  // namespace tokenmill::engine

namespace tokenmill::engine {
namespace {

// While interactive users are about, a forward pass of batch work alone stops part-way
// when an interactive request arrives; nothing of it counts, so every batch request still
// gets exactly the tokens it gets alone.
TEST_F(EngineTest, BatchPassesStoppedForInteractiveArrivalsLoseNothing) {
  EngineConfig config = small_config();
  config.speculative.mode = SpecMode::kNgram;  // stopped passes carry drafts too
  std::mt19937 rng(17);
  std::vector<std::vector<int32_t>> batch_prompts;
  for (int i = 0; i < 6; ++i) batch_prompts.push_back(random_prompt(rng, 10 + 3 * i, n_vocab_));
  const std::vector<int32_t> interactive_prompt = random_prompt(rng, 7, n_vocab_);

  std::vector<Completion> batch_alone;
  {
    Engine engine(*tiny_.model, *tiny_.tokenizer, config);
    for (const auto& prompt : batch_prompts) batch_alone.push_back(collect(*engine.submit(greedy_request(prompt, 400)), 1));
  }
  Engine engine(*tiny_.model, *tiny_.tokenizer, config);
  std::vector<std::shared_ptr<RequestStream>> batch;
  for (const auto& prompt : batch_prompts) {
    Request r = greedy_request(prompt, 400);
    r.priority = Priority::kBatch;
    batch.push_back(*engine.submit(std::move(r)));
  }
  // Short interactive requests at random moments, until one of them stopped a pass (an
  // arrival between passes stops nothing) or the batch work is done.
  std::uniform_int_distribution<int> pause_us(0, 2000);
  int n_interactive = 0;
  while (engine.metrics().snapshot().batch_steps_abandoned_total == 0 && n_interactive < 400 &&
         !std::all_of(batch.begin(), batch.end(), [](const auto& s) { return s->complete(); })) {
    std::this_thread::sleep_for(std::chrono::microseconds(pause_us(rng)));
    const Completion c = collect(*engine.submit(greedy_request(interactive_prompt, 2)), 1);
    ASSERT_EQ(c.finish[0], FinishReason::kLength);
    ++n_interactive;
  }
  EXPECT_GT(engine.metrics().snapshot().batch_steps_abandoned_total, 0u) << n_interactive << " interactive requests";
  for (size_t i = 0; i < batch.size(); ++i) {
    const Completion c = collect(batch[i], 1);
    EXPECT_EQ(c.finish[0], FinishReason::kLength);
    EXPECT_EQ(c.tokens, batch_alone[i].tokens) << "batch " << i;
  }
  const Engine::PoolCounters pool = engine.pool_counters();
  EXPECT_EQ(pool.n_free, pool.n_blocks) << "blocks leaked";
}

}  // namespace
}  // namespace tokenmill::engine
