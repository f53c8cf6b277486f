// The scheduler's priority classes and the batch token limit, on sequences of the tiny
// engine model's tokenizer (no forward pass: each test plays the engine's part by
// marking the scheduled positions computed).
#include "engine/scheduler.h"

#include <gtest/gtest.h>

#include <memory>
#include <numeric>
#include <vector>

#include "engine/sequence.h"
#include "kv/kv_cache_manager.h"
#include "tiny_engine_model.h"

namespace tokenmill::engine {
namespace {

class SchedulerTest : public ::testing::Test {
 protected:
  void SetUp() override { tiny_ = testing::load_tiny_engine_model(); }

  std::unique_ptr<Sequence> sequence(int32_t prompt_length, Priority priority) {
    auto state = std::make_shared<RequestState>();
    state->request.prompt.assign(static_cast<size_t>(prompt_length), 5);
    state->request.prompt[0] = 2;
    state->request.max_tokens = 100;
    state->request.sampling.temperature = 0;
    state->request.priority = priority;
    return first_choice(std::move(state), arrival_++, *tiny_.tokenizer);
  }

  // What the engine does after the forward pass: the scheduled positions are computed,
  // and a sequence past its prompt gains the token it drew.
  static void run(const SchedulerOutput& plan) {
    for (const ScheduledSequence& item : plan.scheduled) {
      Sequence* s = item.sequence;
      s->n_computed += item.n_new;
      if (s->n_computed >= s->n_prompt) s->tokens.push_back(7);
    }
  }

  static int32_t positions(const SchedulerOutput& plan, bool batch) {
    int32_t n = 0;
    for (const ScheduledSequence& item : plan.scheduled) n += item.sequence->is_batch() == batch ? item.n_new : 0;
    return n;
  }

  testing::TinyEngineModel tiny_;
  uint64_t arrival_ = 0;
};

TEST_F(SchedulerTest, BatchWorkTakesOnlyWhatTheLimitLeavesBesideInteractiveWork) {
  kv::KvCacheManager kv(256, 16, /*prefix_caching=*/false);
  Scheduler scheduler({.max_batch_tokens = 128, .max_seqs = 64}, kv);
  for (int i = 0; i < 40; ++i) scheduler.add_waiting(sequence(4, Priority::kBatch));
  run(scheduler.schedule());  // every batch prompt admitted: 40 x 4 positions
  EXPECT_EQ(scheduler.running().size(), 32u);
  run(scheduler.schedule());
  ASSERT_EQ(scheduler.running().size(), 40u);

  // No limit: each running batch sequence decodes one token per step.
  SchedulerOutput plan = scheduler.schedule();
  EXPECT_EQ(positions(plan, /*batch=*/true), 40);
  run(plan);

  scheduler.set_batch_token_limit(12);
  plan = scheduler.schedule();
  EXPECT_EQ(positions(plan, /*batch=*/true), 12);  // the oldest twelve
  run(plan);

  // An interactive prompt of 5 tokens runs with no batch work beside it (its first
  // token waits for the whole step)...
  scheduler.add_waiting(sequence(5, Priority::kInteractive));
  plan = scheduler.schedule();
  EXPECT_EQ(positions(plan, /*batch=*/false), 5);
  EXPECT_EQ(positions(plan, /*batch=*/true), 0);
  run(plan);
  // ...its decoding leaves 11 of the 12 to batch work.
  plan = scheduler.schedule();
  EXPECT_EQ(positions(plan, /*batch=*/false), 1);
  EXPECT_EQ(positions(plan, /*batch=*/true), 11);
  run(plan);

  // An interactive prompt longer than the limit runs whole, with no batch work beside it.
  scheduler.add_waiting(sequence(20, Priority::kInteractive));
  plan = scheduler.schedule();
  EXPECT_EQ(positions(plan, /*batch=*/false), 21);
  EXPECT_EQ(positions(plan, /*batch=*/true), 0);
  run(plan);

  scheduler.set_batch_token_limit(INT32_MAX);
  plan = scheduler.schedule();
  EXPECT_EQ(positions(plan, /*batch=*/true), 40);
  EXPECT_EQ(positions(plan, /*batch=*/false), 2);
  run(plan);

  // With no limit, an interactive prompt shares its step with batch work.
  scheduler.add_waiting(sequence(5, Priority::kInteractive));
  plan = scheduler.schedule();
  EXPECT_EQ(positions(plan, /*batch=*/false), 2 + 5);
  EXPECT_EQ(positions(plan, /*batch=*/true), 40);
}

}  // namespace
}  // namespace tokenmill::engine
