// HTTP/1.1 over TCP with keep-alive, for many concurrent (streaming) clients on a few
// I/O threads: Boost.Beast parses requests, Asio runs every socket asynchronously, and
// each connection's work is serialized on its own strand. No thread per connection.
//
//   accept -> [read header -> (100 Continue) -> read body -> handler -> write response]*
//
// While a response is pending the connection keeps a read open on its socket, so a
// client that disconnects is noticed even before the next write (Responder::watch_disconnect).
//
// Thread-safety: start(), stop_accepting() and stop() may be called from any thread.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "base/status.h"
#include "server/http_types.h"

namespace tokenmill::server {

struct HttpServerConfig {
  std::string host = "127.0.0.1";
  uint16_t port = 8080;               // 0: any free port (see HttpServer::port())
  int n_io_threads = 2;
  std::vector<int> io_cpus;           // CPUs the I/O threads may run on; empty: any
  size_t max_body_bytes = 4u << 20;   // larger bodies are answered 413
  size_t max_header_bytes = 64u << 10;
  std::chrono::seconds idle_timeout{120};  // a keep-alive connection with no request is closed
};

class HttpServer {
 public:
  // handler answers every well-formed request; the server itself answers malformed ones
  // (400), oversized ones (413) and handler exceptions (500).
  HttpServer(HttpServerConfig config, Handler handler);
  ~HttpServer();  // stop()s
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // Binds, listens and starts the I/O threads. IoError when the address cannot be bound.
  Status start();
  // The bound port (useful with port 0). REQUIRES: start() succeeded.
  uint16_t port() const;
  // Closes the listening socket; open connections carry on.
  void stop_accepting();
  // Stops every connection and joins the I/O threads.
  void stop();

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace tokenmill::server
