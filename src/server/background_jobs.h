// Long work a route starts and answers from as it goes (Ollama's /api/pull): each job on
// a thread of its own, so that a download of minutes never holds a preparation or I/O
// thread. A job reads its cancel flag; the destructor sets every flag and joins.
//
// Thread-safety: start() from any thread.
#pragma once

#include <atomic>
#include <functional>
#include <list>
#include <memory>
#include <mutex>
#include <thread>

namespace tokenmill::server {

class BackgroundJobs {
 public:
  BackgroundJobs() = default;
  ~BackgroundJobs() { stop(); }
  BackgroundJobs(const BackgroundJobs&) = delete;
  BackgroundJobs& operator=(const BackgroundJobs&) = delete;

  // Sets every job's cancel flag and waits for all of them to end.
  void stop();

  // Runs job(cancel) on a new thread; cancel turns true when the server stops (or the
  // job's own caller sets it through the returned flag).
  std::shared_ptr<std::atomic<bool>> start(std::function<void(const std::atomic<bool>& cancel)> job);

 private:
  struct Job {
    std::shared_ptr<std::atomic<bool>> cancel;
    std::thread thread;
    std::atomic<bool> done{false};
  };
  void join_finished();  // holds mu_

  std::mutex mu_;
  std::list<Job> jobs_;
};

}  // namespace tokenmill::server
