// Builds safetensors files in memory for the converter's tests: well-formed ones from a
// list of tensors, and malformed ones from a header written by hand.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace tokenmill::convert::testing {

struct TensorBytes {
  std::string name;
  std::string dtype;           // "F32", "BF16", ...
  std::vector<int64_t> shape;  // row-major
  std::vector<uint8_t> data;
};

// Header length, the JSON header (padded with spaces to 8 bytes), then the data.
std::vector<uint8_t> safetensors_bytes(const std::string& header_json, const std::vector<uint8_t>& data);
// A well-formed file holding the tensors back to back.
std::vector<uint8_t> safetensors_bytes(const std::vector<TensorBytes>& tensors);
// The header a well-formed file of these tensors has (to be edited by a test).
std::string safetensors_header(const std::vector<TensorBytes>& tensors);

std::vector<uint8_t> f32_bytes(const std::vector<float>& values);
void write_file(const std::string& path, const std::vector<uint8_t>& bytes);
void write_file(const std::string& path, const std::string& text);

}  // namespace tokenmill::convert::testing
