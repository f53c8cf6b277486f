#include "eval/imatrix_collector.h"

namespace tokenmill::eval {

ImatrixCollector::ImatrixCollector(const model::Model& model) {
  const gguf::File& file = model.file();
  for (const gguf::TensorInfo& info : file.tensors()) {
    if (info.shape.size() >= 2) name_of_data_.emplace(file.tensor_data(info).data(), info.name);
  }
}

void ImatrixCollector::observe(const ops::WeightMatrix& w, const float* x, int64_t n_tokens) {
  auto it = name_of_data_.find(w.data);
  if (it == name_of_data_.end()) {
    ++n_unknown_calls_;
    return;
  }
  quant::ImportanceEntry& entry = matrix_.entries[it->second];
  if (entry.sum_sq.empty()) entry.sum_sq.assign(w.n_cols, 0.0);
  double* sums = entry.sum_sq.data();
  for (int64_t t = 0; t < n_tokens; ++t) {
    const float* row = x + t * w.n_cols;
    for (int64_t j = 0; j < w.n_cols; ++j) sums[j] += static_cast<double>(row[j]) * row[j];
  }
  entry.n_tokens += n_tokens;
}

}  // namespace tokenmill::eval
