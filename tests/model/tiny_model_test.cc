// Model::forward on tiny random models (tiny_model.h): against a plain float reference
// written here, and against itself under batching, chunking and paging; plus batch
// validation and load errors. Fast enough to run on every change.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>
#include <string>
#include <vector>

#include "model/model.h"
#include "model/tiny_model.h"

// The test glob (tests/CMakeLists.txt) compiles only *_test.cc files, so the helper's
// definitions come in through this file.
#include "model/tiny_model.cc"  // NOLINT(bugprone-suspicious-include)

namespace tokenmill::model {
namespace {

using gguf::TensorType;
using testing::TinyModelSpec;

// ---------------------------------------------------------------------------------------
// The reference: every weight dequantized to float, plain loops in double, the whole
// sequence recomputed at once with no cache. Hyperparameters come from the spec, not from
// the engine's ModelConfig, so a misread config shows up as a mismatch.

struct Matrix {
  std::vector<float> values;  // [n_rows, n_cols]
  int64_t n_rows = 0;
  int64_t n_cols = 0;
};

class ReferenceModel {
 public:
  ReferenceModel(const gguf::File& file, const TinyModelSpec& spec) : file_(file), s_(spec) {}

  // Logits [n_vocab] of the last token of `tokens` (positions 0, 1, ...).
  std::vector<double> last_logits(const std::vector<int32_t>& tokens) const {
    const bool gemma = s_.architecture == "gemma3";
    const int64_t n = static_cast<int64_t>(tokens.size());
    const int64_t d = s_.n_embd;
    const Matrix embd = matrix("token_embd.weight");
    // x: [n, n_embd]
    std::vector<double> x(n * d);
    const double embd_scale = gemma ? std::sqrt(static_cast<double>(d)) : 1.0;
    for (int64_t t = 0; t < n; ++t) {
      for (int64_t i = 0; i < d; ++i) x[t * d + i] = embd.values[tokens[t] * d + i] * embd_scale;
    }
    for (int32_t l = 0; l < s_.n_layers; ++l) {
      const std::string p = "blk." + std::to_string(l) + ".";
      std::vector<double> h = rms_norm(x, vec(p + "attn_norm.weight"));
      std::vector<double> attn_out = attention(l, h);
      if (gemma) attn_out = rms_norm(attn_out, vec(p + "post_attention_norm.weight"));
      for (size_t i = 0; i < x.size(); ++i) x[i] += attn_out[i];

      h = rms_norm(x, vec(p + "ffn_norm.weight"));
      std::vector<double> gate = matmul(matrix(p + "ffn_gate.weight"), h);
      const std::vector<double> up = matmul(matrix(p + "ffn_up.weight"), h);
      for (size_t i = 0; i < gate.size(); ++i) gate[i] = (gemma ? gelu_tanh(gate[i]) : silu(gate[i])) * up[i];
      std::vector<double> ffn_out = matmul(matrix(p + "ffn_down.weight"), gate);
      if (gemma) ffn_out = rms_norm(ffn_out, vec(p + "post_ffw_norm.weight"));
      for (size_t i = 0; i < x.size(); ++i) x[i] += ffn_out[i];
    }
    std::vector<double> last(x.end() - d, x.end());
    last = rms_norm(last, vec("output_norm.weight"));
    std::vector<double> logits = matmul(matrix(s_.tied_output ? "token_embd.weight" : "output.weight"), last);
    if (s_.final_logit_softcap > 0.0f) {
      for (double& v : logits) v = s_.final_logit_softcap * std::tanh(v / s_.final_logit_softcap);
    }
    return logits;
  }

 private:
  Matrix matrix(const std::string& name) const {
    const gguf::TensorInfo* info = file_.find_tensor(name);
    return {testing::dequantize_tensor(file_, name), info->n_rows(), info->shape[0]};
  }
  std::vector<double> vec(const std::string& name) const {
    std::vector<float> v = testing::dequantize_tensor(file_, name);
    return {v.begin(), v.end()};
  }

  // y[t, r] = sum_k w[r, k] x[t, k]
  static std::vector<double> matmul(const Matrix& w, const std::vector<double>& x) {
    const int64_t n = static_cast<int64_t>(x.size()) / w.n_cols;
    std::vector<double> y(n * w.n_rows);
    for (int64_t t = 0; t < n; ++t) {
      for (int64_t r = 0; r < w.n_rows; ++r) {
        double acc = 0.0;
        for (int64_t k = 0; k < w.n_cols; ++k) acc += w.values[r * w.n_cols + k] * x[t * w.n_cols + k];
        y[t * w.n_rows + r] = acc;
      }
    }
    return y;
  }

