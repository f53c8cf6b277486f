// Llama 2/3 and Mistral (and Qwen 2 and 3, whose q/k/v biases, per-head q/k norms and
// NeoX rotary pairs are picked up from the weights and the config): pre-norm blocks with
// a SiLU-gated FFN.
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
    const int64_t n_values = n * c.n_embd;
    scratch_.resize(c, n);
    expert_bytes_last_forward_ = 0;
    for (int32_t l = 0; l < c.n_layers; ++l) {
      const LayerWeights& w = weights_.layers[l];
      if (batch.abandoned()) return;
      // attention: norm -> attention -> residual
      be.rms_norm(hidden.data(), w.attn_norm, n, c.n_embd, c.rms_eps, scratch_.normed.data());
      attention_step(be, c, w, l, batch, kv, scratch_, weights_.rope_freqs);
      be.add(hidden.data(), scratch_.out.data(), n_values, hidden.data());
      // feed-forward: norm -> SiLU-gated FFN -> residual
      be.rms_norm(hidden.data(), w.ffn_norm, n, c.n_embd, c.rms_eps, scratch_.normed.data());
      if (c.n_expert > 0) {
        expert_bytes_last_forward_ += moe_ffn_step(be, c, w, n, scratch_);
      } else {
        gated_ffn_step(be, c, w, FfnActivation::kSilu, n, scratch_);
      }
      be.add(hidden.data(), scratch_.out.data(), n_values, hidden.data());
    }
  }

 private:
  LayerScratch scratch_;
};

}  // namespace

std::unique_ptr<Model> make_llama(std::shared_ptr<const gguf::File> file, ModelConfig config, ModelWeights weights,
                                  std::unique_ptr<ops::Backend> backend) {
  return std::make_unique<Llama>(std::move(file), std::move(config), std::move(weights), std::move(backend));
}

}  // namespace tokenmill::model
