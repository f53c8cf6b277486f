// A minimal blocking HTTP/1.1 client for `tokenmill bench-serve`: plain http:// over
// POSIX sockets, keep-alive, Content-Length and chunked bodies, each body byte handed to
// the caller with the time it arrived (what latency measurements need).
//
// The framing pieces (URL, response head, chunked decoding, SSE events) are pure and
// unit tested in tests/cli; HttpConnection is the only part that touches a socket.
//
// Thread-safety: none of these classes is shared; the load generator gives each client
// thread its own HttpConnection.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
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

// The status line and headers of a response.
struct HttpResponseHead {
  int http_minor = 1;  // HTTP/1.<minor>
  int status = 0;
  std::vector<std::pair<std::string, std::string>> headers;  // names lower-cased, in order

  // The first header with this (lower-case) name, or nullptr.
  const std::string* header(std::string_view lower_name) const;
  bool chunked() const;
  // The Content-Length, or -1 when absent.
  int64_t content_length() const;
  // Whether the connection may carry another request after this response.
  bool keep_alive() const;
};

// Parses "HTTP/1.1 200 OK\r\nName: value\r\n...\r\n" (the blank line excluded).
Result<HttpResponseHead> parse_response_head(std::string_view head);

// Decodes a chunked body incrementally: feed() any split of the wire bytes, get the
// body bytes out. Trailers are read and dropped.
class ChunkedDecoder {
 public:
  // Appends the body bytes in `in` to `out`. Returns an error on malformed framing;
  // bytes after the terminating chunk are ignored (the caller stops reading there).
  Status feed(std::string_view in, std::string& out);
  bool done() const { return state_ == State::kDone; }

 private:
  enum class State { kSize, kSizeLineEnd, kData, kDataCr, kDataLf, kTrailer, kDone };
  State state_ = State::kSize;
  uint64_t remaining_ = 0;      // bytes left in the current chunk
  int n_size_digits_ = 0;
  bool in_extension_ = false;   // after ';' on a size line
  std::string trailer_line_;    // the trailer line being read
};

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

// One request/response exchange on a connection that is kept open between requests.
class HttpConnection {
 public:
  HttpConnection(HttpUrl url, std::chrono::milliseconds io_timeout) : url_(std::move(url)), io_timeout_(io_timeout) {}
  ~HttpConnection() { close(); }
  HttpConnection(const HttpConnection&) = delete;
  HttpConnection& operator=(const HttpConnection&) = delete;

  // Called with body bytes (already de-chunked) and the time the read returned them.
  using BodyCallback = std::function<void(std::string_view bytes, SteadyClock::time_point arrived)>;

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
  Result<Exchange> request_once(const std::string& wire, const BodyCallback& on_body, bool* retryable);
  Status read_some(std::string& buffer, bool* eof);

  HttpUrl url_;
  std::chrono::milliseconds io_timeout_;
  int fd_ = -1;
  bool reused_ = false;  // fd_ has already carried a response
};

}  // namespace tokenmill::cli
