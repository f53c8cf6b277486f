// Reading Hugging Face safetensors files: an 8-byte little-endian header length, a JSON
// header naming each tensor's dtype, shape and byte range, then the data. The files are
// untrusted input: every field is checked before anything is sized or read from it —
// the header fits the file, each range lies inside the data and matches its dtype and
// shape (in 64 bits, without overflow), no two tensors overlap, names are unique.
//
// A model directory holds either one `model.safetensors` or shards listed by
// `model.safetensors.index.json` (its weight_map names each tensor's shard). Tensors are
// read through the memory map; nothing is copied until a caller converts one.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "base/mapped_file.h"
#include "base/status.h"

namespace tokenmill::convert {

enum class Dtype { kF64, kF32, kF16, kBF16, kI64, kI32, kI16, kI8, kU8, kBool };

const char* dtype_name(Dtype dtype);
int dtype_size(Dtype dtype);

struct SafeTensor {
  std::string name;
  Dtype dtype = Dtype::kF32;
  std::vector<int64_t> shape;  // row-major as in PyTorch: shape.back() is contiguous
  std::span<const uint8_t> data;

  int64_t n_elements() const;
};

// One mapped file and its tensors.
class SafetensorsFile {
 public:
  static Result<SafetensorsFile> open(const std::string& path);
  // The same checks on bytes in memory (tests, the fuzzer); the bytes must outlive it.
  static Result<SafetensorsFile> parse(std::span<const uint8_t> bytes, const std::string& label);

  const std::vector<SafeTensor>& tensors() const { return tensors_; }
  const std::string& path() const { return path_; }

 private:
  MappedFile map_;
  std::string path_;
  std::vector<SafeTensor> tensors_;
};

// Every tensor of a model directory, by name.
class SafetensorsModel {
 public:
  static Result<SafetensorsModel> open_dir(const std::string& dir);

  const SafeTensor* find(const std::string& name) const;
  const std::map<std::string, const SafeTensor*>& tensors() const { return by_name_; }

 private:
  std::vector<std::unique_ptr<SafetensorsFile>> files_;
  std::map<std::string, const SafeTensor*> by_name_;
};

// A tensor's values as float32 (F64/F32/F16/BF16 only; integers are refused).
Result<std::vector<float>> to_f32(const SafeTensor& tensor);

}  // namespace tokenmill::convert
