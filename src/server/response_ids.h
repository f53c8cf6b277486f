// Identifiers and timestamps for responses.
// Thread-safety: every function may be called from any thread.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

namespace tokenmill::server {

// prefix + 24 random hex digits, e.g. "chatcmpl-3f9a...".
std::string new_response_id(const std::string& prefix);
// Seconds since the Unix epoch.
int64_t unix_now();
// RFC 3339 in UTC with microseconds, as Ollama writes created_at: "2024-05-01T12:00:00.123456Z".
std::string rfc3339(std::chrono::system_clock::time_point time);

}  // namespace tokenmill::server
