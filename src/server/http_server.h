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
#include "server/http_request_parser.h"
#include "server/http_types.h"

namespace tokenmill::server {

struct HttpServerConfig {
  std::string host = "127.0.0.1";
  uint16_t port = 8080;               // 0: any free port (see HttpServer::port())
  int n_io_threads = 2;
  std::vector<int> io_cpus;           // CPUs the I/O threads may run on; empty: any
  HttpLimits limits;                  // body and header sizes (413, 431)
  // A client has header_timeout from its connection's start (or, between keep-alive
  // requests, from the next request's first byte) to send a request's headers, and then
  // body_timeout for its body; one that trickles bytes slower is closed.
  std::chrono::seconds header_timeout{10};
  std::chrono::seconds body_timeout{60};
  std::chrono::seconds idle_timeout{60};  // a keep-alive connection with no request is closed
  // Open connections at most; one more is answered 503 (Retry-After) and closed at once.
  int max_connections = 4096;
  // A streamed answer whose client reads slower than it is produced may buffer this much;
  // past it the client is dropped and its request cancelled.
  size_t max_stream_buffer_bytes = 1u << 20;
};

class HttpServer {
 public:
  // handler answers every well-formed request; the server itself answers malformed ones
  // (400), oversized ones (413) and handler exceptions (500).
  HttpServer(HttpServerConfig config, Handler handler);
  ~HttpServer();  // stop()s
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // Binds, listens and starts the I/O threads (raising the process's open-file limit to
  // what max_connections needs, as far as the hard limit allows). IoError when the
  // address cannot be bound.
  Status start();
  // The bound port (useful with port 0). REQUIRES: start() succeeded.
  uint16_t port() const;
  // Closes the listening socket; open connections carry on.
  void stop_accepting();
  // From now on every answer carries "Connection: close" and its connection is closed
  // after it, so that clients (and balancers) open their next connection elsewhere.
  void close_connections_after_answers();
  // Stops every connection and joins the I/O threads.
  void stop();

  // Connections open now, those refused for max_connections so far, and the streaming
  // clients dropped for max_stream_buffer_bytes.
  int64_t n_connections() const;
  int64_t n_refused_connections() const;
  int64_t n_dropped_slow_readers() const;

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace tokenmill::server
