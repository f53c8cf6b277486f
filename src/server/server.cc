#include "server/server.h"

#include <algorithm>
#include <cctype>
#include <thread>

#include "server/api_error.h"
#include "server/cors.h"
#include "server/header_responder.h"

namespace tokenmill::server {

bool constant_time_equal(std::string_view a, std::string_view b) {
  const size_t n = std::max(a.size(), b.size());
  volatile unsigned char diff = a.size() == b.size() ? 0 : 1;
  for (size_t i = 0; i < n; ++i) {
    const unsigned char x = i < a.size() ? static_cast<unsigned char>(a[i]) : 0;
    const unsigned char y = i < b.size() ? static_cast<unsigned char>(b[i]) : 0;
    diff = diff | (x ^ y);
  }
  return diff == 0;
}

Server::Server(ServerConfig config, ModelSet& models, const ServedEmbeddings* embeddings)
    : config_(std::move(config)), models_(models), prep_(config_.n_prep_threads), context_{models, calls_, prep_} {
  context_.jobs = &jobs_;
  context_.embeddings = embeddings;
  context_.replica_id = config_.replica_id;
  context_.vllm_metrics = config_.vllm_metrics;
  context_.webui = config_.webui;
  if (config_.response_cache_bytes > 0) {
    response_cache_ = std::make_unique<ResponseCache>(
        ResponseCacheConfig{config_.response_cache_bytes, config_.response_cache_ttl});
    context_.response_cache = response_cache_.get();
  }
  calls_.set_limit(models.max_seqs() + std::max<int64_t>(0, config_.max_queue));
  add_openai_routes(router_, context_);
  add_ollama_routes(router_, context_);
  add_embedding_routes(router_, context_);
  add_metrics_routes(router_, context_);
  add_batch_routes(router_, context_);
  add_stored_completion_routes(router_, context_);
  if (config_.batch_state != nullptr) {
    config_.http.limits.upload_spool_dir = config_.batch_state->incoming_dir();
    context_.batch_state = config_.batch_state;
    batches_ = std::make_unique<BatchRunner>(*config_.batch_state, context_, config_.batch_limits);
    context_.wake_batches = [this] { batches_->wake(); };
  }
  http_ = std::make_unique<HttpServer>(config_.http, [this](const HttpRequest& request,
                                                            std::shared_ptr<Responder> out) { handle(request, out); });
  context_.http = http_.get();
}

Server::~Server() {
  if (batches_) batches_->stop();
  prep_.stop();  // its tasks hold connections, which must go before the I/O context
  jobs_.stop();
  http_->stop();
}

Status Server::start() { return http_->start(); }

uint16_t Server::port() const { return http_->port(); }

void Server::handle(const HttpRequest& request, std::shared_ptr<Responder> out) const {
  if (!config_.replica_id.empty()) out = with_headers(std::move(out), {{"X-Tokenmill-Replica", config_.replica_id}});
  if (const std::string origin = allowed_origin(request, config_.cors_origin); !origin.empty()) {
    if (answer_preflight(request, origin, *out)) return;  // preflights carry no credentials
    out = with_cors_headers(std::move(out), origin);
  }
  // Balancers and orchestrators probe these without credentials; / (the chat page, or
  // Ollama's heartbeat) holds no data and asks for the key itself.
  const bool probe = request.path == "/health" || request.path == "/ready" ||
                     (request.path == "/" && request.method == "GET");
  if (!config_.api_key.empty() && !probe) {
    const std::string& authorization = request.header("authorization");
    constexpr std::string_view kBearer = "Bearer ";
    if (authorization.empty()) {
      send_error(*out, request.path,
                 unauthorized("Missing API key: send the header 'Authorization: Bearer YOUR_KEY'"));
      return;
    }
    // The scheme is case-insensitive (RFC 7235); the key is not.
    bool is_bearer = authorization.size() >= kBearer.size();
    for (size_t i = 0; is_bearer && i < kBearer.size(); ++i) {
      is_bearer = std::tolower(static_cast<unsigned char>(authorization[i])) ==
                  std::tolower(static_cast<unsigned char>(kBearer[i]));
    }
    if (!is_bearer || !constant_time_equal(std::string_view(authorization).substr(kBearer.size()), config_.api_key)) {
      send_error(*out, request.path, unauthorized("Incorrect API key provided"));
      return;
    }
  }
  router_.dispatch(request, out);
}

void Server::stop_being_ready() {
  context_.ready.store(false);
  http_->close_connections_after_answers();
}

void Server::shutdown(std::chrono::milliseconds grace) {
  stop_being_ready();
  http_->stop_accepting();
  calls_.start_draining();
  prep_.stop();  // requests being prepared start (or are refused) before the engine stops
  jobs_.stop();  // pulls in progress stop; what they downloaded stays to resume
  if (batches_) batches_->stop();  // batch requests in flight run again after a restart
  models_.shutdown_engines(grace);
  // Every engine request has now finished; give their last bytes a moment to be written.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(2);
  while (calls_.n_active() > 0 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  http_->stop();
}

}  // namespace tokenmill::server
