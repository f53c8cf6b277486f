// What a person wants to know about a model file at a glance: architecture, parameter
// count and quantization (llama.cpp's general.file_type names), for `tokenmill list`,
// /api/tags and /api/show.
#pragma once

#include <cstdint>
#include <string>

#include "gguf/gguf_file.h"

namespace tokenmill::gguf {

struct FileSummary {
  std::string architecture;     // general.architecture, e.g. "gemma3"
  int64_t parameter_count = 0;  // elements over all tensors
  std::string quantization;     // "Q4_K_M", "F16", "unknown"
};

FileSummary summarize(const File& file);

// llama.cpp's LLAMA_FTYPE_MOSTLY_* name for a general.file_type value ("unknown" else).
std::string file_type_name(int64_t file_type);

// "268.10M", "1.24B".
std::string parameter_size_text(int64_t parameter_count);

}  // namespace tokenmill::gguf
