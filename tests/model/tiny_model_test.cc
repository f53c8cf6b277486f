// Model::forward on tiny random models (tiny_model.h): against a plain float reference
// written here, and against itself under batching, chunking and paging; plus batch
// validation and load errors. Fast enough to run on every change.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <numbers>
#include <numeric>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "model/model.h"
#include "model/tiny_model.h"

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
  ReferenceModel(const gguf::File& file, const TinyModelSpec& spec) : file_(file), s_(spec) {
    if (spec.rope_freqs) rope_freqs_ = vec("rope_freqs.weight");
  }

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
    return 0.5 * x * (1.0 + std::tanh(std::sqrt(2.0 / std::numbers::pi) * (x + 0.044715 * x * x * x)));
  }
  static double silu(double x) { return x / (1.0 + std::exp(-x)); }

  bool layer_is_sliding(int32_t l) const {
    return s_.architecture == "gemma3" && s_.sliding_window > 0 &&
           l % s_.sliding_window_pattern < s_.sliding_window_pattern - 1;
  }

  // Rotates head vectors [n_heads, head_dim] of the token at position pos in place: the
  // first rope.dimension_count values of each (all without the key).
  void rope(double* v, int32_t n_heads, int32_t pos, double freq_base) const {
    const bool neox = s_.architecture != "llama";
    const int32_t hd = s_.head_dim;
    const int32_t n_rot = s_.rope_dimension_count > 0 ? s_.rope_dimension_count : hd;
    for (int32_t h = 0; h < n_heads; ++h) {
      double* x = v + h * hd;
      for (int32_t i = 0; i < n_rot / 2; ++i) {
        const double factor = rope_freqs_.empty() ? 1.0 : rope_freqs_[i];
        const double angle = pos * std::pow(freq_base, -2.0 * i / n_rot) / factor;
        const int32_t a = neox ? i : 2 * i;
        const int32_t b = neox ? i + n_rot / 2 : 2 * i + 1;
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
  std::vector<double> rope_freqs_;  // empty: every pair's divisor is 1
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
std::vector<float> forward_in_chunks(Model& model, const std::vector<int32_t>& tokens, size_t chunk_size,
                                     ops::KvType kv_type = ops::KvType::kF16) {
  ops::KvStorage kv(model.kv_shape(kNumBlocks, kBlockSize, kv_type));
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

// See NamedSpec::tolerance.
// F32 weights: only the F16 attention and GELU roundings remain (measured <= 2e-4). Tight
// enough to catch swapped local/global rope bases (2.5e-2) or a window off by one (0.1).
constexpr float kToleranceFloatWeights = 1e-3f;
// Quantized weights add the activation conversion to Q8_0 / Q8_K / F16 (measured
// <= 1.5e-2, the K-quant model's Q8_K blocks of 256 being the coarsest).
constexpr float kToleranceQuantizedWeights = 4e-2f;
// Runs of the same tokens cut into different forward passes (chunks, batches) do the
// same arithmetic per token in the current kernels and agree bit for bit; this bound,
// relative to max |logit|, leaves room for batched kernels that sum in another order.
constexpr float kChunkingTolerance = 1e-5f;

struct NamedSpec {
  const char* name;
  TinyModelSpec spec;
  // Largest |engine - reference| over the logits, relative to max |reference logit|.
  // The engine rounds q, K, V and attention probabilities to F16, looks GELU up in an
  // F16 table, and converts activations to the weight's dot-product type (Q8_0 / Q8_K,
  // ~0.4% per element; F16); the reference rounds nothing.
  float tolerance;
};

std::vector<NamedSpec> all_specs() {
  TinyModelSpec gemma_f32 = testing::tiny_gemma3_spec();
  gemma_f32.matrix_types = {TensorType::kF32};
  TinyModelSpec llama_f32 = testing::tiny_llama_spec();
  llama_f32.matrix_types = {TensorType::kF32};
  TinyModelSpec llama3_f32 = llama_f32;
  llama3_f32.rope_freqs = true;
  llama3_f32.rope_freq_base = 500000.0f;
  // Partial rotary (Phi-4-mini's rope.dimension_count of 3/4 of the head), in both pairings.
  TinyModelSpec llama_partial_f32 = llama_f32;
  llama_partial_f32.rope_dimension_count = llama_f32.head_dim * 3 / 4;
  TinyModelSpec qwen2_partial_f32 = testing::tiny_qwen2_spec();
  qwen2_partial_f32.matrix_types = {TensorType::kF32};
  qwen2_partial_f32.rope_dimension_count = qwen2_partial_f32.head_dim / 2;
  return {
      {"llama_partial_rotary_f32", llama_partial_f32, kToleranceFloatWeights},
      {"qwen2_partial_rotary_f32", qwen2_partial_f32, kToleranceFloatWeights},
      {"gemma3_f32", gemma_f32, kToleranceFloatWeights},
      {"llama_f32", llama_f32, kToleranceFloatWeights},
      {"llama3_rope_freqs_f32", llama3_f32, kToleranceFloatWeights},
      {"gemma3_mixed", testing::tiny_gemma3_spec(), kToleranceQuantizedWeights},
      {"llama_mixed", testing::tiny_llama_spec(), kToleranceQuantizedWeights},
      {"qwen2_mixed", testing::tiny_qwen2_spec(), kToleranceQuantizedWeights},
      {"llama_k_quants", testing::tiny_llama_k_quant_spec(), kToleranceQuantizedWeights},
  };
}

class TinyModelTest : public ::testing::TestWithParam<NamedSpec> {};

INSTANTIATE_TEST_SUITE_P(Architectures, TinyModelTest, ::testing::ValuesIn(all_specs()),
                         [](const ::testing::TestParamInfo<NamedSpec>& info) { return std::string(info.param.name); });

TEST_P(TinyModelTest, LastLogitsMatchFloatReference) {
  const NamedSpec& param = GetParam();
  std::unique_ptr<Model> model = load(param.spec);
  ASSERT_NE(model, nullptr);
  ReferenceModel reference(model->file(), param.spec);
  float worst_relative = 0.0f;
  for (size_t n_tokens : {1, 2, 6, 11}) {
    const std::vector<int32_t> tokens = random_tokens(n_tokens, param.spec.n_vocab, 100 + n_tokens);
    const std::vector<float> logits = forward_alone(*model, tokens, iota_table(n_tokens));
    const std::vector<double> expected = reference.last_logits(tokens);
    ASSERT_EQ(logits.size(), expected.size());
    double scale = 0.0, worst = 0.0;
    size_t worst_index = 0;
    for (size_t i = 0; i < expected.size(); ++i) {
      scale = std::max(scale, std::fabs(expected[i]));
      if (std::fabs(logits[i] - expected[i]) > worst) worst = std::fabs(logits[i] - expected[i]), worst_index = i;
    }
    const float relative = static_cast<float>(worst / scale);
    worst_relative = std::max(worst_relative, relative);
    EXPECT_LE(relative, param.tolerance) << n_tokens << " tokens: logit " << worst_index << " is "
                                         << logits[worst_index] << ", reference " << expected[worst_index]
                                         << " (max |logit| " << scale << ")";
  }
  std::printf("[ %s ] worst |engine - reference| / max|logit| = %.2e (tolerance %.0e)\n", param.name, worst_relative,
              param.tolerance);
}

TEST_P(TinyModelTest, BatchOfThreeSequencesMatchesEachAlone) {
  const NamedSpec& param = GetParam();
  std::unique_ptr<Model> model = load(param.spec);
  ASSERT_NE(model, nullptr);
  const int32_t n_vocab = model->config().n_vocab;
  const std::vector<std::vector<int32_t>> sequences = {
      random_tokens(7, n_vocab, 1), random_tokens(13, n_vocab, 2), random_tokens(2, n_vocab, 3)};

  // Block ids handed out from a shuffled pool, so no table is contiguous or ordered.
  std::vector<int32_t> pool(kNumBlocks);
  std::iota(pool.begin(), pool.end(), 0);
  std::shuffle(pool.begin(), pool.end(), std::mt19937(42));
  ops::KvStorage kv(model->kv_shape(kNumBlocks, kBlockSize));
  Batch batch;
  size_t next_block = 0;
  for (const auto& tokens : sequences) {
    std::vector<int32_t> table(pool.begin() + next_block, pool.begin() + next_block + n_blocks_for(tokens.size()));
    next_block += table.size();
    batch.add_sequence(tokens, 0, std::move(table), true);
  }
  std::vector<float> logits;
  ASSERT_TRUE(model->forward(batch, kv, logits).ok());
  ASSERT_EQ(logits.size(), sequences.size() * n_vocab);

  for (size_t s = 0; s < sequences.size(); ++s) {
    const std::vector<float> alone = forward_alone(*model, sequences[s], iota_table(sequences[s].size()));
    const float* batched = logits.data() + s * n_vocab;
    EXPECT_TRUE(bit_identical(batched, alone.data(), n_vocab))
        << "sequence " << s << ": max |batched - alone| = " << max_abs_diff(batched, alone.data(), n_vocab);
  }
}

TEST_P(TinyModelTest, DecodeStepBatchedWithAnotherPrefillMatchesAlone) {
  const NamedSpec& param = GetParam();
  std::unique_ptr<Model> model = load(param.spec);
  ASSERT_NE(model, nullptr);
  const int32_t n_vocab = model->config().n_vocab;
  const std::vector<int32_t> a = random_tokens(9, n_vocab, 4);
  const std::vector<int32_t> b = random_tokens(6, n_vocab, 5);
  const std::vector<int32_t> table_a = {9, 3, 14};
  const std::vector<int32_t> table_b = {1, 12};

  ops::KvStorage kv(model->kv_shape(kNumBlocks, kBlockSize));
  std::vector<float> logits;
  Batch prefill;  // a's first 8 tokens
  prefill.add_sequence({a.begin(), a.end() - 1}, 0, table_a, false);
  ASSERT_TRUE(model->forward(prefill, kv, logits).ok());
  EXPECT_TRUE(logits.empty());

  Batch mixed;  // a's decode step, then all of b
  mixed.add_sequence({a.back()}, static_cast<int32_t>(a.size()) - 1, table_a, true);
  mixed.add_sequence(b, 0, table_b, true);
  ASSERT_TRUE(model->forward(mixed, kv, logits).ok());

  const std::vector<float> alone_a = forward_alone(*model, a, iota_table(a.size()));
  const std::vector<float> alone_b = forward_alone(*model, b, iota_table(b.size()));
  EXPECT_TRUE(bit_identical(logits.data(), alone_a.data(), n_vocab))
      << "max diff " << max_abs_diff(logits.data(), alone_a.data(), n_vocab);
  EXPECT_TRUE(bit_identical(logits.data() + n_vocab, alone_b.data(), n_vocab))
      << "max diff " << max_abs_diff(logits.data() + n_vocab, alone_b.data(), n_vocab);
}

// A pass that may be abandoned computes its output projection in slices of the
// vocabulary (the last one short here: 97 rows): its logits and greedy picks must be the
// plain pass's, bit for bit; once asked to stop, it stops.
TEST_P(TinyModelTest, AnAbandonablePassMatchesThePlainOneAndStopsWhenAsked) {
  const NamedSpec& param = GetParam();
  std::unique_ptr<Model> model = load(param.spec);
  ASSERT_NE(model, nullptr);
  const int32_t n_vocab = model->config().n_vocab;
  ops::KvStorage kv(model->kv_shape(kNumBlocks, kBlockSize));
  Batch batch;
  batch.add_sequence(random_tokens(9, n_vocab, 7), 0, iota_table(9), true);
  std::vector<int32_t> second_table = iota_table(5);
  for (int32_t& block : second_table) block += n_blocks_for(9);
  batch.add_sequence(random_tokens(5, n_vocab, 8), 0, second_table, true);

  std::vector<float> plain, sliced;
  std::vector<int32_t> plain_picks, sliced_picks, picks_only;
  ASSERT_TRUE(model->forward(batch, kv, plain, &plain_picks).ok());
  std::atomic<bool> stop{false};
  Batch abandonable = batch;
  abandonable.abandon = &stop;
  ASSERT_TRUE(model->forward(abandonable, kv, sliced, &sliced_picks).ok());
  ASSERT_EQ(sliced.size(), plain.size());
  EXPECT_TRUE(bit_identical(sliced.data(), plain.data(), plain.size()))
      << "max |sliced - plain| = " << max_abs_diff(sliced.data(), plain.data(), plain.size());
  EXPECT_EQ(sliced_picks, plain_picks);
  ASSERT_TRUE(model->forward(abandonable, kv, sliced, &picks_only, /*argmax_only=*/true).ok());
  EXPECT_EQ(picks_only, plain_picks);

  stop.store(true);
  EXPECT_EQ(model->forward(abandonable, kv, sliced).code(), ErrorCode::kAbandoned);
}

TEST_P(TinyModelTest, OnePassTokenByTokenAndChunksOfThreeAgree) {
  const NamedSpec& param = GetParam();
  std::unique_ptr<Model> model = load(param.spec);
  ASSERT_NE(model, nullptr);
  const int32_t n_vocab = model->config().n_vocab;
  const std::vector<int32_t> tokens = random_tokens(11, n_vocab, 6);
  const std::vector<float> one_pass = forward_in_chunks(*model, tokens, tokens.size());
  const float tolerance = kChunkingTolerance * max_abs(one_pass);
  for (size_t chunk : {1, 3, 4}) {
    const std::vector<float> chunked = forward_in_chunks(*model, tokens, chunk);
    ASSERT_EQ(chunked.size(), one_pass.size());
    const float diff = max_abs_diff(chunked.data(), one_pass.data(), n_vocab);
    EXPECT_LE(diff, tolerance) << "chunks of " << chunk;
    if (!bit_identical(chunked.data(), one_pass.data(), n_vocab)) {
      std::printf("[ %s ] chunks of %zu: not bit-identical to one pass (max diff %.3g)\n", param.name, chunk, diff);
    }
  }
}

TEST_P(TinyModelTest, EveryOutputOfAPrefillMatchesItsPrefixAlone) {
  const NamedSpec& param = GetParam();
  std::unique_ptr<Model> model = load(param.spec);
  ASSERT_NE(model, nullptr);
  const int32_t n_vocab = model->config().n_vocab;
  const std::vector<int32_t> tokens = random_tokens(8, n_vocab, 7);
  ops::KvStorage kv(model->kv_shape(kNumBlocks, kBlockSize));
  Batch batch;
  batch.add_sequence(tokens, 0, iota_table(tokens.size()), false);
  for (int32_t t = 0; t < batch.n_tokens(); ++t) batch.output_tokens.push_back(t);
  std::vector<float> logits;
  ASSERT_TRUE(model->forward(batch, kv, logits).ok());
  ASSERT_EQ(logits.size(), tokens.size() * n_vocab);
  for (size_t t = 0; t < tokens.size(); ++t) {
    const std::vector<float> prefix =
        forward_alone(*model, {tokens.begin(), tokens.begin() + t + 1}, iota_table(t + 1));
    EXPECT_LE(max_abs_diff(logits.data() + t * n_vocab, prefix.data(), n_vocab), kChunkingTolerance * max_abs(prefix))
        << "token " << t;
  }
}

TEST_P(TinyModelTest, BlockIdsDoNotChangeLogits) {
  const NamedSpec& param = GetParam();
  std::unique_ptr<Model> model = load(param.spec);
  ASSERT_NE(model, nullptr);
  const int32_t n_vocab = model->config().n_vocab;
  const std::vector<int32_t> tokens = random_tokens(10, n_vocab, 8);  // 3 blocks, the last part full
  const std::vector<float> in_order = forward_alone(*model, tokens, {0, 1, 2});

  // The same sequence in blocks 7, 2, 5 of a cache whose every slot already holds another
  // sequence's keys and values: nothing outside the sequence's own slots may be read.
  ops::KvStorage kv(model->kv_shape(kNumBlocks, kBlockSize));
  std::vector<float> logits;
  Batch filler;
  filler.add_sequence(random_tokens(kNumBlocks * kBlockSize, n_vocab, 9), 0, iota_table(kNumBlocks * kBlockSize),
                      false);
  ASSERT_TRUE(model->forward(filler, kv, logits).ok());
  Batch batch;
  batch.add_sequence(tokens, 0, {7, 2, 5}, true);
  ASSERT_TRUE(model->forward(batch, kv, logits).ok());
  EXPECT_TRUE(bit_identical(logits.data(), in_order.data(), n_vocab))
      << "max diff " << max_abs_diff(logits.data(), in_order.data(), n_vocab);
}

// ---------------------------------------------------------------------------------------
// Invalid batches: Batch::validate names the problem and forward returns it untouched.

class TinyModelBatchErrors : public ::testing::Test {
 protected:
  void SetUp() override {
    model_ = load(testing::tiny_llama_spec());
    ASSERT_NE(model_, nullptr);
  }
  // Validates, then runs forward, expecting the same InvalidArgument from both.
  void expect_rejected(const Batch& batch, const std::string& message_part) {
    ops::KvStorage kv(model_->kv_shape(kNumBlocks, kBlockSize));
    Status st = batch.validate(model_->config().n_vocab, kv.shape());
    EXPECT_EQ(st.code(), ErrorCode::kInvalidArgument) << st.to_string();
    EXPECT_NE(st.message().find(message_part), std::string::npos) << st.message();
    std::vector<float> logits;
    Status forward_status = model_->forward(batch, kv, logits);
    EXPECT_EQ(forward_status.code(), ErrorCode::kInvalidArgument);
    EXPECT_EQ(forward_status.message(), st.message());
  }
  std::unique_ptr<Model> model_;
};

TEST_F(TinyModelBatchErrors, TokenOutsideTheVocabulary) {
  Batch batch;
  batch.add_sequence({1, 97, 2}, 0, {0}, true);
  expect_rejected(batch, "token id 97 is outside the vocabulary of 97");
  Batch negative;
  negative.add_sequence({-1}, 0, {0}, true);
  expect_rejected(negative, "token id -1");
}

TEST_F(TinyModelBatchErrors, PositionWithoutABlock) {
  Batch batch;
  batch.add_sequence({1, 2, 3, 4, 5}, 0, {3}, true);  // position 4 needs a second block
  expect_rejected(batch, "position 4 has no KV block");
  Batch decode;
  decode.add_sequence({1}, 9, {0, 1}, true);
  expect_rejected(decode, "position 9 has no KV block");
}

TEST_F(TinyModelBatchErrors, BlockIdOutOfRange) {
  Batch batch;
  batch.add_sequence({1, 2}, 0, {kNumBlocks}, true);
  expect_rejected(batch, "KV block id out of range");
  Batch negative;
  negative.add_sequence({1, 2, 3, 4, 5}, 0, {0, -1}, true);
  expect_rejected(negative, "KV block id out of range");
}

TEST_F(TinyModelBatchErrors, BadOutputIndices) {
  Batch past_end;
  past_end.add_sequence({1, 2}, 0, {0}, false);
  past_end.output_tokens = {2};
  expect_rejected(past_end, "output token indices");
  Batch descending;
  descending.add_sequence({1, 2}, 0, {0}, false);
  descending.output_tokens = {1, 0};
  expect_rejected(descending, "output token indices");
  Batch repeated;
  repeated.add_sequence({1, 2}, 0, {0}, false);
  repeated.output_tokens = {1, 1};
  expect_rejected(repeated, "output token indices");
  Batch negative;
  negative.add_sequence({1, 2}, 0, {0}, false);
  negative.output_tokens = {-1};
  expect_rejected(negative, "output token indices");
}

TEST_F(TinyModelBatchErrors, InconsistentArraysAndSequences) {
  Batch lengths;
  lengths.add_sequence({1, 2}, 0, {0}, true);
  lengths.positions.pop_back();
  expect_rejected(lengths, "different lengths");
  Batch sequence;
  sequence.add_sequence({1, 2}, 0, {0}, true);
  sequence.sequence_of_token[1] = 1;
  expect_rejected(sequence, "bad sequence index");
  Batch position;
  position.add_sequence({1}, 0, {0}, true);
  position.positions[0] = -3;
  expect_rejected(position, "negative position");
}

TEST_F(TinyModelBatchErrors, CacheOfAnotherShape) {
  ops::KvShape shape = model_->kv_shape(kNumBlocks, kBlockSize);
  shape.n_layers += 1;
  ops::KvStorage kv(shape);
  Batch batch;
  batch.add_sequence({1, 2}, 0, {0}, true);
  std::vector<float> logits;
  Status st = model_->forward(batch, kv, logits);
  EXPECT_EQ(st.code(), ErrorCode::kInvalidArgument);
}

TEST_F(TinyModelBatchErrors, EmptyBatchIsNotAnError) {
  ops::KvStorage kv(model_->kv_shape(kNumBlocks, kBlockSize));
  std::vector<float> logits = {1.0f};
  EXPECT_TRUE(model_->forward(Batch{}, kv, logits).ok());
  EXPECT_TRUE(logits.empty());
}

// ---------------------------------------------------------------------------------------
// Load errors: each a Status of the right kind that names the tensor or key.

Status load_status(const TinyModelSpec& spec) {
  auto model = testing::load_tiny_model(spec);
  return model.ok() ? Status() : model.status();
}

void expect_load_error(const TinyModelSpec& spec, ErrorCode code, const std::string& message_part) {
  Status st = load_status(spec);
  EXPECT_EQ(st.code(), code) << st.to_string();
  EXPECT_NE(st.message().find(message_part), std::string::npos) << st.to_string();
}

TEST(TinyModelLoad, EveryPresetLoadsWithTheConfigItDescribes) {
  for (const NamedSpec& p : all_specs()) {
    std::unique_ptr<Model> model = load(p.spec);
    ASSERT_NE(model, nullptr) << p.name;
    const ModelConfig& c = model->config();
    EXPECT_EQ(c.n_vocab, p.spec.n_vocab) << p.name;
    EXPECT_EQ(c.n_embd, p.spec.n_embd) << p.name;
    EXPECT_EQ(c.n_layers, p.spec.n_layers) << p.name;
    EXPECT_EQ(c.n_heads, p.spec.n_heads) << p.name;
    EXPECT_EQ(c.n_kv_heads, p.spec.n_kv_heads) << p.name;
    EXPECT_EQ(c.head_dim, p.spec.head_dim) << p.name;
    EXPECT_EQ(c.n_ff, p.spec.n_ff) << p.name;
    EXPECT_EQ(model->weights().tied_output, p.spec.tied_output) << p.name;
    // Every requested matrix type made it into the file (none lost to the fallback).
    std::set<TensorType> types;
    for (const gguf::TensorInfo& info : model->file().tensors()) {
      if (info.shape.size() == 2) types.insert(info.type);
    }
    for (TensorType t : p.spec.matrix_types) EXPECT_TRUE(types.contains(t)) << p.name << " lacks " << gguf::tensor_type_name(t);
  }
  TinyModelSpec gemma = testing::tiny_gemma3_spec();
  std::unique_ptr<Model> model = load(gemma);
  ASSERT_NE(model, nullptr);
  EXPECT_EQ(model->config().sliding_window, 4);
  EXPECT_EQ(model->config().layer_is_sliding, (std::vector<bool>{true, false, true}));
}

TEST(TinyModelLoad, MissingTensor) {
  TinyModelSpec spec = testing::tiny_llama_spec();
  spec.omit_tensors = {"blk.1.ffn_up.weight"};
  expect_load_error(spec, ErrorCode::kNotFound, "'blk.1.ffn_up.weight' is missing");
  spec.omit_tensors = {"output_norm.weight"};
  expect_load_error(spec, ErrorCode::kNotFound, "'output_norm.weight' is missing");
  spec = testing::tiny_qwen2_spec();
  spec.omit_tensors = {"blk.0.attn_k.bias"};
  expect_load_error(spec, ErrorCode::kNotFound, "'blk.0.attn_k.bias' is missing");
  spec = testing::tiny_gemma3_spec();
  spec.omit_tensors = {"blk.2.attn_q_norm.weight"};
  expect_load_error(spec, ErrorCode::kNotFound, "'blk.2.attn_q_norm.weight' is missing");
}

TEST(TinyModelLoad, WrongShape) {
  TinyModelSpec spec = testing::tiny_llama_spec();
  // attn_k is [n_embd, kv_dim] = [64, 32]; store it as the query's [64, 64].
  spec.shape_overrides = {{"blk.0.attn_k.weight", {64, 64}}};
  expect_load_error(spec, ErrorCode::kCorruptData, "'blk.0.attn_k.weight' has shape [64, 64], expected [64, 32]");
  spec.shape_overrides = {{"blk.1.ffn_norm.weight", {63}}};
  expect_load_error(spec, ErrorCode::kCorruptData, "'blk.1.ffn_norm.weight' has 63 elements, expected 64");
  spec.shape_overrides = {{"token_embd.weight", {32, 97}}};
  expect_load_error(spec, ErrorCode::kCorruptData, "'token_embd.weight'");
}

// A Q8_0 cache needs whole blocks of 32 per head; tiny Gemma 3's heads are 32 wide.
TEST(TinyModelKvType, Q8CacheNeedsAHeadSizeMultipleOf32) {
  auto llama = load_tiny_model(testing::tiny_llama_spec());
  ASSERT_TRUE(llama.ok());
  const Status refused = (*llama)->check_kv_type(ops::KvType::kQ8_0);
  EXPECT_EQ(refused.code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(refused.message().find("multiple of 32"), std::string::npos) << refused.message();
  EXPECT_TRUE((*llama)->check_kv_type(ops::KvType::kF16).ok());
  auto gemma = load_tiny_model(testing::tiny_gemma3_spec());
  ASSERT_TRUE(gemma.ok());
  EXPECT_TRUE((*gemma)->check_kv_type(ops::KvType::kQ8_0).ok());
}

// With a Q8_0 cache, a prompt read token by token or in chunks gives the bits of one pass
// (the cache's rounding does not depend on the batch), close to the F16 cache's logits.
TEST(TinyModelKvType, Q8CacheChunkingChangesNoBitAndStaysNearF16) {
  auto model = load_tiny_model(testing::tiny_gemma3_spec());
  ASSERT_TRUE(model.ok());
  const int32_t n_vocab = (*model)->config().n_vocab;
  const std::vector<int32_t> tokens = random_tokens(11, n_vocab, 9);
  const std::vector<float> one_pass = forward_in_chunks(**model, tokens, tokens.size(), ops::KvType::kQ8_0);
  for (size_t chunk : {1, 4}) {
    const std::vector<float> chunked = forward_in_chunks(**model, tokens, chunk, ops::KvType::kQ8_0);
    EXPECT_TRUE(bit_identical(chunked.data(), one_pass.data(), n_vocab)) << "chunks of " << chunk;
  }
  const std::vector<float> f16 = forward_in_chunks(**model, tokens, tokens.size());
  // 8-bit keys and values (half a step of amax / 127 each) against F16's 11 bits: measured 0.7%.
  std::printf("q8_0 vs f16 cache: max logit diff %.3g of max %.3g\n", max_abs_diff(one_pass.data(), f16.data(), n_vocab), max_abs(f16));
  EXPECT_LE(max_abs_diff(one_pass.data(), f16.data(), n_vocab), 0.02f * max_abs(f16));
  EXPECT_GT(max_abs_diff(one_pass.data(), f16.data(), n_vocab), 0.0f);  // the cache really is Q8_0
}

// rope.dimension_count (partial rotary) is honoured when it is an even count within the
// head, and refused, naming the key, otherwise: never silently ignored.
TEST(TinyModelLoad, RopeDimensionCountIsReadOrRefused) {
  TinyModelSpec spec = testing::tiny_llama_spec();
  spec.rope_dimension_count = spec.head_dim / 2;
  auto model = testing::load_tiny_model(spec);
  ASSERT_TRUE(model.ok()) << model.status().message();
  EXPECT_EQ((*model)->config().n_rot, spec.head_dim / 2);
  for (int32_t bad : {spec.head_dim + 2, 7}) {
    spec.rope_dimension_count = bad;
    expect_load_error(spec, ErrorCode::kCorruptData, "llama.rope.dimension_count " + std::to_string(bad));
  }
}

// Every architecture, every metadata key that changes the arithmetic: a value we do not
// implement is refused at load, naming the key (read_model_config sees only metadata and
// the embedding table, so the llama-shaped tensors serve every architecture here); the
// neutral value and the keys an architecture honours load.
TEST(TinyModelLoad, ArithmeticKeysAnArchitectureDoesNotHonourAreRefused) {
  const std::string names = model::supported_architectures();
  int checked = 0, refused = 0;
  for (size_t begin = 0; begin < names.size();) {
    const size_t comma = names.find(", ", begin);
    const std::string arch = names.substr(begin, comma == std::string::npos ? std::string::npos : comma - begin);
    begin = comma == std::string::npos ? names.size() : comma + 2;
    const std::vector<std::string> honoured = model::honoured_arithmetic_keys(arch);
    for (const std::string& key : model::all_arithmetic_keys()) {
      TinyModelSpec spec = testing::tiny_llama_spec();
      spec.architecture = arch;
      spec.extra_f32[key] = 3.0f;  // neutral for none of them
      if (arch == "qwen3moe" || arch == "gpt-oss") spec.extra_u32 = {{"expert_count", 4}, {"expert_used_count", 2}};
      auto bytes = testing::build_tiny_gguf(spec);
      ASSERT_TRUE(bytes.ok());
      auto file = testing::parse_owned(std::move(bytes).value());
      ASSERT_TRUE(file.ok());
      auto config = model::read_model_config(**file);
      ++checked;
      if (std::find(honoured.begin(), honoured.end(), key) != honoured.end()) {
        EXPECT_TRUE(config.ok()) << arch << "." << key << ": " << config.status().message();
        continue;
      }
      if (config.ok()) {  // only the keys llama.cpp ignores for the architecture too
        EXPECT_EQ(key, "attention.sliding_window") << arch;
        EXPECT_TRUE(arch.starts_with("qwen") || arch == "smollm3") << arch << "." << key;
        continue;
      }
      ++refused;
      EXPECT_EQ(config.status().code(), ErrorCode::kUnsupported);
      EXPECT_NE(config.status().message().find("'" + arch + "." + key + "' = 3"), std::string::npos)
          << config.status().message();
    }
  }
  EXPECT_EQ(checked, 11 * static_cast<int>(model::all_arithmetic_keys().size()));
  EXPECT_GT(refused, checked / 2);
  // Neutral values load.
  TinyModelSpec spec = testing::tiny_llama_spec();
  spec.extra_f32 = {{"logit_scale", 1.0f}, {"final_logit_softcapping", 0.0f}, {"expert_gating_func", 1.0f}};
  EXPECT_TRUE(testing::load_tiny_model(spec).ok());
}

// YaRN: read from llama.cpp's keys; its variants that are not implemented are refused.
TEST(TinyModelLoad, YarnIsReadAndItsOtherVariantsRefused) {
  TinyModelSpec spec = testing::tiny_llama_spec();
  spec.extra_f32 = {{"rope.scaling.factor", 4.0f}};
  spec.extra_u32 = {{"rope.scaling.original_context_length", 64}};
  spec.extra_strings = {{"rope.scaling.type", "yarn"}};
  auto model = testing::load_tiny_model(spec);
  ASSERT_TRUE(model.ok()) << model.status().message();
  const model::ModelConfig& c = (*model)->config();
  ASSERT_TRUE(c.yarn.has_value());
  EXPECT_EQ(c.yarn->original_context, 64);
  const float mscale = 1.0f + 0.1f * std::log(4.0f);
  EXPECT_FLOAT_EQ(c.attention_scale, mscale * mscale / std::sqrt(static_cast<float>(spec.head_dim)));
  // Fast pairs keep their frequency (divisor 1), slow ones are interpolated (divisor 4).
  const float* divisors = (*model)->weights().rope_freqs;
  ASSERT_NE(divisors, nullptr);
  EXPECT_FLOAT_EQ(divisors[0], 1.0f);
  EXPECT_FLOAT_EQ(divisors[spec.head_dim / 2 - 1], 4.0f);
  spec.extra_f32["rope.scaling.yarn_attn_factor"] = 2.0f;
  expect_load_error(spec, ErrorCode::kUnsupported, "'llama.rope.scaling.yarn_attn_factor' = 2");
  spec.extra_f32.erase("rope.scaling.yarn_attn_factor");
  spec.extra_u32.clear();
  expect_load_error(spec, ErrorCode::kCorruptData, "YaRN needs llama.rope.scaling.original_context_length");
}

TEST(TinyModelLoad, UnsupportedArchitecture) {
  TinyModelSpec spec = testing::tiny_llama_spec();
  spec.architecture = "mamba";
  expect_load_error(spec, ErrorCode::kUnsupported, "model architecture 'mamba' is not supported");
}

TEST(TinyModelLoad, NormStoredQuantized) {
  TinyModelSpec spec = testing::tiny_gemma3_spec();
  spec.type_overrides = {{"blk.1.post_ffw_norm.weight", TensorType::kQ8_0}};
  expect_load_error(spec, ErrorCode::kUnsupported, "'blk.1.post_ffw_norm.weight' has type q8_0, expected f32");
}

TEST(TinyModelLoad, MatrixOfAnActivationOnlyType) {
  TinyModelSpec spec = testing::tiny_llama_spec();
  spec.type_overrides = {{"blk.0.attn_v.weight", TensorType::kQ8_1}};
  expect_load_error(spec, ErrorCode::kUnsupported, "'blk.0.attn_v.weight' has type q8_1");
}

}  // namespace
}  // namespace tokenmill::model
