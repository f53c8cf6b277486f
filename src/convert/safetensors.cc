#include "convert/safetensors.h"

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "base/half.h"

namespace tokenmill::convert {

namespace {

using json = nlohmann::json;

// Headers of real checkpoints are a few hundred KiB; the format itself caps them at 100 MB.
constexpr uint64_t kMaxHeaderBytes = 100ull << 20;
constexpr size_t kMaxDims = 8;

struct DtypeInfo {
  const char* name;
  Dtype dtype;
  int size;
};

constexpr DtypeInfo kDtypes[] = {
    {"F64", Dtype::kF64, 8}, {"F32", Dtype::kF32, 4}, {"F16", Dtype::kF16, 2}, {"BF16", Dtype::kBF16, 2},
    {"I64", Dtype::kI64, 8}, {"I32", Dtype::kI32, 4}, {"I16", Dtype::kI16, 2}, {"I8", Dtype::kI8, 1},
    {"U8", Dtype::kU8, 1},   {"BOOL", Dtype::kBool, 1},
};

const DtypeInfo* find_dtype(const std::string& name) {
  for (const DtypeInfo& d : kDtypes) {
    if (name == d.name) return &d;
  }
  return nullptr;
}

Status bad(const std::string& label, const std::string& what) { return corrupt_data(label + ": " + what); }

// Reads one non-negative integer field of the header.
Result<uint64_t> unsigned_field(const json& value, const std::string& label, const std::string& what) {
  if (!value.is_number_unsigned()) {
    if (value.is_number_integer() && value.get<int64_t>() >= 0) return static_cast<uint64_t>(value.get<int64_t>());
    return bad(label, what + " is not a non-negative integer");
  }
  return value.get<uint64_t>();
}

Result<SafeTensor> parse_entry(const std::string& name, const json& entry, uint64_t data_size,
                               const uint8_t* data, const std::string& label) {
  const std::string where = "tensor '" + name + "'";
  if (!entry.is_object()) return bad(label, where + " is not an object");
  auto dtype_it = entry.find("dtype");
  auto shape_it = entry.find("shape");
  auto offsets_it = entry.find("data_offsets");
  if (dtype_it == entry.end() || shape_it == entry.end() || offsets_it == entry.end()) {
    return bad(label, where + " lacks dtype, shape or data_offsets");
  }
  if (!dtype_it->is_string()) return bad(label, where + " has a dtype that is not a string");
  const DtypeInfo* dtype = find_dtype(dtype_it->get<std::string>());
  if (!dtype) return unsupported(label + ": " + where + " has dtype '" + dtype_it->get<std::string>() + "' (supported: F64, F32, F16, BF16, integers, BOOL)");
  if (!shape_it->is_array() || shape_it->size() > kMaxDims) {
    return bad(label, where + " has a shape that is not a list of at most 8 sizes");
  }
  SafeTensor t;
  t.name = name;
  t.dtype = dtype->dtype;
  uint64_t n_elements = 1;
  for (const json& dim : *shape_it) {
    auto d = unsigned_field(dim, label, where + " shape entry");
    if (!d.ok()) return d.status();
    if (*d > (uint64_t{1} << 40)) return bad(label, where + " has a dimension of " + std::to_string(*d));
    if (*d != 0 && n_elements > (uint64_t{1} << 62) / *d) return bad(label, where + " has more elements than fit 64 bits");
    n_elements *= *d;
    t.shape.push_back(static_cast<int64_t>(*d));
  }
  if (!offsets_it->is_array() || offsets_it->size() != 2) return bad(label, where + " data_offsets is not [begin, end]");
  auto begin = unsigned_field((*offsets_it)[0], label, where + " data_offsets begin");
  if (!begin.ok()) return begin.status();
  auto end = unsigned_field((*offsets_it)[1], label, where + " data_offsets end");
  if (!end.ok()) return end.status();
  if (*begin > *end || *end > data_size) {
    return bad(label, where + " data_offsets [" + std::to_string(*begin) + ", " + std::to_string(*end) +
                          "] lie outside the " + std::to_string(data_size) + " data bytes");
  }
  if (n_elements > UINT64_MAX / static_cast<uint64_t>(dtype->size) ||
      *end - *begin != n_elements * static_cast<uint64_t>(dtype->size)) {
    return bad(label, where + " holds " + std::to_string(*end - *begin) + " bytes, but " + dtype->name + " of " +
                          std::to_string(n_elements) + " elements needs " +
                          std::to_string(n_elements * static_cast<uint64_t>(dtype->size)));
  }
  t.data = std::span<const uint8_t>(data + *begin, static_cast<size_t>(*end - *begin));
  return t;
}

}  // namespace

const char* dtype_name(Dtype dtype) {
  for (const DtypeInfo& d : kDtypes) {
    if (d.dtype == dtype) return d.name;
  }
  return "?";
}

int dtype_size(Dtype dtype) {
  for (const DtypeInfo& d : kDtypes) {
    if (d.dtype == dtype) return d.size;
  }
  return 0;
}

int64_t SafeTensor::n_elements() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

Result<SafetensorsFile> SafetensorsFile::parse(std::span<const uint8_t> bytes, const std::string& label) {
  if (bytes.size() < 8) return bad(label, "shorter than the 8-byte header length");
  uint64_t header_size = 0;
  for (int i = 7; i >= 0; --i) header_size = (header_size << 8) | bytes[static_cast<size_t>(i)];
  if (header_size > kMaxHeaderBytes || header_size > bytes.size() - 8) {
    return bad(label, "header length " + std::to_string(header_size) + " is past the end of the " +
                          std::to_string(bytes.size()) + "-byte file");
  }
  const char* header_begin = reinterpret_cast<const char*>(bytes.data() + 8);
  json header;
  // Duplicate keys would let two entries claim one name: parse with a callback that sees
  // every key of the top-level object.
  std::vector<std::string> keys;
  auto collect_keys = [&](int depth, json::parse_event_t event, json& parsed) {
    if (event == json::parse_event_t::key && depth == 1) keys.push_back(parsed.get<std::string>());
    return true;
  };
  header = json::parse(header_begin, header_begin + header_size, collect_keys, /*allow_exceptions=*/false);
  if (header.is_discarded() || !header.is_object()) return bad(label, "header is not a JSON object");
  std::sort(keys.begin(), keys.end());
  if (auto dup = std::adjacent_find(keys.begin(), keys.end()); dup != keys.end()) {
    return bad(label, "tensor '" + *dup + "' is named twice");
  }
  const uint8_t* data = bytes.data() + 8 + header_size;
  const uint64_t data_size = bytes.size() - 8 - header_size;

  SafetensorsFile file;
  file.path_ = label;
  for (const auto& [name, entry] : header.items()) {
    if (name == "__metadata__") continue;
    auto tensor = parse_entry(name, entry, data_size, data, label);
    if (!tensor.ok()) return tensor.status();
    file.tensors_.push_back(std::move(tensor).value());
  }
  // No two tensors may share a byte (empty tensors share none).
  std::vector<const SafeTensor*> by_offset;
  for (const SafeTensor& t : file.tensors_) {
    if (!t.data.empty()) by_offset.push_back(&t);
  }
  std::sort(by_offset.begin(), by_offset.end(),
            [](const SafeTensor* a, const SafeTensor* b) { return a->data.data() < b->data.data(); });
  for (size_t i = 1; i < by_offset.size(); ++i) {
    const SafeTensor* prev = by_offset[i - 1];
    if (prev->data.data() + prev->data.size() > by_offset[i]->data.data()) {
      return bad(label, "tensors '" + prev->name + "' and '" + by_offset[i]->name + "' overlap");
    }
  }
  return file;
}

Result<SafetensorsFile> SafetensorsFile::open(const std::string& path) {
  auto map = MappedFile::open(path);
  if (!map.ok()) return map.status();
  auto file = parse(map->bytes(), path);
  if (!file.ok()) return file.status();
  file->map_ = std::move(map).value();  // the mapping's address, and so every span, stays
  return file;
}

Result<SafetensorsModel> SafetensorsModel::open_dir(const std::string& dir) {
  namespace fs = std::filesystem;
  SafetensorsModel model;
  const fs::path index_path = fs::path(dir) / "model.safetensors.index.json";
  std::error_code ec;
  std::map<std::string, std::string> expected;  // tensor -> shard, from the index
  std::vector<std::string> shards;
  if (fs::exists(index_path, ec)) {
    std::ifstream in(index_path);
    std::stringstream text;
    text << in.rdbuf();
    const json index = json::parse(text.str(), nullptr, /*allow_exceptions=*/false);
    if (index.is_discarded() || !index.is_object() || !index.contains("weight_map") ||
        !index["weight_map"].is_object()) {
      return corrupt_data(index_path.string() + ": not a JSON object with a weight_map");
    }
    for (const auto& [name, shard] : index["weight_map"].items()) {
      if (!shard.is_string()) return corrupt_data(index_path.string() + ": the shard of '" + name + "' is not a string");
      const std::string s = shard.get<std::string>();
      if (s.empty() || s.find('/') != std::string::npos || s == "." || s == "..") {
        return corrupt_data(index_path.string() + ": shard name '" + s + "' is not a file name in the directory");
      }
      expected[name] = s;
      if (std::find(shards.begin(), shards.end(), s) == shards.end()) shards.push_back(s);
    }
  } else if (fs::exists(fs::path(dir) / "model.safetensors", ec)) {
    shards.push_back("model.safetensors");
  } else {
    return not_found(dir + ": no model.safetensors or model.safetensors.index.json");
  }
  for (const std::string& shard : shards) {
    auto file = SafetensorsFile::open((fs::path(dir) / shard).string());
    if (!file.ok()) return file.status();
    model.files_.push_back(std::make_unique<SafetensorsFile>(std::move(file).value()));
    for (const SafeTensor& t : model.files_.back()->tensors()) {
      if (!expected.empty()) {
        auto it = expected.find(t.name);
        if (it == expected.end() || it->second != shard) continue;  // the index decides which copy counts
      }
      if (!model.by_name_.emplace(t.name, &t).second) {
        return corrupt_data(shard + ": tensor '" + t.name + "' is also in another shard");
      }
    }
  }
  for (const auto& [name, shard] : expected) {
    if (!model.by_name_.count(name)) return corrupt_data(shard + ": tensor '" + name + "' listed by the index is missing");
  }
  return model;
}

const SafeTensor* SafetensorsModel::find(const std::string& name) const {
  auto it = by_name_.find(name);
  return it == by_name_.end() ? nullptr : it->second;
}

Result<std::vector<float>> to_f32(const SafeTensor& tensor) {
  const size_t n = static_cast<size_t>(tensor.n_elements());
  std::vector<float> out(n);
  // An empty tensor has no bytes to read (and memcpy may not take its null pointer).
  if (n == 0) return out;
  const uint8_t* p = tensor.data.data();
  switch (tensor.dtype) {
    case Dtype::kF32:
      std::memcpy(out.data(), p, n * 4);
      break;
    case Dtype::kF64:
      for (size_t i = 0; i < n; ++i) {
        double v;
        std::memcpy(&v, p + i * 8, 8);
        out[i] = static_cast<float>(v);
      }
      break;
    case Dtype::kF16:
    case Dtype::kBF16:
      for (size_t i = 0; i < n; ++i) {
        uint16_t h;
        std::memcpy(&h, p + i * 2, 2);
        out[i] = tensor.dtype == Dtype::kF16 ? f16_to_f32(h) : bf16_to_f32(h);
      }
      break;
    default:
      return invalid_argument("tensor '" + tensor.name + "' holds " + dtype_name(tensor.dtype) +
                              " values, not floating point");
  }
  return out;
}

}  // namespace tokenmill::convert
