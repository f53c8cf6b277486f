#include "quant/quantize_model.h"

#include <algorithm>
#include <cmath>
#include <mutex>
#include <vector>

#include "base/thread_pool.h"
#include "base/timer.h"
#include "gguf/gguf_writer.h"
#include "quant/quant.h"

namespace tokenmill::quant {

namespace {

using gguf::TensorType;

std::string base_name(const std::string& path) {
  const size_t slash = path.find_last_of('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

bool is_recorded_by_us(const std::string& key) {
  return key == "general.file_type" || key == "general.quantization_version" || key.rfind("tokenmill.quantize.", 0) == 0;
}

// Per-column importance for the error weights: E[x_j^2] scaled to mean 1, with a small
// floor so that a channel never seen active still counts a little (an all-zero weight
// group would otherwise have no scale to fit).
std::vector<float> importance_weights(const ImportanceEntry& entry) {
  std::vector<float> w = entry.mean_sq();
  double mean = 0.0;
  for (float v : w) mean += v;
  mean /= static_cast<double>(std::max<size_t>(1, w.size()));
  if (!(mean > 0.0)) return std::vector<float>(w.size(), 1.0f);
  constexpr float kFloor = 1e-3f;
  for (float& v : w) v = static_cast<float>(v / mean) + kFloor;
  return w;
}

const GptqHessian* gptq_entry(const QuantizeOptions& options, const std::string& name) {
  if (!options.gptq) return nullptr;
  auto it = options.gptq->find(name);
  return it == options.gptq->end() || !it->second ? nullptr : it->second.get();
}

// A tensor's rows as floats: its type's dequantization over the file's bytes.
struct SourceRows {
  const gguf::TensorInfo* info;
  const TypeTraits* traits;
  const uint8_t* data;
  size_t row_bytes;

  int64_t n_cols() const { return info->shape[0]; }
  int64_t n_rows() const { return info->n_rows(); }
  // Row r into values[0, n_cols()); false where a value is not finite.
  bool read(int64_t r, float* values) const {
    traits->dequantize_row(data + static_cast<size_t>(r) * row_bytes, values, n_cols());
    return std::all_of(values, values + n_cols(), [](float v) { return std::isfinite(v); });
  }
  Status non_finite(int64_t r) const {
    return corrupt_data("tensor '" + info->name + "' holds a non-finite value in row " + std::to_string(r));
  }
};

Result<SourceRows> source_rows(const gguf::File& file, const gguf::TensorInfo& info) {
  const TypeTraits* traits = find_type_traits(info.type);
  if (!traits) {
    return unsupported("tensor '" + info.name + "' has type " + std::string(gguf::tensor_type_name(info.type)) +
                       ", which cannot be converted");
  }
  return SourceRows{&info, traits, file.tensor_data(info).data(),
                    info.n_bytes / static_cast<size_t>(std::max<int64_t>(1, info.n_rows()))};
}

// Converts every row of `info` from its type to new_type.
Status convert_tensor(const gguf::File& file, const gguf::TensorInfo& info, TensorType new_type,
                      const float* importance, ThreadPool& pool, std::vector<uint8_t>& out) {
  auto source = source_rows(file, info);
  if (!source.ok()) return source.status();
  const int64_t n_cols = source->n_cols();
  const int64_t n_rows = source->n_rows();
  const size_t out_row_bytes = row_size(new_type, n_cols);
  out.assign(out_row_bytes * static_cast<size_t>(n_rows), 0);

  std::mutex error_mutex;
  int64_t bad_row = -1;
  std::vector<std::vector<float>> row_buffers(pool.n_threads(), std::vector<float>(n_cols));
  pool.parallel_for(static_cast<size_t>(n_rows), [&](int thread, size_t begin, size_t end) {
    float* values = row_buffers[thread].data();  // [n_cols]
    for (size_t r = begin; r < end; ++r) {
      if (!source->read(static_cast<int64_t>(r), values)) {
        std::lock_guard<std::mutex> lock(error_mutex);
        if (bad_row < 0 || static_cast<int64_t>(r) < bad_row) bad_row = static_cast<int64_t>(r);
        return;
      }
      quantize_row_weighted(new_type, values, out.data() + r * out_row_bytes, n_cols, importance);
    }
  });
  return bad_row >= 0 ? source->non_finite(bad_row) : Status{};
}

// GPTQ for one tensor: all rows dequantized, then quantized in tiles of rows over the
// pool, against the inverse factor of the tensor's calibration Hessian.
Status convert_tensor_gptq(const gguf::File& file, const gguf::TensorInfo& info, TensorType new_type,
                           const GptqHessian& hessian, double damp, ThreadPool& pool, std::vector<uint8_t>& out) {
  auto source = source_rows(file, info);
  if (!source.ok()) return source.status();
  const int64_t n_cols = source->n_cols();
  const int64_t n_rows = source->n_rows();
  if (hessian.n != n_cols || hessian.sum_xxt.size() != static_cast<size_t>(n_cols * n_cols)) {
    return invalid_argument("the GPTQ statistics of '" + info.name + "' have " + std::to_string(hessian.n) +
                            " columns but the tensor has " + std::to_string(n_cols));
  }
  auto u = gptq_inverse_factor(hessian.sum_xxt.data(), n_cols, damp, &pool);
  if (!u.ok()) return invalid_argument("tensor '" + info.name + "': " + u.status().message());
  const std::vector<float> importance = gptq_importance(hessian.sum_xxt.data(), n_cols);

  const size_t out_row_bytes = row_size(new_type, n_cols);
  out.assign(out_row_bytes * static_cast<size_t>(n_rows), 0);
  std::vector<float> values(static_cast<size_t>(n_rows * n_cols));
  for (int64_t r = 0; r < n_rows; ++r) {
    if (!source->read(r, values.data() + r * n_cols)) return source->non_finite(r);
  }
  constexpr int64_t kTile = 16;  // rows per call: U's rows are reused from cache across them
  const int64_t n_tiles = (n_rows + kTile - 1) / kTile;
  pool.parallel_for(static_cast<size_t>(n_tiles), [&](int, size_t begin, size_t end) {
    for (size_t t = begin; t < end; ++t) {
      const int64_t r0 = static_cast<int64_t>(t) * kTile;
      const int64_t rows = std::min(kTile, n_rows - r0);
      gptq_quantize_rows(new_type, values.data() + r0 * n_cols, rows, n_cols, u->data(), importance.data(),
                         out.data() + r0 * out_row_bytes);
    }
  });
  return {};
}

}  // namespace

Result<ModelFacts> read_model_facts(const gguf::File& file) {
  auto arch = file.get_string("general.architecture");
  if (!arch.ok()) return invalid_argument("not a model file: general.architecture is missing");
  ModelFacts facts;
  auto n_layers = file.get_int(*arch + ".block_count");
  if (!n_layers.ok() || *n_layers <= 0 || *n_layers > 100000) {
    return invalid_argument("not a model file: " + *arch + ".block_count is missing or out of range");
  }
  facts.n_layers = static_cast<int32_t>(*n_layers);
  facts.n_heads = static_cast<int32_t>(file.get_int_or(*arch + ".attention.head_count", 1));
  facts.n_kv_heads = static_cast<int32_t>(file.get_int_or(*arch + ".attention.head_count_kv", facts.n_heads));
  facts.tied_embeddings = file.find_tensor("output.weight") == nullptr;
  return facts;
}

Status check_importance_matrix(const ImportanceMatrix& imatrix, const gguf::File& file) {
  int64_t n_matched = 0;
  for (const auto& [name, entry] : imatrix.entries) {
    const gguf::TensorInfo* info = file.find_tensor(name);
    if (!info) {
      return invalid_argument("the imatrix has an entry for '" + name +
                              "', which this model does not have: it was made from another model");
    }
    if (static_cast<int64_t>(entry.sum_sq.size()) != info->shape[0]) {
      return invalid_argument("the imatrix entry for '" + name + "' has " + std::to_string(entry.sum_sq.size()) +
                              " columns but the tensor has " + std::to_string(info->shape[0]) +
                              ": it was made from another model");
    }
    ++n_matched;
  }
  if (n_matched == 0) return invalid_argument("the imatrix matches no tensor of the model");
  return {};
}

Result<QuantizeSummary> quantize_model(const gguf::File& source, const std::string& output_path,
                                       const QuantizeOptions& options) {
  Timer timer;
  auto facts = read_model_facts(source);
  if (!facts.ok()) return facts.status();
  if (options.imatrix) TM_RETURN_IF_ERROR(check_importance_matrix(*options.imatrix, source));

  // Types that need an importance matrix are checked before anything is written.
  for (const gguf::TensorInfo& t : source.tensors()) {
    const TensorFacts tensor{t.name, static_cast<int32_t>(t.shape.size()), t.shape[0]};
    const TypeChoice choice = choose_tensor_type(options.mix, tensor, *facts,
                                                 options.imatrix != nullptr || options.gptq != nullptr,
                                                 options.type_overrides);
    if (!choice.quantized_weight || choice.type == t.type || !type_requires_importance(choice.type, t.name)) continue;
    const bool has_importance = (options.imatrix && options.imatrix->find(t.name)) || gptq_entry(options, t.name);
    if (!has_importance) {
      return invalid_argument("quantizing '" + t.name + "' to " + std::string(gguf::tensor_type_name(choice.type)) +
                              " needs an importance matrix" +
                              (options.imatrix ? std::string(", and the imatrix has no entry for it")
                                               : std::string(": pass --imatrix FILE (from tokenmill imatrix) "
                                                             "or use --method gptq")));
    }
  }

  int64_t n_quantized_sources = 0;
  for (const gguf::TensorInfo& t : source.tensors()) {
    if (is_quantizable_weight({t.name, static_cast<int32_t>(t.shape.size()), t.shape[0]}) &&
        find_type_traits(t.type) && type_traits(t.type).is_quantized) {
      ++n_quantized_sources;
    }
  }
  if (n_quantized_sources > 0 && options.on_requantize) options.on_requantize(n_quantized_sources);

  gguf::Writer writer;
  for (const gguf::KeyValue& kv : source.metadata()) {
    if (!is_recorded_by_us(kv.key)) writer.set(kv.key, kv.value);
  }
  writer.set_u32("general.quantization_version", 2);
  writer.set_u32("general.file_type", options.mix.llama_file_type);
  writer.set_string("tokenmill.quantize.type", std::string(options.mix.name));
  writer.set_string("tokenmill.quantize.source",
                    options.source_name.empty() ? base_name(source.path()) : options.source_name);
  writer.set_string("tokenmill.quantize.method", options.gptq ? "gptq" : options.imatrix ? "imatrix" : "rtn");
  writer.set_bool("tokenmill.quantize.requantized", n_quantized_sources > 0);
  if (options.imatrix) {
    writer.set_string("tokenmill.quantize.imatrix.file", base_name(options.imatrix_path));
    writer.set_u32("tokenmill.quantize.imatrix.chunk_count", options.imatrix->n_chunks);
    writer.set_strings("tokenmill.quantize.imatrix.datasets", options.imatrix->datasets);
  }
  if (options.gptq) {
    writer.set_string("tokenmill.quantize.gptq.calibration_file", base_name(options.gptq_calib_path));
    writer.set_u32("tokenmill.quantize.gptq.calibration_tokens", static_cast<uint32_t>(options.gptq_calib_tokens));
    writer.set_f32("tokenmill.quantize.gptq.damp", static_cast<float>(options.gptq_damp));
  }

  ThreadPool pool(std::max(1, options.n_threads));
  QuantizeSummary summary;
  const int64_t n_tensors = static_cast<int64_t>(source.tensors().size());
  // Each tensor is converted while the output is written, one at a time: the output is
  // never whole in memory.
  for (int64_t i = 0; i < n_tensors; ++i) {
    const gguf::TensorInfo& info = source.tensors()[i];
    const TensorFacts tensor{info.name, static_cast<int32_t>(info.shape.size()), info.shape[0]};
    TypeChoice choice = choose_tensor_type(options.mix, tensor, *facts, options.imatrix != nullptr || options.gptq != nullptr,
                                           options.type_overrides);
    summary.source_tensor_bytes += info.n_bytes;
    summary.n_parameters += info.n_elements();
    const bool carried_over = !find_type_traits(info.type) && !choice.quantized_weight;
    if (carried_over) choice.type = info.type;  // an integer tensor or similar that is not a weight matrix
    // MXFP4 weights (gpt-oss's experts as published) are kept: that is the precision they
    // were trained in, and any other type could only add error.
    if (info.type == gguf::TensorType::kMXFP4 && choice.quantized_weight) choice.type = choice.wanted = info.type;
    if (choice.type != choice.wanted) ++summary.n_fallbacks;

    auto produce = [&, i, choice, carried_over](std::vector<uint8_t>& out) -> Status {
      TensorProgress progress;
      progress.index = i;
      progress.n_tensors = n_tensors;
      progress.source = &info;
      progress.wanted_type = choice.wanted;
      if (carried_over || choice.type == info.type) {
        // Carried over, or already in the wanted type: copying loses nothing, requantizing would.
        const std::span<const uint8_t> data = source.tensor_data(info);
        out.assign(data.begin(), data.end());
      } else if (const GptqHessian* hessian = gptq_entry(options, info.name);
                 hessian && choice.quantized_weight && supports_gptq(choice.type)) {
        TM_RETURN_IF_ERROR(convert_tensor_gptq(source, info, choice.type, *hessian, options.gptq_damp, pool, out));
        progress.used_gptq = true;
        ++summary.n_with_gptq;
      } else {
        std::vector<float> importance;
        if (choice.quantized_weight && supports_weighted_quantization(choice.type)) {
          if (const ImportanceEntry* entry = options.imatrix ? options.imatrix->find(info.name) : nullptr) {
            importance = importance_weights(*entry);
          } else if (hessian && hessian->n == info.shape[0]) {
            // A type GPTQ does not compensate for still weighs its error by the calibration.
            importance = gptq_importance(hessian->sum_xxt.data(), hessian->n);
          }
          if (!importance.empty()) {
            progress.used_importance = true;
            ++summary.n_with_importance;
          }
        }
        TM_RETURN_IF_ERROR(convert_tensor(source, info, choice.type, importance.empty() ? nullptr : importance.data(),
                                          pool, out));
      }
      summary.output_tensor_bytes += out.size();
      progress.new_type = choice.type;
      progress.new_bytes = out.size();
      if (options.on_tensor) options.on_tensor(progress);
      return {};
    };
    TM_RETURN_IF_ERROR(writer.add_tensor_produced(info.name, choice.type, info.shape, produce));
  }
  TM_RETURN_IF_ERROR(writer.write(output_path));
  summary.seconds = timer.seconds();
  return summary;
}

}  // namespace tokenmill::quant
