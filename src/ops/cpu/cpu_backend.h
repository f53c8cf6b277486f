// The CPU back end: reference-correct operations, parallel over a persistent thread pool.
#pragma once

#include <array>
#include <functional>
#include <memory>
#include <map>
#include <tuple>
#include <vector>

#include "base/thread_pool.h"
#include "ops/backend.h"
#include "quant/argmax_screen.h"

namespace tokenmill::ops {

class CpuBackend final : public Backend {
 public:
  explicit CpuBackend(int n_threads);
  // Computes on another back end's threads (Backend::shared_thread_pool).
  explicit CpuBackend(std::shared_ptr<ThreadPool> pool);

  const char* name() const override { return "cpu"; }
  int n_threads() const override { return pool_->n_threads(); }
  bool pin_threads(std::span<const int> cpus) override { return pool_->pin_workers(cpus); }
  std::shared_ptr<ThreadPool> shared_thread_pool() override { return pool_; }
  void for_each_parallel(size_t n, const std::function<void(size_t)>& fn) override;
  ThreadPool& pool() { return *pool_; }
  // Tokens whose greedy pick came through a matrix's screen (matmul_argmax), for tests.
  int64_t screened_tokens() const { return screened_tokens_; }

  void matmul(const WeightMatrix& w, const float* x, int64_t n_tokens, float* y) override;
  void matmul_argmax(const WeightMatrix& w, const float* x, int64_t n_tokens, float* y, int32_t* argmax) override;
  int64_t argmax_extra_bytes(const WeightMatrix& w) const override;
  void matmul_shared_input(std::span<const MatmulProduct> products, const float* x, int64_t n_tokens) override;
  void get_rows(const WeightMatrix& table, std::span<const int32_t> ids, float* out) override;
  void rms_norm(const float* x, const float* weight, int64_t n_rows, int64_t n_cols, float eps, float* y) override;
  void rope(float* x, std::span<const int32_t> positions, int32_t n_heads, int32_t head_dim, int32_t n_rot,
            float freq_base, float freq_scale, RopeStyle style,
            const float* freq_factors = nullptr) override;
  void geglu(const float* gate, const float* up, int64_t n, float* y) override;
  void swiglu(const float* gate, const float* up, int64_t n, float* y) override;
  void add(const float* a, const float* b, int64_t n, float* y) override;
  void add_bias(float* x, const float* bias, int64_t n_rows, int64_t n_cols) override;
  void scale(float* x, float factor, int64_t n) override;
  void store_kv(KvStorage& kv, int32_t layer, const AttentionBatch& batch, const float* k, const float* v) override;
  void attention(const KvStorage& kv, const AttentionBatch& batch, const AttentionParams& params, const float* q,
                 float* out) override;

 private:
  // The products of one input in one pass (matmul_shared_input), with the argmax when it
  // is not null (matmul_argmax; then there is one product, whose y may be null if its
  // kernel folds). REQUIRES: every product has the first's n_cols, activation type and
  // `panels`.
  void run_products(std::span<const MatmulProduct> products, const float* x, int64_t n_tokens, int32_t* argmax);
  // fn(begin, end) over [0, n), on the pool when n is large enough to pay for it.
  void elementwise(int64_t n, const std::function<void(int64_t, int64_t)>& fn);

  // cos and sin of every (token, pair) angle for one set of positions: rope() of q and k,
  // and of every layer with the same base, reuse it. Two are kept (Gemma 3 alternates
  // a local and a global base).
  struct RopeTable {
    float freq_base = 0, freq_scale = 0;
    const float* freq_factors = nullptr;  // compared by address: a model's tensor
    int32_t n_rot = 0;               // rotated values per head
    std::vector<int32_t> positions;  // [n_tokens]
    std::vector<float> cos, sin;     // [n_tokens, n_rot / 2]
  };
  const RopeTable& rope_table(std::span<const int32_t> positions, int32_t n_rot, float freq_base,
                              float freq_scale, const float* freq_factors);

  // Per-part working memory of attention(), kept between calls (no allocation per step).
  struct AttentionScratch {
    std::vector<const uint8_t*> keys, values;  // [n_keys] rows of one kv head
    std::vector<float> q;                       // [heads of the item, head_dim]
    std::vector<float> scores;                  // [heads of the item, n_keys]
  };

  std::shared_ptr<ThreadPool> pool_;
  std::vector<uint8_t> quantized_input_;  // activations converted to the weight's dot-product type
  std::vector<int64_t> product_units_;    // run_products: each product's first unit, then the total
  std::vector<float> argmax_results_;     // matmul_argmax without y, for kernels that do not fold
  // Whether w can have a screen here (quant/argmax_screen.h).
  static bool can_screen(const WeightMatrix& w);
  // matmul_argmax without y of many tokens on a Q8_0 panel matrix, through its screen
  // (quant/argmax_screen.h; screened_argmax.cc). False: not done, the exact pass decides.
  bool argmax_by_screen(const WeightMatrix& w, const float* x, int64_t n_tokens, int32_t* argmax);
  // The screen of w, built on first use (null: the matrix cannot have one). A matrix is
  // known by where it lies and its shape: the model's weights stay put while their back
  // end lives.
  const quant::ArgmaxScreen* screen_of(const WeightMatrix& w);
  using ScreenKey = std::tuple<const uint8_t*, int64_t, int64_t>;
  std::map<ScreenKey, std::unique_ptr<quant::ArgmaxScreen>> screens_;
  std::vector<int8_t> screen_levels_;              // argmax_by_screen: the tokens' levels
  std::vector<quant::ScreenToken> screen_tokens_;  // and their figures
  int64_t screened_tokens_ = 0;
  std::vector<AttentionScratch> attention_scratch_;  // [n_threads]
  std::array<RopeTable, 2> rope_tables_;
  size_t next_rope_table_ = 0;
};

}  // namespace tokenmill::ops
