// The models a server answers for: one chat model pinned for the server's life (`-m`),
// and with a model store, every model in it by name (chat models, and embedding models
// for the embedding routes), loaded when a request names it and unloaded after its
// keep_alive (Ollama's semantics).
//
//   acquire(name) --> loaded?  yes: a lease on it
//                              no:  make room (the least recently used idle model goes,
//                                   while max_loaded or the memory budget say so), load
//                                   it once however many requests wait for it
//   lease dropped --> the model's expiry = now + the request's keep_alive
//                     (0: unload now; negative: never); a reaper thread unloads expired
//                     models that no request holds
//
// A lease (a shared_ptr to the ServedModel) keeps its model, tokenizer and engine alive:
// route handlers hold it from parsing until the engine call completes.
//
// Thread-safety: every method may run on any thread.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "base/status.h"
#include "engine/engine.h"
#include "gguf/file_summary.h"
#include "model/model.h"
#include "server/served_embeddings.h"
#include "server/served_model.h"
#include "store/model_store.h"
#include "tokenizer/tokenizer.h"

namespace tokenmill::server {

// Everything one loaded model owns. Destroying it stops its engine. An embedding model
// has `embeddings` alone (model, tokenizer, engine and served are null).
struct LoadedModel {
  std::unique_ptr<model::Model> model;
  std::unique_ptr<model::Model> draft_model;  // speculative decoding's; the engine uses it
  std::unique_ptr<tokenizer::Tokenizer> tokenizer;
  std::unique_ptr<engine::Engine> engine;
  std::unique_ptr<ServedModel> served;
  int64_t memory_bytes = 0;  // weights and KV cache, for the memory budget and /api/ps
  int64_t kv_bytes = 0;      // the KV cache's part of it
  std::unique_ptr<LoadedEmbeddings> embeddings;

  ~LoadedModel();
  const std::string& name() const { return served ? served->name() : embeddings->served().name; }
};

using ModelLease = std::shared_ptr<const ServedModel>;
using EmbeddingsLease = std::shared_ptr<const ServedEmbeddings>;
// Loads the GGUF at path to be served as name ("gemma3:latest").
using ModelLoader = std::function<Result<std::unique_ptr<LoadedModel>>(const std::string& path, const std::string& name)>;

struct ModelSetConfig {
  std::chrono::milliseconds default_keep_alive{std::chrono::minutes(5)};  // negative: forever
  int max_loaded = 3;            // store models loaded at once, the pinned one not counted
  int64_t memory_budget = 0;     // bytes for all store models (weights + KV); 0: no budget
};

// What /api/ps and /metrics show of a loaded model.
struct LoadedInfo {
  ModelLease model;
  int64_t memory_bytes = 0;
  std::optional<std::chrono::system_clock::time_point> expires;  // none: never (pinned, or negative keep_alive)
  int n_leases = 0;
};

// The same of a loaded embedding model of the store.
struct LoadedEmbeddingsInfo {
  EmbeddingsLease model;
  int64_t memory_bytes = 0;
  std::optional<std::chrono::system_clock::time_point> expires;
  int n_leases = 0;
};

class ModelSet {
 public:
  // pinned may be null (store models only); store may be null (the pinned model only).
  ModelSet(std::unique_ptr<LoadedModel> pinned, std::unique_ptr<store::ModelStore> store, ModelLoader loader,
           ModelSetConfig config);
  ~ModelSet();  // unloads every model

  // The model a request names, loaded if need be. keep_alive: how long it stays loaded
  // after this lease goes (nullopt: the default). NotFound for an unknown name,
  // InvalidArgument for an invalid one, ResourceExhausted when every loaded model is busy
  // and no room can be made, and the loader's error when loading fails; InvalidArgument
  // when it names an embedding model.
  Result<ModelLease> acquire(const std::string& name, std::optional<std::chrono::milliseconds> keep_alive);
  // The same for an embedding model of the store; InvalidArgument when the name is a
  // chat model's.
  Result<EmbeddingsLease> acquire_embeddings(const std::string& name,
                                             std::optional<std::chrono::milliseconds> keep_alive);
  // Unloads the named model now if no request holds it, else as soon as none does.
  // False when it is not loaded.
  bool unload(const std::string& name);

  // The pinned model, or null.
  ModelLease pinned() const;
  // The store (null when none); its methods may run on any thread.
  store::ModelStore* store() const { return store_.get(); }
  // Every loaded chat model (the pinned one first).
  std::vector<LoadedInfo> loaded() const;
  // Every loaded embedding model of the store.
  std::vector<LoadedEmbeddingsInfo> loaded_embeddings() const;
  // A store entry's architecture, parameters and quantization (read once per digest).
  Result<gguf::FileSummary> summary(const store::StoreEntry& entry) const;
  // True when name is the pinned model or a model of the store.
  bool knows(const std::string& name) const;
  // The largest engine max_seqs among loaded models (the server's admission limit).
  int32_t max_seqs() const;

  // Stops every engine (Engine::shutdown) with grace for requests in flight.
  void shutdown_engines(std::chrono::milliseconds grace);

 private:
  struct Slot {
    std::unique_ptr<LoadedModel> loaded;
    bool loading = false;
    std::string error;  // the failed load's message, for those that waited on it
    int n_leases = 0;
    bool unload_when_idle = false;
    std::chrono::milliseconds keep_alive{0};
    std::chrono::steady_clock::time_point last_used;
    std::optional<std::chrono::steady_clock::time_point> expires;
  };

  // The store name ("gemma3:latest") a request's name resolves to, or the pinned model.
  Result<std::string> resolve(const std::string& name, std::string* path) const;
  // The slot of the store model key, loaded if need be and held for the caller (who
  // releases it).
  Result<std::shared_ptr<Slot>> hold(const std::string& key, const std::string& path,
                                     std::optional<std::chrono::milliseconds> keep_alive);
  void count_lease(Slot& slot, std::optional<std::chrono::milliseconds> keep_alive);
  // When a loaded slot will be unloaded if nothing else holds it (none: never). Holds mu_.
  std::optional<std::chrono::system_clock::time_point> expiry(const Slot& slot) const;
  void release(const std::shared_ptr<Slot>& slot);
  // What loading the file at path will take: its size, and a KV cache as large as the
  // largest loaded one (every model's cache is sized by the same flags). Holds mu_.
  int64_t estimate_bytes(const std::string& path) const;
  // Unloads idle models, least recently used first, until one more of bytes fits.
  // Returns what it removed (destroyed by the caller outside the lock). Holds mu_.
  std::vector<std::unique_ptr<LoadedModel>> make_room(int64_t bytes, bool* fits);
  void reap();

  ModelSetConfig config_;
  std::unique_ptr<LoadedModel> pinned_;
  ModelLease pinned_lease_;
  std::unique_ptr<store::ModelStore> store_;
  ModelLoader loader_;

  mutable std::mutex mu_;
  std::condition_variable changed_;
  std::map<std::string, std::shared_ptr<Slot>> slots_;  // by store name
  mutable std::map<std::string, gguf::FileSummary> summaries_;  // by digest
  bool stopping_ = false;
  std::thread reaper_;
};

// Ollama's keep_alive: a number of seconds, or a duration string ("5m", "1h30m", "10s",
// "-1", "0"); negative means forever. InvalidArgument for anything else.
Result<std::chrono::milliseconds> parse_keep_alive_seconds(double seconds);
Result<std::chrono::milliseconds> parse_keep_alive(const std::string& text);

}  // namespace tokenmill::server
