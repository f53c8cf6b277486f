// Helpers shared by the quant tests: fixture reading and seeded random rows.
#pragma once

#include <cstdint>
#include <cstring>
#include <fstream>
#include <iterator>
#include <random>
#include <string>
#include <vector>

#include "gguf/tensor_type.h"
#include "quant/type_traits.h"

namespace tokenmill::quant::testing {

inline std::string fixture_path(std::string_view name) {
  return std::string(TOKENMILL_FIXTURES_DIR) + "/quant/" + std::string(name);
}

// The whole file, or an empty vector if it cannot be read.
inline std::vector<uint8_t> read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// Sequential little-endian reader over a fixture; `ok()` turns false on a short read.
class FixtureReader {
 public:
  explicit FixtureReader(std::vector<uint8_t> bytes) : bytes_(std::move(bytes)) {}

  bool ok() const { return ok_; }
  bool at_end() const { return offset_ == bytes_.size(); }

  bool expect_magic(const char magic[4]) {
    std::string found(4, '\0');
    read_raw(found.data(), 4);
    return ok_ && std::memcmp(found.data(), magic, 4) == 0;
  }
  uint32_t u32() { uint32_t v = 0; read_raw(&v, sizeof v); return v; }
  float f32() { float v = 0; read_raw(&v, sizeof v); return v; }
  std::vector<uint8_t> bytes(size_t n) { std::vector<uint8_t> v(n); read_raw(v.data(), n); return v; }
  std::vector<float> floats(size_t n) { std::vector<float> v(n); read_raw(v.data(), n * sizeof(float)); return v; }

 private:
  void read_raw(void* dst, size_t n) {
    if (!ok_ || bytes_.size() - offset_ < n) {
      ok_ = false;
      return;
    }
    std::memcpy(dst, bytes_.data() + offset_, n);
    offset_ += n;
  }

  std::vector<uint8_t> bytes_;
  size_t offset_ = 0;
  bool ok_ = true;
};

inline std::vector<float> random_normal(size_t n, uint32_t seed, float sigma = 1.0f) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist(0.0f, sigma);
  std::vector<float> v(n);
  for (float& x : v) x = dist(rng);
  return v;
}

inline std::vector<uint8_t> quantize(gguf::TensorType type, const std::vector<float>& x) {
  const TypeTraits& traits = type_traits(type);
  std::vector<uint8_t> out(x.size() / traits.block_size * traits.bytes_per_block);
  traits.quantize_row_ref(x.data(), out.data(), static_cast<int64_t>(x.size()));
  return out;
}

inline std::vector<float> dequantize(gguf::TensorType type, const std::vector<uint8_t>& row, size_t n) {
  std::vector<float> out(n);
  type_traits(type).dequantize_row(row.data(), out.data(), static_cast<int64_t>(n));
  return out;
}

inline uint32_t bits_of(float f) {
  uint32_t b;
  std::memcpy(&b, &f, sizeof b);
  return b;
}

}  // namespace tokenmill::quant::testing
