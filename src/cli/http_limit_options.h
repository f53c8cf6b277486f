// The HTTP front's limits for `tokenmill serve` (docs/serving.md, "Limits and timeouts"),
// read straight into a server::ServerConfig: sizes, deadlines, connection and queue
// limits. The ranges are checked by CLI11.
#pragma once

#include <chrono>
#include <cstdint>

#include <CLI/CLI.hpp>

#include "server/server.h"

namespace tokenmill::cli {

inline void add_seconds_option(CLI::App* cmd, const char* name, std::chrono::seconds& value, const char* help) {
  cmd->add_option_function<int64_t>(name, [&value](int64_t s) { value = std::chrono::seconds(s); }, help)
      ->default_str(std::to_string(value.count()))
      ->check(CLI::Range(int64_t{1}, int64_t{86400}));
}

inline void add_http_limit_options(CLI::App* cmd, server::ServerConfig& config) {
  server::HttpServerConfig& http = config.http;
  cmd->add_option("--max-body-bytes", http.limits.max_body_bytes, "Largest request body accepted (larger: 413)")
      ->capture_default_str()->check(CLI::Range(size_t{1024}, size_t{1} << 32));
  cmd->add_option("--max-upload-bytes", http.limits.max_upload_bytes,
                  "Largest file upload (POST /v1/files) accepted (larger: 413)")
      ->capture_default_str()->check(CLI::Range(size_t{1024}, size_t{1} << 34));
  cmd->add_option("--max-header-bytes", http.limits.max_header_bytes, "Largest request line + headers (larger: 431)")
      ->capture_default_str()->check(CLI::Range(size_t{1024}, size_t{16} << 20));
  cmd->add_option("--max-header-fields", http.limits.max_header_fields, "Most header fields in a request (more: 431)")
      ->capture_default_str()->check(CLI::Range(size_t{8}, size_t{100000}));
  add_seconds_option(cmd, "--header-timeout", http.header_timeout,
                     "Seconds a client has to send a request's headers (slower: closed)");
  add_seconds_option(cmd, "--body-timeout", http.body_timeout,
                     "Seconds a client has to send a request's body after its headers (slower: closed)");
  add_seconds_option(cmd, "--keep-alive-timeout", http.idle_timeout,
                     "Seconds an idle keep-alive connection stays open");
  cmd->add_option("--max-connections", http.max_connections,
                  "Open connections at most; one more is answered 503 with Retry-After and closed")
      ->capture_default_str()->check(CLI::Range(1, 1 << 20));
  cmd->add_option("--max-stream-buffer", http.max_stream_buffer_bytes,
                  "Bytes a stream may buffer for a client that reads slowly; past it the client is dropped")
      ->capture_default_str()->check(CLI::Range(size_t{4096}, size_t{1} << 30));
  cmd->add_option("--max-queue", config.max_queue,
                  "Requests that may wait beyond the --max-seqs running; more are answered 429 with Retry-After")
      ->capture_default_str()->check(CLI::Range(int64_t{0}, int64_t{1} << 20));
}

}  // namespace tokenmill::cli
