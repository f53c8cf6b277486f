#include "engine/embedder.h"

#include <utility>

namespace tokenmill::engine {

Embedder::Embedder(model::BertEncoder& encoder, EmbedderConfig config)
    : encoder_(encoder), config_(config), thread_([this] { loop(); }) {}

Embedder::~Embedder() { shutdown(); }

void Embedder::submit(std::vector<std::vector<int32_t>> inputs, std::function<void(EmbeddingResult)> done) {
  Pending p;
  for (const auto& input : inputs) p.n_tokens += static_cast<int64_t>(input.size());
  p.inputs = std::move(inputs);
  p.done = std::move(done);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!stopping_) {
      queue_.push_back(std::move(p));
      wake_.notify_one();
      return;
    }
  }
  p.done(EmbeddingResult{resource_exhausted("the server is shutting down"), {}, 0});
}

void Embedder::shutdown() {
  std::deque<Pending> left;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (stopping_ && !thread_.joinable()) return;
    stopping_ = true;
    left.swap(queue_);
    wake_.notify_all();
  }
  if (thread_.joinable()) thread_.join();
  for (Pending& p : left) p.done(EmbeddingResult{resource_exhausted("the server is shutting down"), {}, 0});
}

int64_t Embedder::n_batches() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return n_batches_;
}

int64_t Embedder::n_requests() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return n_requests_;
}

void Embedder::loop() {
  while (true) {
    std::vector<Pending> batch;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      wake_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
      if (stopping_) return;
      int64_t tokens = 0;
      while (!queue_.empty() && (batch.empty() || tokens + queue_.front().n_tokens <= config_.max_batch_tokens)) {
        tokens += queue_.front().n_tokens;
        batch.push_back(std::move(queue_.front()));
        queue_.pop_front();
      }
      ++n_batches_;
      n_requests_ += static_cast<int64_t>(batch.size());
    }
    std::vector<std::vector<int32_t>> inputs;
    for (Pending& p : batch) {
      for (auto& input : p.inputs) inputs.push_back(std::move(input));
    }
    std::vector<std::vector<float>> vectors;
    encoder_.embed(inputs, vectors);
    size_t next = 0;
    for (Pending& p : batch) {
      EmbeddingResult result;
      result.n_tokens = p.n_tokens;
      for (size_t i = 0; i < p.inputs.size(); ++i) result.vectors.push_back(std::move(vectors[next++]));
      p.done(std::move(result));
    }
  }
}

}  // namespace tokenmill::engine
