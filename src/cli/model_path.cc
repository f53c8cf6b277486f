#include "cli/model_path.h"

#include <cstdlib>
#include <filesystem>
#include <vector>

#include "store/model_store.h"

namespace tokenmill::cli {

namespace fs = std::filesystem;

Result<ResolvedModel> resolve_model(const std::string& spec, const std::string& models_dir) {
  if (!spec.empty() && spec != "default") {
    std::error_code ec;
    if (fs::exists(spec, ec)) return ResolvedModel{spec, ""};
    const bool looks_like_path = spec.find(".gguf") != std::string::npos || spec.starts_with("/") ||
                                 spec.starts_with("./") || spec.starts_with("../");
    if (!looks_like_path) {
      store::ModelStore store(models_dir.empty() ? store::ModelStore::default_dir() : models_dir);
      auto entry = store.find(spec);
      if (entry.ok()) return ResolvedModel{entry->path, entry->name.full()};
      if (entry.status().code() != ErrorCode::kNotFound || entry.status().message().find("cannot be loaded") != std::string::npos) {
        return entry.status();
      }
      return not_found("'" + spec + "' is neither a file nor a model of the store " + store.dir() +
                       " (tokenmill list shows the store)");
    }
    return not_found("model file '" + spec + "' does not exist");
  }
  auto path = resolve_model_path(spec, models_dir);
  if (!path.ok()) return path.status();
  return ResolvedModel{*path, ""};
}

Result<std::string> resolve_model_path(const std::string& spec, const std::string& models_dir) {
  if (!spec.empty() && spec != "default") {
    auto resolved = resolve_model(spec, models_dir);
    if (!resolved.ok()) return resolved.status();
    return resolved->path;
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
