// Shared by the fuzz targets: where the default model is, and cutting one fuzzer input
// into the parts a target feeds to different entry points.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

namespace tokenmill::fuzz {

// TOKENMILL_MODEL, else the default model under the source tree (scripts/setup writes it).
inline std::string default_model_path() {
  if (const char* model = std::getenv("TOKENMILL_MODEL"); model && *model) return model;
  return std::string(TOKENMILL_SOURCE_DIR) + "/models/gemma-3-270m-q4_k_m.gguf";
}

// The input as text, consumed part by part: next() returns the bytes up to the next NUL
// (all that is left when there is none) and skips the NUL.
class InputParts {
 public:
  InputParts(const uint8_t* data, size_t size) : rest_(reinterpret_cast<const char*>(data), size) {}

  std::string_view next() {
    const size_t end = rest_.find('\0');
    const std::string_view part = rest_.substr(0, end);
    rest_ = end == std::string_view::npos ? std::string_view() : rest_.substr(end + 1);
    return part;
  }
  bool empty() const { return rest_.empty(); }
  std::string_view rest() const { return rest_; }

 private:
  std::string_view rest_;
};

}  // namespace tokenmill::fuzz
