// A persistent pool of worker threads for data-parallel loops inside one forward pass.
// Threads are created once; parallel_for wakes them, the caller's thread takes a share of
// the work too, and the call returns when every index has run.
//
// Thread-safety: one parallel_for at a time per pool (the engine thread owns the pool).
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace tokenmill {

class ThreadPool {
 public:
  // n_threads counts the calling thread: 1 means no workers, everything inline.
  explicit ThreadPool(int n_threads);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int n_threads() const { return n_threads_; }

  // Runs fn(thread_index, begin, end) over [0, n) split into n_threads contiguous
  // ranges (some possibly empty). Returns after all ranges have run.
  void parallel_for(size_t n, const std::function<void(int, size_t, size_t)>& fn);

  // Runs fn(thread_index) once on every thread.
  void run_on_all(const std::function<void(int)>& fn);

 private:
  void worker_loop(int index);

  int n_threads_;
  std::vector<std::thread> workers_;
  std::mutex mutex_;
  std::condition_variable wake_;
  std::condition_variable done_;
  const std::function<void(int)>* job_ = nullptr;  // guarded by mutex_
  uint64_t generation_ = 0;                         // guarded by mutex_
  int n_pending_ = 0;                               // guarded by mutex_
  bool stopping_ = false;                           // guarded by mutex_
};

// Default thread count: the number of online CPUs.
int default_thread_count();

}  // namespace tokenmill
