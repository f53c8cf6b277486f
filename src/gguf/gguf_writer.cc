#include "gguf/gguf_writer.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <limits>
#include <optional>

#include "gguf/gguf_file.h"

namespace tokenmill::gguf {

namespace {

constexpr uint32_t kVersion = 3;

class ByteSink {
 public:
  template <typename T>
  void put(T v) {
    const auto* p = reinterpret_cast<const uint8_t*>(&v);
    bytes.insert(bytes.end(), p, p + sizeof(T));
  }
  void put_string(const std::string& s) {
    put<uint64_t>(s.size());
    bytes.insert(bytes.end(), s.begin(), s.end());
  }
  void put_value(const Value& value) {
    std::visit(
        [&](const auto& v) {
          using T = std::decay_t<decltype(v)>;
          if constexpr (std::is_same_v<T, std::string>) {
            put_string(v);
          } else if constexpr (std::is_same_v<T, Array>) {
            put<uint32_t>(static_cast<uint32_t>(v.element_type));
            put<uint64_t>(v.items.size());
            for (const Value& item : v.items) put_value(item);
          } else if constexpr (std::is_same_v<T, bool>) {
            put<uint8_t>(v ? 1 : 0);
          } else {
            put<T>(v);
          }
        },
        value.storage);
  }
  void pad_to(uint64_t alignment) {
    while (bytes.size() % alignment != 0) bytes.push_back(0);
  }
  std::vector<uint8_t> bytes;
};

Status check_array_types(const std::string& key, const Value& value) {
  const Array* a = value.as_array();
  if (!a) return {};
  for (const Value& item : a->items) {
    if (item.type() != a->element_type) {
      return invalid_argument("metadata '" + key + "': array declares " +
                              std::string(value_type_name(a->element_type)) + " elements but holds a " +
                              std::string(value_type_name(item.type())));
    }
    TM_RETURN_IF_ERROR(check_array_types(key, item));
  }
  return {};
}

}  // namespace

void Writer::set(std::string_view key, Value value) {
  for (KeyValue& kv : metadata_) {
    if (kv.key == key) {
      kv.value = std::move(value);
      return;
    }
  }
  metadata_.push_back({std::string(key), std::move(value)});
}

bool Writer::has(std::string_view key) const {
  for (const KeyValue& kv : metadata_) {
    if (kv.key == key) return true;
  }
  return false;
}

Result<uint64_t> Writer::alignment() const {
  for (const KeyValue& kv : metadata_) {
    if (kv.key != "general.alignment") continue;
    std::optional<uint64_t> a;
    if (kv.value.type() != ValueType::kBool) a = kv.value.as_uint();
    if (!a || *a == 0 || (*a & (*a - 1)) != 0 || *a > kMaxAlignment) {
      return invalid_argument("general.alignment must be a power of two up to 1 MiB, found " +
                              kv.value.to_display_string());
    }
    return *a;
  }
  return kDefaultAlignment;
}

Result<size_t> Writer::check_tensor(const std::string& name, TensorType type, const std::vector<int64_t>& shape) const {
  if (shape.empty() || shape.size() > 4) {
    return invalid_argument("tensor '" + name + "': expected 1 to 4 dimensions, got " + std::to_string(shape.size()));
  }
  int64_t n_elements = 1;
  for (int64_t d : shape) {
    if (d <= 0) return invalid_argument("tensor '" + name + "': dimensions must be positive");
    if (n_elements > std::numeric_limits<int64_t>::max() / d) {
      return invalid_argument("tensor '" + name + "': more elements than fit in 64 bits");
    }
    n_elements *= d;
  }
  auto layout = tensor_type_layout(static_cast<uint32_t>(type));
  if (!layout) return invalid_argument("tensor '" + name + "': unknown tensor type");
  if (shape[0] % layout->block_size != 0) {
    return invalid_argument("tensor '" + name + "': row length " + std::to_string(shape[0]) +
                            " is not a multiple of the " + std::string(layout->name) + " block size");
  }
  const uint64_t n_blocks = static_cast<uint64_t>(n_elements) / layout->block_size;
  if (n_blocks > std::numeric_limits<size_t>::max() / layout->bytes_per_block) {
    return invalid_argument("tensor '" + name + "': byte size overflows");
  }
  for (const PendingTensor& t : tensors_) {
    if (t.name == name) return invalid_argument("tensor '" + name + "' added twice");
  }
  return static_cast<size_t>(n_blocks * layout->bytes_per_block);
}

Status Writer::add_tensor(std::string name, TensorType type, std::vector<int64_t> shape,
                          std::span<const uint8_t> data) {
  auto expected = check_tensor(name, type, shape);
  if (!expected.ok()) return expected.status();
  if (data.size() != *expected) {
    return invalid_argument("tensor '" + name + "': " + std::to_string(data.size()) + " bytes given, " +
                            std::to_string(*expected) + " expected for its type and shape");
  }
  tensors_.push_back({std::move(name), type, std::move(shape), *expected,
                      std::vector<uint8_t>(data.begin(), data.end()), nullptr});
  return {};
}

Status Writer::add_tensor_produced(std::string name, TensorType type, std::vector<int64_t> shape, Producer produce) {
  auto expected = check_tensor(name, type, shape);
  if (!expected.ok()) return expected.status();
  if (!produce) return invalid_argument("tensor '" + name + "': no producer");
  tensors_.push_back({std::move(name), type, std::move(shape), *expected, {}, std::move(produce)});
  return {};
}

Result<std::vector<uint8_t>> Writer::header_bytes() const {
  auto alignment_or = alignment();
  if (!alignment_or.ok()) return alignment_or.status();
  const uint64_t align = *alignment_or;
  ByteSink sink;
  sink.put<uint32_t>(0x46554747);
  sink.put<uint32_t>(kVersion);
  sink.put<uint64_t>(tensors_.size());
  sink.put<uint64_t>(metadata_.size());
  for (const KeyValue& kv : metadata_) {
    TM_RETURN_IF_ERROR(check_array_types(kv.key, kv.value));
    sink.put_string(kv.key);
    sink.put<uint32_t>(static_cast<uint32_t>(kv.value.type()));
    sink.put_value(kv.value);
  }
  uint64_t offset = 0;
  for (const PendingTensor& t : tensors_) {
    sink.put_string(t.name);
    sink.put<uint32_t>(static_cast<uint32_t>(t.shape.size()));
    for (int64_t d : t.shape) sink.put<uint64_t>(static_cast<uint64_t>(d));
    sink.put<uint32_t>(static_cast<uint32_t>(t.type));
    sink.put<uint64_t>(offset);
    offset += t.n_bytes;
    if (offset % align != 0) offset += align - offset % align;
  }
  sink.pad_to(align);
  return std::move(sink.bytes);
}

Status Writer::tensor_bytes(const PendingTensor& t, std::vector<uint8_t>& scratch,
                            std::span<const uint8_t>& out) const {
  if (!t.produce) {
    out = t.data;
    return {};
  }
  scratch.clear();
  TM_RETURN_IF_ERROR(t.produce(scratch));
  if (scratch.size() != t.n_bytes) {
    return internal_error("tensor '" + t.name + "': produced " + std::to_string(scratch.size()) + " bytes, " +
                          std::to_string(t.n_bytes) + " expected");
  }
  out = scratch;
  return {};
}

Result<std::vector<uint8_t>> Writer::to_bytes() const {
  auto header = header_bytes();
  if (!header.ok()) return header.status();
  const uint64_t align = *alignment();
  std::vector<uint8_t> bytes = std::move(header).value();
  std::vector<uint8_t> scratch;
  for (const PendingTensor& t : tensors_) {
    std::span<const uint8_t> data;
    TM_RETURN_IF_ERROR(tensor_bytes(t, scratch, data));
    bytes.insert(bytes.end(), data.begin(), data.end());
    while (bytes.size() % align != 0) bytes.push_back(0);
  }
  return bytes;
}

Status Writer::write(const std::string& path) const {
  auto header = header_bytes();
  if (!header.ok()) return header.status();
  const uint64_t align = *alignment();
  const std::string tmp = path + ".tmp." + std::to_string(getpid());
  std::FILE* f = std::fopen(tmp.c_str(), "wb");
  if (!f) return io_error("cannot create '" + tmp + "': " + std::strerror(errno));
  auto fail = [&](Status status) {
    std::fclose(f);
    std::remove(tmp.c_str());
    return status;
  };
  auto put = [&](const uint8_t* p, size_t n) { return std::fwrite(p, 1, n, f) == n; };
  if (!put(header->data(), header->size())) return fail(io_error("cannot write '" + tmp + "': " + std::strerror(errno)));
  uint64_t written = header->size();
  std::vector<uint8_t> scratch;
  static constexpr uint8_t kZeros[64] = {};
  for (const PendingTensor& t : tensors_) {
    std::span<const uint8_t> data;
    if (Status s = tensor_bytes(t, scratch, data); !s.ok()) return fail(s);
    if (!put(data.data(), data.size())) return fail(io_error("cannot write '" + tmp + "': " + std::strerror(errno)));
    written += data.size();
    while (written % align != 0) {
      const size_t n = std::min<uint64_t>(sizeof(kZeros), align - written % align);
      if (!put(kZeros, n)) return fail(io_error("cannot write '" + tmp + "': " + std::strerror(errno)));
      written += n;
    }
  }
  const bool flushed = std::fflush(f) == 0 && fsync(fileno(f)) == 0;
  const bool closed = std::fclose(f) == 0;
  if (!flushed || !closed) {
    std::remove(tmp.c_str());
    return io_error("cannot write '" + tmp + "': " + std::strerror(errno));
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    const std::string msg = "cannot rename '" + tmp + "' to '" + path + "': " + std::strerror(errno);
    std::remove(tmp.c_str());
    return io_error(msg);
  }
  return {};
}

}  // namespace tokenmill::gguf
