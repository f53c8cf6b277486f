#include "eval/gptq_collector.h"

#include <algorithm>

namespace tokenmill::eval {

GptqCollector::GptqCollector(const model::Model& model, int n_threads) : pool_(std::max(1, n_threads)) {
  const gguf::File& file = model.file();
  for (const gguf::TensorInfo& info : file.tensors()) {
    if (info.shape.size() >= 2) name_of_data_.emplace(file.tensor_data(info).data(), info.name);
  }
}

void GptqCollector::observe(const ops::WeightMatrix& w, const float* x, int64_t n_tokens) {
  auto it = name_of_data_.find(w.data);
  if (it == name_of_data_.end()) {
    ++n_unknown_calls_;
    last_x_ = nullptr;
    return;
  }
  const int64_t n = w.n_cols;
  std::shared_ptr<quant::GptqHessian>& entry = entries_[it->second];
  const bool same_input = x == last_x_ && n_tokens == last_n_tokens_ && last_entry_ && last_entry_->n == n;
  if (!entry && same_input) entry = last_entry_;  // first sight: share the previous matmul's input
  if (entry && same_input && entry == last_entry_) return;  // already accumulated for this input
  if (!entry) {
    entry = std::make_shared<quant::GptqHessian>();
    entry->n = n;
    entry->sum_xxt.assign(static_cast<size_t>(n * n), 0.0);
  }
  last_x_ = x;
  last_n_tokens_ = n_tokens;
  last_entry_ = entry;
  if (entry->n != n) return;
  entry->n_tokens += n_tokens;

  // Upper triangle of X^T X, in row bands of 16 (a band's rows stay in cache while the
  // tokens stream past), bands interleaved over threads (later rows are shorter).
  double* h = entry->sum_xxt.data();
  constexpr int64_t kBand = 16;
  const int64_t n_bands = (n + kBand - 1) / kBand;
  const int n_parts = pool_.n_threads();
  pool_.run_on_all([&](int part) {
    for (int64_t band = part; band < n_bands; band += n_parts) {
      const int64_t i0 = band * kBand, i1 = std::min(n, i0 + kBand);
      for (int64_t t = 0; t < n_tokens; ++t) {
        const float* row = x + t * n;
        for (int64_t i = i0; i < i1; ++i) {
          const double xi = row[i];
          if (xi == 0.0) continue;
          double* hi = h + i * n;
          for (int64_t j = i; j < n; ++j) hi[j] += xi * static_cast<double>(row[j]);
        }
      }
    }
  });
}

quant::GptqHessians GptqCollector::hessians() const {
  quant::GptqHessians out;
  for (const auto& [name, entry] : entries_) out.emplace(name, entry);
  return out;
}

}  // namespace tokenmill::eval
