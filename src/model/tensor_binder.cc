#include "model/tensor_binder.h"

#include <cstdint>
#include <vector>

#include "quant/type_traits.h"

namespace tokenmill::model {

namespace {

std::string shape_string(const std::vector<int64_t>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

// Kernels and norms read tensors as floats and as blocks with 16-bit scales: their data
// must start on a 4-byte boundary (any real file aligns it to 32; a file may declare an
// alignment of 1).
Status check_aligned(const std::string& name, const uint8_t* data) {
  if (reinterpret_cast<uintptr_t>(data) % 4 != 0) {
    return corrupt_data("tensor '" + name + "' starts at an offset that is not a multiple of 4");
  }
  return {};
}

}  // namespace

Status TensorBinder::matrix(const std::string& name, int64_t n_rows, int64_t n_cols, ops::WeightMatrix& out) {
  const gguf::TensorInfo* info = file_.find_tensor(name);
  if (!info) return not_found("tensor '" + name + "' is missing");
  TM_RETURN_IF_ERROR(check_aligned(name, file_.tensor_data(*info).data()));
  if (info->shape.size() != 2 || info->shape[0] != n_cols || info->shape[1] != n_rows) {
    return corrupt_data("tensor '" + name + "' has shape " + shape_string(info->shape) + ", expected [" +
                        std::to_string(n_cols) + ", " + std::to_string(n_rows) + "]");
  }
  const quant::TypeTraits* traits = quant::find_type_traits(info->type);
  if (!traits || !traits->vec_dot_ref) {
    return unsupported("tensor '" + name + "' has type " + std::string(gguf::tensor_type_name(info->type)) +
                       ", which cannot be used as a weight matrix");
  }
  out.type = info->type;
  out.data = file_.tensor_data(*info).data();
  out.n_cols = n_cols;
  out.n_rows = n_rows;
  out.row_bytes = info->n_bytes / static_cast<size_t>(n_rows);
  return {};
}

Status TensorBinder::experts(const std::string& name, int64_t n_experts, int64_t n_rows, int64_t n_cols,
                             std::vector<ops::WeightMatrix>& out) {
  const gguf::TensorInfo* info = file_.find_tensor(name);
  if (!info) return not_found("tensor '" + name + "' is missing");
  TM_RETURN_IF_ERROR(check_aligned(name, file_.tensor_data(*info).data()));
  if (info->shape.size() != 3 || info->shape[0] != n_cols || info->shape[1] != n_rows || info->shape[2] != n_experts) {
    return corrupt_data("tensor '" + name + "' has shape " + shape_string(info->shape) + ", expected [" +
                        std::to_string(n_cols) + ", " + std::to_string(n_rows) + ", " + std::to_string(n_experts) + "]");
  }
  const quant::TypeTraits* traits = quant::find_type_traits(info->type);
  if (!traits || !traits->vec_dot_ref) {
    return unsupported("tensor '" + name + "' has type " + std::string(gguf::tensor_type_name(info->type)) +
                       ", which cannot be used as a weight matrix");
  }
  const size_t row_bytes = info->n_bytes / static_cast<size_t>(n_rows * n_experts);
  out.assign(static_cast<size_t>(n_experts), ops::WeightMatrix{});
  for (int64_t e = 0; e < n_experts; ++e) {
    ops::WeightMatrix& m = out[static_cast<size_t>(e)];
    m.type = info->type;
    m.data = file_.tensor_data(*info).data() + static_cast<size_t>(e * n_rows) * row_bytes;
    m.n_cols = n_cols;
    m.n_rows = n_rows;
    m.row_bytes = row_bytes;
  }
  return {};
}

Status TensorBinder::vector(const std::string& name, int64_t n, const float*& out) {
  const gguf::TensorInfo* info = file_.find_tensor(name);
  if (!info) return not_found("tensor '" + name + "' is missing");
  if (info->type != gguf::TensorType::kF32) {
    return unsupported("tensor '" + name + "' has type " + std::string(gguf::tensor_type_name(info->type)) +
                       ", expected f32");
  }
  if (info->n_elements() != n) {
    return corrupt_data("tensor '" + name + "' has " + std::to_string(info->n_elements()) + " elements, expected " +
                        std::to_string(n));
  }
  TM_RETURN_IF_ERROR(check_aligned(name, file_.tensor_data(*info).data()));
  out = reinterpret_cast<const float*>(file_.tensor_data(*info).data());
  return {};
}

}  // namespace tokenmill::model
