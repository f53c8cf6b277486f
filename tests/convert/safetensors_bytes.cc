#include "convert/safetensors_bytes.h"

#include <cstring>
#include <fstream>

#include <nlohmann/json.hpp>

namespace tokenmill::convert::testing {

std::vector<uint8_t> safetensors_bytes(const std::string& header_json, const std::vector<uint8_t>& data) {
  std::string header = header_json;
  while (header.size() % 8 != 0) header += ' ';
  std::vector<uint8_t> out(8);
  uint64_t n = header.size();
  for (int i = 0; i < 8; ++i) out[static_cast<size_t>(i)] = static_cast<uint8_t>(n >> (8 * i));
  out.insert(out.end(), header.begin(), header.end());
  out.insert(out.end(), data.begin(), data.end());
  return out;
}

std::string safetensors_header(const std::vector<TensorBytes>& tensors) {
  nlohmann::json header = nlohmann::json::object();
  header["__metadata__"] = {{"format", "pt"}};
  uint64_t offset = 0;
  for (const TensorBytes& t : tensors) {
    header[t.name] = {{"dtype", t.dtype}, {"shape", t.shape}, {"data_offsets", {offset, offset + t.data.size()}}};
    offset += t.data.size();
  }
  return header.dump();
}

std::vector<uint8_t> safetensors_bytes(const std::vector<TensorBytes>& tensors) {
  std::vector<uint8_t> data;
  for (const TensorBytes& t : tensors) data.insert(data.end(), t.data.begin(), t.data.end());
  return safetensors_bytes(safetensors_header(tensors), data);
}

std::vector<uint8_t> f32_bytes(const std::vector<float>& values) {
  std::vector<uint8_t> out(values.size() * 4);
  std::memcpy(out.data(), values.data(), out.size());
  return out;
}

void write_file(const std::string& path, const std::vector<uint8_t>& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
}

void write_file(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
}

}  // namespace tokenmill::convert::testing
