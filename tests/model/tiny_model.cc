#include "model/tiny_model.h"

#include <cassert>
#include <cmath>
#include <optional>
#include <random>
#include <span>

#include "gguf/gguf_writer.h"
#include "quant/quant.h"

namespace tokenmill::model::testing {

namespace {

using gguf::TensorType;

// Builds the tensors of a spec in file order, drawing every value from one seeded
// generator so a spec always yields the same bytes.
class TinyWriter {
 public:
  explicit TinyWriter(const TinyModelSpec& spec) : spec_(spec), rng_(spec.seed) {}

  // A [n_rows, n_cols] matrix of N(0, sigma^2) values, sigma = 1/sqrt(n_cols) unless given.
  Status matrix(const std::string& name, int64_t n_rows, int64_t n_cols, float sigma = 0.0f) {
    if (sigma == 0.0f) sigma = 1.0f / std::sqrt(static_cast<float>(n_cols));
    TensorType type = next_matrix_type(n_cols);
    return add(name, type, {n_cols, n_rows}, sigma, 0.0f);
  }

  // A [n] F32 vector of mean + N(0, sigma^2) values.
  Status vector(const std::string& name, int64_t n, float mean, float sigma) {
    return add(name, TensorType::kF32, {n}, sigma, mean);
  }

  gguf::Writer& writer() { return writer_; }

 private:
  TensorType next_matrix_type(int64_t n_cols) {
    const TensorType wanted = spec_.matrix_types[n_matrices_++ % spec_.matrix_types.size()];
    for (TensorType t : {wanted, TensorType::kQ8_0, TensorType::kF32}) {
      if (n_cols % quant::type_traits(t).block_size == 0) return t;
    }
    return TensorType::kF32;
  }

  Status add(const std::string& name, TensorType type, std::vector<int64_t> shape, float sigma, float mean) {
    if (spec_.omit_tensors.contains(name)) return {};
    if (auto it = spec_.type_overrides.find(name); it != spec_.type_overrides.end()) type = it->second;
    if (auto it = spec_.shape_overrides.find(name); it != spec_.shape_overrides.end()) shape = it->second;
    const int64_t n_cols = shape[0];
    int64_t n_elements = 1;
    for (int64_t d : shape) n_elements *= d;
    const int64_t n_rows = n_elements / n_cols;

    std::normal_distribution<float> dist(mean, sigma);
    std::vector<float> row(n_cols);
    const size_t row_bytes = quant::row_size(type, n_cols);
    std::vector<uint8_t> data(row_bytes * n_rows);
    for (int64_t r = 0; r < n_rows; ++r) {
      for (float& v : row) v = dist(rng_);
      quant::quantize_row_ref(type, row.data(), data.data() + r * row_bytes, n_cols);
    }
    return writer_.add_tensor(name, type, std::move(shape), data);
  }

