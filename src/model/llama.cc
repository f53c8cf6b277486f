// Llama 2/3 and Mistral (and Qwen 2 and 3, whose q/k/v biases, per-head q/k norms and
// NeoX rotary pairs are picked up from the weights and the config; SmolLM3, whose NoPE
// layers the config marks; Granite, whose multipliers the config holds; OLMo 2, whose
// norms come after attention and FFN instead of before): blocks with a SiLU-gated FFN.
#include <algorithm>

#include "model/architectures.h"
#include "model/layer_steps.h"

namespace tokenmill::model {

namespace {

class Llama final : public Model {
 public:
  using Model::Model;

 protected:
  void run_layers(const Batch& batch, ops::KvStorage& kv, std::vector<float>& hidden) override {
    const ModelConfig& c = config_;
    ops::Backend& be = *backend_;
    const int64_t n = batch.n_tokens();
    scratch_.resize(c, n);
    expert_bytes_last_forward_ = 0;
    for (int32_t l = 0; l < c.n_layers; ++l) {
      const LayerWeights& w = weights_.layers[l];
      if (batch.abandoned()) return;
      // attention: norm -> attention -> residual
      pre_norm(hidden, w.attn_norm, n);
      attention_step(be, c, w, l, batch, kv, scratch_, weights_.rope_freqs);
      add_residual(hidden, w.post_attn_norm, n);
      // feed-forward: norm -> SiLU-gated FFN -> residual
      pre_norm(hidden, w.ffn_norm, n);
      if (c.n_expert > 0) {
        expert_bytes_last_forward_ += moe_ffn_step(be, c, w, n, scratch_);
      } else {
        gated_ffn_step(be, c, w, FfnActivation::kSilu, n, scratch_);
      }
      add_residual(hidden, w.post_ffn_norm, n);
    }
  }

 private:
  // hidden -> scratch_.normed: RMS-normed where the block has the norm, else as it is.
  void pre_norm(const std::vector<float>& hidden, const float* norm, int64_t n) {
    if (norm != nullptr) {
      backend_->rms_norm(hidden.data(), norm, n, config_.n_embd, config_.rms_eps, scratch_.normed.data());
    } else {
      std::copy_n(hidden.data(), n * config_.n_embd, scratch_.normed.data());
    }
  }
  // hidden += residual_scale * post_norm(scratch_.out) (each step only where it applies).
  void add_residual(std::vector<float>& hidden, const float* post_norm, int64_t n) {
    const int64_t n_values = n * config_.n_embd;
    float* out = scratch_.out.data();
    if (post_norm != nullptr) backend_->rms_norm(out, post_norm, n, config_.n_embd, config_.rms_eps, out);
    if (config_.residual_scale != 1.0f) backend_->scale(out, config_.residual_scale, n_values);
    backend_->add(hidden.data(), out, n_values, hidden.data());
  }

  LayerScratch scratch_;
};

}  // namespace

std::unique_ptr<Model> make_llama(std::shared_ptr<const gguf::File> file, ModelConfig config, ModelWeights weights,
                                  std::unique_ptr<ops::Backend> backend) {
  return std::make_unique<Llama>(std::move(file), std::move(config), std::move(weights), std::move(backend));
}

}  // namespace tokenmill::model
