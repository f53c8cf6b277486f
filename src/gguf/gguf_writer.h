// Writing GGUF v3 files that llama.cpp loads. Metadata keeps insertion order; tensors are
// laid out in the order added, each aligned to general.alignment (default 32).
// write() goes to a temporary file beside the target and renames it into place, so a
// failed write never leaves a half-written file at the path. Tensors added with a
// producer are made one at a time while the file is written, so a model larger than
// memory can be written.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "gguf/tensor_type.h"
#include "gguf/value.h"

namespace tokenmill::gguf {

class Writer {
 public:
  // Sets (or replaces) a metadata key.
  void set(std::string_view key, Value value);
  void set_string(std::string_view key, std::string v) { set(key, Value(std::move(v))); }
  void set_u32(std::string_view key, uint32_t v) { set(key, Value(v)); }
  void set_i32(std::string_view key, int32_t v) { set(key, Value(v)); }
  void set_f32(std::string_view key, float v) { set(key, Value(v)); }
  void set_bool(std::string_view key, bool v) { set(key, Value(v)); }
  void set_strings(std::string_view key, const std::vector<std::string>& v) {
    set(key, make_array(ValueType::kString, v));
  }
  bool has(std::string_view key) const;

  // Adds a tensor; data must hold exactly the bytes its type and shape need and is
  // copied. shape is in ggml order (shape[0] contiguous).
  Status add_tensor(std::string name, TensorType type, std::vector<int64_t> shape,
                    std::span<const uint8_t> data);
  // Adds a tensor whose bytes `produce` writes into its argument when the file is
  // written (in the order tensors were added); it must give exactly the bytes the type
  // and shape need, and its error stops the write.
  using Producer = std::function<Status(std::vector<uint8_t>& out)>;
  Status add_tensor_produced(std::string name, TensorType type, std::vector<int64_t> shape, Producer produce);

  // Both fail with InvalidArgument if general.alignment is not a power of two up to
  // kMaxAlignment or an array's items do not match its element type.
  Status write(const std::string& path) const;
  // The complete file as bytes (tests, small files).
  Result<std::vector<uint8_t>> to_bytes() const;

 private:
  struct PendingTensor {
    std::string name;
    TensorType type;
    std::vector<int64_t> shape;
    size_t n_bytes = 0;
    std::vector<uint8_t> data;  // or, when set, made by produce
    Producer produce;
  };
  // Checks a tensor's name, shape and type; its byte size.
  Result<size_t> check_tensor(const std::string& name, TensorType type, const std::vector<int64_t>& shape) const;
  // Everything before the tensor data (header, metadata, tensor infos, padding).
  Result<std::vector<uint8_t>> header_bytes() const;
  // A tensor's bytes: stored, or produced and checked against its size.
  Status tensor_bytes(const PendingTensor& t, std::vector<uint8_t>& scratch, std::span<const uint8_t>& out) const;
  // general.alignment, or InvalidArgument if File::parse would reject its value.
  Result<uint64_t> alignment() const;

  std::vector<KeyValue> metadata_;
  std::vector<PendingTensor> tensors_;
};

}  // namespace tokenmill::gguf
