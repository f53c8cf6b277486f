#include "base/thread_pool.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <numeric>
#include <vector>

namespace tokenmill {
namespace {

TEST(ThreadPoolTest, ParallelForCoversEveryIndexOnce) {
  for (int n_threads : {1, 2, 3, 8}) {
    ThreadPool pool(n_threads);
    for (size_t n : {0, 1, 2, 7, 31, 1000}) {
      std::vector<std::atomic<int>> hits(n);
      pool.parallel_for(n, [&](int t, size_t begin, size_t end) {
        EXPECT_GE(t, 0);
        EXPECT_LT(t, n_threads);
        for (size_t i = begin; i < end; ++i) hits[i].fetch_add(1);
      });
      for (size_t i = 0; i < n; ++i) EXPECT_EQ(hits[i].load(), 1) << "n_threads " << n_threads << " n " << n;
    }
  }
}

TEST(ThreadPoolTest, RunOnAllRunsEveryThreadIndex) {
  ThreadPool pool(4);
  std::vector<std::atomic<int>> ran(4);
  pool.run_on_all([&](int t) { ran[t].fetch_add(1); });
  for (auto& r : ran) EXPECT_EQ(r.load(), 1);
}

TEST(ThreadPoolTest, ParallelChunksRunsEveryChunkOnce) {
  for (int n_threads : {1, 2, 5}) {
    ThreadPool pool(n_threads);
    for (size_t n : {0, 1, 2, 3, 64, 999}) {
      std::vector<std::atomic<int>> hits(n);
      pool.parallel_chunks(n, [&](size_t c) { hits[c].fetch_add(1); });
      for (size_t i = 0; i < n; ++i) EXPECT_EQ(hits[i].load(), 1) << "n_threads " << n_threads << " n " << n;
    }
  }
}

// Many tiny jobs in a row (the decode pattern): each returns only after all its work is
// done, so a shared counter read right after every call is exact.
TEST(ThreadPoolTest, ManySmallJobsCompleteBeforeReturn) {
  ThreadPool pool(3);
  std::atomic<int64_t> total{0};
  for (int job = 0; job < 20000; ++job) {
    pool.parallel_for(3, [&](int, size_t begin, size_t end) { total.fetch_add(static_cast<int64_t>(end - begin)); });
    ASSERT_EQ(total.load(), 3ll * (job + 1));
  }
}

// Workers that have fallen asleep (after the spin window) still wake for the next job.
TEST(ThreadPoolTest, WakesSleepingWorkers) {
  ThreadPool pool(2);
  for (int round = 0; round < 3; ++round) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    std::vector<int> seen(2, 0);
    pool.run_on_all([&](int t) { seen[t] = 1; });
    EXPECT_EQ(seen[0] + seen[1], 2);
  }
}

// A job with more parts than the one before it: a worker still leaving the previous job
// must not claim a part of the new one under the old generation (it once did, running a
// part twice and leaving the caller waiting forever for a count it had passed). The race
// window is a few instructions wide, so this runs many such pairs; every part of every
// job must run exactly once.
TEST(ThreadPoolTest, GrowingJobsRunEveryPartExactlyOnce) {
  ThreadPool pool(2);
  std::vector<std::atomic<int>> runs(48);
  int64_t wrong = 0;
  for (int64_t job = 0; job < 100000; ++job) {
    const size_t n = job % 2 == 0 ? 2 : 3 + static_cast<size_t>(job / 2) % 40;
    for (size_t i = 0; i < n; ++i) runs[i].store(0);
    pool.parallel_chunks(n, [&](size_t chunk) { runs[chunk].fetch_add(1); });
    for (size_t i = 0; i < n; ++i) wrong += runs[i].load() != 1;
  }
  EXPECT_EQ(wrong, 0);
}

}  // namespace
}  // namespace tokenmill
