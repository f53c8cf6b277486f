// The tokenmill HTTP server: the routes of the OpenAI and Ollama APIs and the metrics,
// over the models it serves (server/model_set.h) and their engines, behind an optional
// API key.
//
//   Server --owns--> HttpServer (I/O threads) --> auth --> Router --> route handlers
//                                                                  --> Engine (via EngineCall)
//
// Thread-safety: start() and shutdown() from one controlling thread.
#pragma once

#include <chrono>
#include <memory>
#include <string>

#include "base/status.h"
#include "server/background_jobs.h"
#include "server/batch_runner.h"
#include "server/engine_call.h"
#include "server/model_set.h"
#include "server/http_server.h"
#include "server/route_context.h"
#include "server/router.h"
#include "server/work_queue.h"

namespace tokenmill::server {

struct ServerConfig {
  HttpServerConfig http;
  // When not empty, every route but /health and /ready requires "Authorization: Bearer <api_key>".
  std::string api_key;
  // When not empty, browsers on this origin ("*": any) may call the API (server/cors.h).
  std::string cors_origin;
  // Threads that parse request bodies and tokenize prompts, off the I/O threads.
  int n_prep_threads = 2;
  // Requests that may wait (being prepared or queued in the engine) beyond the engine's
  // max_seqs running ones; more are answered 429 with Retry-After.
  int64_t max_queue = 1024;
  // The replica's name behind a balancer: in /v1/models, /ready, /metrics and the
  // X-Tokenmill-Replica header of every answer ("": none).
  std::string replica_id;
  // /metrics also publishes the vllm:* series that LLM-aware routers read.
  bool vllm_metrics = true;
  // GET / serves the chat page to browsers (it asks for the API key itself).
  bool webui = true;
  // The Files and Batches APIs' state (null: those routes answer 404); outlives the server.
  state::BatchState* batch_state = nullptr;
  BatchLimits batch_limits;
  // The response cache's bound (0: no cache) and how long an entry may be served.
  int64_t response_cache_bytes = 0;
  std::chrono::milliseconds response_cache_ttl = std::chrono::hours(1);
};

class Server {
 public:
  // REQUIRES: models (and embeddings, when given) outlive the server.
  Server(ServerConfig config, ModelSet& models, const ServedEmbeddings* embeddings = nullptr);
  ~Server();

  // Binds and starts serving. IoError when the address cannot be bound.
  Status start();
  uint16_t port() const;

  // The first step of a graceful stop: /ready answers 503 so that balancers send new
  // work elsewhere, and connections close after their answers; everything is still
  // served. Any thread.
  void stop_being_ready();

  // Stops accepting connections and new requests (503), gives requests in flight up to
  // grace to finish (the engine cancels what is left), lets their last bytes go out,
  // then stops the I/O threads.
  void shutdown(std::chrono::milliseconds grace);

 private:
  void handle(const HttpRequest& request, std::shared_ptr<Responder> out) const;

  ServerConfig config_;
  ModelSet& models_;
  CallTracker calls_;  // declared before the batch runner, which counts its calls here
  WorkQueue prep_;
  BackgroundJobs jobs_;
  RouteContext context_;
  Router router_;
  std::unique_ptr<ResponseCache> response_cache_;
  std::unique_ptr<BatchRunner> batches_;
  std::unique_ptr<HttpServer> http_;
};

// True when a and b are equal; its running time depends on their lengths only, not on
// where they differ (for comparing secrets).
bool constant_time_equal(std::string_view a, std::string_view b);

}  // namespace tokenmill::server
