// Finds a model's tensors in its GGUF file by name and checks their shapes and types
// before anything reads them: matrices as WeightMatrix views of the memory map, vectors
// (norms, biases) as F32 arrays.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/status.h"
#include "gguf/gguf_file.h"
#include "ops/weight_matrix.h"

namespace tokenmill::model {

class TensorBinder {
 public:
  // REQUIRES: file outlives the binder and what it binds.
  explicit TensorBinder(const gguf::File& file) : file_(file) {}

  // A [n_rows, n_cols] matrix of a type the kernels can multiply. NotFound, CorruptData
  // (shape) or Unsupported (type), naming the tensor.
  Status matrix(const std::string& name, int64_t n_rows, int64_t n_cols, ops::WeightMatrix& out);
  // A [n_experts, n_rows, n_cols] stack of matrices (ggml shape [n_cols, n_rows,
  // n_experts]) as one view per expert, each as matrix() would bind it.
  Status experts(const std::string& name, int64_t n_experts, int64_t n_rows, int64_t n_cols,
                 std::vector<ops::WeightMatrix>& out);
  // An F32 tensor of n values, whatever its shape (a stack of per-expert biases is one
  // contiguous [n_expert, width] array).
  Status vector(const std::string& name, int64_t n, const float*& out);
  bool has(const std::string& name) const { return file_.find_tensor(name) != nullptr; }

 private:
  const gguf::File& file_;
};

}  // namespace tokenmill::model
