// tokenmill pull SOURCE [NAME[:TAG]]: downloads a GGUF file into the store (store/pull.h),
// with a progress bar on stderr. An interrupted pull resumes where it stopped when run
// again.
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <memory>
#include <string>

#include "cli/commands.h"
#include "cli/store_option.h"
#include "store/pull.h"

namespace tokenmill::cli {

namespace {

struct PullOptions {
  std::string source;
  std::string name;
  std::string dir;
  std::string sha256;
  bool quiet = false;
};

std::string mib(int64_t bytes) {
  char out[32];
  std::snprintf(out, sizeof out, "%.1f MiB", static_cast<double>(bytes) / (1 << 20));
  return out;
}

// Redraws one line at most 10 times a second: percent, bytes, speed, ETA.
class ProgressBar {
 public:
  explicit ProgressBar(bool enabled) : enabled_(enabled), tty_(isatty(STDERR_FILENO) != 0) {}

  void update(const store::PullProgress& p) {
    if (!enabled_) return;
    const auto now = std::chrono::steady_clock::now();
    if (!p.status.starts_with("downloading")) {
      end_line();
      std::fprintf(stderr, "%s\n", p.status.c_str());
      return;
    }
    if (!started_) {
      started_ = true;
      start_ = now;
      first_bytes_ = p.completed;
      std::fprintf(stderr, "%s\n", p.status.c_str());
    }
    const bool last = p.total >= 0 && p.completed == p.total;
    if (!last && now - drawn_ < std::chrono::milliseconds(tty_ ? 100 : 2000)) return;
    drawn_ = now;
    const double seconds = std::chrono::duration<double>(now - start_).count();
    const double speed = seconds > 0 ? static_cast<double>(p.completed - first_bytes_) / seconds : 0;
    char line[160];
    if (p.total > 0) {
      const double fraction = static_cast<double>(p.completed) / static_cast<double>(p.total);
      const int filled = static_cast<int>(fraction * 30);
      const double eta = speed > 0 ? static_cast<double>(p.total - p.completed) / speed : 0;
      std::snprintf(line, sizeof line, "  [%-30s] %5.1f%%  %s / %s  %s/s  ETA %.0fs", std::string(filled, '#').c_str(),
                    100 * fraction, mib(p.completed).c_str(), mib(p.total).c_str(),
                    mib(static_cast<int64_t>(speed)).c_str(), eta);
    } else {
      std::snprintf(line, sizeof line, "  %s  %s/s", mib(p.completed).c_str(), mib(static_cast<int64_t>(speed)).c_str());
    }
    std::fprintf(stderr, tty_ ? "\r%s\033[K" : "%s\n", line);
    open_line_ = tty_;
  }

  void end_line() {
    if (open_line_) std::fprintf(stderr, "\n");
    open_line_ = false;
  }

 private:
  const bool enabled_;
  const bool tty_;
  bool started_ = false;
  bool open_line_ = false;
  int64_t first_bytes_ = 0;
  std::chrono::steady_clock::time_point start_, drawn_;
};

int run_pull(const PullOptions& options) {
  auto source = store::resolve_pull_source(options.source);
  if (!source.ok()) return store_error(source.status());
  store::ModelName name = source->default_name;
  if (!options.name.empty()) {
    auto parsed = store::parse_model_name(options.name);
    if (!parsed.ok()) return store_error(parsed.status());
    name = *parsed;
  }
  store::ModelStore store = open_store(options.dir);
  ProgressBar bar(!options.quiet);
  store::PullOptions pull;
  pull.expected_sha256 = options.sha256;
  pull.on_progress = [&bar](const store::PullProgress& p) { bar.update(p); };
  auto entry = store::pull_model(store, *source, name, pull);
  bar.end_line();
  if (!entry.ok()) return store_error(entry.status());
  std::printf("pulled %s (%s, sha256 %s)\n", entry->name.full().c_str(), mib(entry->size).c_str(),
              entry->digest.substr(0, 12).c_str());
  return 0;
}

}  // namespace

void register_pull(CLI::App& app) {
  auto o = std::make_shared<PullOptions>();
  CLI::App* cmd = app.add_subcommand("pull", "Download a GGUF model into the store (resumable, checked)");
  cmd->add_option("source", o->source, "https://.../FILE.gguf, hf:ORG/REPO/FILE.gguf or hf:ORG/REPO:QUANT")
      ->required();
  cmd->add_option("name", o->name, "NAME[:TAG] to install it as (default: from the source)");
  cmd->add_option("--sha256", o->sha256, "The file's expected SHA-256 (default: the one the server announces)");
  cmd->add_flag("-q,--quiet", o->quiet, "No progress output");
  add_models_dir_option(cmd, o->dir);
  cmd->callback([o] { exit_code() = run_pull(*o); });
}

}  // namespace tokenmill::cli
