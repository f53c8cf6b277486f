// tokenmill list: the models of the store, with what each is.
#include <cstdio>
#include <ctime>
#include <memory>
#include <string>

#include "cli/commands.h"
#include "cli/store_option.h"
#include "gguf/file_summary.h"
#include "gguf/gguf_file.h"

namespace tokenmill::cli {

namespace {

std::string size_text(int64_t bytes) {
  char out[32];
  if (bytes >= (int64_t{1} << 30)) {
    std::snprintf(out, sizeof out, "%.1f GB", static_cast<double>(bytes) / 1e9);
  } else {
    std::snprintf(out, sizeof out, "%.0f MB", static_cast<double>(bytes) / 1e6);
  }
  return out;
}

std::string time_text(int64_t unix_seconds) {
  const std::time_t t = static_cast<std::time_t>(unix_seconds);
  std::tm tm {};
  localtime_r(&t, &tm);
  char out[32];
  std::strftime(out, sizeof out, "%Y-%m-%d %H:%M", &tm);
  return out;
}

int run_list(const std::string& dir) {
  const store::ModelStore store = open_store(dir);
  std::vector<std::string> corrupt;
  const std::vector<store::StoreEntry> entries = store.list(&corrupt);
  std::printf("%-36s %-14s %9s %-8s %-12s %9s  %s\n", "NAME", "ID", "SIZE", "QUANT", "ARCH", "PARAMS", "MODIFIED");
  for (const store::StoreEntry& e : entries) {
    std::string quant = "?", arch = "?", params = "?";
    if (e.problem.empty()) {
      if (auto file = gguf::File::open(e.path); file.ok()) {
        const gguf::FileSummary s = gguf::summarize(*file);
        quant = s.quantization;
        arch = s.architecture;
        params = gguf::parameter_size_text(s.parameter_count);
      }
    }
    std::printf("%-36s %-14s %9s %-8s %-12s %9s  %s%s\n", e.name.full().c_str(), e.digest.substr(0, 12).c_str(),
                size_text(e.size).c_str(), quant.c_str(), arch.c_str(), params.c_str(),
                time_text(e.modified_unix).c_str(), e.problem.empty() ? "" : ("  (" + e.problem + ")").c_str());
  }
  for (const std::string& c : corrupt) std::fprintf(stderr, "warning: %s\n", c.c_str());
  return 0;
}

}  // namespace

void register_list(CLI::App& app) {
  auto dir = std::make_shared<std::string>();
  CLI::App* cmd = app.add_subcommand("list", "List the models of the store");
  cmd->alias("ls");
  add_models_dir_option(cmd, *dir);
  cmd->callback([dir] { exit_code() = run_list(*dir); });
}

}  // namespace tokenmill::cli
