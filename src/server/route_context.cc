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

// The ApiError of a model that could not be acquired.
[[noreturn]] void throw_acquire_error(const RouteContext& context, const std::string& name, const Status& s) {
  switch (s.code()) {
    case ErrorCode::kNotFound:
      if (s.message().find("cannot be loaded") != std::string::npos) throw server_error(s.message());
      if (context.embeddings != nullptr &&
          (context.embeddings->answers_to(name) || (!context.models.pinned() && context.models.store() == nullptr))) {
        throw bad_request("'" + context.embeddings->name +
                              "' is an embedding model: it answers /v1/embeddings and /api/embed, not chat or text "
                              "generation",
                          "model");
      }
      throw model_not_found(name);
    case ErrorCode::kInvalidArgument: throw bad_request(s.message(), "model");
    case ErrorCode::kResourceExhausted: {
      ApiError error = unavailable(s.message());
      error.retry_after_seconds = 5;
      throw error;
    }
    default: throw server_error("Loading the model '" + name + "' failed: " + s.message());
  }
}

}  // namespace

ModelLease acquire_model(const RouteContext& context, const std::string& name,
                         std::optional<std::chrono::milliseconds> keep_alive) {
  auto lease = context.models.acquire(name, keep_alive);
  if (!lease.ok()) throw_acquire_error(context, name, lease.status());
  return std::move(lease).value();
}

EmbeddingsLease acquire_embedding_model(const RouteContext& context, const std::string& name,
                                        std::optional<std::chrono::milliseconds> keep_alive) {
  auto lease = context.models.acquire_embeddings(name, keep_alive);
  if (!lease.ok()) throw_acquire_error(context, name, lease.status());
  return std::move(lease).value();
}

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
