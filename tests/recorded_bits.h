// Helpers of the cross-target tests, which compare what a target's kernels compute with
// the bits recorded on x86-64 (tools/make_kernel_bits.sh rewrites the records).
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

namespace tokenmill::testing {

// Values in [-2, 2) from an integer hash: the same floats on every target, without the
// C library's logarithms that a normal distribution would call (their last bit may
// differ between targets).
inline std::vector<float> hashed_values(size_t n, uint32_t seed) {
  std::vector<float> v(n);
  uint32_t h = seed * 2654435761u + 1;
  for (float& x : v) {
    h ^= h << 13;
    h ^= h >> 17;
    h ^= h << 5;
    x = static_cast<float>(h >> 8) * 0x1p-22f - 2.0f;
  }
  return v;
}

// FNV-1a, 64 bits, over bytes.
struct BitsHash {
  uint64_t value = 1469598103934665603ull;
  void add(const void* data, size_t bytes) {
    for (size_t i = 0; i < bytes; ++i) value = (value ^ static_cast<const uint8_t*>(data)[i]) * 1099511628211ull;
  }
  std::string hex() const {
    char text[17];
    std::snprintf(text, sizeof text, "%016llx", static_cast<unsigned long long>(value));
    return text;
  }
};

// With TOKENMILL_WRITE_KERNEL_BITS=1: writes `lines` to the fixture `name` (under
// tests/fixtures) and returns them. Otherwise returns the fixture's recorded text ("" and
// a test failure where it is missing).
inline std::string recorded_bits(const std::string& name, const std::string& lines) {
  const std::string path = std::string(TOKENMILL_FIXTURES_DIR) + "/" + name;
  if (const char* write = std::getenv("TOKENMILL_WRITE_KERNEL_BITS"); write != nullptr && *write == '1') {
    FILE* f = std::fopen(path.c_str(), "w");
    EXPECT_NE(f, nullptr) << path;
    if (f == nullptr) return "";
    std::fputs(lines.c_str(), f);
    std::fclose(f);
    std::printf("[ kernels  ] wrote %s\n", path.c_str());
    return lines;
  }
  FILE* f = std::fopen(path.c_str(), "r");
  EXPECT_NE(f, nullptr) << path << " is missing: tools/make_kernel_bits.sh writes it";
  if (f == nullptr) return "";
  std::string recorded;
  char buffer[256];
  while (std::fgets(buffer, sizeof buffer, f) != nullptr) recorded += buffer;
  std::fclose(f);
  return recorded;
}

}  // namespace tokenmill::testing
