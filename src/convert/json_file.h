// Reading the JSON files of a Hugging Face model directory (config.json, tokenizer.json,
// 1_Pooling/config.json, ...): each must hold one JSON object.
#pragma once

#include <filesystem>

#include <nlohmann/json.hpp>

#include "base/status.h"

namespace tokenmill::convert {

// The object in `path`. A missing file is an error when `required`, else a null value;
// a file that is not one JSON object is always an error naming the path.
Result<nlohmann::json> read_json_object(const std::filesystem::path& path, bool required);

}  // namespace tokenmill::convert
