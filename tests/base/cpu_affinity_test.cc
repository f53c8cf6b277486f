// base/cpu_affinity.h, and ThreadPool::pin_workers built on it.
#include "base/cpu_affinity.h"

#include <gtest/gtest.h>

#include <sched.h>

#include <mutex>
#include <set>
#include <thread>
#include <vector>

#include "base/thread_pool.h"

namespace tokenmill {
namespace {

TEST(CpuAffinity, APinnedThreadRunsOnlyOnItsCpu) {
  const std::vector<int> cpus = allowed_cpus();
  ASSERT_FALSE(cpus.empty());
  const int target = cpus.back();
  std::thread thread([&] {
    ASSERT_TRUE(pin_current_thread(std::vector<int>{target}));
    for (int i = 0; i < 100; ++i) {
      ASSERT_EQ(sched_getcpu(), target);
      std::this_thread::yield();
    }
  });
  thread.join();
  EXPECT_TRUE(pin_current_thread({}));  // nothing to do
}

TEST(CpuAffinity, PoolWorkersRunOnTheirCpus) {
  const std::vector<int> cpus = allowed_cpus();
  if (cpus.size() < 2) GTEST_SKIP() << "one CPU: nothing to place";
  ThreadPool pool(2);
  EXPECT_FALSE(pool.pin_workers(std::vector<int>{cpus[0]}));  // a CPU per thread is needed
  ASSERT_TRUE(pool.pin_workers(std::vector<int>{cpus[0], cpus[1]}));
  // The caller joins the worker on cpus[1] (its own CPU would be cpus[0]): every part,
  // whichever thread claims it, must then run there.
  std::thread caller([&] {
    ASSERT_TRUE(pin_current_thread(std::vector<int>{cpus[1]}));
    std::mutex mutex;
    std::set<int> seen;
    for (int round = 0; round < 50; ++round) {
      pool.run_on_all([&](int) {
        const int cpu = sched_getcpu();
        std::lock_guard<std::mutex> lock(mutex);
        seen.insert(cpu);
      });
    }
    EXPECT_EQ(seen, std::set<int>{cpus[1]});
  });
  caller.join();
}

}  // namespace
}  // namespace tokenmill
