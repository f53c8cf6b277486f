#include "base/thread_pool.h"

#include <algorithm>

namespace tokenmill {

ThreadPool::ThreadPool(int n_threads) : n_threads_(std::max(1, n_threads)) {
  for (int i = 1; i < n_threads_; ++i) workers_.emplace_back([this, i] { worker_loop(i); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  for (auto& t : workers_) t.join();
}

void ThreadPool::worker_loop(int index) {
  uint64_t seen = 0;
  for (;;) {
    const std::function<void(int)>* job;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      wake_.wait(lock, [&] { return stopping_ || generation_ != seen; });
      if (stopping_) return;
      seen = generation_;
      job = job_;
    }
    (*job)(index);
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (--n_pending_ == 0) done_.notify_one();
    }
  }
}

void ThreadPool::run_on_all(const std::function<void(int)>& fn) {
  if (n_threads_ == 1) {
    fn(0);
    return;
  }
  {
    std::lock_guard<std::mutex> lock(mutex_);
    job_ = &fn;
    n_pending_ = n_threads_ - 1;
    ++generation_;
  }
  wake_.notify_all();
  fn(0);
  std::unique_lock<std::mutex> lock(mutex_);
  done_.wait(lock, [&] { return n_pending_ == 0; });
  job_ = nullptr;
}

void ThreadPool::parallel_for(size_t n, const std::function<void(int, size_t, size_t)>& fn) {
  if (n == 0) return;
  const size_t n_parts = std::min<size_t>(n_threads_, n);
  if (n_parts == 1) {
    fn(0, 0, n);
    return;
  }
  run_on_all([&](int t) {
    if (static_cast<size_t>(t) >= n_parts) return;
    const size_t begin = n * t / n_parts;
    const size_t end = n * (t + 1) / n_parts;
    fn(t, begin, end);
  });
}

int default_thread_count() {
  unsigned n = std::thread::hardware_concurrency();
  return n == 0 ? 1 : static_cast<int>(n);
}

}  // namespace tokenmill
