#include "gguf/gguf_file.h"

#include <cstring>
#include <limits>
#include <optional>

namespace tokenmill::gguf {

namespace {

constexpr uint32_t kMagic = 0x46554747;  // "GGUF" read as little-endian u32
// Bounds that no real model reaches; a file past them is corrupt, and checking early
// keeps a hostile count from turning into a huge allocation.
constexpr uint64_t kMaxStringBytes = 64ull << 20;
constexpr uint64_t kMaxArrayDepth = 8;

}  // namespace

// Reads primitives from the byte span with bounds checks; every failure names what was
// being read and at which offset.
class Parser {
 public:
  explicit Parser(std::span<const uint8_t> bytes) : bytes_(bytes) {}

  Status parse_into(File& file);

 private:
  size_t remaining() const { return bytes_.size() - pos_; }

  template <typename T>
  Status read(T& out, const char* what) {
    if (remaining() < sizeof(T)) return truncated(what);
    std::memcpy(&out, bytes_.data() + pos_, sizeof(T));
    pos_ += sizeof(T);
    return {};
  }

  Status truncated(const std::string& what) const {
    return corrupt_data("file ends at byte " + std::to_string(bytes_.size()) + " while reading " +
                        what + " at offset " + std::to_string(pos_));
  }

  Status read_string(std::string& out, const std::string& what) {
    uint64_t length = 0;
    TM_RETURN_IF_ERROR(read(length, "string length"));
    if (length > kMaxStringBytes) {
      return corrupt_data(what + ": string length " + std::to_string(length) +
                          " exceeds the limit of " + std::to_string(kMaxStringBytes) + " bytes");
    }
    if (length > remaining()) return truncated(what + " (" + std::to_string(length) + "-byte string)");
    out.assign(reinterpret_cast<const char*>(bytes_.data() + pos_), length);
    pos_ += length;
    return {};
  }

  // Smallest number of bytes one element of this type can occupy in the file.
  static uint64_t min_element_bytes(ValueType type) {
    switch (type) {
      case ValueType::kUint8: case ValueType::kInt8: case ValueType::kBool: return 1;
      case ValueType::kUint16: case ValueType::kInt16: return 2;
      case ValueType::kUint32: case ValueType::kInt32: case ValueType::kFloat32: return 4;
      case ValueType::kUint64: case ValueType::kInt64: case ValueType::kFloat64: return 8;
      case ValueType::kString: return 8;
      case ValueType::kArray: return 12;
    }
    return 1;
  }

  Status read_value(ValueType type, Value& out, const std::string& what, uint64_t depth);

  template <typename T>
  Status read_scalar(Value& out, const std::string& what) {
    T v{};
    TM_RETURN_IF_ERROR(read(v, what.c_str()));
    out = Value(v);
    return {};
  }

