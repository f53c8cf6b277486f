// One chat model with its engine and the route context that the offline batch path
// (server/offline_batch.h) runs requests through, for `tokenmill batch` and `distill`.
#pragma once

#include <chrono>
#include <memory>
#include <string>

#include "base/status.h"
#include "cli/chat_engine_options.h"
#include "cli/model_path.h"
#include "server/model_set.h"
#include "server/route_context.h"

namespace tokenmill::cli {

class OfflineModels {
 public:
  // spec: what -m takes (a GGUF file, a store name, "default").
  static Result<std::unique_ptr<OfflineModels>> load(const ChatEngineOptions& options, const std::string& spec,
                                                     bool verbose);
  ~OfflineModels() {
    prep_.stop();
    models_.shutdown_engines(std::chrono::milliseconds(0));
    strand_.stop();
  }

  const server::RouteContext& context() const { return context_; }
  // Answers /v1/embeddings lines with this model too. REQUIRES: embeddings outlives the
  // requests run through context() (shut it down before this object goes).
  void serve_embeddings(const server::ServedEmbeddings* embeddings) { context_.embeddings = embeddings; }
  // Where the offline batch's answers arrive (server/offline_batch.h).
  server::WorkQueue& strand() { return strand_; }
  // The name the model answers to (what result lines report).
  std::string model_name() const { return models_.pinned()->name(); }

 private:
  explicit OfflineModels(std::unique_ptr<server::LoadedModel> loaded)
      : models_(std::move(loaded), nullptr, nullptr, server::ModelSetConfig{}), context_{models_, calls_, prep_} {}

  server::WorkQueue strand_{1};  // first: it outlives the engine, which may post to it
  server::ModelSet models_;
  server::CallTracker calls_;
  server::WorkQueue prep_{1};
  server::RouteContext context_;
};

inline Result<std::unique_ptr<OfflineModels>> OfflineModels::load(const ChatEngineOptions& options,
                                                                  const std::string& spec, bool verbose) {
  auto resolved = resolve_model(spec);
  if (!resolved.ok()) return resolved.status();
  auto loaded = load_chat_model(options, resolved->path, resolved->name, verbose);
  if (!loaded.ok()) return loaded.status();
  return std::unique_ptr<OfflineModels>(new OfflineModels(std::move(loaded).value()));
}

}  // namespace tokenmill::cli