  // Row-wise over rows of weight.size() values.
  std::vector<double> rms_norm(const std::vector<double>& x, const std::vector<double>& weight) const {
    const size_t n = weight.size();
    std::vector<double> y(x.size());
    for (size_t r = 0; r < x.size() / n; ++r) {
      double sum = 0.0;
      for (size_t i = 0; i < n; ++i) sum += x[r * n + i] * x[r * n + i];
      const double scale = 1.0 / std::sqrt(sum / static_cast<double>(n) + s_.rms_eps);
      for (size_t i = 0; i < n; ++i) y[r * n + i] = x[r * n + i] * scale * weight[i];
    }
    return y;
  }

  static double gelu_tanh(double x) {
    return 0.5 * x * (1.0 + std::tanh(std::sqrt(2.0 / M_PI) * (x + 0.044715 * x * x * x)));
  }
  static double silu(double x) { return x / (1.0 + std::exp(-x)); }

  bool layer_is_sliding(int32_t l) const {
    return s_.architecture == "gemma3" && s_.sliding_window > 0 &&
           l % s_.sliding_window_pattern < s_.sliding_window_pattern - 1;
  }

  // Rotates head vectors [n_heads, head_dim] of the token at position pos in place.
  void rope(double* v, int32_t n_heads, int32_t pos, double freq_base) const {
    const bool neox = s_.architecture != "llama";
    const int32_t hd = s_.head_dim;
    for (int32_t h = 0; h < n_heads; ++h) {
      double* x = v + h * hd;
      for (int32_t i = 0; i < hd / 2; ++i) {
        const double angle = pos * std::pow(freq_base, -2.0 * i / hd);
        const int32_t a = neox ? i : 2 * i;
        const int32_t b = neox ? i + hd / 2 : 2 * i + 1;
        const double x0 = x[a], x1 = x[b];
        x[a] = x0 * std::cos(angle) - x1 * std::sin(angle);
        x[b] = x0 * std::sin(angle) + x1 * std::cos(angle);
      }
    }
  }

  // h: [n, n_embd] normed input -> [n, n_embd] after the output projection.
  std::vector<double> attention(int32_t l, const std::vector<double>& h) const {
    const std::string p = "blk." + std::to_string(l) + ".";
    const int32_t hd = s_.head_dim;
    const int64_t q_dim = static_cast<int64_t>(s_.n_heads) * hd;
    const int64_t kv_dim = static_cast<int64_t>(s_.n_kv_heads) * hd;
    std::vector<double> q = matmul(matrix(p + "attn_q.weight"), h);  // [n, q_dim]
    std::vector<double> k = matmul(matrix(p + "attn_k.weight"), h);  // [n, kv_dim]
    std::vector<double> v = matmul(matrix(p + "attn_v.weight"), h);  // [n, kv_dim]
    const int64_t n = static_cast<int64_t>(q.size()) / q_dim;
    if (s_.architecture == "qwen2") {
      const std::vector<double> bq = vec(p + "attn_q.bias"), bk = vec(p + "attn_k.bias"), bv = vec(p + "attn_v.bias");
      for (int64_t t = 0; t < n; ++t) {
        for (int64_t i = 0; i < q_dim; ++i) q[t * q_dim + i] += bq[i];
        for (int64_t i = 0; i < kv_dim; ++i) k[t * kv_dim + i] += bk[i], v[t * kv_dim + i] += bv[i];
      }
    }
    if (s_.architecture == "gemma3") {
      q = rms_norm(q, vec(p + "attn_q_norm.weight"));
      k = rms_norm(k, vec(p + "attn_k_norm.weight"));
    }
    const bool sliding = layer_is_sliding(l);
    const double freq_base = sliding ? s_.rope_freq_base_swa : s_.rope_freq_base;
    for (int64_t t = 0; t < n; ++t) {
      rope(&q[t * q_dim], s_.n_heads, static_cast<int32_t>(t), freq_base);
      rope(&k[t * kv_dim], s_.n_kv_heads, static_cast<int32_t>(t), freq_base);
    }

    const int32_t group = s_.n_heads / s_.n_kv_heads;
    const double scale = 1.0 / std::sqrt(static_cast<double>(hd));
    std::vector<double> out(n * q_dim, 0.0);
    for (int64_t t = 0; t < n; ++t) {
      const int64_t first = sliding ? std::max<int64_t>(0, t - s_.sliding_window + 1) : 0;
      for (int32_t head = 0; head < s_.n_heads; ++head) {
        const int32_t kv_head = head / group;
        std::vector<double> scores;
        for (int64_t j = first; j <= t; ++j) {
          double dot = 0.0;
          for (int32_t i = 0; i < hd; ++i) dot += q[t * q_dim + head * hd + i] * k[j * kv_dim + kv_head * hd + i];
          scores.push_back(dot * scale);
        }
        const double max_score = *std::max_element(scores.begin(), scores.end());
        double sum = 0.0;
        for (double& sc : scores) sum += (sc = std::exp(sc - max_score));
        for (int64_t j = first; j <= t; ++j) {
          const double weight = scores[j - first] / sum;
          for (int32_t i = 0; i < hd; ++i) out[t * q_dim + head * hd + i] += weight * v[j * kv_dim + kv_head * hd + i];
        }
      }
    }
    return matmul(matrix(p + "attn_output.weight"), out);
  }