  std::span<const uint8_t> bytes_;
  size_t pos_ = 0;
};

Status Parser::read_value(ValueType type, Value& out, const std::string& what, uint64_t depth) {
  switch (type) {
    case ValueType::kUint8: return read_scalar<uint8_t>(out, what);
    case ValueType::kInt8: return read_scalar<int8_t>(out, what);
    case ValueType::kUint16: return read_scalar<uint16_t>(out, what);
    case ValueType::kInt16: return read_scalar<int16_t>(out, what);
    case ValueType::kUint32: return read_scalar<uint32_t>(out, what);
    case ValueType::kInt32: return read_scalar<int32_t>(out, what);
    case ValueType::kFloat32: return read_scalar<float>(out, what);
    case ValueType::kUint64: return read_scalar<uint64_t>(out, what);
    case ValueType::kInt64: return read_scalar<int64_t>(out, what);
    case ValueType::kFloat64: return read_scalar<double>(out, what);
    case ValueType::kBool: {
      uint8_t b = 0;
      TM_RETURN_IF_ERROR(read(b, what.c_str()));
      if (b > 1) return corrupt_data(what + ": bool byte is " + std::to_string(b) + ", expected 0 or 1");
      out = Value(b == 1);
      return {};
    }
    case ValueType::kString: {
      std::string s;
      TM_RETURN_IF_ERROR(read_string(s, what));
      out = Value(std::move(s));
      return {};
    }
    case ValueType::kArray: {
      if (depth >= kMaxArrayDepth) return corrupt_data(what + ": arrays nested deeper than 8 levels");
      uint32_t element_type = 0;
      uint64_t count = 0;
      TM_RETURN_IF_ERROR(read(element_type, "array element type"));
      if (element_type > static_cast<uint32_t>(ValueType::kFloat64)) {
        return corrupt_data(what + ": unknown array element type " + std::to_string(element_type));
      }
      TM_RETURN_IF_ERROR(read(count, "array length"));
      const auto etype = static_cast<ValueType>(element_type);
      // Each element takes at least min_element_bytes, so a count the rest of the file
      // cannot hold is rejected before anything is allocated.
      if (count > remaining() / min_element_bytes(etype)) {
        return corrupt_data(what + ": array of " + std::to_string(count) + " " +
                            std::string(value_type_name(etype)) + " elements does not fit in the " +
                            std::to_string(remaining()) + " bytes left");
      }
      Array array;
      array.element_type = etype;
      array.items.resize(count);
      for (uint64_t i = 0; i < count; ++i) {
        TM_RETURN_IF_ERROR(read_value(etype, array.items[i], what, depth + 1));
      }
      out = Value(std::move(array));
      return {};
    }
  }
  return corrupt_data(what + ": unknown value type " + std::to_string(static_cast<uint32_t>(type)));
}

Status Parser::parse_into(File& file) {
  uint32_t magic = 0;
  if (bytes_.size() < 4) return corrupt_data("not a GGUF file: only " + std::to_string(bytes_.size()) + " bytes");
  TM_RETURN_IF_ERROR(read(magic, "magic"));
  if (magic != kMagic) return corrupt_data("not a GGUF file: the first four bytes are not \"GGUF\"");
  TM_RETURN_IF_ERROR(read(file.version_, "version"));
  if (file.version_ == 1) return unsupported("GGUF version 1 is not supported (versions 2 and 3 are)");
  if (file.version_ != 2 && file.version_ != 3) {
    return unsupported("unknown GGUF version " + std::to_string(file.version_) + " (expected 2 or 3)");
  }
  uint64_t n_tensors = 0, n_kv = 0;
  TM_RETURN_IF_ERROR(read(n_tensors, "tensor count"));
  TM_RETURN_IF_ERROR(read(n_kv, "metadata count"));
  // A key-value pair takes at least 8 (key length) + 4 (type) + 1 bytes; a tensor info
  // at least 8 + 4 + 4 + 8.
  if (n_kv > remaining() / 13) {
    return corrupt_data("metadata count " + std::to_string(n_kv) + " cannot fit in a " +
                        std::to_string(bytes_.size()) + "-byte file");
  }
  if (n_tensors > remaining() / 24) {
    return corrupt_data("tensor count " + std::to_string(n_tensors) + " cannot fit in a " +
                        std::to_string(bytes_.size()) + "-byte file");
  }

  file.metadata_.reserve(n_kv);
  for (uint64_t i = 0; i < n_kv; ++i) {
    KeyValue kv;
    TM_RETURN_IF_ERROR(read_string(kv.key, "metadata key #" + std::to_string(i)));
    uint32_t type = 0;
    TM_RETURN_IF_ERROR(read(type, "metadata value type"));
    if (type > static_cast<uint32_t>(ValueType::kFloat64)) {
      return corrupt_data("metadata '" + kv.key + "' has unknown value type " + std::to_string(type));
    }
    TM_RETURN_IF_ERROR(read_value(static_cast<ValueType>(type), kv.value, "metadata '" + kv.key + "'", 0));
    if (!file.metadata_index_.emplace(kv.key, file.metadata_.size()).second) {
      return corrupt_data("metadata key '" + kv.key + "' appears twice");
    }
    file.metadata_.push_back(std::move(kv));
  }

  if (const Value* a = file.find("general.alignment")) {
    // as_uint() also converts a bool, which is not an alignment.
    std::optional<uint64_t> alignment;
    if (a->type() != ValueType::kBool) alignment = a->as_uint();
    if (!alignment || *alignment == 0 || (*alignment & (*alignment - 1)) != 0 || *alignment > kMaxAlignment) {
      return corrupt_data("general.alignment must be a power of two up to 1 MiB, found " + a->to_display_string());
    }
    file.alignment_ = *alignment;
  }

  file.tensors_.reserve(n_tensors);
  for (uint64_t i = 0; i < n_tensors; ++i) {
    TensorInfo info;
    TM_RETURN_IF_ERROR(read_string(info.name, "tensor name #" + std::to_string(i)));
    const std::string what = "tensor '" + info.name + "'";
    uint32_t n_dims = 0;
    TM_RETURN_IF_ERROR(read(n_dims, "tensor dimension count"));
    if (n_dims == 0 || n_dims > kMaxDims) {
      return corrupt_data(what + " has " + std::to_string(n_dims) + " dimensions (expected 1 to 4)");
    }
    uint64_t n_elements = 1;
    for (uint32_t d = 0; d < n_dims; ++d) {
      uint64_t dim = 0;
      TM_RETURN_IF_ERROR(read(dim, "tensor dimension"));
      if (dim == 0 || dim > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
        return corrupt_data(what + " dimension " + std::to_string(d) + " is " + std::to_string(dim));
      }
      if (n_elements > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()) / dim) {
        return corrupt_data(what + " has more elements than fit in 64 bits");
      }
      n_elements *= dim;
      info.shape.push_back(static_cast<int64_t>(dim));
    }
    uint32_t type_id = 0;
    TM_RETURN_IF_ERROR(read(type_id, "tensor type"));
    auto layout = tensor_type_layout(type_id);
    if (!layout) return unsupported(what + " has unknown tensor type id " + std::to_string(type_id));
    info.type = layout->type;
    if (info.shape[0] % layout->block_size != 0) {
      return corrupt_data(what + " row length " + std::to_string(info.shape[0]) + " is not a multiple of " +
                          std::string(layout->name) + "'s block size " + std::to_string(layout->block_size));
    }
    const uint64_t n_blocks = n_elements / layout->block_size;
    if (n_blocks > std::numeric_limits<uint64_t>::max() / layout->bytes_per_block) {
      return corrupt_data(what + " byte size overflows");
    }
    info.n_bytes = n_blocks * layout->bytes_per_block;
    TM_RETURN_IF_ERROR(read(info.offset, "tensor offset"));
    if (info.offset % file.alignment_ != 0) {
      return corrupt_data(what + " offset " + std::to_string(info.offset) + " is not aligned to " +
                          std::to_string(file.alignment_));
    }
    if (!file.tensor_index_.emplace(info.name, file.tensors_.size()).second) {
      return corrupt_data("tensor name '" + info.name + "' appears twice");
    }
    file.tensors_.push_back(std::move(info));
  }

