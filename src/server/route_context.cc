#include "server/route_context.h"

#include <exception>

namespace tokenmill::server {

namespace {

// Calls fn; an exception becomes the error response (on the strand).
void answer_errors(const std::string& path, const std::shared_ptr<Responder>& out, const std::function<void()>& fn) {
  try {
    fn();
  } catch (const ApiError& error) {
    out->post([out, path, error] { send_error(*out, path, error); });
  } catch (const std::exception& e) {
    out->post([out, path, message = std::string(e.what())] {
      send_error(*out, path, server_error("Internal error: " + message));
    });
  }
}

}  // namespace

void prepare_then(const RouteContext& context, const std::string& path, std::shared_ptr<Responder> out,
                  Preparation prepare) {
  CallTracker& calls = context.calls;
  if (calls.draining()) throw unavailable("The server is shutting down");
  if (!calls.try_begin_preparing()) {
    calls.count_refused();
    throw too_busy("The server is at its limit of queued requests (--max-queue); retry shortly");
  }
  // The request counts as being prepared until its continuation has run (and so has
  // submitted it to the engine, where it counts as active) or failed.
  auto preparing = std::shared_ptr<CallTracker>(&calls, [](CallTracker* c) { c->end_preparing(); });
  context.prep.post([path, out = std::move(out), prepare = std::move(prepare), preparing] {
    answer_errors(path, out, [&] {
      std::function<void()> next = prepare();
      out->post([path, out, next = std::move(next), preparing] { answer_errors(path, out, next); });
    });
  });
}

}  // namespace tokenmill::server
