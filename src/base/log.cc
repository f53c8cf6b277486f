#include "base/log.h"

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>

namespace tokenmill {

namespace {

LogLevel level_from_env() {
  const char* env = std::getenv("TOKENMILL_LOG");
  if (env == nullptr) return LogLevel::kWarn;
  if (std::strcmp(env, "debug") == 0) return LogLevel::kDebug;
  if (std::strcmp(env, "info") == 0) return LogLevel::kInfo;
  if (std::strcmp(env, "error") == 0) return LogLevel::kError;
  return LogLevel::kWarn;
}

std::atomic<int>& level_storage() {
  static std::atomic<int> level{static_cast<int>(level_from_env())};
  return level;
}

}  // namespace

LogLevel log_level() { return static_cast<LogLevel>(level_storage().load()); }
void set_log_level(LogLevel level) { level_storage().store(static_cast<int>(level)); }

void log_line(LogLevel level, std::string_view message) {
  if (level < log_level()) return;
  static const char* kNames[] = {"debug", "info", "warn", "error"};
  static std::mutex mutex;
  std::string line = std::string("[tokenmill ") + kNames[static_cast<int>(level)] + "] ";
  line.append(message);
  line.push_back('\n');
  std::lock_guard<std::mutex> lock(mutex);
  std::fwrite(line.data(), 1, line.size(), stderr);
}

}  // namespace tokenmill
