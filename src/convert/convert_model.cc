#include "convert/convert_model.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <map>

#include "convert/hf_architectures.h"
#include "convert/hf_bert.h"
#include "convert/hf_config.h"
#include "convert/hf_gpt_oss.h"
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
  apply_architecture_defaults(*arch, *config);
  if (Status s = check_hf_config(*arch, *config); !s.ok()) return Status(s.code(), dir + "/" + s.message());
  auto model = SafetensorsModel::open_dir(dir);
  if (!model.ok()) return model.status();

  // Names and shapes first: nothing is converted from a model that is not complete.
  // GGUF name -> its source tensors (one per expert for an expert stack).
  std::map<std::string, std::map<int64_t, const SafeTensor*>> sources;
  for (const auto& [hf_name, tensor] : model->tensors()) {
    auto place = gguf_tensor_place(*arch, *config, hf_name);
    if (!place.ok()) return place.status();
    if (!*place) continue;
    sources[(*place)->gguf_name][(*place)->part] = tensor;
  }
  const std::vector<ExpectedTensor> expected = expected_tensors(*arch, *config);
  for (const auto& source : sources) {
    const std::string& name = source.first;  // a plain reference: lambdas may not capture bindings
    const bool wanted =
        std::any_of(expected.begin(), expected.end(), [&](const ExpectedTensor& e) { return e.gguf_name == name; });
    if (!wanted) {
      return unsupported(dir + ": tensor '" + source.second.begin()->second->name + "' has no place in a " +
                         arch->model_type + " model");
    }
  }
  for (const ExpectedTensor& e : expected) {
    const auto& parts = sources[e.gguf_name];
    std::vector<int64_t> part_shape = e.shape;
    if (e.n_parts > 1) part_shape.pop_back();
    for (int64_t part = 0; part < e.n_parts; ++part) {
      auto it = parts.find(part);
      if (it == parts.end()) {
        return not_found(dir + ": tensor '" + e.gguf_name + "'" +
                         (e.n_parts > 1 ? " (expert " + std::to_string(part) + ")" : std::string()) + " of the " +
                         arch->model_type + " architecture is missing");
      }
      const SafeTensor& t = *it->second;
      if (std::vector<int64_t>(t.shape.rbegin(), t.shape.rend()) != part_shape) {  // ggml order
        return invalid_argument(dir + ": tensor '" + t.name + "' has shape " + shape_text(t.shape) +
                                ", but config.json makes it " +
                                shape_text(std::vector<int64_t>(part_shape.rbegin(), part_shape.rend())));
      }
      if (t.dtype != Dtype::kF32 && t.dtype != Dtype::kF16 && t.dtype != Dtype::kBF16 && t.dtype != Dtype::kF64) {
        return invalid_argument(dir + ": tensor '" + t.name + "' holds " + dtype_name(t.dtype) +
                                " values; weights must be floating point");
      }
    }
  }

  if (arch->gpt_oss) TM_RETURN_IF_ERROR(check_gpt_oss_experts(*model, *config));

  gguf::Writer writer;
  if (arch->encoder) {
    TM_RETURN_IF_ERROR(write_bert_metadata(dir, *config, writer));
  } else {
    write_architecture_metadata(*arch, *config, writer);
  }
  const std::string base_name = std::filesystem::path(dir).filename().string();
  writer.set_string("general.name", !options.name.empty() ? options.name
                                    : base_name.empty()     ? std::string(arch->model_type)
                                                            : base_name);
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
  if (config->longrope) {
    for (const bool is_long : {false, true}) {
      const std::vector<double>& factors = is_long ? config->longrope->long_factor : config->longrope->short_factor;
      const std::vector<float> values(factors.begin(), factors.end());
      TM_RETURN_IF_ERROR(writer.add_tensor(is_long ? "rope_factors_long.weight" : "rope_factors_short.weight",
                                           gguf::TensorType::kF32, {static_cast<int64_t>(values.size())},
                                           as_bytes(values)));
      ++summary.n_tensors;
    }
  }
  // Each tensor is read and converted while the file is written, one at a time: the
  // whole model is never in memory.
  int64_t done = 0;
  const int64_t n_expected = static_cast<int64_t>(expected.size());
  for (const ExpectedTensor& e : expected) {
    for (const auto& [part, t] : sources.at(e.gguf_name)) summary.n_parameters += t->n_elements();
    auto produce = [&, e](std::vector<uint8_t>& out) -> Status {
      std::vector<float> data;
      for (const auto& [part, t] : sources.at(e.gguf_name)) {  // experts in index order
        auto values = to_f32(*t);
        if (!values.ok()) return values.status();
        data.insert(data.end(), values->begin(), values->end());
      }
      if (arch->gemma && e.gguf_name.ends_with("norm.weight")) {
        for (float& v : data) v += 1.0f;  // Gemma's norms scale by 1 + weight
      }
      if (arch->permute_qk) {
        const bool is_q = e.gguf_name.ends_with("attn_q.weight") || e.gguf_name.ends_with("attn_q.bias");
        const bool is_k = e.gguf_name.ends_with("attn_k.weight") || e.gguf_name.ends_with("attn_k.bias");
        const int64_t row_len = e.shape.size() == 2 ? e.shape[0] : 1;
        if (is_q) data = permute_heads(data, config->n_heads, config->head_dim, row_len);
        if (is_k) data = permute_heads(data, config->n_kv_heads, config->head_dim, row_len);
      }
      const auto bytes = as_bytes(data);
      out.assign(bytes.begin(), bytes.end());
      if (options.on_progress) options.on_progress("convert", ++done, n_expected);
      return {};
    };
    TM_RETURN_IF_ERROR(writer.add_tensor_produced(e.gguf_name, gguf::TensorType::kF32, e.shape, produce));
    ++summary.n_tensors;
  }

  if (arch->gpt_oss) {
    // MXFP4 experts stay MXFP4 in a quantized file (quantize_model keeps them too); a
    // float file asked for floats.
    const quant::Mix mix = options.outtype.mix;
    const bool keep_mxfp4 = mix != quant::Mix::kF32 && mix != quant::Mix::kF16 && mix != quant::Mix::kBF16;
    auto added = add_gpt_oss_experts(*model, *config, keep_mxfp4, writer, summary.n_parameters);
    if (!added.ok()) return added.status();
    summary.n_tensors += *added;
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
  q.source_name = base_name + " (Hugging Face)";
  if (options.on_progress) {
    q.on_tensor = [&](const quant::TensorProgress& p) { options.on_progress("quantize", p.index + 1, p.n_tensors); };
  }
  auto quantized = quant::quantize_model(*source, out_path, q);
  if (!quantized.ok()) return quantized.status();
  return summary;
}

}  // namespace tokenmill::convert
