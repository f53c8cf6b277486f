// What every route needs: the models it serves (and through each its engine), the
// tracker of requests in flight, and when the server started. Route files register their handlers
// on a Router with the add_*_routes functions.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <string>

#include "server/background_jobs.h"
#include "server/engine_call.h"
#include "server/http_server.h"
#include "server/json_fields.h"
#include "server/model_set.h"
#include "server/response_cache.h"
#include "server/router.h"
#include "server/served_embeddings.h"
#include "server/served_model.h"
#include "server/work_queue.h"
#include "state/batch_state.h"

namespace tokenmill::server {

struct RouteContext {
  ModelSet& models;
  CallTracker& calls;
  WorkQueue& prep;  // where request bodies are parsed and prompts tokenized
  BackgroundJobs* jobs = nullptr;  // long work (pulls), each job on its own thread
  std::chrono::system_clock::time_point started = std::chrono::system_clock::now();
  const HttpServer* http = nullptr;  // its connection counts, for /metrics; set once it exists
  const ServedEmbeddings* embeddings = nullptr;  // the embedding model, if one is served
  // This replica's name (/v1/models, /metrics, /ready); "" when none was given.
  std::string replica_id{};
  bool vllm_metrics = true;  // /metrics also carries the vllm:* series routers read
  bool webui = true;         // GET / answers browsers with the chat page
  // The Files and Batches APIs' state (null: those routes answer 404), and how to tell
  // the batch runner that a batch was created or cancelled.
  state::BatchState* batch_state = nullptr;
  ResponseCache* response_cache = nullptr;  // exact-match answers of deterministic requests (null: off)
  std::function<void()> wake_batches{};
  // /ready answers 200 while true; false once the server drains (Server::stop_being_ready).
  std::atomic<bool> ready{true};
};

// Work that turns a request body into something to start; returns what to run next on
// the connection's strand (e.g. start_engine_call).
using Preparation = std::function<std::function<void()>()>;

// The model a request names, loaded if need be (on a preparation thread: a load takes a
// while). Throws ApiError: 404 model_not_found for a name no model has, 400 for an
// invalid name, 503 when no room can be made, 500 when the model fails to load.
ModelLease acquire_model(const RouteContext& context, const std::string& name,
                         std::optional<std::chrono::milliseconds> keep_alive = std::nullopt);
// The same for an embedding model of the store (400 when the name is a chat model's).
EmbeddingsLease acquire_embedding_model(const RouteContext& context, const std::string& name,
                                        std::optional<std::chrono::milliseconds> keep_alive = std::nullopt);

// Runs prepare on context.prep (off the I/O threads), then its continuation on out's
// strand. An ApiError thrown by either is answered as path's API expects; any other
// exception becomes a 500.
void prepare_then(const RouteContext& context, const std::string& path, std::shared_ptr<Responder> out,
                  Preparation prepare);

// Runs one /v1/chat/completions (chat) or /v1/completions request body through the
// engine now, on the calling thread (which may wait for the model to load), answering on
// out exactly as the route would, in the given priority class. Throws ApiError when the
// body is refused.
void start_openai_request(const RouteContext& context, bool chat, const Json& body, std::shared_ptr<Responder> out,
                          engine::Priority priority = engine::Priority::kInteractive);

// Runs one /v1/embeddings request body: parsed on the calling thread (throws ApiError
// when it is refused), the vectors answered on out.
void start_embedding_request(const RouteContext& context, const Json& body, std::shared_ptr<Responder> out);

// POST /v1/chat/completions, POST /v1/completions, GET /v1/models, GET /v1/models/{id}.
void add_openai_routes(Router& router, const RouteContext& context);
// POST /api/chat, POST /api/generate, GET /api/tags, POST /api/show, GET /api/ps,
// GET /api/version, GET /.
void add_ollama_routes(Router& router, const RouteContext& context);
// POST /v1/embeddings, POST /api/embed, POST /api/embeddings.
void add_embedding_routes(Router& router, const RouteContext& context);
// POST/GET /v1/files, GET/DELETE /v1/files/{id}, GET /v1/files/{id}/content,
// POST/GET /v1/batches, GET /v1/batches/{id}, POST /v1/batches/{id}/cancel.
void add_batch_routes(Router& router, const RouteContext& context);
// GET /v1/chat/completions, GET/POST/DELETE /v1/chat/completions/{id},
// GET /v1/chat/completions/{id}/messages: stored completions.
void add_stored_completion_routes(Router& router, const RouteContext& context);
// GET /health, GET /ready, GET /metrics.
void add_metrics_routes(Router& router, const RouteContext& context);

}  // namespace tokenmill::server
