// A small blocking HTTP/1.1 client for `tokenmill bench-serve`: plain http:// on
// Boost.Beast, keep-alive, each body byte handed to the caller with the time it arrived
// (what latency measurements need).
//
// Beast's parser does the response framing (status line, headers, Content-Length,
// chunked, a body that runs to the end of the connection). Reading a response goes
// through ByteSource, so that read_response is tested on scripted bytes in tests/cli;
// HttpConnection is the only part that touches a socket. parse_http_url and SseParser
// are here because Boost 1.74 has no URL library and Beast no server-sent events.
//
// Thread-safety: none of these classes is shared; the load generator gives each client
// thread its own HttpConnection.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/status.h"

namespace tokenmill::cli {

using SteadyClock = std::chrono::steady_clock;

// "http://host[:port][/base]" split up. No TLS, no user info.
struct HttpUrl {
  std::string host;       // "127.0.0.1", "localhost", "::1" (brackets removed)
  uint16_t port = 80;
  std::string base_path;  // "" or "/prefix" (never ends with '/')
};

Result<HttpUrl> parse_http_url(std::string_view url);

// The status line and headers of a final (non-1xx) response, as Beast's parser read them.
struct HttpResponseHead {
  int status = 0;
  bool chunked = false;
  int64_t content_length = -1;  // -1: no Content-Length
  // Whether the connection may carry another request after this response: false for
  // "Connection: close", for HTTP/1.0 without "Connection: keep-alive", and for a body
  // that runs to the end of the connection.
  bool keep_alive = false;
  std::vector<std::pair<std::string, std::string>> headers;  // names lower-cased, in order

  // The first header with this (lower-case) name, or nullptr.
  const std::string* header(std::string_view lower_name) const;
};

// Called with body bytes (already de-chunked) and the time the read returned them.
using BodyCallback = std::function<void(std::string_view bytes, SteadyClock::time_point arrived)>;

// The bytes of a connection, in the pieces reads return them.
class ByteSource {
 public:
  struct Piece {
    std::string_view bytes;  // empty: the peer closed the connection; valid until the next read
    SteadyClock::time_point arrived;
  };
  virtual ~ByteSource() = default;
  // Blocks for the next bytes; an error for a timeout or a broken connection.
  virtual Result<Piece> read_some() = 0;
};

// Reads one response from `source`, skipping interim 1xx responses, and hands each body
// piece to `on_body` as soon as the parser has decoded it, with its bytes' arrival time.
// Stops at the end of the response: bytes after it are left unread or dropped. Errors:
// malformed framing (corrupt_data), the connection ending early and the source's own
// errors (io_error).
Result<HttpResponseHead> read_response(ByteSource& source, const BodyCallback& on_body);

// Splits a text/event-stream body into events: feed() any split of the body, get the
// "data" field of each complete event (several data lines joined by '\n'). Comments,
// other fields and events without data are dropped. Accepts LF, CRLF and CR line ends.
class SseParser {
 public:
  std::vector<std::string> feed(std::string_view in);

 private:
  void end_line();
  std::string line_;
  std::string data_;
  bool has_data_ = false;
  bool last_was_cr_ = false;
  std::vector<std::string> events_;
};

// One request/response exchange at a time on a connection that is kept open between
// requests. Every connect, write and read is bounded by `io_timeout`.
class HttpConnection {
 public:
  HttpConnection(HttpUrl url, std::chrono::milliseconds io_timeout);
  ~HttpConnection();
  HttpConnection(const HttpConnection&) = delete;
  HttpConnection& operator=(const HttpConnection&) = delete;

  using BodyCallback = cli::BodyCallback;

  struct Exchange {
    HttpResponseHead head;
    SteadyClock::time_point sent;  // when the request's last byte was handed to the kernel
  };

  // Sends `method path` (path is appended to the URL's base path) with `body` and reads
  // the whole response, handing body bytes to `on_body`. A request on a reused
  // connection that the server had already closed is retried once on a fresh one.
  Result<Exchange> request(const std::string& method, const std::string& path,
                           const std::vector<std::pair<std::string, std::string>>& headers,
                           const std::string& body, const BodyCallback& on_body);

  // Opens the connection now (so that a refused connection is reported before timing).
  Status connect();
  void close();

 private:
  struct Socket;  // the Asio stream, kept out of this header

  HttpUrl url_;
  std::chrono::milliseconds io_timeout_;
  std::unique_ptr<Socket> socket_;  // null while closed
  bool reused_ = false;             // socket_ has already carried a response
};

}  // namespace tokenmill::cli
