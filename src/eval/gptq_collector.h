// Collects GPTQ calibration statistics (quant/gptq.h) while a model runs: attached as the
// model's matmul observer, it adds x x^T of every input row to the entry of the weight
// matrix it meets (the full n_cols x n_cols Gram matrix, upper triangle, in double).
// Weights are recognised by their data pointer as in ImatrixCollector; the tied output
// projection is recorded under token_embd.weight. Consecutive matmuls that read the same
// input buffer (Q, K, V; FFN gate, up) share one entry, accumulated once.
//
// Thread-safety: observe() runs on the model's calling thread; not for concurrent use.
// The accumulation itself is split over the collector's own thread pool.
// Weights are named by where the file holds them: load the model with
// model::LoadOptions::repack = false (a repacked matrix lives elsewhere and is skipped).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>

#include "base/thread_pool.h"
#include "model/model.h"
#include "quant/gptq.h"

namespace tokenmill::eval {

class GptqCollector {
 public:
  GptqCollector(const model::Model& model, int n_threads);

  // x: [n_tokens, w.n_cols].
  void observe(const ops::WeightMatrix& w, const float* x, int64_t n_tokens);

  // The statistics by tensor name (shared entries appear under every name).
  quant::GptqHessians hessians() const;
  int64_t n_unknown_calls() const { return n_unknown_calls_; }

 private:
  std::unordered_map<const uint8_t*, std::string> name_of_data_;
  std::unordered_map<std::string, std::shared_ptr<quant::GptqHessian>> entries_;
  ThreadPool pool_;
  // The previous call, to recognise matmuls that share an input.
  const float* last_x_ = nullptr;
  int64_t last_n_tokens_ = 0;
  std::shared_ptr<quant::GptqHessian> last_entry_;
  int64_t n_unknown_calls_ = 0;
};

}  // namespace tokenmill::eval
