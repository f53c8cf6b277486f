#include "model/model.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "base/first_max.h"
#include "base/log.h"
#include "base/thread_pool.h"
#include "model/architectures.h"
#include "ops/cpu/cpu_backend.h"
#include "ops/cpu/kernel_tuner.h"
#include "quant/panel_layout.h"

namespace tokenmill::model {

namespace {

// Granite's logit scale (a multiply by its inverse, as llama.cpp), then Gemma's soft-cap.
void transform_logits(const ModelConfig& c, std::vector<float>& logits) {
  if (c.logit_scale != 1.0f) {
    const float inverse = 1.0f / c.logit_scale;
    for (float& v : logits) v *= inverse;
  }
  if (c.final_logit_softcap > 0.0f) {
    for (float& v : logits) v = c.final_logit_softcap * std::tanh(v / c.final_logit_softcap);
  }
}

}  // namespace

ops::KvShape Model::kv_shape(int32_t n_blocks, int32_t block_size, ops::KvType type) const {
  ops::KvShape shape;
  shape.type = type;
  shape.n_layers = config_.n_layers;
  shape.n_blocks = n_blocks;
  shape.block_size = block_size;
  shape.n_kv_heads = config_.n_kv_heads;
  shape.head_dim = config_.head_dim;
  return shape;
}

Status Model::check_kv_type(ops::KvType type) const {
  if (type == ops::KvType::kQ8_0 && config_.head_dim % ops::kKvQ8Block != 0) {
    return invalid_argument("a q8_0 KV cache needs a head size that is a multiple of 32; this model's is " +
                                    std::to_string(config_.head_dim));
  }
  return Status::ok_status();
}

ops::KvShape Model::kv_shape_windowed(int32_t n_blocks, int32_t n_window_slots, int32_t block_size,
                                      ops::KvType type) const {
  ops::KvShape shape = kv_shape(n_blocks, block_size, type);
  if (config_.sliding_window > 0 &&
      std::find(config_.layer_is_sliding.begin(), config_.layer_is_sliding.end(), true) != config_.layer_is_sliding.end()) {
    shape.windowed_layers = config_.layer_is_sliding;
    shape.n_window_slots = n_window_slots;
  }
  return shape;
}

Status Model::forward(const Batch& batch, ops::KvStorage& kv, std::vector<float>& logits,
                      std::vector<int32_t>* argmax, bool argmax_only) {
  const ModelConfig& c = config_;
  TM_RETURN_IF_ERROR(batch.validate(c.n_vocab, kv.shape()));
  if (kv.shape().n_layers != c.n_layers || kv.shape().n_kv_heads != c.n_kv_heads || kv.shape().head_dim != c.head_dim) {
    return invalid_argument("KV storage shape does not match the model");
  }
  const int64_t n_tokens = batch.n_tokens();
  const int64_t n_out = static_cast<int64_t>(batch.output_tokens.size());
  logits.resize(static_cast<size_t>(n_out) * c.n_vocab);
  if (argmax != nullptr) argmax->assign(static_cast<size_t>(n_out), 0);
  if (n_tokens == 0) return {};

  // hidden: [n_tokens, n_embd]
  std::vector<float> hidden(static_cast<size_t>(n_tokens) * c.n_embd);
  backend_->get_rows(weights_.token_embd, batch.tokens, hidden.data());
  if (c.embedding_scale != 1.0f) backend_->scale(hidden.data(), c.embedding_scale, hidden.size());

  run_layers(batch, kv, hidden);
  if (batch.abandoned()) return abandoned("the forward pass was abandoned");

  // Only the rows whose logits are wanted go through the final norm and the (large)
  // output projection.  selected: [n_out, n_embd]
  std::vector<float> selected(static_cast<size_t>(n_out) * c.n_embd);
  for (int64_t i = 0; i < n_out; ++i) {
    std::copy_n(hidden.data() + static_cast<size_t>(batch.output_tokens[i]) * c.n_embd, c.n_embd,
                selected.data() + i * c.n_embd);
  }
  backend_->rms_norm(selected.data(), weights_.output_norm, n_out, c.n_embd, c.rms_eps, selected.data());
  if (batch.abandon != nullptr) return project_in_slices(batch, selected.data(), n_out, logits, argmax, argmax_only);
  if (argmax != nullptr && !c.transforms_logits()) {
    backend_->matmul_argmax(weights_.output, selected.data(), n_out, argmax_only ? nullptr : logits.data(),
                            argmax->data());
    return {};
  }
  backend_->matmul(weights_.output, selected.data(), n_out, logits.data());
  transform_logits(c, logits);
  // After the cap (tanh can round distinct logits to one value: the first of them wins).
  if (argmax != nullptr) first_max_index_rows(logits.data(), n_out, c.n_vocab, argmax->data());
  return {};
}

Status Model::project_in_slices(const Batch& batch, const float* selected, int64_t n_out, std::vector<float>& logits,
                                std::vector<int32_t>* argmax, bool argmax_only) {
  const ops::WeightMatrix& w = weights_.output;
  const int64_t n_vocab = w.n_rows;
  const bool fold = argmax != nullptr && !config_.transforms_logits();
  // Slices start on panel boundaries, so that a panel-packed matrix is cut between panels.
  const int64_t slice_rows =
      std::max<int64_t>(1, (n_vocab / kOutputSlices + quant::kPanelRows - 1) / quant::kPanelRows) * quant::kPanelRows;
  std::vector<float>& part = slice_logits_;  // kept between passes: megabytes a step
  part.resize(static_cast<size_t>(n_out * slice_rows));
  std::vector<int32_t> part_max(static_cast<size_t>(n_out));
  std::vector<float> best(static_cast<size_t>(n_out), -std::numeric_limits<float>::infinity());
  for (int64_t first = 0; first < n_vocab; first += slice_rows) {
    if (batch.abandoned()) return abandoned("the forward pass was abandoned");
    const int64_t rows = std::min(slice_rows, n_vocab - first);
    ops::WeightMatrix slice = w;
    slice.data = w.data + static_cast<size_t>(first) * w.row_bytes;
    slice.n_rows = rows;
    if (fold) {
      backend_->matmul_argmax(slice, selected, n_out, part.data(), part_max.data());
    } else {
      backend_->matmul(slice, selected, n_out, part.data());
    }
    for (int64_t t = 0; t < n_out; ++t) {
      const float* row = part.data() + t * rows;
      if (!(fold && argmax_only)) std::copy_n(row, rows, logits.data() + t * n_vocab + first);
      // Strictly greater: on a tie the earlier slice's row keeps the pick (first max).
      if (fold && row[part_max[t]] > best[t]) {
        best[t] = row[part_max[t]];
        (*argmax)[t] = static_cast<int32_t>(first + part_max[t]);
      }
    }
  }
  if (fold) return {};
  transform_logits(config_, logits);
  if (argmax != nullptr) first_max_index_rows(logits.data(), n_out, n_vocab, argmax->data());
  return {};
}

void Model::set_matmul_observer(ops::MatmulObserver observer) {
  matmul_observer_ = std::move(observer);
  rewrap_backend();
}

void Model::set_op_times(ops::OpTimes* times) {
  op_times_ = times;
  rewrap_backend();
}

void Model::rewrap_backend() {
  while (auto* wrapper = dynamic_cast<ops::ForwardingBackend*>(backend_.get())) backend_ = wrapper->release_inner();
  if (matmul_observer_) backend_ = std::make_unique<ops::ObservingBackend>(std::move(backend_), matmul_observer_);
  if (op_times_ != nullptr) backend_ = std::make_unique<ops::TimingBackend>(std::move(backend_), op_times_);
}

Result<std::unique_ptr<Model>> load_model(const std::string& path, const LoadOptions& options) {
  auto file = gguf::File::open(path);
  if (!file.ok()) return file.status();
  return load_model(std::make_shared<const gguf::File>(std::move(file).value()), options);
}

Result<std::unique_ptr<Model>> load_model(std::shared_ptr<const gguf::File> file, const LoadOptions& options) {
  auto config = read_model_config(*file);
  if (!config.ok()) return config.status();
  if (config->longrope) {
    const int32_t context = options.max_context > 0 ? options.max_context : config->context_length;
    config->rope_long_factors = context > config->rope_original_context;
  }
  auto weights = bind_weights(*file, *config);
  if (!weights.ok()) return weights.status();
  if (options.prefetch) file->prefetch();
  if (options.repack) repack_for_kernels(*weights, *file);
  const int n_threads = options.n_threads > 0 ? options.n_threads : default_thread_count();
  auto backend = options.thread_pool ? std::make_unique<ops::CpuBackend>(options.thread_pool)
                                     : std::make_unique<ops::CpuBackend>(n_threads);
  if (options.repack && options.tune) {
    const ops::TuningReport tuning = ops::tune_kernels(*backend, decode_matrices(*weights), /*force_timing=*/false);
    log_info(tuning.summary());
  }
  switch (config->architecture) {
    case Architecture::kGemma2:
    case Architecture::kGemma3:
      return make_gemma3(std::move(file), std::move(config).value(), std::move(weights).value(), std::move(backend));
    case Architecture::kLlama:
    case Architecture::kQwen2:
    case Architecture::kQwen3:
    case Architecture::kQwen3Moe:
    case Architecture::kPhi3:
    case Architecture::kSmolLM3:
    case Architecture::kOlmo2:
    case Architecture::kGranite:
    case Architecture::kGptOss:
      return make_llama(std::move(file), std::move(config).value(), std::move(weights).value(), std::move(backend));
  }
  return internal_error("unreachable architecture");
}

}  // namespace tokenmill::model
