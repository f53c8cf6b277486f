#include "gguf/file_summary.h"

#include <cstdio>

namespace tokenmill::gguf {

FileSummary summarize(const File& file) {
  FileSummary out;
  out.architecture = file.get_string_or("general.architecture", "");
  for (const auto& tensor : file.tensors()) out.parameter_count += tensor.n_elements();
  out.quantization = file_type_name(file.get_int_or("general.file_type", -1));
  return out;
}

std::string file_type_name(int64_t file_type) {
  switch (file_type) {
    case 0: return "F32";
    case 1: return "F16";
    case 2: return "Q4_0";
    case 3: return "Q4_1";
    case 7: return "Q8_0";
    case 8: return "Q5_0";
    case 9: return "Q5_1";
    case 10: return "Q2_K";
    case 11: return "Q3_K_S";
    case 12: return "Q3_K_M";
    case 13: return "Q3_K_L";
    case 14: return "Q4_K_S";
    case 15: return "Q4_K_M";
    case 16: return "Q5_K_S";
    case 17: return "Q5_K_M";
    case 18: return "Q6_K";
    case 32: return "BF16";
    default: return "unknown";
  }
}

std::string parameter_size_text(int64_t parameter_count) {
  char out[32];
  const double n = static_cast<double>(parameter_count);
  if (n >= 1e9) {
    std::snprintf(out, sizeof out, "%.2fB", n / 1e9);
  } else {
    std::snprintf(out, sizeof out, "%.2fM", n / 1e6);
  }
  return out;
}

}  // namespace tokenmill::gguf
