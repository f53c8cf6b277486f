// The channel between the engine thread (producer) and whoever serves one request
// (consumer). Events queue up; the consumer drains them when notified, or blocks.
//
// Thread-safety: every method may be called from any thread.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>

#include "engine/request.h"

namespace tokenmill::engine {

class RequestStream {
 public:
  explicit RequestStream(int32_t n_choices) : n_choices_(n_choices) {}

  // --- consumer ---
  // Moves every queued event into out; returns true once all choices have finished and
  // nothing is left to read.
  bool drain(std::vector<StreamEvent>& out);
  // Blocks until an event arrives, the stream completes, or the timeout passes; returns
  // false on timeout or when complete with nothing left.
  bool wait_next(StreamEvent& out, std::chrono::milliseconds timeout);
  // Called (on the engine thread) after events are queued; must not block. Set it
  // before submitting, or call drain() once after setting it.
  void set_notify(std::function<void()> notify);
  // The client is gone: the engine stops the request at its next step and frees its blocks.
  void cancel() { cancelled_.store(true); }
  bool cancelled() const { return cancelled_.load(); }
  bool complete() const;
  Usage usage() const;

  // --- producer (engine) ---
  void push(StreamEvent event);
  void set_usage(const Usage& usage);

 private:
  const int32_t n_choices_;
  mutable std::mutex mutex_;
  std::condition_variable cv_;
  std::deque<StreamEvent> events_;  // guarded by mutex_
  int32_t n_finished_ = 0;          // guarded by mutex_
  Usage usage_;                     // guarded by mutex_
  std::function<void()> notify_;    // guarded by mutex_
  std::atomic<bool> cancelled_{false};
};

}  // namespace tokenmill::engine
