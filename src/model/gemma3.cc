// Gemma 3: pre- and post-norms around both halves of every block, per-head q/k norms,
// sliding-window attention on five of every six layers, GELU-tanh gated FFN, scaled
// input embeddings and tied output embeddings. Gemma 2 is the same block without the q/k
// norms, with every other layer sliding and attention scores soft-capped.
#include "model/architectures.h"
#include "model/layer_steps.h"

namespace tokenmill::model {

namespace {

class Gemma3 final : public Model {
 public:
  using Model::Model;

 protected:
  void run_layers(const Batch& batch, ops::KvStorage& kv, std::vector<float>& hidden) override {
    const ModelConfig& c = config_;
    ops::Backend& be = *backend_;
    const int64_t n = batch.n_tokens();
    const int64_t n_values = n * c.n_embd;
    scratch_.resize(c, n);
    for (int32_t l = 0; l < c.n_layers; ++l) {
      const LayerWeights& w = weights_.layers[l];
      if (batch.abandoned()) return;
      // attention: norm -> attention -> post-norm -> residual
      be.rms_norm(hidden.data(), w.attn_norm, n, c.n_embd, c.rms_eps, scratch_.normed.data());
      attention_step(be, c, w, l, batch, kv, scratch_);
      be.rms_norm(scratch_.out.data(), w.post_attn_norm, n, c.n_embd, c.rms_eps, scratch_.out.data());
      be.add(hidden.data(), scratch_.out.data(), n_values, hidden.data());
      // feed-forward: norm -> GELU-gated FFN -> post-norm -> residual
      be.rms_norm(hidden.data(), w.ffn_norm, n, c.n_embd, c.rms_eps, scratch_.normed.data());
      gated_ffn_step(be, c, w, FfnActivation::kGeluTanh, n, scratch_);
      be.rms_norm(scratch_.out.data(), w.post_ffn_norm, n, c.n_embd, c.rms_eps, scratch_.out.data());
      be.add(hidden.data(), scratch_.out.data(), n_values, hidden.data());
    }
  }

 private:
  LayerScratch scratch_;
};

}  // namespace

std::unique_ptr<Model> make_gemma3(std::shared_ptr<const gguf::File> file, ModelConfig config, ModelWeights weights,
                                   std::unique_ptr<ops::Backend> backend) {
  return std::make_unique<Gemma3>(std::move(file), std::move(config), std::move(weights), std::move(backend));
}

}  // namespace tokenmill::model
