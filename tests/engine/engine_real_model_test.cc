// The serving engine on the real default model: 16 prompts generated greedily one at a
// time and all together in one batch give identical tokens; a cache that keeps only the
// sliding-window layers' window gives the tokens of one that keeps every position.
#include <gtest/gtest.h>

#include <cstdlib>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "engine/engine.h"
#include "engine/json_grammar.h"
#include "model/model.h"
#include "tokenizer/tokenizer.h"

namespace tokenmill::engine {
namespace {

std::string model_path() {
  if (const char* env = std::getenv("TOKENMILL_MODEL")) return env;
  return std::string(TOKENMILL_SOURCE_DIR) + "/models/gemma-3-270m-q4_k_m.gguf";
}

const char* kPrompts[] = {
    "The quick brown fox",
    "In 1969, astronauts",
    "def quicksort(arr):",
    "量子计算机的基本原理是",
    "東京タワーは",
    "SELECT name, age FROM users WHERE",
    "A recipe for pancakes: first,",
    "The mitochondria is",
    "Dear hiring manager, I am writing to",
    "import numpy as np\nx = np.",
    "Les fleurs du printemps",
    "Once upon a time there was a dragon who",
    "The sum of the angles of a triangle is",
    "<start_of_turn>user\nName three colors.<end_of_turn>\n<start_of_turn>model\n",
    "Breaking news: scientists have discovered",
    "for (int i = 0; i < n; ++i) {",
};

std::vector<int32_t> collect_tokens(const std::shared_ptr<RequestStream>& stream) {
  std::vector<int32_t> tokens;
  StreamEvent event;
  while (stream->wait_next(event, std::chrono::milliseconds(120000))) {
    tokens.insert(tokens.end(), event.token_ids.begin(), event.token_ids.end());
  }
  EXPECT_TRUE(stream->complete());
  return tokens;
}

TEST(EngineRealModel, BatchedGreedyEqualsOneAtATime) {
  auto model = model::load_model(model_path(), model::LoadOptions{});
  ASSERT_TRUE(model.ok()) << model.status().to_string() << " (run scripts/setup to fetch the model)";
  auto tokenizer = tokenizer::Tokenizer::from_gguf((*model)->file());
  ASSERT_TRUE(tokenizer.ok());
  EngineConfig config;
  config.ctx_total = 4096;
  config.max_context = 1024;
  config.max_batch_tokens = 128;
  // Off, so the batched round computes its prompts again (in shared forward passes)
  // instead of finding them cached from the first round.
  config.prefix_caching = false;
  Engine engine(**model, **tokenizer, config);

  auto request = [&](const char* text) {
    Request r;
    r.prompt = (*tokenizer)->encode(text, true, true);
    r.sampling.temperature = 0;
    r.max_tokens = 16;
    r.ignore_eos = true;
    return r;
  };
  std::vector<std::vector<int32_t>> alone;
  for (const char* p : kPrompts) alone.push_back(collect_tokens(*engine.submit(request(p))));

  std::vector<std::shared_ptr<RequestStream>> streams;
  for (const char* p : kPrompts) streams.push_back(*engine.submit(request(p)));
  int n_identical = 0;
  for (size_t i = 0; i < streams.size(); ++i) {
    const auto batched = collect_tokens(streams[i]);
    EXPECT_EQ(batched, alone[i]) << "prompt " << i << ": " << kPrompts[i];
    n_identical += batched == alone[i];
  }
  std::printf("batch invariance on the real model: %d of %zu prompts identical\n", n_identical, streams.size());
  auto pool = engine.pool_counters();
  EXPECT_EQ(pool.n_free, pool.n_blocks);
}

// A prompt longer than Gemma 3's 512-position window, then 24 tokens: once with every
// layer keeping every position, once with the sliding-window layers keeping only their
// window in few slots (one sequence's worth), and once more reusing the cached prompt.
TEST(EngineRealModel, WindowedCacheGivesTheTokensOfTheFullCache) {
  auto model = model::load_model(model_path(), model::LoadOptions{});
  ASSERT_TRUE(model.ok()) << model.status().to_string() << " (run scripts/setup to fetch the model)";
  auto tokenizer = tokenizer::Tokenizer::from_gguf((*model)->file());
  ASSERT_TRUE(tokenizer.ok());
  ASSERT_EQ((*model)->config().sliding_window, 512);
  std::string text;
  for (int i = 0; text.size() < 3200; ++i) {
    text += "Note " + std::to_string(i) + ": the river rose by " + std::to_string(3 * i % 17) +
            " centimetres and the ferry kept to its timetable. ";
  }
  Request r;
  r.prompt = (*tokenizer)->encode(text, true, true);
  ASSERT_GT(r.prompt.size(), 640u);
  r.sampling.temperature = 0;
  r.max_tokens = 24;
  r.ignore_eos = true;

  EngineConfig config;
  config.ctx_total = 4096;
  config.max_context = 2048;
  config.max_seqs = 1;  // 41 window slots for the 46 blocks the request fills: slots are reused
  config.window_kv = false;
  std::vector<int32_t> full;
  {
    Engine engine(**model, **tokenizer, config);
    EXPECT_EQ(engine.pool_counters().n_window_slots, 0);
    full = collect_tokens(*engine.submit(r));
  }
  config.window_kv = true;
  Engine engine(**model, **tokenizer, config);
  const auto pool = engine.pool_counters();
  EXPECT_GT(pool.n_window_slots, 0);
  EXPECT_LT(pool.n_window_slots, pool.n_blocks);  // windowed layers hold less than every position
  auto first = *engine.submit(r);
  EXPECT_EQ(collect_tokens(first), full);
  auto again = *engine.submit(r);
  EXPECT_EQ(collect_tokens(again), full);
  EXPECT_GE(again->usage().cached_tokens, 512);  // the prompt came from the cache, window included
  const auto after = engine.pool_counters();
  EXPECT_EQ(after.n_free, after.n_blocks);
  EXPECT_EQ(after.n_window_held, 0);
}

// JSON mode (Request::json_object): every choice, greedy or sampled, is valid JSON as far
// as it goes; a choice that ends with finish reason stop is one JSON object that parses.
// (This small model's greedy answers tend to repeat keys until max_tokens, as it does
// without the constraint: those end with length; the sampled ones close.)
TEST(EngineRealModel, JsonModeGivesAJsonObject) {
  auto model = model::load_model(model_path(), model::LoadOptions{});
  ASSERT_TRUE(model.ok()) << model.status().to_string() << " (run scripts/setup to fetch the model)";
  auto tokenizer = tokenizer::Tokenizer::from_gguf((*model)->file());
  ASSERT_TRUE(tokenizer.ok());
  EngineConfig config;
  config.ctx_total = 8192;
  config.max_context = 1024;
  Engine engine(**model, **tokenizer, config);
  const char* questions[] = {
      "Describe a cat as JSON with the fields name, age and colors.",
      "List three European capitals and their countries in JSON.",
  };
  int n_closed = 0, n_sampled = 0, n_sampled_closed = 0;
  for (const char* question : questions) {
    for (float temperature : {0.0f, 1.0f}) {
      Request r;
      r.prompt = (*tokenizer)->encode(std::string("<start_of_turn>user\n") + question +
                                          "<end_of_turn>\n<start_of_turn>model\n",
                                      true, true);
      r.sampling.temperature = temperature;
      r.sampling.seed = 42;
      r.n = 4;
      r.max_tokens = 300;
      r.json_object = true;
      auto stream = *engine.submit(std::move(r));
      std::vector<std::string> texts(4);
      std::vector<std::optional<FinishReason>> finish(4);
      StreamEvent event;
      while (stream->wait_next(event, std::chrono::milliseconds(120000))) {
        texts[event.choice] += event.text;
        if (event.finish) finish[event.choice] = event.finish;
      }
      for (int c = 0; c < 4; ++c) {
        SCOPED_TRACE(std::string(question) + " t=" + std::to_string(temperature) + " choice " + std::to_string(c) +
                     ": " + texts[c]);
        JsonGrammar grammar;
        EXPECT_TRUE(grammar.allows(texts[c]));  // valid JSON so far
        ASSERT_TRUE(finish[c] == FinishReason::kStop || finish[c] == FinishReason::kLength);
        if (finish[c] == FinishReason::kStop) {
          const auto parsed = nlohmann::json::parse(texts[c], nullptr, /*allow_exceptions=*/false);
          EXPECT_TRUE(parsed.is_object());
          ++n_closed;
        }
        if (temperature > 0) {
          ++n_sampled;
          n_sampled_closed += finish[c] == FinishReason::kStop;
        }
      }
    }
  }
  std::printf("JSON mode on the real model: %d of 16 choices closed their object (%d of %d sampled)\n", n_closed,
              n_sampled_closed, n_sampled);
  EXPECT_GE(n_sampled_closed, 2);
}

}  // namespace
}  // namespace tokenmill::engine
