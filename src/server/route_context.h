// What every route needs: the served model (and through it the engine), the tracker of
// requests in flight, and when the server started. Route files register their handlers
// on a Router with the add_*_routes functions.
#pragma once

#include <chrono>

#include "server/engine_call.h"
#include "server/router.h"
#include "server/served_model.h"

namespace tokenmill::server {

struct RouteContext {
  const ServedModel& model;
  CallTracker& calls;
  std::chrono::system_clock::time_point started = std::chrono::system_clock::now();
};

// POST /v1/chat/completions, POST /v1/completions, GET /v1/models, GET /v1/models/{id}.
void add_openai_routes(Router& router, const RouteContext& context);
// POST /api/chat, POST /api/generate, GET /api/tags, POST /api/show, GET /api/ps,
// GET /api/version, GET /.
void add_ollama_routes(Router& router, const RouteContext& context);
// GET /health, GET /metrics.
void add_metrics_routes(Router& router, const RouteContext& context);

}  // namespace tokenmill::server
