// A few threads that run posted tasks in order of arrival: request preparation (JSON
// parsing, chat template, tokenization) runs here, so a large prompt never holds up an
// I/O thread and the streams it serves.
//
// Thread-safety: post() from any thread; stop() from one.
#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace tokenmill::server {

class WorkQueue {
 public:
  explicit WorkQueue(int n_threads);
  ~WorkQueue();  // stop()s
  WorkQueue(const WorkQueue&) = delete;
  WorkQueue& operator=(const WorkQueue&) = delete;

  // Queues task; after stop() it is dropped unrun.
  void post(std::function<void()> task);
  // Runs what is queued, then joins the threads.
  void stop();

 private:
  void run();

  std::mutex mutex_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> tasks_;  // guarded by mutex_
  bool stopping_ = false;                    // guarded by mutex_
  std::vector<std::thread> threads_;
};

}  // namespace tokenmill::server
