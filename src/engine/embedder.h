// Embedding requests, batched on a thread of their own: the inputs of every request that
// arrives while a batch runs wait, and go together into the next one (up to
// max_batch_tokens tokens), so that one pass over the encoder's weights serves them all.
//
// Thread-safety: submit() may be called from any thread; `done` runs on the embedder's
// thread, once per request, and must not block.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

#include "base/status.h"
#include "model/bert_encoder.h"

namespace tokenmill::engine {

struct EmbedderConfig {
  int64_t max_batch_tokens = 8192;  // a larger request runs alone
};

struct EmbeddingResult {
  Status status;                             // ResourceExhausted when the embedder shut down first
  std::vector<std::vector<float>> vectors;   // one per input
  int64_t n_tokens = 0;
};

class Embedder {
 public:
  // REQUIRES: encoder outlives the embedder.
  explicit Embedder(model::BertEncoder& encoder, EmbedderConfig config = {});
  ~Embedder();  // shutdown()
  Embedder(const Embedder&) = delete;
  Embedder& operator=(const Embedder&) = delete;

  const model::BertConfig& config() const { return encoder_.config(); }

  // REQUIRES: every input holds 1 .. config().max_positions ids < n_vocab.
  void submit(std::vector<std::vector<int32_t>> inputs, std::function<void(EmbeddingResult)> done);

  // Finishes the batch under way; requests still queued complete with ResourceExhausted.
  void shutdown();

  // Encoder passes so far and the requests they served (batching at work: passes < requests).
  int64_t n_batches() const;
  int64_t n_requests() const;

 private:
  struct Pending {
    std::vector<std::vector<int32_t>> inputs;
    std::function<void(EmbeddingResult)> done;
    int64_t n_tokens = 0;
  };
  void loop();

  model::BertEncoder& encoder_;
  const EmbedderConfig config_;
  mutable std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<Pending> queue_;  // guarded by mutex_
  bool stopping_ = false;      // guarded by mutex_
  int64_t n_batches_ = 0;      // guarded by mutex_
  int64_t n_requests_ = 0;     // guarded by mutex_
  std::thread thread_;
};

}  // namespace tokenmill::engine
