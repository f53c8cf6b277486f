#include "server/engine_call.h"

#include <algorithm>
#include <mutex>

#include "server/api_error.h"

namespace tokenmill::server {

namespace {

class EngineCall : public std::enable_shared_from_this<EngineCall> {
 public:
  EngineCall(std::shared_ptr<engine::RequestStream> stream, std::shared_ptr<Responder> out,
             std::unique_ptr<EventSink> sink, CallTracker& tracker, int32_t n_prompt_tokens,
             std::chrono::steady_clock::time_point submitted)
      : stream_(std::move(stream)), out_(std::move(out)), sink_(std::move(sink)), tracker_(tracker) {
    stats_.prompt_tokens = n_prompt_tokens;
    stats_.submitted = submitted;
    tracker_.add();
  }
  ~EngineCall() { tracker_.remove(); }

  void start() {
    std::weak_ptr<engine::RequestStream> weak_stream = stream_;
    out_->watch_disconnect([weak_stream] {
      if (auto stream = weak_stream.lock()) stream->cancel();
    });
    sink_->on_start(*out_);
    stream_->set_notify([self = shared_from_this()] { self->schedule_drain(); });
    schedule_drain();  // events pushed before the notify was set
  }

 private:
  // Any thread (the engine's). Posts at most one drain at a time.
  void schedule_drain() {
    if (drain_posted_.exchange(true)) return;
    out_->post([self = shared_from_this()] {
      self->drain_posted_.store(false);
      self->drain();
    });
  }

  // On the strand.
  void drain() {
    if (completed_) return;
    events_.clear();
    const bool done = stream_->drain(events_);
    const auto now = std::chrono::steady_clock::now();
    for (const auto& event : events_) {
      stats_.completion_tokens += static_cast<int32_t>(event.token_ids.size());
      if (!saw_token_ && (!event.token_ids.empty() || !event.text.empty())) {
        saw_token_ = true;
        stats_.first_token = now;
      }
    }
    if (!events_.empty()) sink_->on_events(events_, *out_);
    if (!done) return;
    completed_ = true;
    const engine::Usage usage = stream_->usage();
    stats_.cached_tokens = usage.cached_tokens;
    stats_.completion_tokens = std::max(stats_.completion_tokens, usage.completion_tokens);
    stats_.finished = now;
    if (!saw_token_) stats_.first_token = now;
    sink_->on_complete(stats_, *out_);
    stream_->set_notify(nullptr);  // drops the stream's reference to this call
  }

  std::shared_ptr<engine::RequestStream> stream_;
  std::shared_ptr<Responder> out_;
  std::unique_ptr<EventSink> sink_;
  CallTracker& tracker_;
  std::atomic<bool> drain_posted_{false};
  // Strand only:
  std::vector<engine::StreamEvent> events_;
  CallStats stats_;
  bool saw_token_ = false;
  bool completed_ = false;
};

}  // namespace

void start_engine_call(engine::Engine& engine, engine::Request request, std::shared_ptr<Responder> out,
                       std::unique_ptr<EventSink> sink, CallTracker& tracker) {
  if (tracker.draining()) throw unavailable("The server is shutting down");
  const auto submitted = std::chrono::steady_clock::now();
  const auto n_prompt_tokens = static_cast<int32_t>(request.prompt.size());
  auto stream = engine.submit(std::move(request));
  if (!stream.ok()) {
    const Status& status = stream.status();
    switch (status.code()) {
      case ErrorCode::kInvalidArgument: throw bad_request(status.message());
      case ErrorCode::kResourceExhausted:
        throw ApiError{429, status.message(), "server_error", "", "resource_exhausted"};
      default:
        if (tracker.draining()) throw unavailable("The server is shutting down");
        throw server_error(status.to_string());
    }
  }
  auto call = std::make_shared<EngineCall>(std::move(stream).value(), std::move(out), std::move(sink), tracker,
                                           n_prompt_tokens, submitted);
  call->start();
}

}  // namespace tokenmill::server
