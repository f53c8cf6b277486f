#include "convert/convert_model.h"

#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <map>
#include <set>

#include "convert/hf_architectures.h"
#include "convert/hf_config.h"
#include "convert/hf_tokenizer.h"
#include "convert/safetensors.h"
#include "gguf/gguf_file.h"
#include "gguf/gguf_writer.h"
#include "quant/quantize_model.h"

namespace tokenmill::convert {

namespace {

std::string shape_text(const std::vector<int64_t>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

// Hugging Face rotates the two halves of each head; llama's GGUF rotates adjacent
// pairs. Row r of a head in the output is row (r % 2) * half + r / 2 of the input.
std::vector<float> permute_heads(const std::vector<float>& w, int64_t n_heads, int64_t head_dim, int64_t row_len) {
  std::vector<float> out(w.size());
  const int64_t half = head_dim / 2;
  for (int64_t h = 0; h < n_heads; ++h) {
    for (int64_t r = 0; r < head_dim; ++r) {
      const int64_t from = h * head_dim + (r % 2) * half + r / 2;
      std::memcpy(&out[static_cast<size_t>((h * head_dim + r) * row_len)], &w[static_cast<size_t>(from * row_len)],
                  static_cast<size_t>(row_len) * sizeof(float));
    }
  }
  return out;
}

std::span<const uint8_t> as_bytes(const std::vector<float>& v) {
  return {reinterpret_cast<const uint8_t*>(v.data()), v.size() * sizeof(float)};
}

// Removes a temporary file when it goes out of scope.
struct TempFile {
  std::string path;
  ~TempFile() {
    if (!path.empty()) std::remove(path.c_str());
  }
};

}  // namespace

Result<ConvertSummary> convert_hf_model(const std::string& dir, const std::string& out_path,
                                        const ConvertOptions& options) {
  auto config = read_hf_config(dir);
  if (!config.ok()) return config.status();
  auto arch = find_hf_architecture(config->model_type);
  if (!arch.ok()) return Status(arch.status().code(), dir + "/config.json: " + arch.status().message());
  // Every converted architecture gates its FFN with SiLU; another activation would load
  // and run, wrongly.
  for (const char* key : {"hidden_act", "hidden_activation"}) {
    const auto& raw = config->raw;
    if (raw.contains(key) && raw[key].is_string() && raw[key].get<std::string>() != "silu") {
      return unsupported(dir + "/config.json: " + key + " '" + raw[key].get<std::string>() + "' is not supported for " +
                         arch->model_type + " (silu only)");
    }
  }
  auto model = SafetensorsModel::open_dir(dir);
  if (!model.ok()) return model.status();

  // Names and shapes first: nothing is converted from a model that is not complete.
  std::map<std::string, const SafeTensor*> by_gguf_name;
  for (const auto& [hf_name, tensor] : model->tensors()) {
    auto name = gguf_tensor_name(*arch, *config, hf_name);
    if (!name.ok()) return name.status();
    if (!*name) continue;
    by_gguf_name[**name] = tensor;
  }
  const std::vector<ExpectedTensor> expected = expected_tensors(*arch, *config);
  std::set<std::string> expected_names;
  for (const ExpectedTensor& e : expected) {
    expected_names.insert(e.gguf_name);
    auto it = by_gguf_name.find(e.gguf_name);
    if (it == by_gguf_name.end()) {
      return not_found(dir + ": tensor '" + e.gguf_name + "' of the " + arch->model_type + " architecture is missing");
    }
    std::vector<int64_t> shape(it->second->shape.rbegin(), it->second->shape.rend());  // to ggml order
    if (shape != e.shape) {
      return invalid_argument(dir + ": tensor '" + it->second->name + "' has shape " + shape_text(it->second->shape) +
                              ", but config.json makes it " +
                              shape_text(std::vector<int64_t>(e.shape.rbegin(), e.shape.rend())));
    }
    if (it->second->dtype != Dtype::kF32 && it->second->dtype != Dtype::kF16 && it->second->dtype != Dtype::kBF16 &&
        it->second->dtype != Dtype::kF64) {
      return invalid_argument(dir + ": tensor '" + it->second->name + "' holds " + dtype_name(it->second->dtype) +
                              " values; weights must be floating point");
    }
  }

  gguf::Writer writer;
  write_architecture_metadata(*arch, *config, writer);
  const std::string base_name = std::filesystem::path(dir).filename().string();
  writer.set_string("general.name", base_name.empty() ? std::string(arch->model_type) : base_name);
  writer.set_u32("general.file_type", 0);  // all F32; quantize_model sets the final type
  auto tokenizer = write_hf_tokenizer(dir, *config, writer);
  if (!tokenizer.ok()) return tokenizer.status();

  ConvertSummary summary;
  summary.model_type = arch->model_type;
  summary.gguf_arch = arch->gguf_arch;
  summary.tokenizer_pre = tokenizer->pre;
  summary.n_tokens = tokenizer->n_tokens;
  if (config->llama3_rope) {
    const std::vector<float> divisors = llama3_rope_divisors(*config);
    TM_RETURN_IF_ERROR(writer.add_tensor("rope_freqs.weight", gguf::TensorType::kF32,
                                         {static_cast<int64_t>(divisors.size())}, as_bytes(divisors)));
    ++summary.n_tensors;
  }
  int64_t done = 0;
  for (const ExpectedTensor& e : expected) {
    const SafeTensor& t = *by_gguf_name.at(e.gguf_name);
    auto values = to_f32(t);
    if (!values.ok()) return values.status();
    std::vector<float> data = std::move(values).value();
    if (arch->permute_qk) {
      const bool is_q = e.gguf_name.ends_with("attn_q.weight") || e.gguf_name.ends_with("attn_q.bias");
      const bool is_k = e.gguf_name.ends_with("attn_k.weight") || e.gguf_name.ends_with("attn_k.bias");
      const int64_t row_len = e.shape.size() == 2 ? e.shape[0] : 1;
      if (is_q) data = permute_heads(data, config->n_heads, config->head_dim, row_len);
      if (is_k) data = permute_heads(data, config->n_kv_heads, config->head_dim, row_len);
    }
    TM_RETURN_IF_ERROR(writer.add_tensor(e.gguf_name, gguf::TensorType::kF32, e.shape, as_bytes(data)));
    summary.n_parameters += t.n_elements();
    ++summary.n_tensors;
    if (options.on_progress) options.on_progress("convert", ++done, static_cast<int64_t>(expected.size()));
  }

  if (options.outtype.mix == quant::Mix::kF32) {
    TM_RETURN_IF_ERROR(writer.write(out_path));
    return summary;
  }
  // Quantized types: through an F32 file beside OUT, removed whatever happens.
  const std::filesystem::path out(out_path);
  TempFile f32_file{(out.parent_path() / ("." + out.filename().string() + ".f32-" + std::to_string(getpid()))).string()};
  TM_RETURN_IF_ERROR(writer.write(f32_file.path));
  auto source = gguf::File::open(f32_file.path);
  if (!source.ok()) return source.status();
  quant::QuantizeOptions q;
  q.mix = options.outtype;
  q.n_threads = options.n_threads;
  if (options.on_progress) {
    q.on_tensor = [&](const quant::TensorProgress& p) { options.on_progress("quantize", p.index + 1, p.n_tensors); };
  }
  auto quantized = quant::quantize_model(*source, out_path, q);
  if (!quantized.ok()) return quantized.status();
  return summary;
}

}  // namespace tokenmill::convert