  const gguf::File& file_;
  TinyModelSpec s_;
};

// ---------------------------------------------------------------------------------------
// Helpers.

std::unique_ptr<Model> load(const TinyModelSpec& spec) {
  auto model = testing::load_tiny_model(spec);
  EXPECT_TRUE(model.ok()) << model.status().to_string();
  return model.ok() ? std::move(model).value() : nullptr;
}

std::vector<int32_t> random_tokens(size_t n, int32_t n_vocab, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int32_t> dist(0, n_vocab - 1);
  std::vector<int32_t> tokens(n);
  for (int32_t& t : tokens) t = dist(rng);
  return tokens;
}

// Block size of the caches below: small, so every test sequence spans several blocks.
constexpr int32_t kBlockSize = 4;
constexpr int32_t kNumBlocks = 32;

int32_t n_blocks_for(size_t n_positions) { return static_cast<int32_t>((n_positions + kBlockSize - 1) / kBlockSize); }

std::vector<int32_t> iota_table(size_t n_positions) {
  std::vector<int32_t> table(n_blocks_for(n_positions));
  std::iota(table.begin(), table.end(), 0);
  return table;
}

// Last-token logits of one sequence run as one batch from position 0.
std::vector<float> forward_alone(Model& model, const std::vector<int32_t>& tokens, std::vector<int32_t> table) {
  ops::KvStorage kv(model.kv_shape(kNumBlocks, kBlockSize));
  Batch batch;
  batch.add_sequence(tokens, 0, std::move(table), true);
  std::vector<float> logits;
  Status st = model.forward(batch, kv, logits);
  EXPECT_TRUE(st.ok()) << st.to_string();
  return logits;
}

// Last-token logits of one sequence fed in chunks of chunk_size tokens, each a forward pass.
std::vector<float> forward_in_chunks(Model& model, const std::vector<int32_t>& tokens, size_t chunk_size) {
  ops::KvStorage kv(model.kv_shape(kNumBlocks, kBlockSize));
  const std::vector<int32_t> table = iota_table(tokens.size());
  std::vector<float> logits;
  for (size_t begin = 0; begin < tokens.size(); begin += chunk_size) {
    const size_t end = std::min(tokens.size(), begin + chunk_size);
    Batch batch;
    batch.add_sequence({tokens.begin() + begin, tokens.begin() + end}, static_cast<int32_t>(begin), table,
                       end == tokens.size());
    Status st = model.forward(batch, kv, logits);
    EXPECT_TRUE(st.ok()) << st.to_string();
  }
  return logits;
}

float max_abs(const std::vector<float>& v) {
  float m = 0.0f;
  for (float x : v) m = std::max(m, std::fabs(x));
  return m;
}

float max_abs_diff(const float* a, const float* b, size_t n) {
  float m = 0.0f;
  for (size_t i = 0; i < n; ++i) m = std::max(m, std::fabs(a[i] - b[i]));
  return m;
}

bool bit_identical(const float* a, const float* b, size_t n) { return std::memcmp(a, b, n * sizeof(float)) == 0; }

struct NamedSpec {
  const char* name;
  TinyModelSpec spec;
  // Largest |engine - reference| over the logits, relative to max |reference logit|.
  // The engine rounds q, K, V and attention probabilities to F16, looks GELU up in an
  // F16 table, and converts activations to the weight's dot-product type (Q8_0 / Q8_K,
  // ~0.4% per element; F16); the reference rounds nothing. Measured errors are about a
  // third of these bounds.
  float tolerance;
};

std::vector<NamedSpec> all_specs() {
  TinyModelSpec gemma_f32 = testing::tiny_gemma3_spec();
  gemma_f32.matrix_types = {TensorType::kF32};
  TinyModelSpec llama_f32 = testing::tiny_llama_spec();
  llama_f32.matrix_types = {TensorType::kF32};
  return {
      {"gemma3_f32", gemma_f32, kToleranceFloatWeights},
      {"llama_f32", llama_f32, kToleranceFloatWeights},
      {"gemma3_mixed", testing::tiny_gemma3_spec(), kToleranceQuantizedWeights},
      {"llama_mixed", testing::tiny_llama_spec(), kToleranceQuantizedWeights},
      {"qwen2_mixed", testing::tiny_qwen2_spec(), kToleranceQuantizedWeights},
      {"llama_k_quants", testing::tiny_llama_k_quant_spec(), kToleranceQuantizedWeights},
  };
}

}  // namespace
}  // namespace tokenmill::model
