// The operations a forward pass is made of. A model composes these; a back end (cpu/,
// later cuda/) implements them. All tensors are row-major float32 in the back end's
// memory unless stated; shapes are given beside each parameter.
//
// Thread-safety: a Backend is used by one thread at a time (the engine thread); it may
// use its own worker threads inside a call.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <vector>

#include "base/first_max.h"
#include "base/thread_pool.h"
#include "ops/attention.h"
#include "ops/kv_storage.h"
#include "ops/weight_matrix.h"

namespace tokenmill::ops {

enum class RopeStyle { kNormal, kNeox };  // adjacent pairs (Llama) vs halves (NeoX, Gemma, Qwen)

// One product of a matmul_shared_input call: y = x w^T.  y: [n_tokens, w->n_rows].
struct MatmulProduct {
  const WeightMatrix* w = nullptr;
  float* y = nullptr;
};

class Backend {
 public:
  virtual ~Backend() = default;

  virtual const char* name() const = 0;
  virtual int n_threads() const = 0;
  // Pins the back end's own threads: with k the thread a part of a parallel call runs on,
  // thread k (k >= 1) to cpus[k]; cpus[0] is the calling thread's, which pins itself.
  // False where nothing was pinned (too few CPUs given, the OS refused, no threads).
  virtual bool pin_threads(std::span<const int> cpus) { return false; }
  // The thread pool the back end computes on, for another back end to share (a draft
  // model beside its target: one set of threads, used by one forward pass at a time);
  // null when it has none to share.
  virtual std::shared_ptr<ThreadPool> shared_thread_pool() { return nullptr; }

  // y[t, r] = sum_k w[r, k] * x[t, k].  x: [n_tokens, w.n_cols], y: [n_tokens, w.n_rows].
  // The weights are read once for all n_tokens rows.
  virtual void matmul(const WeightMatrix& w, const float* x, int64_t n_tokens, float* y) = 0;

  // matmul(), and argmax[t] = first_max_index(y[t, :]) (base/first_max.h: the first r
  // with the largest y[t, r]), the token a greedy sampler picks when y are logits. Back
  // ends find it while y is still in cache; this default scans y afterwards. y may be
  // null when only the argmax is wanted: back ends that fold skip storing y at all.
  virtual void matmul_argmax(const WeightMatrix& w, const float* x, int64_t n_tokens, float* y, int32_t* argmax) {
    std::vector<float> scratch;
    if (y == nullptr) {
      scratch.resize(static_cast<size_t>(n_tokens * w.n_rows));
      y = scratch.data();
    }
    matmul(w, x, n_tokens, y);
    first_max_index_rows(y, n_tokens, w.n_rows, argmax);
  }

  // Memory the back end may add beside w's own for matmul_argmax on it (a CPU with AMX
  // builds an int8 screen of a Q8_0 output matrix on first use), for memory budgets.
  virtual int64_t argmax_extra_bytes(const WeightMatrix&) const { return 0; }

  // matmul(*p.w, x, n_tokens, p.y) for every product p, all of one input (a layer's q, k
  // and v; its FFN gate and up), with the bits of separate calls. Back ends convert the
  // input once and split the rows of all the products between their threads in one pass.
  // REQUIRES: every p.w has x's n_cols.
  virtual void matmul_shared_input(std::span<const MatmulProduct> products, const float* x, int64_t n_tokens) {
    for (const MatmulProduct& p : products) matmul(*p.w, x, n_tokens, p.y);
  }

  // out[i, :] = table[ids[i], :] as float.  out: [ids.size(), table.n_cols]
  virtual void get_rows(const WeightMatrix& table, std::span<const int32_t> ids, float* out) = 0;

  // Row-wise RMSNorm: y = x / sqrt(mean(x^2) + eps) * weight.  x, y: [n_rows, n_cols]
  // (y may be x); weight: [n_cols].
  virtual void rms_norm(const float* x, const float* weight, int64_t n_rows, int64_t n_cols, float eps,
                        float* y) = 0;

  // Rotary position embedding in place over the first n_rot values of each head (the rest
  // pass unchanged: partial rotary, as Phi-4-mini's 3/4 of the head), with pair i's
  // frequency freq_base^(-2i / n_rot).  x: [n_tokens, n_heads, head_dim]; positions:
  // [n_tokens]; REQUIRES: n_rot even, 2 <= n_rot <= head_dim. freq_factors: [n_rot / 2]
  // divisors of each pair's frequency (Llama 3's rope scaling, the GGUF tensor
  // rope_freqs.weight), or null.
  virtual void rope(float* x, std::span<const int32_t> positions, int32_t n_heads, int32_t head_dim, int32_t n_rot,
                    float freq_base, float freq_scale, RopeStyle style, const float* freq_factors = nullptr) = 0;

  // y = gelu_tanh(gate) * up and y = silu(gate) * up, elementwise over n values.
  virtual void geglu(const float* gate, const float* up, int64_t n, float* y) = 0;
  virtual void swiglu(const float* gate, const float* up, int64_t n, float* y) = 0;

  // y = a + b, elementwise over n values (y may be a or b).
  virtual void add(const float* a, const float* b, int64_t n, float* y) = 0;
  // x[r, :] += bias for every row r.  x: [n_rows, n_cols]; bias: [n_cols].
  virtual void add_bias(float* x, const float* bias, int64_t n_rows, int64_t n_cols) = 0;
  // x *= factor, elementwise over n values.
  virtual void scale(float* x, float factor, int64_t n) = 0;

  // Writes k and v of each token into its slot of the paged cache.
  // k, v: [n_tokens, n_kv_heads * head_dim].
  virtual void store_kv(KvStorage& kv, int32_t layer, const AttentionBatch& batch, const float* k,
                        const float* v) = 0;

  // out[t] = softmax(scale * q[t] · K_cached) V_cached per head (GQA: query head h reads
  // kv head h / (n_heads / n_kv_heads)).  q: [n_tokens, n_heads * head_dim];
  // out: [n_tokens, n_heads * head_dim].
  virtual void attention(const KvStorage& kv, const AttentionBatch& batch, const AttentionParams& params,
                         const float* q, float* out) = 0;

  // fn(i) for every i in [0, n), on the back end's threads when it has several: host
  // work between forward passes (sampling every sequence of a step). fn must be safe to
  // run concurrently for different i. Serial by default.
  virtual void for_each_parallel(size_t n, const std::function<void(size_t)>& fn) {
    for (size_t i = 0; i < n; ++i) fn(i);
  }
};

}  // namespace tokenmill::ops
