// The prefix cache's disk tier through the engine on the tiny model (Gemma 3-shaped, so
// with sliding-window layers): prefixes found again after a restart and after eviction
// from memory, with the tokens of a run without the tier; damaged files skipped; another
// cache layout reusing nothing.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <random>
#include <thread>

#include "engine/engine.h"
#include "tiny_engine_model.h"

namespace tokenmill::engine {
namespace {

namespace fs = std::filesystem;
using std::chrono::milliseconds;

struct Answer {
  std::vector<int32_t> tokens;
  int32_t cached = 0;
};

Answer ask(Engine& engine, const std::vector<int32_t>& prompt, int32_t max_tokens = 6) {
  Request r;
  r.prompt = prompt;
  r.sampling.temperature = 0;
  r.max_tokens = max_tokens;
  r.ignore_eos = true;
  auto stream = engine.submit(std::move(r));
  EXPECT_TRUE(stream.ok());
  Answer a;
  StreamEvent event;
  while ((*stream)->wait_next(event, milliseconds(20000))) {
    a.tokens.insert(a.tokens.end(), event.token_ids.begin(), event.token_ids.end());
  }
  a.cached = (*stream)->usage().cached_tokens;
  return a;
}

std::vector<int32_t> random_prompt(std::mt19937& rng, int32_t length, int32_t n_vocab) {
  std::uniform_int_distribution<int32_t> token(4, n_vocab - 1);
  std::vector<int32_t> p = {2};
  while (static_cast<int32_t>(p.size()) < length) p.push_back(token(rng));
  return p;
}

class EngineKvDiskTest : public ::testing::Test {
 protected:
  void SetUp() override {
    tiny_ = testing::load_tiny_engine_model();
    ASSERT_NE(tiny_.model, nullptr);
    char name[] = "/tmp/tokenmill-engine-kv-disk-XXXXXX";
    dir_ = mkdtemp(name);
    std::mt19937 rng(11);
    for (int i = 0; i < 6; ++i) prompts_.push_back(random_prompt(rng, 70 + 9 * i, tiny_.model->config().n_vocab));
  }
  void TearDown() override { fs::remove_all(dir_); }

  // A cache of 14 blocks: one of the prompts fits with its answer, not two.
  EngineConfig config(bool disk, bool window_kv = true) {
    EngineConfig c;
    c.ctx_total = 16 * 14;
    c.max_context = 200;
    c.max_batch_tokens = 48;
    c.max_seqs = 4;
    c.window_kv = window_kv;
    if (disk) {
      c.kv_disk_dir = dir_;
      c.kv_disk_bytes = 64 << 20;
    }
    return c;
  }

  std::vector<Answer> ask_all(Engine& engine) {
    std::vector<Answer> out;
    for (const auto& p : prompts_) out.push_back(ask(engine, p));
    engine.flush_kv_disk();
    return out;
  }