  const TinyModelSpec& spec_;
  std::mt19937 rng_;
  gguf::Writer writer_;
  size_t n_matrices_ = 0;
};

// A File together with the bytes it points into.
struct OwnedFile {
  std::vector<uint8_t> bytes;
  std::optional<gguf::File> file;
};

}  // namespace

TinyModelSpec tiny_gemma3_spec() {
  TinyModelSpec s;
  s.architecture = "gemma3";
  s.n_layers = 3;
  s.n_heads = 4;
  s.n_kv_heads = 1;
  s.head_dim = 32;  // q_dim 128 != n_embd 64, as Gemma's key_length differs from n_embd / n_heads
  s.rope_freq_base = 1000.0f;
  s.rope_freq_base_swa = 10000.0f;
  s.sliding_window = 4;
  s.sliding_window_pattern = 2;  // layers 0 and 2 local, layer 1 global
  s.final_logit_softcap = 30.0f;
  s.tied_output = true;
  s.matrix_types = {TensorType::kQ8_0, TensorType::kF16, TensorType::kQ4_0, TensorType::kF32};
  s.seed = 3;
  return s;
}

TinyModelSpec tiny_llama_spec() {
  TinyModelSpec s;
  s.architecture = "llama";
  s.n_layers = 2;
  s.n_heads = 4;
  s.n_kv_heads = 2;
  s.head_dim = 16;
  s.matrix_types = {TensorType::kF16, TensorType::kQ4_0, TensorType::kF32, TensorType::kQ8_0};
  s.seed = 5;
  return s;
}

TinyModelSpec tiny_qwen2_spec() {
  TinyModelSpec s;
  s.architecture = "qwen2";
  s.n_layers = 2;
  s.n_heads = 4;
  s.n_kv_heads = 2;
  s.head_dim = 16;
  s.rope_freq_base = 1000000.0f;
  s.matrix_types = {TensorType::kQ4_0, TensorType::kF32, TensorType::kQ8_0, TensorType::kF16};
  s.seed = 7;
  return s;
}

TinyModelSpec tiny_llama_k_quant_spec() {
  TinyModelSpec s = tiny_llama_spec();
  s.n_embd = 256;
  s.n_ff = 512;
  s.head_dim = 64;  // q_dim 256
  s.matrix_types = {TensorType::kQ4_K, TensorType::kQ6_K, TensorType::kQ8_0, TensorType::kQ4_K, TensorType::kF16};
  s.seed = 11;
  return s;
}

Result<std::vector<uint8_t>> build_tiny_gguf(const TinyModelSpec& s) {
  TinyWriter t(s);
  gguf::Writer& w = t.writer();
  const std::string& a = s.architecture;
  w.set_string("general.architecture", a);
  w.set_string("general.name", "tiny-" + a);
  w.set_u32(a + ".context_length", 256);
  w.set_u32(a + ".embedding_length", s.n_embd);
  w.set_u32(a + ".block_count", s.n_layers);
  w.set_u32(a + ".feed_forward_length", s.n_ff);
  w.set_u32(a + ".attention.head_count", s.n_heads);
  w.set_u32(a + ".attention.head_count_kv", s.n_kv_heads);
  w.set_u32(a + ".attention.key_length", s.head_dim);
  w.set_u32(a + ".attention.value_length", s.head_dim);
  w.set_f32(a + ".attention.layer_norm_rms_epsilon", s.rms_eps);
  w.set_f32(a + ".rope.freq_base", s.rope_freq_base);
  if (s.rope_dimension_count > 0) w.set_u32(a + ".rope.dimension_count", static_cast<uint32_t>(s.rope_dimension_count));
  if (s.sliding_window > 0) {
    w.set_u32(a + ".attention.sliding_window", s.sliding_window);
    w.set_u32(a + ".attention.sliding_window_pattern", s.sliding_window_pattern);
    w.set_f32(a + ".rope.freq_base_swa", s.rope_freq_base_swa);
  }
  if (s.final_logit_softcap > 0.0f) w.set_f32(a + ".final_logit_softcapping", s.final_logit_softcap);
  for (const auto& [suffix, value] : s.extra_f32) w.set_f32(a + "." + suffix, value);
  for (const auto& [suffix, value] : s.extra_u32) w.set_u32(a + "." + suffix, value);
  for (const auto& [suffix, value] : s.extra_strings) w.set_string(a + "." + suffix, value);

  const bool gemma = a == "gemma3";
  const bool qwen = a == "qwen2";
  const int64_t q_dim = static_cast<int64_t>(s.n_heads) * s.head_dim;
  const int64_t kv_dim = static_cast<int64_t>(s.n_kv_heads) * s.head_dim;
  // Norm weights near 1 (Gemma's GGUF norms already include its "+ 1").
  constexpr float kNormSigma = 0.1f;
  TM_RETURN_IF_ERROR(t.matrix("token_embd.weight", s.n_vocab, s.n_embd, 1.0f));
  for (int32_t l = 0; l < s.n_layers; ++l) {
    const std::string p = "blk." + std::to_string(l) + ".";
    TM_RETURN_IF_ERROR(t.vector(p + "attn_norm.weight", s.n_embd, 1.0f, kNormSigma));
    TM_RETURN_IF_ERROR(t.matrix(p + "attn_q.weight", q_dim, s.n_embd));
    TM_RETURN_IF_ERROR(t.matrix(p + "attn_k.weight", kv_dim, s.n_embd));
    TM_RETURN_IF_ERROR(t.matrix(p + "attn_v.weight", kv_dim, s.n_embd));
    if (qwen) {
      TM_RETURN_IF_ERROR(t.vector(p + "attn_q.bias", q_dim, 0.0f, 0.5f));
      TM_RETURN_IF_ERROR(t.vector(p + "attn_k.bias", kv_dim, 0.0f, 0.5f));
      TM_RETURN_IF_ERROR(t.vector(p + "attn_v.bias", kv_dim, 0.0f, 0.5f));
    }
    if (gemma) {
      TM_RETURN_IF_ERROR(t.vector(p + "attn_q_norm.weight", s.head_dim, 1.0f, kNormSigma));
      TM_RETURN_IF_ERROR(t.vector(p + "attn_k_norm.weight", s.head_dim, 1.0f, kNormSigma));
    }
    TM_RETURN_IF_ERROR(t.matrix(p + "attn_output.weight", s.n_embd, q_dim));
    if (gemma) TM_RETURN_IF_ERROR(t.vector(p + "post_attention_norm.weight", s.n_embd, 1.0f, kNormSigma));
    TM_RETURN_IF_ERROR(t.vector(p + "ffn_norm.weight", s.n_embd, 1.0f, kNormSigma));
    TM_RETURN_IF_ERROR(t.matrix(p + "ffn_gate.weight", s.n_ff, s.n_embd));
    TM_RETURN_IF_ERROR(t.matrix(p + "ffn_up.weight", s.n_ff, s.n_embd));
    TM_RETURN_IF_ERROR(t.matrix(p + "ffn_down.weight", s.n_embd, s.n_ff));
    if (gemma) TM_RETURN_IF_ERROR(t.vector(p + "post_ffw_norm.weight", s.n_embd, 1.0f, kNormSigma));
  }
  TM_RETURN_IF_ERROR(t.vector("output_norm.weight", s.n_embd, 1.0f, kNormSigma));
  // Divisors of each rotary pair's frequency, as Llama 3.1's converter writes them (there
  // 1 for fast pairs up to 8 for slow ones; here every pair gets one near 3).
  if (s.rope_freqs) TM_RETURN_IF_ERROR(t.vector("rope_freqs.weight", s.head_dim / 2, 3.0f, 0.5f));
  if (!s.tied_output) TM_RETURN_IF_ERROR(t.matrix("output.weight", s.n_vocab, s.n_embd));
  return w.to_bytes();
}

Result<std::shared_ptr<const gguf::File>> parse_owned(std::vector<uint8_t> bytes) {
  auto owned = std::make_shared<OwnedFile>();
  owned->bytes = std::move(bytes);
  auto file = gguf::File::parse(owned->bytes);
  if (!file.ok()) return file.status();
  owned->file.emplace(std::move(file).value());
  // Aliasing: the pointer is the File, the lifetime is that of the bytes and the File.
  return std::shared_ptr<const gguf::File>(owned, &*owned->file);
}

Result<std::unique_ptr<Model>> load_tiny_model(const TinyModelSpec& spec, int n_threads) {
  auto bytes = build_tiny_gguf(spec);
  if (!bytes.ok()) return bytes.status();
  auto file = parse_owned(std::move(bytes).value());
  if (!file.ok()) return file.status();
  LoadOptions options;
  options.n_threads = n_threads;
  options.prefetch = false;
  return load_model(std::move(file).value(), options);
}

std::vector<float> dequantize_tensor(const gguf::File& file, const std::string& name) {
  const gguf::TensorInfo* info = file.find_tensor(name);
  assert(info != nullptr);
  const int64_t n_cols = info->shape[0];
  const int64_t n_rows = info->n_rows();
  const size_t row_bytes = info->n_bytes / static_cast<size_t>(n_rows);
  std::span<const uint8_t> data = file.tensor_data(*info);
  std::vector<float> out(static_cast<size_t>(n_rows * n_cols));
  for (int64_t r = 0; r < n_rows; ++r) {
    quant::dequantize_row(info->type, data.data() + r * row_bytes, out.data() + r * n_cols, n_cols);
  }
  return out;
}

}  // namespace tokenmill::model::testing
