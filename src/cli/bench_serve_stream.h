// Turns the SSE events of one streamed OpenAI completion into a RequestResult: TTFT at
// the first non-empty content, inter-token latency between content chunks, token counts
// from the usage chunk. Malformed events, error objects and a stream that never says
// "[DONE]" make the request a failure with a one-line reason.
#pragma once

#include <optional>
#include <string_view>

#include "cli/bench_serve_http.h"
#include "cli/bench_serve_stats.h"

namespace tokenmill::cli {

enum class Endpoint { kCompletions, kChat };

class StreamRecorder {
 public:
  StreamRecorder(Endpoint endpoint, SteadyClock::time_point sent) : endpoint_(endpoint), sent_(sent) {}

  // One event's data field, arrived at `t`.
  void on_event(std::string_view data, SteadyClock::time_point t);
  // A failure outside the stream (HTTP status, connection). The first reason sticks.
  void fail(std::string reason);
  // The result once the response has ended at `end`.
  RequestResult finish(SteadyClock::time_point end);

 private:
  double since_sent(SteadyClock::time_point t) const { return std::chrono::duration<double>(t - sent_).count(); }

  Endpoint endpoint_;
  SteadyClock::time_point sent_;
  RequestResult result_;
  std::optional<SteadyClock::time_point> last_content_;
  std::optional<int64_t> usage_completion_tokens_;
  bool done_ = false;
  bool failed_ = false;
};

// The one-line message in an OpenAI error body ({"error": {"message": ...}}), or the
// start of the body when it is not one.
std::string error_body_message(std::string_view body);

}  // namespace tokenmill::cli
