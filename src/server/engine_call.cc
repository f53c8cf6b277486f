#include "server/engine_call.h"

#include <algorithm>
#include <mutex>

#include "server/api_error.h"

namespace tokenmill::server {

namespace {

// One HTTP request's engine requests (several for a completions request with a list of
// prompts), their events merged into one sink: request i's choice j as choice
// offset_i + j, where offset_i counts the choices of the requests before it.
class EngineCall : public std::enable_shared_from_this<EngineCall> {
 public:
  EngineCall(std::vector<std::shared_ptr<engine::RequestStream>> streams, std::vector<int32_t> choice_offsets,
             std::shared_ptr<Responder> out, std::unique_ptr<EventSink> sink, CallTracker& tracker,
             int32_t n_prompt_tokens, std::chrono::steady_clock::time_point submitted, ModelLease model)
      : model_(std::move(model)),
        streams_(std::move(streams)),
        choice_offsets_(std::move(choice_offsets)),
        done_(streams_.size(), false),
        out_(std::move(out)),
        sink_(std::move(sink)),
        tracker_(tracker) {
    stats_.prompt_tokens = n_prompt_tokens;
    stats_.submitted = submitted;
    tracker_.add();
  }
  ~EngineCall() { tracker_.remove(); }

  void start() {
    std::vector<std::weak_ptr<engine::RequestStream>> weak_streams(streams_.begin(), streams_.end());
    out_->watch_disconnect([weak_streams] {
      for (const auto& weak : weak_streams) {
        if (auto stream = weak.lock()) stream->cancel();
      }
    });
    sink_->on_start(*out_);
    for (const auto& stream : streams_) stream->set_notify([self = shared_from_this()] { self->schedule_drain(); });
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
    const auto now = std::chrono::steady_clock::now();
    bool all_done = true;
    for (size_t i = 0; i < streams_.size(); ++i) {
      if (done_[i]) continue;
      const size_t first = events_.size();
      done_[i] = streams_[i]->drain(events_);
      all_done = all_done && done_[i];
      for (size_t e = first; e < events_.size(); ++e) events_[e].choice += choice_offsets_[i];
    }
    for (const auto& event : events_) {
      stats_.completion_tokens += static_cast<int32_t>(event.token_ids.size());
      if (!saw_token_ && (!event.token_ids.empty() || !event.text.empty())) {
        saw_token_ = true;
        stats_.first_token = now;
      }
    }
    if (!events_.empty()) sink_->on_events(events_, *out_);
    if (!all_done) return;
    completed_ = true;
    int32_t completion_tokens = 0;
    for (const auto& stream : streams_) {
      const engine::Usage usage = stream->usage();
      stats_.cached_tokens += usage.cached_tokens;
      stats_.accepted_prediction_tokens += usage.accepted_prediction_tokens;
      stats_.rejected_prediction_tokens += usage.rejected_prediction_tokens;
      completion_tokens += usage.completion_tokens;
    }
    stats_.completion_tokens = std::max(stats_.completion_tokens, completion_tokens);
    stats_.finished = now;
    if (!saw_token_) stats_.first_token = now;
    sink_->on_complete(stats_, *out_);
    for (const auto& stream : streams_) stream->set_notify(nullptr);  // drops the streams' references to this call
  }

  ModelLease model_;  // keeps the engine the streams belong to loaded
  std::vector<std::shared_ptr<engine::RequestStream>> streams_;
  const std::vector<int32_t> choice_offsets_;
  std::vector<bool> done_;  // strand only
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

// The ApiError for an engine's refusal.
ApiError refusal(const Status& status, const CallTracker& tracker) {
  switch (status.code()) {
    case ErrorCode::kInvalidArgument: return bad_request(status.message());
    case ErrorCode::kResourceExhausted: return ApiError{429, status.message(), "server_error", "", "resource_exhausted"};
    default:
      if (tracker.draining()) return unavailable("The server is shutting down");
      return server_error(status.to_string());
  }
}

}  // namespace

void start_engine_call(ModelLease model, std::vector<engine::Request> requests, std::shared_ptr<Responder> out,
                       std::unique_ptr<EventSink> sink, CallTracker& tracker) {
  engine::Engine& engine = model->engine();
  if (tracker.draining()) throw unavailable("The server is shutting down");
  const auto submitted = std::chrono::steady_clock::now();
  int32_t n_prompt_tokens = 0;
  std::vector<std::shared_ptr<engine::RequestStream>> streams;
  std::vector<int32_t> choice_offsets;
  int32_t n_choices = 0;
  for (engine::Request& request : requests) {
    n_prompt_tokens += static_cast<int32_t>(request.prompt.size());
    choice_offsets.push_back(n_choices);
    n_choices += request.n;
    auto stream = engine.submit(std::move(request));
    if (!stream.ok()) {
      for (const auto& submitted_stream : streams) submitted_stream->cancel();  // all or nothing
      throw refusal(stream.status(), tracker);
    }
    streams.push_back(std::move(stream).value());
  }
  auto call = std::make_shared<EngineCall>(std::move(streams), std::move(choice_offsets), std::move(out),
                                           std::move(sink), tracker, n_prompt_tokens, submitted, std::move(model));
  call->start();
}

void start_engine_call(ModelLease model, engine::Request request, std::shared_ptr<Responder> out,
                       std::unique_ptr<EventSink> sink, CallTracker& tracker) {
  std::vector<engine::Request> requests;
  requests.push_back(std::move(request));
  start_engine_call(std::move(model), std::move(requests), std::move(out), std::move(sink), tracker);
}

}  // namespace tokenmill::server
