// One request's trip through the engine, seen from the HTTP side: submit, then turn the
// stream's events into response bytes as the engine produces them, without ever blocking
// an I/O thread.
//
//   engine thread: RequestStream::push -> notify -> post(drain) onto the connection's strand
//   strand:        drain -> EventSink::on_events -> Responder writes
//                  ... all choices finished -> EventSink::on_complete
//   client gone:   RequestStream::cancel(); the engine frees the request's blocks
//
// The call keeps itself alive through the stream's notify callback until the stream
// completes, which the engine guarantees for every submitted request.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <vector>

#include "engine/engine.h"
#include "server/http_types.h"
#include "server/served_model.h"

namespace tokenmill::server {

// Counts requests being prepared and in the engine, refuses new ones beyond a limit, and
// all of them once the server shuts down.
// Thread-safety: every method may be called from any thread.
class CallTracker {
 public:
  bool draining() const { return draining_.load(); }
  void start_draining() { draining_.store(true); }
  int64_t n_active() const { return n_active_.load(); }
  void add() { n_active_.fetch_add(1); }
  void remove() { n_active_.fetch_sub(1); }

  // Requests prepared or in the engine at most (0: no limit).
  void set_limit(int64_t max_in_flight) { max_in_flight_.store(max_in_flight); }
  // Counts one more request being prepared; false, counting nothing, when the limit is
  // reached (the check and the count are not one step: it may be passed by the number of
  // threads admitting at once).
  bool try_begin_preparing() {
    const int64_t limit = max_in_flight_.load();
    if (limit > 0 && n_preparing_.load() + n_active_.load() >= limit) return false;
    n_preparing_.fetch_add(1);
    return true;
  }
  void end_preparing() { n_preparing_.fetch_sub(1); }
  int64_t n_refused() const { return n_refused_.load(); }
  void count_refused() { n_refused_.fetch_add(1); }

 private:
  std::atomic<bool> draining_{false};
  std::atomic<int64_t> n_active_{0};
  std::atomic<int64_t> n_preparing_{0};
  std::atomic<int64_t> max_in_flight_{0};
  std::atomic<int64_t> n_refused_{0};
};

// What a finished call measured. Token counts come from the request and the events;
// cached_tokens from the engine.
struct CallStats {
  int32_t prompt_tokens = 0;
  int32_t completion_tokens = 0;  // all choices
  int32_t cached_tokens = 0;
  int32_t accepted_prediction_tokens = 0;  // Predicted Outputs (engine::Usage)
  int32_t rejected_prediction_tokens = 0;
  std::chrono::steady_clock::time_point submitted;
  std::chrono::steady_clock::time_point first_token;  // = finished if none came
  std::chrono::steady_clock::time_point finished;
};

// Turns events into one protocol's response. Methods run on the connection's strand.
class EventSink {
 public:
  virtual ~EventSink() = default;
  // Called once, after the engine accepted the request and before any event: the place
  // to send a streamed response's headers.
  virtual void on_start(Responder& out) {}
  // Called with every batch of events, in order, as they arrive.
  virtual void on_events(std::vector<engine::StreamEvent>& events, Responder& out) = 0;
  // Called once when every choice has finished, after the last on_events.
  virtual void on_complete(const CallStats& stats, Responder& out) = 0;
};

// The served model a call runs on; holding it keeps the model loaded (server/model_set.h).
using ModelLease = std::shared_ptr<const ServedModel>;

// Submits request to the model's engine and streams its events into sink; the call holds
// the lease until it completes. Throws ApiError when
// the engine refuses the request (400 for invalid arguments, 503 while shutting down).
void start_engine_call(ModelLease model, engine::Request request, std::shared_ptr<Responder> out,
                       std::unique_ptr<EventSink> sink, CallTracker& tracker);

// The same for several requests answered together (a completions request's list of
// prompts): request i's choice j reaches the sink as choice (choices of requests 0..i-1)
// + j; usage adds up; the sink completes when every request has. All are submitted or
// none (the ones already submitted are cancelled when one is refused).
void start_engine_call(ModelLease model, std::vector<engine::Request> requests, std::shared_ptr<Responder> out,
                       std::unique_ptr<EventSink> sink, CallTracker& tracker);

}  // namespace tokenmill::server
