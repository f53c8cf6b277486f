// What a route handler sees of HTTP: the parsed request, and a Responder that writes the
// answer on the connection the request came from.
//
// Threading: a handler is called on its connection's strand. Every Responder method must
// be called on that strand too: directly from the handler, or from a function given to
// post(). A Responder whose client has gone away accepts calls and drops the bytes.
#pragma once

#include <cstddef>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace tokenmill::server {

// A request body written to a file as it arrived instead of held in memory (file uploads,
// HttpLimits::upload_spool_dir). The file is removed when the last reference goes.
class SpooledBody {
 public:
  SpooledBody(std::string path, size_t size) : path_(std::move(path)), size_(size) {}
  ~SpooledBody();
  SpooledBody(const SpooledBody&) = delete;
  SpooledBody& operator=(const SpooledBody&) = delete;

  const std::string& path() const { return path_; }
  size_t size() const { return size_; }

 private:
  std::string path_;
  size_t size_;
};

struct HttpRequest {
  std::string method;   // "GET", "POST", ...
  std::string path;     // the target without its query string
  std::string query;    // after '?', unparsed; may be empty
  std::map<std::string, std::string> headers;  // names lower-cased
  std::string body;  // empty when body_file holds the body
  std::shared_ptr<const SpooledBody> body_file;
  bool http_1_0 = false;
  bool keep_alive = true;  // the client lets the connection stay open after the answer

  // The header's value, or "" when absent. name: lower case.
  const std::string& header(const std::string& name) const {
    static const std::string kEmpty;
    auto it = headers.find(name);
    return it == headers.end() ? kEmpty : it->second;
  }
};

using HeaderList = std::vector<std::pair<std::string, std::string>>;

class Responder {
 public:
  virtual ~Responder() = default;

  // A whole response with a Content-Length. Ends the exchange.
  virtual void send(int status, const std::string& content_type, std::string body, const HeaderList& extra = {}) = 0;

  // A streamed response (chunked transfer encoding): begin_stream once, then any number
  // of write_chunk, then end_stream, which ends the exchange.
  virtual void begin_stream(int status, const std::string& content_type, const HeaderList& extra = {}) = 0;
  virtual void write_chunk(std::string data) = 0;
  virtual void end_stream() = 0;

  // A file as the whole body, with its Content-Length: fd is an open descriptor this call
  // takes over (it closes it) and size the bytes to send from its start. A connection
  // reads it a piece at a time as the client takes the bytes, so a large file never sits
  // in memory. Ends the exchange. This default reads it whole and send()s it.
  virtual void send_file(int status, const std::string& content_type, int fd, int64_t size,
                         const HeaderList& extra = {});

  // Runs fn on this connection's strand (from any thread). fn runs even if the client is
  // gone, so it can release what it holds.
  virtual void post(std::function<void()> fn) = 0;

  // on_gone runs (on the strand) at most once, if the client disconnects before the
  // exchange ends. While one is set, the connection watches its socket for the client
  // closing it, so a client that leaves while its request waits is noticed too.
  virtual void watch_disconnect(std::function<void()> on_gone) = 0;

  // False once the client has gone away.
  virtual bool connected() const = 0;
};

using Handler = std::function<void(const HttpRequest&, std::shared_ptr<Responder>)>;

}  // namespace tokenmill::server
