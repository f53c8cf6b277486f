#include "cli/model_path.h"

#include <cstdlib>
#include <filesystem>
#include <vector>

namespace tokenmill::cli {

namespace fs = std::filesystem;

Result<std::string> resolve_model_path(const std::string& spec) {
  if (!spec.empty() && spec != "default") {
    std::error_code ec;
    if (!fs::exists(spec, ec)) return not_found("model file '" + spec + "' does not exist");
    return spec;
  }
  std::vector<fs::path> dirs;
  if (const char* env = std::getenv("TOKENMILL_MODELS_DIR")) dirs.emplace_back(env);
  dirs.emplace_back("models");
  dirs.emplace_back(fs::path(TOKENMILL_SOURCE_DIR) / "models");
  for (const fs::path& dir : dirs) {
    std::error_code ec;
    const fs::path candidate = dir / kDefaultModelFile;
    if (fs::exists(candidate, ec)) return candidate.string();
  }
  return not_found(std::string("the default model ") + kDefaultModelFile +
                   " is not installed; run scripts/setup (or pass -m PATH)");
}

}  // namespace tokenmill::cli
