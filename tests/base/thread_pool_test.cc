#include "base/thread_pool.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <numeric>
#include <thread>
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

TEST(ThreadPoolTest, ParallelRangesCoverEveryIndexOnceInPiecesOfAtMostGrain) {
  for (int n_threads : {1, 2, 3, 8}) {
    ThreadPool pool(n_threads);
    for (size_t n : {0, 1, 2, 7, 31, 1000}) {
      for (size_t grain : {0, 1, 3, 16, 5000}) {
        std::vector<std::atomic<int>> hits(n);
        std::atomic<bool> too_big{false};
        pool.parallel_ranges(n, grain, [&](size_t begin, size_t end) {
          if (end <= begin || end - begin > std::max<size_t>(grain, 1)) too_big = true;
          for (size_t i = begin; i < end; ++i) hits[i].fetch_add(1);
        });
        EXPECT_FALSE(too_big.load()) << "n_threads " << n_threads << " n " << n << " grain " << grain;
        for (size_t i = 0; i < n; ++i) {
          EXPECT_EQ(hits[i].load(), 1) << "n_threads " << n_threads << " n " << n << " grain " << grain;
        }
      }
    }
  }
}

// A thread walks its own region front to back: the pieces one thread runs there come in
// increasing order and adjacent. And when one thread is held up, the other takes the
// rest of its region from the back, so the slow one runs fewer pieces than its share.
TEST(ThreadPoolTest, ParallelRangesWalkRegionsInOrderAndShareTheSlowThreadsWork) {
  ThreadPool pool(2);
  const size_t n = 64;
  std::vector<std::atomic<int>> owner(n);
  std::vector<std::thread::id> ids(n);
  std::atomic<int> slow_pieces{0};
  const std::thread::id caller = std::this_thread::get_id();
  pool.parallel_ranges(n, 1, [&](size_t begin, size_t end) {
    for (size_t i = begin; i < end; ++i) {
      owner[i].fetch_add(1);
      ids[i] = std::this_thread::get_id();
    }
    if (std::this_thread::get_id() != caller) {
      slow_pieces.fetch_add(1);
      std::this_thread::sleep_for(std::chrono::milliseconds(2));  // the worker is slow
    }
  });
  for (size_t i = 0; i < n; ++i) EXPECT_EQ(owner[i].load(), 1);
  // The caller owns region 0 = [0, 32) and finishes it first, then takes from region 1's
  // back: the slow worker ran far fewer than its 32.
  for (size_t i = 0; i < n / 2; ++i) EXPECT_EQ(ids[i], caller) << i;
  EXPECT_LT(slow_pieces.load(), 16);
  EXPECT_EQ(ids[n - 1], caller);  // the very last piece was taken from the back
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
