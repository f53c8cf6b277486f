// A Responder with no connection behind it: the answer a route gives is kept and handed
// to a callback, so that work arriving by other ways (a batch's lines) runs through the
// very same route code as an HTTP request. Its "strand" is a WorkQueue of one thread,
// which must outlive the engines the requests run in (an engine may still post to a
// request's strand after its answer).
//
// Thread-safety: as for any Responder; cancel() from any thread.
#pragma once

#include <atomic>
#include <functional>
#include <mutex>
#include <string>

#include "server/http_types.h"
#include "server/work_queue.h"

namespace tokenmill::server {

class CapturedResponse : public Responder {
 public:
  // on_done(status, body) runs once, on strand, when the answer is complete.
  using Done = std::function<void(int status, std::string body)>;
  CapturedResponse(WorkQueue& strand, Done on_done) : strand_(strand), on_done_(std::move(on_done)) {}

  void send(int status, const std::string&, std::string body, const HeaderList&) override {
    finish(status, std::move(body));
  }
  void begin_stream(int status, const std::string&, const HeaderList&) override { status_ = status; }
  void write_chunk(std::string data) override { streamed_ += data; }
  void end_stream() override { finish(status_, std::move(streamed_)); }
  void post(std::function<void()> fn) override { strand_.post(std::move(fn)); }
  void watch_disconnect(std::function<void()> on_gone) override {
    std::lock_guard lock(mu_);
    on_gone_ = std::move(on_gone);
  }
  bool connected() const override { return !cancelled_.load(); }

  // As if the client went away: the request is cancelled in the engine, and on_done
  // runs now with kCancelledStatus. A route that sees the client gone before it has
  // started (connected() false) answers nothing; without this answer its waiter
  // would wait forever. What the route answers later is dropped.
  static constexpr int kCancelledStatus = 499;
  void cancel() {
    cancelled_.store(true);
    std::function<void()> on_gone;
    {
      std::lock_guard lock(mu_);
      on_gone = std::move(on_gone_);
    }
    if (on_gone) strand_.post(std::move(on_gone));
    finish(kCancelledStatus, R"({"error":{"message":"cancelled","type":"cancelled"}})");
  }

 private:
  // Route code may answer on any thread (a refused request is answered by the caller
  // of start_openai_request); on_done always runs on the strand.
  void finish(int status, std::string body) {
    if (done_.exchange(true)) return;
    strand_.post([done = std::move(on_done_), status, body = std::move(body)]() mutable { done(status, std::move(body)); });
  }

  WorkQueue& strand_;
  Done on_done_;
  std::mutex mu_;
  std::function<void()> on_gone_;
  std::atomic<bool> cancelled_{false};
  std::atomic<bool> done_{false};
  int status_ = 200;
  std::string streamed_;
};

}  // namespace tokenmill::server
