#include "gguf/gguf_writer.h"

#include <unistd.h>

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

Status Writer::add_tensor(std::string name, TensorType type, std::vector<int64_t> shape,
                          std::span<const uint8_t> data) {
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
  const size_t expected = n_blocks * layout->bytes_per_block;
  if (data.size() != expected) {
    return invalid_argument("tensor '" + name + "': " + std::to_string(data.size()) + " bytes given, " +
                            std::to_string(expected) + " expected for its type and shape");
  }
  for (const PendingTensor& t : tensors_) {
    if (t.name == name) return invalid_argument("tensor '" + name + "' added twice");
  }
  tensors_.push_back({std::move(name), type, std::move(shape), std::vector<uint8_t>(data.begin(), data.end())});
  return {};
}

Result<std::vector<uint8_t>> Writer::to_bytes() const {
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
    offset += t.data.size();
    if (offset % align != 0) offset += align - offset % align;
  }
  sink.pad_to(align);
  for (const PendingTensor& t : tensors_) {
    sink.bytes.insert(sink.bytes.end(), t.data.begin(), t.data.end());
    sink.pad_to(align);
  }
  return std::move(sink.bytes);
}

Status Writer::write(const std::string& path) const {
  auto bytes = to_bytes();
  if (!bytes.ok()) return bytes.status();
  const std::string tmp = path + ".tmp." + std::to_string(getpid());
  std::FILE* f = std::fopen(tmp.c_str(), "wb");
  if (!f) return io_error("cannot create '" + tmp + "': " + std::strerror(errno));
  const size_t written = std::fwrite(bytes->data(), 1, bytes->size(), f);
  const bool flushed = std::fflush(f) == 0 && fsync(fileno(f)) == 0;
  const bool closed = std::fclose(f) == 0;
  if (written != bytes->size() || !flushed || !closed) {
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
