// Collects an importance matrix (quant/imatrix_file.h) while a model runs: attached as
// the model's matmul observer, it adds every input row's squared activations to the
// entry of the weight matrix it meets. Weights are recognised by their data pointer,
// mapped to tensor names once from the model file; the tied output projection is
// recorded under token_embd.weight, the tensor it is.
//
// Thread-safety: observe() runs on the model's calling thread; not for concurrent use.
// Weights are named by where the file holds them: load the model with
// model::LoadOptions::repack = false (a repacked matrix lives elsewhere and is skipped).
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>

#include "model/model.h"
#include "quant/imatrix_file.h"

namespace tokenmill::eval {

class ImatrixCollector {
 public:
  explicit ImatrixCollector(const model::Model& model);

  // x: [n_tokens, w.n_cols].
  void observe(const ops::WeightMatrix& w, const float* x, int64_t n_tokens);

  const quant::ImportanceMatrix& matrix() const { return matrix_; }
  quant::ImportanceMatrix& matrix() { return matrix_; }
  int64_t n_unknown_calls() const { return n_unknown_calls_; }

 private:
  std::unordered_map<const uint8_t*, std::string> name_of_data_;
  quant::ImportanceMatrix matrix_;
  int64_t n_unknown_calls_ = 0;  // matmuls on weights that are not file tensors
};

}  // namespace tokenmill::eval