  // The data section starts at the next multiple of the alignment.
  uint64_t data_offset = pos_;
  if (data_offset % file.alignment_ != 0) data_offset += file.alignment_ - data_offset % file.alignment_;
  if (data_offset > bytes_.size()) {
    if (!file.tensors_.empty()) return truncated("the padding before tensor data");
    data_offset = bytes_.size();
  }
  file.data_offset_ = data_offset;
  const uint64_t data_size = bytes_.size() - data_offset;
  for (const TensorInfo& info : file.tensors_) {
    if (info.offset > data_size || info.n_bytes > data_size - info.offset) {
      return corrupt_data("tensor '" + info.name + "' (" + std::to_string(info.n_bytes) + " bytes at data offset " +
                          std::to_string(info.offset) + ") ends past the end of the file (" +
                          std::to_string(data_size) + " bytes of data)");
    }
  }
  return {};
}

Result<File> File::parse(std::span<const uint8_t> bytes) {
  File file;
  file.bytes_ = bytes;
  Parser parser(bytes);
  TM_RETURN_IF_ERROR(parser.parse_into(file));
  return file;
}

Result<File> File::open(const std::string& path) {
  auto mapping = MappedFile::open(path);
  if (!mapping.ok()) return mapping.status();
  File file;
  file.mapping_ = std::move(mapping).value();
  file.bytes_ = file.mapping_.bytes();
  file.path_ = path;
  Parser parser(file.bytes_);
  Status status = parser.parse_into(file);
  if (!status.ok()) return Status(status.code(), "'" + path + "': " + status.message());
  return file;
}

