// The serving engine on the real default model: 16 prompts generated greedily one at a
// time and all together in one batch give identical tokens; a cache that keeps only the
// sliding-window layers' window gives the tokens of one that keeps every position.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "engine/draft_model.h"
#include "engine/engine.h"
#include "engine/json_schema.h"
#include "engine/json_grammar.h"
#include "model/model.h"
#include "ops/kv_storage.h"
#include "quant/quantize_model.h"
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

struct LoadedModel {
  std::unique_ptr<model::Model> model;
  std::unique_ptr<tokenizer::Tokenizer> tokenizer;
};

std::optional<LoadedModel> load() {
  auto model = model::load_model(model_path(), model::LoadOptions{});
  EXPECT_TRUE(model.ok()) << model.status().to_string() << " (run scripts/setup to fetch the model)";
  if (!model.ok()) return std::nullopt;
  auto tokenizer = tokenizer::Tokenizer::from_gguf((*model)->file());
  EXPECT_TRUE(tokenizer.ok());
  if (!tokenizer.ok()) return std::nullopt;
  return LoadedModel{std::move(*model), std::move(*tokenizer)};
}

// The 16 prompts' greedy tokens (16 each), generated one at a time and then all together
// in one batch; the batch must give the same tokens. Returns those of the first round.
std::vector<std::vector<int32_t>> greedy_alone_and_batched(const LoadedModel& m, const EngineConfig& config,
                                                           int32_t n_tokens = 16,
                                                           EngineMetrics::Snapshot* metrics = nullptr) {
  Engine engine(*m.model, *m.tokenizer, config);
  auto request = [&](const char* text) {
    Request r;
    r.prompt = m.tokenizer->encode(text, true, true);
    r.sampling.temperature = 0;
    r.max_tokens = n_tokens;
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
  std::printf("batch invariance on the real model (%s cache): %d of %zu prompts identical\n",
              ops::kv_type_name(config.kv_type), n_identical, streams.size());
  auto pool = engine.pool_counters();
  EXPECT_EQ(pool.n_free, pool.n_blocks);
  EXPECT_EQ(pool.n_window_held, 0);
  EXPECT_EQ(pool.n_draft_free, pool.n_draft_blocks);
  if (metrics != nullptr) *metrics = engine.metrics().snapshot();
  return alone;
}

EngineConfig batch_config() {
  EngineConfig config;
  config.ctx_total = 4096;
  config.max_context = 1024;
  config.max_batch_tokens = 128;
  // Off, so the batched round computes its prompts again (in shared forward passes)
  // instead of finding them cached from the first round.
  config.prefix_caching = false;
  return config;
}

// The 16 prompts' greedy tokens with spec's drafts equal those of plain decoding, and the
// drafts were both accepted and rejected (at least min_accepted accepted).
void expect_plain_tokens_with_drafts(const LoadedModel& m, const EngineConfig& spec, int32_t n_tokens,
                                     const char* drafter, uint64_t min_accepted) {
  EngineConfig plain = batch_config();
  plain.speculative.mode = SpecMode::kOff;
  EngineMetrics::Snapshot metrics;
  const auto expected = greedy_alone_and_batched(m, plain, n_tokens);
  const auto got = greedy_alone_and_batched(m, spec, n_tokens, &metrics);
  for (size_t i = 0; i < expected.size(); ++i) EXPECT_EQ(got[i], expected[i]) << "prompt " << i << ": " << kPrompts[i];
  std::printf("%s on the real model: %llu of %llu drafts accepted in %llu verifications\n", drafter,
              static_cast<unsigned long long>(metrics.spec_accepted_tokens_total),
              static_cast<unsigned long long>(metrics.spec_draft_tokens_total),
              static_cast<unsigned long long>(metrics.spec_drafts_total));
  EXPECT_GT(metrics.spec_accepted_tokens_total, min_accepted);
  EXPECT_LT(metrics.spec_accepted_tokens_total, metrics.spec_draft_tokens_total);
}

TEST(EngineRealModel, BatchedGreedyEqualsOneAtATime) {
  auto m = load();
  ASSERT_TRUE(m);
  greedy_alone_and_batched(*m, batch_config());
}

// Speculative decoding changes no token: the 16 prompts' greedy continuations (48 tokens,
// enough for the model to start repeating itself, which the n-gram drafter picks up) with
// drafts wherever the drafter finds one, one at a time and all at once, equal those of
// plain decoding. Batch invariance of the kernels makes this exact: a draft's position is
// scored with the same bits as when it is the only token of its sequence.
TEST(EngineRealModel, SpeculationGivesThePlainTokens) {
  auto m = load();
  ASSERT_TRUE(m);
  EngineConfig spec = batch_config();
  spec.speculative.adaptive = false;
  expect_plain_tokens_with_drafts(*m, spec, 48, "n-gram speculation", 100);
}

// A draft model changes no token either: the default model requantized to Q4_0 (a model
// that agrees with it mostly, not always) drafts for the 16 prompts, one at a time and
// all at once, every draft position a batched pass of the draft over all sequences.
TEST(EngineRealModel, DraftModelGivesThePlainTokens) {
  auto m = load();
  ASSERT_TRUE(m);
  const std::string draft_path = ::testing::TempDir() + "/tokenmill-draft-q4_0.gguf";
  quant::QuantizeOptions options;
  options.mix = *quant::find_mix("Q4_0");
  options.n_threads = 2;
  ASSERT_TRUE(quant::quantize_model(m->model->file(), draft_path, options).ok());
  model::LoadOptions load;
  load.thread_pool = m->model->backend().shared_thread_pool();
  auto draft = model::load_model(draft_path, load);
  ASSERT_TRUE(draft.ok()) << draft.status().to_string();
  auto draft_tokens = tokenizer::Tokenizer::from_gguf((*draft)->file());
  ASSERT_TRUE(draft_tokens.ok());
  EXPECT_EQ(draft_vocabulary_error(*m->model, *m->tokenizer, **draft, **draft_tokens), "");

  EngineConfig spec = batch_config();
  spec.speculative.mode = SpecMode::kDraft;
  spec.speculative.draft_model = draft->get();
  spec.speculative.draft_max = 4;
  spec.speculative.adaptive = false;
  expect_plain_tokens_with_drafts(*m, spec, 32, "draft model", 100);
  std::remove(draft_path.c_str());
}

// Seeded sampling with speculation gives the tokens of plain decoding: each draft position
// is drawn as plain decoding draws it (engine.cc, sample), so temperature, top-p and the
// penalties see the same distribution and the sampler the same random numbers.
TEST(EngineRealModel, SeededSamplingWithDraftsGivesThePlainTokens) {
  auto m = load();
  ASSERT_TRUE(m);
  auto run = [&](SpecMode mode, EngineMetrics::Snapshot* metrics) {
    EngineConfig config = batch_config();
    config.speculative.mode = mode;
    config.speculative.adaptive = false;
    Engine engine(*m->model, *m->tokenizer, config);
    std::vector<std::shared_ptr<RequestStream>> streams;
    for (size_t i = 0; i < std::size(kPrompts); ++i) {
      Request r;
      r.prompt = m->tokenizer->encode(kPrompts[i], true, true);
      r.sampling.temperature = 0.8f;
      r.sampling.top_p = 0.95f;
      r.sampling.repetition_penalty = i % 2 ? 1.05f : 1.0f;
      r.sampling.seed = 7 + i;
      r.max_tokens = 40;
      r.ignore_eos = true;
      streams.push_back(*engine.submit(r));
    }
    std::vector<std::vector<int32_t>> tokens;
    for (auto& s : streams) tokens.push_back(collect_tokens(s));
    *metrics = engine.metrics().snapshot();
    return tokens;
  };
  EngineMetrics::Snapshot plain_metrics, spec_metrics;
  const auto plain = run(SpecMode::kOff, &plain_metrics);
  const auto spec = run(SpecMode::kNgram, &spec_metrics);
  for (size_t i = 0; i < plain.size(); ++i) EXPECT_EQ(spec[i], plain[i]) << "prompt " << i << ": " << kPrompts[i];
  std::printf("seeded sampling with drafts: %llu of %llu drafts accepted\n",
              static_cast<unsigned long long>(spec_metrics.spec_accepted_tokens_total),
              static_cast<unsigned long long>(spec_metrics.spec_draft_tokens_total));
  EXPECT_GT(spec_metrics.spec_accepted_tokens_total, 10u);
}

// A Q8_0 cache: batches still change no token; the same memory holds 1.88x the positions
// (34 bytes per 32 values instead of 64); and the first greedy token mostly stays that of
// the F16 cache. Keys and values rounded to 8 bits move this small model's next-token
// distribution by a KL divergence of about 0.007 (`tokenmill perplexity --kv-type q8_0
// --kl-base`, docs/serving.md): 13 of these 16 first tokens agree, and later tokens drift
// apart, as after any near tie. A wrong layout or scale agrees on almost none.
TEST(EngineRealModel, Q8CacheKeepsBatchInvarianceInHalfTheMemory) {
  auto m = load();
  ASSERT_TRUE(m);
  EngineConfig f16 = batch_config();
  EngineConfig q8 = f16;
  q8.kv_type = ops::KvType::kQ8_0;
  ASSERT_TRUE(m->model->check_kv_type(q8.kv_type).ok());
  const auto reference = greedy_alone_and_batched(*m, f16);
  const auto quantized = greedy_alone_and_batched(*m, q8);
  int n_first_equal = 0, n_all_equal = 0;
  for (size_t i = 0; i < reference.size(); ++i) {
    n_first_equal += !quantized[i].empty() && quantized[i][0] == reference[i][0];
    n_all_equal += quantized[i] == reference[i];
  }
  std::printf("q8_0 cache vs f16: first token equal for %d of %zu prompts, all 16 tokens for %d\n", n_first_equal,
              reference.size(), n_all_equal);
  EXPECT_GE(n_first_equal, 12);

  EngineConfig sized = f16;
  sized.kv_memory_bytes = 64ll << 20;
  sized.window_kv = false;
  const int32_t f16_blocks = Engine(*m->model, *m->tokenizer, sized).pool_counters().n_blocks;
  sized.kv_type = ops::KvType::kQ8_0;
  const int32_t q8_blocks = Engine(*m->model, *m->tokenizer, sized).pool_counters().n_blocks;
  EXPECT_EQ(q8_blocks, (64ll << 20) / (*m->model).kv_shape(1, 16, ops::KvType::kQ8_0).total_bytes());
  EXPECT_GE(q8_blocks * 100, f16_blocks * 187);
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

// Speculation under a JSON schema: each draft position is masked by the grammar after the
// drafts before it, so seeded and greedy requests give the same tokens with n-gram drafts
// as without, and drafts are accepted (a schema's keys and punctuation repeat).
TEST(EngineRealModel, SchemaConstrainedDraftsChangeNoToken) {
  auto model = model::load_model(model_path(), model::LoadOptions{});
  ASSERT_TRUE(model.ok()) << model.status().to_string() << " (run scripts/setup to fetch the model)";
  auto tokenizer = tokenizer::Tokenizer::from_gguf((*model)->file());
  ASSERT_TRUE(tokenizer.ok());
  auto schema = JsonSchema::compile(nlohmann::ordered_json::parse(R"({"type": "object", "properties": {
      "items": {"type": "array", "maxItems": 4, "items": {"type": "object", "properties": {
        "sku": {"type": "string", "pattern": "^[A-Z]{3}-[0-9]{4}$"}, "quantity": {"type": "integer", "minimum": 1, "maximum": 9}},
        "required": ["sku", "quantity"], "additionalProperties": false}},
      "total": {"type": "number", "minimum": 0}}, "required": ["items", "total"], "additionalProperties": false})"));
  ASSERT_TRUE(schema.ok()) << schema.status().to_string();
  auto run = [&](SpecMode mode, EngineMetrics::Snapshot& metrics) {
    EngineConfig config;
    config.ctx_total = 8192;
    config.max_context = 1024;
    config.speculative.mode = mode;
    Engine engine(**model, **tokenizer, config);
    std::vector<std::vector<int32_t>> out;
    for (float temperature : {0.0f, 1.0f}) {
      for (int seed = 0; seed < 3; ++seed) {
        Request r;
        r.prompt = (*tokenizer)->encode(
            "<start_of_turn>user\nAn order as JSON with items (sku, quantity) and a total.<end_of_turn>\n<start_of_turn>model\n",
            true, true);
        r.sampling.temperature = temperature;
        r.sampling.seed = 7 + seed;
        r.max_tokens = 160;
        r.json_schema = *schema;
        out.push_back(collect_tokens(*engine.submit(std::move(r))));
      }
    }
    metrics = engine.metrics().snapshot();
    return out;
  };
  EngineMetrics::Snapshot plain_metrics, spec_metrics;
  const auto plain = run(SpecMode::kOff, plain_metrics);
  const auto spec = run(SpecMode::kNgram, spec_metrics);
  for (size_t i = 0; i < plain.size(); ++i) EXPECT_EQ(spec[i], plain[i]) << "request " << i;
  EXPECT_EQ(plain_metrics.spec_drafts_total, 0u);
  EXPECT_GT(spec_metrics.spec_accepted_tokens_total, 0u);
  std::printf("schema-constrained speculation: %llu of %llu draft tokens accepted\n",
              static_cast<unsigned long long>(spec_metrics.spec_accepted_tokens_total),
              static_cast<unsigned long long>(spec_metrics.spec_draft_tokens_total));
}

}  // namespace
}  // namespace tokenmill::engine
