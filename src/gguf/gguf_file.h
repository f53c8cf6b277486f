// Reading GGUF (versions 2 and 3) over a memory map.
//
// The reader is a security boundary: every count, length, offset, dimension and size is
// checked before it is used, so a malformed file yields a Status naming the problem and
// never a crash, a huge allocation or a read past the end.
//
// File layout (all little-endian):
//   "GGUF" | u32 version | u64 n_tensors | u64 n_kv
//   n_kv x      { string key | u32 value_type | value }
//   n_tensors x { string name | u32 n_dims | n_dims x u64 dim | u32 type | u64 offset }
//   padding to general.alignment (default 32)
//   tensor data; each tensor at data_start + offset, offsets aligned
// A string is u64 length + bytes (no terminator); an array is u32 element_type +
// u64 count + elements.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "base/mapped_file.h"
#include "base/status.h"
#include "gguf/tensor_type.h"
#include "gguf/value.h"

namespace tokenmill::gguf {

inline constexpr uint32_t kMaxDims = 4;
inline constexpr uint64_t kDefaultAlignment = 32;
// general.alignment must be a power of two no larger than this.
inline constexpr uint64_t kMaxAlignment = 1u << 20;

struct TensorInfo {
  std::string name;
  TensorType type = TensorType::kF32;
  std::vector<int64_t> shape;  // ggml order: shape[0] is the contiguous (row) dimension
  uint64_t offset = 0;         // from the start of the data section
  uint64_t n_bytes = 0;

  int64_t n_elements() const;
  int64_t n_rows() const { return shape.empty() || shape[0] == 0 ? 0 : n_elements() / shape[0]; }
};

class File {
 public:
  // Maps and validates the file at path.
  static Result<File> open(const std::string& path);
  // Parses bytes the caller keeps alive for the File's lifetime (tests, fuzzing).
  static Result<File> parse(std::span<const uint8_t> bytes);

  uint32_t version() const { return version_; }
  uint64_t alignment() const { return alignment_; }
  uint64_t data_offset() const { return data_offset_; }
  size_t file_size() const { return bytes_.size(); }
  // The whole file as mapped (or as given to parse()).
  std::span<const uint8_t> bytes() const { return bytes_; }
  const std::string& path() const { return path_; }

  // Metadata in file order.
  const std::vector<KeyValue>& metadata() const { return metadata_; }
  const Value* find(std::string_view key) const;

  // Typed lookups: NotFound if absent, InvalidArgument if the type does not fit.
  Result<std::string> get_string(std::string_view key) const;
  Result<int64_t> get_int(std::string_view key) const;
  Result<uint64_t> get_uint(std::string_view key) const;
  Result<double> get_double(std::string_view key) const;
  Result<bool> get_bool(std::string_view key) const;
  const Array* get_array(std::string_view key) const;
  // Defaults for optional keys (a present key of the wrong type still yields the default).
  std::string get_string_or(std::string_view key, std::string fallback) const;
  int64_t get_int_or(std::string_view key, int64_t fallback) const;
  double get_double_or(std::string_view key, double fallback) const;
  bool get_bool_or(std::string_view key, bool fallback) const;

  const std::vector<TensorInfo>& tensors() const { return tensors_; }
  const TensorInfo* find_tensor(std::string_view name) const;
  // The tensor's bytes inside the mapping. REQUIRES: info belongs to this file.
  std::span<const uint8_t> tensor_data(const TensorInfo& info) const;

  // Reads the whole mapping in (see MappedFile::prefetch).
  void prefetch() const { mapping_.prefetch(); }
  // Drops the pages of [p, p + n), bytes of this file's mapping, from memory
  // (MappedFile::release); nothing when the file was parsed from caller-owned bytes.
  void release(const uint8_t* p, size_t n) const { mapping_.release(p, n); }

 private:
  MappedFile mapping_;  // empty when parsed from caller-owned bytes
  std::span<const uint8_t> bytes_;
  std::string path_;
  uint32_t version_ = 0;
  uint64_t alignment_ = kDefaultAlignment;
  uint64_t data_offset_ = 0;
  std::vector<KeyValue> metadata_;
  std::unordered_map<std::string, size_t> metadata_index_;
  std::vector<TensorInfo> tensors_;
  std::unordered_map<std::string, size_t> tensor_index_;

  friend class Parser;
};

}  // namespace tokenmill::gguf