const Value* File::find(std::string_view key) const {
  auto it = metadata_index_.find(std::string(key));
  return it == metadata_index_.end() ? nullptr : &metadata_[it->second].value;
}

namespace {

Status missing(std::string_view key) { return not_found("metadata key '" + std::string(key) + "' is missing"); }
Status wrong_type(std::string_view key, const Value& v, const char* expected) {
  return invalid_argument("metadata key '" + std::string(key) + "' is " + std::string(value_type_name(v.type())) +
                          ", expected " + expected);
}

}  // namespace

Result<std::string> File::get_string(std::string_view key) const {
  const Value* v = find(key);
  if (!v) return missing(key);
  if (!v->as_string()) return wrong_type(key, *v, "a string");
  return *v->as_string();
}

Result<int64_t> File::get_int(std::string_view key) const {
  const Value* v = find(key);
  if (!v) return missing(key);
  auto i = v->as_int();
  if (!i) return wrong_type(key, *v, "an integer");
  return *i;
}

Result<uint64_t> File::get_uint(std::string_view key) const {
  const Value* v = find(key);
  if (!v) return missing(key);
  auto u = v->as_uint();
  if (!u) return wrong_type(key, *v, "a non-negative integer");
  return *u;
}

Result<double> File::get_double(std::string_view key) const {
  const Value* v = find(key);
  if (!v) return missing(key);
  auto d = v->as_double();
  if (!d) return wrong_type(key, *v, "a number");
  return *d;
}

Result<bool> File::get_bool(std::string_view key) const {
  const Value* v = find(key);
  if (!v) return missing(key);
  auto b = v->as_bool();
  if (!b) return wrong_type(key, *v, "a bool");
  return *b;
}

const Array* File::get_array(std::string_view key) const {
  const Value* v = find(key);
  return v ? v->as_array() : nullptr;
}

std::string File::get_string_or(std::string_view key, std::string fallback) const {
  auto r = get_string(key);
  return r.ok() ? r.value() : fallback;
}

int64_t File::get_int_or(std::string_view key, int64_t fallback) const {
  auto r = get_int(key);
  return r.ok() ? r.value() : fallback;
}

double File::get_double_or(std::string_view key, double fallback) const {
  auto r = get_double(key);
  return r.ok() ? r.value() : fallback;
}

bool File::get_bool_or(std::string_view key, bool fallback) const {
  auto r = get_bool(key);
  return r.ok() ? r.value() : fallback;
}

const TensorInfo* File::find_tensor(std::string_view name) const {
  auto it = tensor_index_.find(std::string(name));
  return it == tensor_index_.end() ? nullptr : &tensors_[it->second];
}

std::span<const uint8_t> File::tensor_data(const TensorInfo& info) const {
  return bytes_.subspan(data_offset_ + info.offset, info.n_bytes);
}

int64_t TensorInfo::n_elements() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

}  // namespace tokenmill::gguf
