// A Backend that forwards every call to another one and shows each matmul's input to an
// observer first. Calibration (tokenmill imatrix) wraps a model's back end in one to see
// the activations every weight matrix meets; the inference path never does, so it pays
// nothing for the hook.
//
// Thread-safety: as Backend. The observer runs on the calling thread, before the matmul.
#pragma once

#include <functional>
#include <memory>
#include <utility>

#include "ops/forwarding_backend.h"

namespace tokenmill::ops {

// x: [n_tokens, w.n_cols], the activations about to be multiplied by w.
using MatmulObserver = std::function<void(const WeightMatrix& w, const float* x, int64_t n_tokens)>;

class ObservingBackend final : public ForwardingBackend {
 public:
  ObservingBackend(std::unique_ptr<Backend> inner, MatmulObserver observer)
      : ForwardingBackend(std::move(inner)), observer_(std::move(observer)) {}

  void matmul(const WeightMatrix& w, const float* x, int64_t n_tokens, float* y) override {
    observer_(w, x, n_tokens);
    inner().matmul(w, x, n_tokens, y);
  }
  void matmul_argmax(const WeightMatrix& w, const float* x, int64_t n_tokens, float* y, int32_t* argmax) override {
    observer_(w, x, n_tokens);
    inner().matmul_argmax(w, x, n_tokens, y, argmax);
  }
  void matmul_shared_input(std::span<const MatmulProduct> products, const float* x, int64_t n_tokens) override {
    for (const MatmulProduct& p : products) observer_(*p.w, x, n_tokens);
    inner().matmul_shared_input(products, x, n_tokens);
  }

 private:
  MatmulObserver observer_;
};

}  // namespace tokenmill::ops
