// A Backend that hands every call to another one. Wrappers that watch a model's back end
// (ObservingBackend for calibration, TimingBackend for profiles) derive from it and
// override only what they watch.
//
// Thread-safety: as Backend.
#pragma once

#include <functional>
#include <memory>
#include <utility>

#include "ops/backend.h"

namespace tokenmill::ops {

class ForwardingBackend : public Backend {
 public:
  explicit ForwardingBackend(std::unique_ptr<Backend> inner) : inner_(std::move(inner)) {}

  // Gives the wrapped back end back (the wrapper is unusable afterwards).
  std::unique_ptr<Backend> release_inner() { return std::move(inner_); }

  const char* name() const override { return inner_->name(); }
  int n_threads() const override { return inner_->n_threads(); }
  bool pin_threads(std::span<const int> cpus) override { return inner_->pin_threads(cpus); }
  std::shared_ptr<ThreadPool> shared_thread_pool() override { return inner_->shared_thread_pool(); }
  void for_each_parallel(size_t n, const std::function<void(size_t)>& fn) override {
    inner_->for_each_parallel(n, fn);
  }

  void matmul(const WeightMatrix& w, const float* x, int64_t n_tokens, float* y) override {
    inner_->matmul(w, x, n_tokens, y);
  }
  int64_t argmax_extra_bytes(const WeightMatrix& w) const override { return inner_->argmax_extra_bytes(w); }
  void matmul_argmax(const WeightMatrix& w, const float* x, int64_t n_tokens, float* y, int32_t* argmax) override {
    inner_->matmul_argmax(w, x, n_tokens, y, argmax);
  }
  void matmul_shared_input(std::span<const MatmulProduct> products, const float* x, int64_t n_tokens) override {
    inner_->matmul_shared_input(products, x, n_tokens);
  }
  void get_rows(const WeightMatrix& table, std::span<const int32_t> ids, float* out) override {
    inner_->get_rows(table, ids, out);
  }
  void rms_norm(const float* x, const float* weight, int64_t n_rows, int64_t n_cols, float eps, float* y) override {
    inner_->rms_norm(x, weight, n_rows, n_cols, eps, y);
  }
  void rope(float* x, std::span<const int32_t> positions, int32_t n_heads, int32_t head_dim, int32_t n_rot,
            float freq_base, float freq_scale, RopeStyle style, const float* freq_factors = nullptr) override {
    inner_->rope(x, positions, n_heads, head_dim, n_rot, freq_base, freq_scale, style, freq_factors);
  }
  void geglu(const float* gate, const float* up, int64_t n, float* y) override { inner_->geglu(gate, up, n, y); }
  void swiglu(const float* gate, const float* up, int64_t n, float* y) override { inner_->swiglu(gate, up, n, y); }
  void add(const float* a, const float* b, int64_t n, float* y) override { inner_->add(a, b, n, y); }
  void add_bias(float* x, const float* bias, int64_t n_rows, int64_t n_cols) override {
    inner_->add_bias(x, bias, n_rows, n_cols);
  }
  void scale(float* x, float factor, int64_t n) override { inner_->scale(x, factor, n); }
  void store_kv(KvStorage& kv, int32_t layer, const AttentionBatch& batch, const float* k, const float* v) override {
    inner_->store_kv(kv, layer, batch, k, v);
  }
  void attention(const KvStorage& kv, const AttentionBatch& batch, const AttentionParams& params, const float* q,
                 float* out) override {
    inner_->attention(kv, batch, params, q, out);
  }

 protected:
  Backend& inner() { return *inner_; }

 private:
  std::unique_ptr<Backend> inner_;
};

}  // namespace tokenmill::ops
