#include "quant/imatrix_file.h"

#include <cstring>

#include "gguf/gguf_file.h"
#include "gguf/gguf_writer.h"

namespace tokenmill::quant {

namespace {

constexpr std::string_view kSumSuffix = ".in_sum2";
constexpr std::string_view kCountSuffix = ".counts";

bool ends_with(const std::string& s, std::string_view suffix) {
  return s.size() > suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

std::span<const uint8_t> float_bytes(const std::vector<float>& v) {
  return {reinterpret_cast<const uint8_t*>(v.data()), v.size() * sizeof(float)};
}

}  // namespace

std::vector<float> ImportanceEntry::mean_sq() const {
  std::vector<float> mean(sum_sq.size(), 1.0f);
  if (n_tokens == 0) return mean;
  for (size_t j = 0; j < sum_sq.size(); ++j) mean[j] = static_cast<float>(sum_sq[j] / static_cast<double>(n_tokens));
  return mean;
}

const ImportanceEntry* ImportanceMatrix::find(const std::string& name) const {
  auto it = entries.find(name);
  return it == entries.end() ? nullptr : &it->second;
}

Status write_importance_matrix(const ImportanceMatrix& matrix, const std::string& path) {
  gguf::Writer writer;
  writer.set_string("general.type", "imatrix");
  writer.set_strings("imatrix.datasets", matrix.datasets);
  writer.set_u32("imatrix.chunk_count", matrix.n_chunks);
  writer.set_u32("imatrix.chunk_size", matrix.chunk_size);
  for (const auto& [name, entry] : matrix.entries) {
    if (entry.sum_sq.empty()) continue;
    std::vector<float> sums(entry.sum_sq.begin(), entry.sum_sq.end());
    std::vector<float> count = {static_cast<float>(entry.n_tokens)};
    TM_RETURN_IF_ERROR(writer.add_tensor(name + std::string(kSumSuffix), gguf::TensorType::kF32,
                                         {static_cast<int64_t>(sums.size()), 1}, float_bytes(sums)));
    TM_RETURN_IF_ERROR(
        writer.add_tensor(name + std::string(kCountSuffix), gguf::TensorType::kF32, {1, 1}, float_bytes(count)));
  }
  return writer.write(path);
}

Result<ImportanceMatrix> read_importance_matrix(const std::string& path) {
  auto file = gguf::File::open(path);
  if (!file.ok()) return Status(file.status().code(), "imatrix '" + path + "': " + file.status().message());
  const std::string type = file->get_string_or("general.type", "");
  if (type != "imatrix") {
    return invalid_argument("'" + path + "' is not an importance matrix (general.type is '" + type +
                            "', expected 'imatrix')");
  }
  ImportanceMatrix matrix;
  matrix.n_chunks = static_cast<uint32_t>(file->get_int_or("imatrix.chunk_count", 0));
  matrix.chunk_size = static_cast<uint32_t>(file->get_int_or("imatrix.chunk_size", 0));
  if (const gguf::Array* datasets = file->get_array("imatrix.datasets")) {
    for (const gguf::Value& v : datasets->items) {
      if (const std::string* s = v.as_string()) matrix.datasets.push_back(*s);
    }
  }
  for (const gguf::TensorInfo& info : file->tensors()) {
    if (!ends_with(info.name, kSumSuffix)) continue;
    const std::string weight = info.name.substr(0, info.name.size() - kSumSuffix.size());
    const gguf::TensorInfo* count = file->find_tensor(weight + std::string(kCountSuffix));
    if (!count) return corrupt_data("imatrix '" + path + "': '" + info.name + "' has no matching counts tensor");
    if (info.type != gguf::TensorType::kF32 || count->type != gguf::TensorType::kF32) {
      return corrupt_data("imatrix '" + path + "': entries of '" + weight + "' are not f32");
    }
    // One matrix per weight (mixture-of-experts stacks are not supported).
    if (info.n_rows() != 1 || count->n_elements() != 1) {
      return unsupported("imatrix '" + path + "': '" + weight + "' holds " + std::to_string(count->n_elements()) +
                         " matrices; only one per weight is supported");
    }
    ImportanceEntry entry;
    const int64_t n_cols = info.shape[0];
    std::vector<float> sums(n_cols);
    std::memcpy(sums.data(), file->tensor_data(info).data(), n_cols * sizeof(float));
    float n_tokens = 0;
    std::memcpy(&n_tokens, file->tensor_data(*count).data(), sizeof n_tokens);
    if (!(n_tokens >= 0.0f)) return corrupt_data("imatrix '" + path + "': '" + weight + "' has a negative count");
    entry.sum_sq.assign(sums.begin(), sums.end());
    entry.n_tokens = static_cast<int64_t>(n_tokens);
    matrix.entries.emplace(weight, std::move(entry));
  }
  if (matrix.entries.empty()) return invalid_argument("imatrix '" + path + "' has no entries");
  return matrix;
}

}  // namespace tokenmill::quant
