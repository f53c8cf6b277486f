// Minimal leveled logging to stderr. TOKENMILL_LOG=debug|info|warn|error sets the level.
#pragma once

#include <string_view>

namespace tokenmill {

enum class LogLevel { kDebug = 0, kInfo = 1, kWarn = 2, kError = 3 };

LogLevel log_level();
void set_log_level(LogLevel level);
// Thread-safe: one call writes one whole line.
void log_line(LogLevel level, std::string_view message);

inline void log_debug(std::string_view m) { log_line(LogLevel::kDebug, m); }
inline void log_info(std::string_view m) { log_line(LogLevel::kInfo, m); }
inline void log_warn(std::string_view m) { log_line(LogLevel::kWarn, m); }
inline void log_error(std::string_view m) { log_line(LogLevel::kError, m); }

}  // namespace tokenmill
