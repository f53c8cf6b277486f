// A loaded model: its configuration, its weights (inside the file's memory map) and the
// forward pass of its architecture over a flattened batch (batch.h).
//
// Thread-safety: forward() is called by one thread at a time (the engine thread).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "base/status.h"
#include "gguf/gguf_file.h"
#include "model/batch.h"
#include "model/model_config.h"
#include "model/weights.h"
#include "ops/backend.h"
#include "ops/kv_storage.h"
#include "ops/observing_backend.h"
#include "ops/timing_backend.h"

namespace tokenmill::model {

struct LoadOptions {
  int n_threads = 0;        // 0: every online CPU
  bool prefetch = true;     // read all weights into memory at load
  bool repack = true;       // repack_for_kernels (weights.h); off: the file's layout everywhere
  // Choose this CPU's kernel variants at load (ops/cpu/kernel_tuner.h: timed once, then
  // cached); off: the defaults. The same bits either way.
  bool tune = true;
  // The longest sequence (prompt + generated) this model will run; 0: its trained
  // context. LongRoPE models take their long factors when it exceeds the original context
  // (as llama.cpp decides by its context size).
  int32_t max_context = 0;
  // When set, the model computes on these threads (n_threads is ignored): a draft model
  // shares its target's (ops::Backend::shared_thread_pool).
  std::shared_ptr<ThreadPool> thread_pool;
};

class Model {
 public:
  virtual ~Model() = default;

  const ModelConfig& config() const { return config_; }
  const ModelWeights& weights() const { return weights_; }
  const gguf::File& file() const { return *file_; }
  std::shared_ptr<const gguf::File> shared_file() const { return file_; }
  ops::Backend& backend() { return *backend_; }
  // Memory the back end may add beside the weights as the model runs (for budgets).
  int64_t backend_extra_bytes() const { return backend_->argmax_extra_bytes(weights_.output); }

  // The cache shape this model needs for n_blocks blocks of block_size positions.
  ops::KvShape kv_shape(int32_t n_blocks, int32_t block_size = 16, ops::KvType type = ops::KvType::kF16) const;
  // The same with the sliding-window layers' keys and values in n_window_slots slots
  // (ops/kv_storage.h): for a cache that keeps only their window. As kv_shape() for a
  // model without such layers.
  ops::KvShape kv_shape_windowed(int32_t n_blocks, int32_t n_window_slots, int32_t block_size = 16,
                                 ops::KvType type = ops::KvType::kF16) const;
  // Whether this model's cache can be stored as `type` (Q8_0: head_dim a multiple of 32).
  Status check_kv_type(ops::KvType type) const;

  // Runs one forward pass. Keys and values of every batch token are written into kv at
  // the slots its block table names; logits receives [output_tokens.size(), n_vocab].
  // With argmax, (*argmax)[i] = first_max_index of logits row i (base/first_max.h), the
  // greedy pick, found by the back end while the logits are still in cache; with
  // argmax_only as well, the caller needs nothing else and logits' contents are left
  // unspecified (back ends that find the pick in cache do not store the logits at all:
  // 16 MB a step for 16 sequences of a 262,144-token vocabulary).
  Status forward(const Batch& batch, ops::KvStorage& kv, std::vector<float>& logits,
                 std::vector<int32_t>* argmax = nullptr, bool argmax_only = false);

  // Bytes of expert weights (routers included) the last forward pass read: each expert a
  // step's tokens chose, once, however many chose it. 0 for a dense model.
  int64_t expert_bytes_last_forward() const { return expert_bytes_last_forward_; }

  // Shows every matmul's input to `observer` from now on (calibration: tokenmill
  // imatrix); an empty observer removes it. The back end is wrapped only while an
  // observer is set, so inference without one is unchanged.
  void set_matmul_observer(ops::MatmulObserver observer);

  // Adds the wall time of every back-end operation to *times from now on (tokenmill
  // bench --profile); nullptr stops. As with the observer, the back end is wrapped only
  // while this is set.
  void set_op_times(ops::OpTimes* times);

  // For the architecture files, which inherit it (`using Model::Model;`). Model itself is
  // abstract; everyone else gets a model from load_model().
  Model(std::shared_ptr<const gguf::File> file, ModelConfig config, ModelWeights weights,
        std::unique_ptr<ops::Backend> backend)
      : file_(std::move(file)), config_(std::move(config)), weights_(std::move(weights)), backend_(std::move(backend)) {}

 protected:
  // The architecture's layers: hidden [n_tokens, n_embd] in, hidden out.
  virtual void run_layers(const Batch& batch, ops::KvStorage& kv, std::vector<float>& hidden) = 0;

  std::shared_ptr<const gguf::File> file_;
  ModelConfig config_;
  ModelWeights weights_;
  std::unique_ptr<ops::Backend> backend_;
  int64_t expert_bytes_last_forward_ = 0;  // set by run_layers

 private:
  // forward()'s output projection for an abandonable batch: kOutputSlices slices of the
  // vocabulary, batch.abandon checked before each. A row's logits do not depend on the
  // other rows of the matrix, so the logits and picks are those of the one-pass path.
  static constexpr int64_t kOutputSlices = 8;
  std::vector<float> slice_logits_;  // project_in_slices' [n_out, slice] results
  Status project_in_slices(const Batch& batch, const float* selected, int64_t n_out, std::vector<float>& logits,
                           std::vector<int32_t>* argmax, bool argmax_only);

  // Unwraps backend_ down to the real back end and wraps it again in what is set.
  void rewrap_backend();

  ops::MatmulObserver matmul_observer_;
  ops::OpTimes* op_times_ = nullptr;
};

// Opens, validates and binds a model file; picks the architecture from its metadata.
Result<std::unique_ptr<Model>> load_model(const std::string& path, const LoadOptions& options);
Result<std::unique_ptr<Model>> load_model(std::shared_ptr<const gguf::File> file, const LoadOptions& options);

}  // namespace tokenmill::model
