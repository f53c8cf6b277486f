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
  if (context.calls.draining()) throw unavailable("The server is shutting down");
  context.prep.post([path, out = std::move(out), prepare = std::move(prepare)] {
    answer_errors(path, out, [&] {
      std::function<void()> next = prepare();
      out->post([path, out, next = std::move(next)] { answer_errors(path, out, next); });
    });
  });
}

}  // namespace tokenmill::server