  testing::TinyEngineModel tiny_;
  std::string dir_;
  std::vector<std::vector<int32_t>> prompts_;
};

TEST_F(EngineKvDiskTest, PrefixesComeBackAfterARestartWithTheSameTokens) {
  std::vector<Answer> plain;
  {
    Engine engine(*tiny_.model, *tiny_.tokenizer, config(false));
    plain = ask_all(engine);
  }
  {
    Engine engine(*tiny_.model, *tiny_.tokenizer, config(true));
    const auto first = ask_all(engine);
    for (size_t i = 0; i < first.size(); ++i) EXPECT_EQ(first[i].tokens, plain[i].tokens) << i;
    const auto state = engine.kv_disk_state();
    ASSERT_TRUE(state);
    EXPECT_GT(state->counters.writes, 0u);
    EXPECT_FALSE(state->folder.empty());
  }
  Engine restarted(*tiny_.model, *tiny_.tokenizer, config(true));
  restarted.flush_kv_disk();  // the index is built (until then every lookup misses)
  const auto again = ask_all(restarted);
  for (size_t i = 0; i < again.size(); ++i) {
    EXPECT_EQ(again[i].tokens, plain[i].tokens) << i;
    // Whole blocks of the prompt, short of its last token.
    EXPECT_EQ(again[i].cached, (static_cast<int32_t>(prompts_[i].size()) - 1) / 16 * 16) << i;
  }
  const auto c = restarted.kv_disk_state()->counters;
  EXPECT_GT(c.hits, 0u);
  EXPECT_EQ(c.corrupt, 0u);
  const auto pool = restarted.pool_counters();
  EXPECT_EQ(pool.n_free, pool.n_blocks);
  EXPECT_EQ(pool.n_window_held, 0);
}

TEST_F(EngineKvDiskTest, PrefixesEvictedFromMemoryComeBackFromDisk) {
  for (bool window_kv : {true, false}) {
    std::vector<Answer> plain;
    {
      Engine engine(*tiny_.model, *tiny_.tokenizer, config(false, window_kv));
      plain = ask_all(engine);
      const auto second = ask_all(engine);  // memory alone: the prompts evicted each other
      EXPECT_EQ(second[0].cached, 0);
    }
    Engine engine(*tiny_.model, *tiny_.tokenizer, config(true, window_kv));
    ask_all(engine);
    const auto second = ask_all(engine);
    for (size_t i = 0; i < second.size(); ++i) {
      EXPECT_EQ(second[i].tokens, plain[i].tokens) << i << " window_kv " << window_kv;
      EXPECT_GT(second[i].cached, 0) << i << " window_kv " << window_kv;
    }
    fs::remove_all(dir_);
  }
}

TEST_F(EngineKvDiskTest, DamagedFilesAreSkippedAndTheAnswerIsUnchanged) {
  std::vector<Answer> first;
  std::string folder;
  {
    Engine engine(*tiny_.model, *tiny_.tokenizer, config(true));
    first = ask_all(engine);
    folder = engine.kv_disk_state()->folder;
  }
  // Every block file damaged: half of them cut short, the others with a flipped byte.
  int n = 0;
  for (const auto& entry : fs::directory_iterator(folder)) {
    if (entry.path().extension() != ".kvb") continue;
    if (n++ % 2 == 0) {
      fs::resize_file(entry.path(), entry.file_size() - 100);
    } else {
      std::fstream f(entry.path(), std::ios::in | std::ios::out | std::ios::binary);
      f.seekp(200);
      f.put('\x7f');
    }
  }
  ASSERT_GT(n, 0);
  Engine restarted(*tiny_.model, *tiny_.tokenizer, config(true));
  restarted.flush_kv_disk();
  const auto again = ask_all(restarted);
  for (size_t i = 0; i < again.size(); ++i) EXPECT_EQ(again[i].tokens, first[i].tokens) << i;
  EXPECT_GT(restarted.kv_disk_state()->counters.corrupt, 0u);
  EXPECT_EQ(restarted.kv_disk_state()->counters.hits, 0u);
}

TEST_F(EngineKvDiskTest, AnotherKvTypeReusesNothing) {
  {
    Engine engine(*tiny_.model, *tiny_.tokenizer, config(true));
    ask_all(engine);
  }
  EngineConfig q8 = config(true);
  q8.kv_type = ops::KvType::kQ8_0;
  ASSERT_TRUE(tiny_.model->check_kv_type(q8.kv_type).ok());
  Engine engine(*tiny_.model, *tiny_.tokenizer, q8);
  engine.flush_kv_disk();
  const auto answers = ask_all(engine);
  EXPECT_EQ(engine.kv_disk_state()->counters.hits, 0u);
  EXPECT_EQ(answers[0].cached, 0);
}

// Many requests over a few shared prefixes through a small cache, so that prefixes keep
// leaving memory and coming back from disk, a third of them cancelled as soon as they are
// submitted (often while their prefix is being read): every answer that finishes is the
// answer of a server without the tier, and every block and window slot comes back.
TEST_F(EngineKvDiskTest, ChurnWithCancellationsMidReadLosesNoBlock) {
  std::vector<std::vector<int32_t>> expected;
  {
    Engine engine(*tiny_.model, *tiny_.tokenizer, config(false));
    for (const auto& p : prompts_) expected.push_back(ask(engine, p, 4).tokens);
  }
  Engine engine(*tiny_.model, *tiny_.tokenizer, config(true));
  engine.flush_kv_disk();
  std::mt19937 rng(23);
  std::uniform_int_distribution<int32_t> pick(0, static_cast<int32_t>(prompts_.size()) - 1), coin(0, 2);
  int n_checked = 0, n_cancelled = 0;
  for (int round = 0; round < 60; ++round) {
    struct Live {
      std::shared_ptr<RequestStream> stream;
      int32_t prompt;
    };
    std::vector<Live> live;
    for (int i = 0; i < 6; ++i) {
      Request r;
      const int32_t which = pick(rng);
      r.prompt = prompts_[which];
      r.sampling.temperature = 0;
      r.max_tokens = 4;
      r.ignore_eos = true;
      auto stream = engine.submit(std::move(r));
      ASSERT_TRUE(stream.ok());
      if (coin(rng) == 0) {
        (*stream)->cancel();
        ++n_cancelled;
      }
      live.push_back({*stream, which});
    }
    for (Live& l : live) {
      std::vector<int32_t> tokens;
      StreamEvent e;
      bool cancelled = false;
      std::string finish = "none";
      while (l.stream->wait_next(e, milliseconds(20000))) {
        tokens.insert(tokens.end(), e.token_ids.begin(), e.token_ids.end());
        cancelled = cancelled || (e.finish && *e.finish == FinishReason::kCancelled);
        if (e.finish) finish = std::to_string(static_cast<int>(*e.finish)) + " " + e.error;
      }
      EXPECT_TRUE(l.stream->complete());
      if (!cancelled) {
        EXPECT_EQ(tokens, expected[l.prompt]) << "prompt " << l.prompt << ", finish " << finish;
        ++n_checked;
      }
    }
  }
  for (int i = 0; i < 100 && engine.metrics().snapshot().requests_running > 0; ++i) {
    std::this_thread::sleep_for(milliseconds(10));
  }
  const auto pool = engine.pool_counters();
  EXPECT_EQ(pool.n_free, pool.n_blocks) << "blocks leaked";
  EXPECT_EQ(pool.n_window_held, 0) << "window slots leaked";
  EXPECT_GT(engine.kv_disk_state()->counters.hits, 0u);
  EXPECT_GT(n_checked, 0);
  EXPECT_GT(n_cancelled, 0);
}

}  // namespace
}  // namespace tokenmill::engine
