// Writing GGUF v3 files that llama.cpp loads. Metadata keeps insertion order; tensors are
// laid out in the order added, each aligned to general.alignment (default 32).
// write() goes to a temporary file beside the target and renames it into place, so a
// failed write never leaves a half-written file at the path.
#pragma once

#include <cstdint>
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
    std::vector<uint8_t> data;
  };
  // general.alignment, or InvalidArgument if File::parse would reject its value.
  Result<uint64_t> alignment() const;

  std::vector<KeyValue> metadata_;
  std::vector<PendingTensor> tensors_;
};

}  // namespace tokenmill::gguf
