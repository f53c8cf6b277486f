#include "server/http_server.h"

#include <algorithm>
#include <array>
#include <atomic>
#include <cstdio>
#include <optional>
#include <thread>
#include <variant>
#include <vector>

#include <sys/resource.h>
#include <unistd.h>

#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

#include "base/cpu_affinity.h"
#include "base/log.h"
#include "server/api_error.h"

namespace tokenmill::server {

namespace beast = boost::beast;
namespace http = beast::http;
namespace net = boost::asio;
using tcp = net::ip::tcp;

namespace {

// What every connection of one server shares; outlives the connections' use of it
// because stop() joins the I/O threads before the Impl goes away.
struct Shared {
  Shared(HttpServerConfig c, Handler h) : config(std::move(c)), handler(std::move(h)) {}
  HttpServerConfig config;
  Handler handler;
  std::atomic<int64_t> n_connections{0};  // Connection objects alive
  std::atomic<int64_t> n_refused{0};      // turned away for max_connections
  std::atomic<int64_t> n_dropped{0};      // streaming clients dropped for not reading
  std::atomic<bool> closing{false};       // keep no connection open after its answer
};

// Descriptors the process needs beside its connections (the model, logs, the listener).
constexpr rlim_t kSpareFiles = 128;

// Lifts the soft limit on open files towards wanted, as far as the hard limit allows, so
// that max_connections is not cut short by the usual default of 1024.
void raise_open_file_limit(rlim_t wanted) {
  rlimit limit{};
  if (getrlimit(RLIMIT_NOFILE, &limit) != 0 || limit.rlim_cur >= wanted) return;
  const rlim_t before = limit.rlim_cur;
  limit.rlim_cur = std::min(wanted, limit.rlim_max);
  if (setrlimit(RLIMIT_NOFILE, &limit) != 0) return;
  if (limit.rlim_cur < wanted) {
    log_info("open-file limit " + std::to_string(limit.rlim_cur) + " (hard limit; was " + std::to_string(before) +
             ") holds fewer connections than --max-connections asks");
  }
}

std::string status_line(int status) {
  std::string reason(http::obsolete_reason(static_cast<http::status>(status)));
  return "HTTP/1.1 " + std::to_string(status) + " " + reason + "\r\n";
}

// One client connection. Lives as long as an asynchronous operation or a Responder
// holder (an engine request still answering) refers to it.
//
// States: reading a request -> answering it (exchange_open_) -> writes flushed ->
// reading the next request, or closing. All members are touched on the strand only.
class Connection : public Responder, public std::enable_shared_from_this<Connection> {
 public:
  Connection(tcp::socket socket, Shared& shared) : stream_(std::move(socket)), shared_(shared) {
    shared_.n_connections.fetch_add(1);
  }
  ~Connection() override {
    close_file();
    drop_spool();
    shared_.n_connections.fetch_sub(1);
  }

  void start() {
    beast::error_code ec;
    stream_.socket().set_option(tcp::no_delay(true), ec);  // stream tokens as they come
    net::dispatch(stream_.get_executor(), [self = shared_from_this()] { self->read_request(); });
  }

  // --- Responder ---
  void send(int status, const std::string& content_type, std::string body, const HeaderList& extra) override {
    if (!begin_response()) return;
    std::string head = status_line(status) + common_headers(content_type, extra);
    head += "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n";
    queue_write(std::move(head));
    if (!head_request_) queue_write(std::move(body));  // HEAD: the headers of GET, no body
    end_exchange();
  }

  void begin_stream(int status, const std::string& content_type, const HeaderList& extra) override {
    if (!begin_response()) return;
    streaming_ = true;
    if (http_1_0_) close_after_ = true;  // the end of the body is the end of the connection
    std::string head = status_line(status) + common_headers(content_type, extra);
    if (!http_1_0_) head += "Transfer-Encoding: chunked\r\n";
    head += "Cache-Control: no-cache\r\n\r\n";
    queue_write(std::move(head));
  }

  void write_chunk(std::string data) override {
    if (!streaming_ || exchange_ending_ || data.empty()) return;
    if (http_1_0_) {
      queue_write(std::move(data));
      return;
    }
    char size[32];
    std::snprintf(size, sizeof size, "%zx\r\n", data.size());
    queue_write(size + std::move(data) + "\r\n");
  }

  void end_stream() override {
    if (!streaming_ || exchange_ending_) return;
    if (!http_1_0_) queue_write("0\r\n\r\n");
    end_exchange();
  }

  void send_file(int status, const std::string& content_type, int fd, int64_t size, const HeaderList& extra) override {
    if (!begin_response() || gone_) {
      ::close(fd);
      return;
    }
    std::string head = status_line(status) + common_headers(content_type, extra);
    head += "Content-Length: " + std::to_string(size) + "\r\n\r\n";
    queue_write(std::move(head));
    if (head_request_ || size == 0) {
      ::close(fd);
      return end_exchange();
    }
    file_fd_ = fd;
    file_sent_ = 0;
    file_size_ = size;
    if (!write_in_flight_) send_file_piece();
  }

  void post(std::function<void()> fn) override { net::post(stream_.get_executor(), std::move(fn)); }

  void watch_disconnect(std::function<void()> on_gone) override {
    if (gone_) {
      on_gone();
      return;
    }
    on_gone_ = std::move(on_gone);
    start_watch();
  }

  bool connected() const override { return !gone_; }

 private:
  // --- reading a request ---
  void read_request() {
    parser_.emplace();
    apply_limits(*parser_, shared_.config.limits);
    if (n_requests_++ == 0 || buffer_.size() > 0) return read_header();
    // Keep-alive: the next request may come any time within the idle timeout; its
    // header deadline starts with its first byte.
    stream_.expires_after(shared_.config.idle_timeout);
    stream_.async_read_some(buffer_.prepare(4096), [self = shared_from_this()](beast::error_code ec, size_t n) {
      if (ec) return self->on_read_error(ec);
      self->buffer_.commit(n);
      self->read_header();
    });
  }

  void read_header() {
    stream_.expires_after(shared_.config.header_timeout);
    http::async_read_header(stream_, buffer_, *parser_,
                            [self = shared_from_this()](beast::error_code ec, size_t) { self->on_header(ec); });
  }

  void on_header(beast::error_code ec) {
    if (ec) return on_read_error(ec);
    if (auto rejection = check_header(*parser_, shared_.config.limits)) return reject(*rejection);
    if (spools_body(*parser_, shared_.config.limits)) {
      body_limit_ = body_limit_of(*parser_, shared_.config.limits);
      auto spool = start_spool(std::move(*parser_), shared_.config.limits, body_limit_, &spool_path_);
      if (auto* rejection = std::get_if<HttpRejection>(&spool)) {
        spool_path_.clear();
        return reject(*rejection);
      }
      upload_ = std::move(std::get<std::unique_ptr<UploadParser>>(spool));
    }
    stream_.expires_after(shared_.config.body_timeout);
    auto expect = upload_ ? upload_->get()[http::field::expect] : parser_->get()[http::field::expect];
    if (beast::iequals(expect, "100-continue")) {
      // The client waits for this before sending its body (curl does for large bodies).
      continue_line_ = "HTTP/1.1 100 Continue\r\n\r\n";
      net::async_write(stream_, net::buffer(continue_line_), [self = shared_from_this()](beast::error_code ec, size_t) {
        if (ec) return self->close();
        self->read_body();
      });
      return;
    }
    read_body();
  }

  void read_body() {
    auto done = [self = shared_from_this()](beast::error_code ec, size_t) { self->on_request(ec); };
    if (upload_) return http::async_read(stream_, buffer_, *upload_, std::move(done));
    http::async_read(stream_, buffer_, *parser_, std::move(done));
  }

  // An upload cut short or refused: its partial spool file goes.
  void drop_spool() {
    if (spool_path_.empty() || !upload_) return;
    discard_spool(*upload_, spool_path_);
    spool_path_.clear();
  }

  void on_read_error(beast::error_code ec) {
    const size_t body_limit = upload_ ? body_limit_ : body_limit_of(*parser_, shared_.config.limits);
    drop_spool();
    upload_.reset();
    auto rejection = rejection_for(ec, shared_.config.limits, body_limit);
    if (!rejection) return close();
    reject(*rejection);
  }

  // The request itself is bad: answer, then close (its remaining bytes are unparseable).
  void reject(const HttpRejection& rejection) {
    close_after_ = true;
    exchange_open_ = true;
    http_1_0_ = false;
    const char* code = rejection.status == 413   ? "request_too_large"
                       : rejection.status == 507 ? "insufficient_storage"
                                                 : "";
    const char* type = rejection.status >= 500 ? "server_error" : "invalid_request_error";
    const ApiError error{rejection.status, rejection.message, type, "", code};
    send(rejection.status, "application/json", openai_error_body(error), {});
  }

  void on_request(beast::error_code ec) {
    if (ec) return on_read_error(ec);
    stream_.expires_never();  // an answer may take as long as generation does
    HttpRequest request = upload_ ? to_http_request(*upload_, spool_path_) : to_http_request(*parser_);
    spool_path_.clear();  // the request owns the spool file now
    upload_.reset();
    parser_.reset();
    if (auto rejection = check_trailer(request, shared_.config.limits)) return reject(*rejection);

    http_1_0_ = request.http_1_0;
    head_request_ = request.method == "HEAD";
    close_after_ = !request.keep_alive;
    exchange_open_ = true;
    try {
      shared_.handler(request, shared_from_this());
    } catch (const std::exception& e) {
      log_error("HTTP handler for " + request.method + " " + request.path + " threw: " + e.what());
      if (!response_begun_) {
        send(500, "application/json", openai_error_body(server_error("Internal error: " + std::string(e.what()))), {});
      } else if (streaming_) {
        end_stream();
      }
    }
  }

  // --- writing the answer ---
  bool begin_response() {
    if (!exchange_open_ || response_begun_) return false;
    response_begun_ = true;
    return true;
  }

  std::string common_headers(const std::string& content_type, const HeaderList& extra) {
    if (shared_.closing.load()) close_after_ = true;
    std::string out = "Server: tokenmill\r\nContent-Type: " + content_type + "\r\n";
    for (const auto& [name, value] : extra) out += name + ": " + value + "\r\n";
    out += close_after_ ? "Connection: close\r\n" : "Connection: keep-alive\r\n";
    return out;
  }

  void queue_write(std::string bytes) {
    if (gone_) return;
    outbox_ += bytes;
    if (streaming_ && outbox_.size() > shared_.config.max_stream_buffer_bytes) {
      // The client stopped reading: drop it (and so its request) rather than buffer on.
      shared_.n_dropped.fetch_add(1);
      log_warn("dropping a client that stopped reading its stream (" + std::to_string(outbox_.size()) +
               " bytes waiting)");
      return client_gone();
    }
    if (!write_in_flight_) start_write();
  }

  void start_write() {
    writing_.swap(outbox_);
    outbox_.clear();
    write_in_flight_ = true;
    net::async_write(stream_, net::buffer(writing_), [self = shared_from_this()](beast::error_code ec, size_t) {
      self->on_write(ec);
    });
  }

  void on_write(beast::error_code ec) {
    write_in_flight_ = false;
    writing_.clear();
    if (ec) return client_gone();
    if (!outbox_.empty()) return start_write();
    if (file_fd_ >= 0) return send_file_piece();
    if (exchange_ending_) maybe_finish_exchange();
  }

  // The next piece of the file being sent, once the bytes before it are written. A file
  // that ends early (truncated under us) cannot give the promised length: the connection
  // closes, which the client sees as a cut body.
  void send_file_piece() {
    constexpr int64_t kPieceBytes = int64_t{1} << 18;
    std::string piece(static_cast<size_t>(std::min(kPieceBytes, file_size_ - file_sent_)), '\0');
    const ssize_t n = ::pread(file_fd_, piece.data(), piece.size(), static_cast<off_t>(file_sent_));
    if (n <= 0) {
      log_error("a file being sent could not be read past byte " + std::to_string(file_sent_));
      close_file();
      return client_gone();
    }
    piece.resize(static_cast<size_t>(n));
    file_sent_ += n;
    if (file_sent_ == file_size_) close_file();
    queue_write(std::move(piece));
    if (file_fd_ < 0) end_exchange();
  }

  void close_file() {
    if (file_fd_ >= 0) ::close(file_fd_);
    file_fd_ = -1;
  }

  void end_exchange() {
    exchange_ending_ = true;
    on_gone_ = nullptr;
    maybe_finish_exchange();
  }

  // The answer is complete once its bytes are written and the disconnect watch (if any)
  // has stopped; then the connection reads its next request or closes.
  void maybe_finish_exchange() {
    if (gone_ || write_in_flight_ || !outbox_.empty()) return;
    if (watch_pending_) {
      beast::error_code ignored;
      stream_.socket().cancel(ignored);  // on_watch sees operation_aborted and comes back here
      return;
    }
    exchange_open_ = exchange_ending_ = response_begun_ = streaming_ = false;
    if (close_after_) return linger_close();
    read_request();
  }

  // --- noticing a client that leaves while its answer is pending ---
  void start_watch() {
    if (watch_pending_ || gone_ || exchange_ending_) return;
    watch_pending_ = true;
    // Reads into the request buffer, so a pipelined next request is kept, not lost.
    stream_.async_read_some(buffer_.prepare(4096), [self = shared_from_this()](beast::error_code ec, size_t n) {
      self->on_watch(ec, n);
    });
  }

  void on_watch(beast::error_code ec, size_t n) {
    watch_pending_ = false;
    if (ec == net::error::operation_aborted) return maybe_finish_exchange();
    if (ec) return client_gone();
    buffer_.commit(n);
    if (exchange_ending_) return maybe_finish_exchange();
    // Keep watching unless a pipelining client has sent a lot already.
    if (buffer_.size() < (1u << 20)) start_watch();
  }

  void client_gone() {
    close_file();
    if (gone_) return;
    gone_ = true;
    auto on_gone = std::move(on_gone_);
    on_gone_ = nullptr;
    if (on_gone) on_gone();
    close();
  }

  void close() {
    gone_ = true;
    beast::error_code ignored;
    stream_.socket().shutdown(tcp::socket::shutdown_both, ignored);
    stream_.socket().close(ignored);
  }

  // After answering a request we cannot continue (413, 400), stop sending and read what
  // the client still sends for a while, so it sees the answer rather than a reset.
  void linger_close() {
    beast::error_code ignored;
    stream_.socket().shutdown(tcp::socket::shutdown_send, ignored);
    stream_.expires_after(std::chrono::seconds(5));
    discard_until_eof(size_t{64} << 20);
  }

  void discard_until_eof(size_t budget) {
    auto scratch = std::make_shared<std::array<char, 16384>>();
    stream_.async_read_some(net::buffer(*scratch), [self = shared_from_this(), scratch, budget](beast::error_code ec,
                                                                                                 size_t n) {
      if (ec || n >= budget) return self->close();
      self->discard_until_eof(budget - n);
    });
  }

  beast::tcp_stream stream_;
  Shared& shared_;
  beast::flat_buffer buffer_;
  std::optional<RequestParser> parser_;
  // A file upload's body parser once its header is read (spools_body), its spool file
  // (owned here until the request is handed to the handler) and its body limit.
  std::unique_ptr<UploadParser> upload_;
  std::string spool_path_;
  size_t body_limit_ = 0;
  std::string continue_line_;

  bool exchange_open_ = false;    // a request is being answered
  bool response_begun_ = false;   // send() or begin_stream() was called for it
  bool streaming_ = false;
  bool exchange_ending_ = false;  // the answer is complete; its bytes may still be in flight
  bool close_after_ = false;
  bool http_1_0_ = false;
  bool head_request_ = false;
  bool gone_ = false;             // the socket is closed or broken
  int64_t n_requests_ = 0;        // requests begun on this connection

  std::string outbox_;   // bytes queued behind the write in flight
  std::string writing_;  // bytes of the write in flight
  bool write_in_flight_ = false;
  // A file being sent by send_file: its descriptor (-1: none) and how far it has gone.
  int file_fd_ = -1;
  int64_t file_sent_ = 0;
  int64_t file_size_ = 0;
  bool watch_pending_ = false;
  std::function<void()> on_gone_;
};

}  // namespace

class HttpServer::Impl {
 public:
  Impl(HttpServerConfig config, Handler handler) : shared_(std::move(config), std::move(handler)) {}

  int64_t n_connections() const { return shared_.n_connections.load(); }
  int64_t n_refused() const { return shared_.n_refused.load(); }
  int64_t n_dropped() const { return shared_.n_dropped.load(); }

  Status start() {
    beast::error_code ec;
    const auto address = net::ip::make_address(shared_.config.host, ec);
    if (ec) return invalid_argument("cannot parse host address '" + shared_.config.host + "': " + ec.message());
    const tcp::endpoint endpoint(address, shared_.config.port);
    acceptor_.open(endpoint.protocol(), ec);
    if (!ec) acceptor_.set_option(net::socket_base::reuse_address(true), ec);
    if (!ec) acceptor_.bind(endpoint, ec);
    if (!ec) acceptor_.listen(net::socket_base::max_listen_connections, ec);
    if (ec) {
      return io_error("cannot listen on " + shared_.config.host + ":" + std::to_string(shared_.config.port) + ": " +
                      ec.message());
    }
    port_ = acceptor_.local_endpoint().port();
    raise_open_file_limit(static_cast<rlim_t>(shared_.config.max_connections) + kSpareFiles);
    accept();
    const int n_threads = std::max(1, shared_.config.n_io_threads);
    for (int i = 0; i < n_threads; ++i) {
      threads_.emplace_back([this] {
        pin_current_thread(shared_.config.io_cpus);  // a refusal leaves the thread where it is
        io_.run();
      });
    }
    return Status();
  }

  uint16_t port() const { return port_; }

  void stop_accepting() {
    net::post(acceptor_.get_executor(), [this] {
      beast::error_code ignored;
      acceptor_.close(ignored);
    });
  }

  void close_connections_after_answers() { shared_.closing.store(true); }

  void stop() {
    work_.reset();
    io_.stop();
    for (auto& t : threads_) t.join();
    threads_.clear();
  }

 private:
  void accept() {
    acceptor_.async_accept(net::make_strand(io_), [this](beast::error_code ec, tcp::socket socket) {
      if (ec == net::error::operation_aborted || !acceptor_.is_open()) return;
      if (!ec) {
        if (shared_.n_connections.load() >= shared_.config.max_connections) {
          refuse(std::move(socket));
        } else {
          std::make_shared<Connection>(std::move(socket), shared_)->start();
        }
      }
      accept();  // errors such as EMFILE affect one connection, not the listener
    });
  }

  // One connection too many: a 503 with Retry-After, then the socket is closed.
  void refuse(tcp::socket socket) {
    shared_.n_refused.fetch_add(1);
    static const std::string kBusy = [] {
      const std::string body = openai_error_body(ApiError{
          503, "The server has too many open connections; retry shortly", "server_error", "", "too_many_connections"});
      return status_line(503) + "Server: tokenmill\r\nContent-Type: application/json\r\nRetry-After: 1\r\n" +
             "Connection: close\r\nContent-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
    }();
    auto s = std::make_shared<tcp::socket>(std::move(socket));
    net::async_write(*s, net::buffer(kBusy), [s](beast::error_code, size_t) {
      beast::error_code ignored;
      s->shutdown(tcp::socket::shutdown_both, ignored);
      s->close(ignored);
    });
  }

  Shared shared_;
  net::io_context io_;
  std::optional<net::executor_work_guard<net::io_context::executor_type>> work_{net::make_work_guard(io_)};
  tcp::acceptor acceptor_{net::make_strand(io_)};
  uint16_t port_ = 0;
  std::vector<std::thread> threads_;
};

HttpServer::HttpServer(HttpServerConfig config, Handler handler)
    : impl_(std::make_unique<Impl>(std::move(config), std::move(handler))) {}

HttpServer::~HttpServer() { stop(); }

Status HttpServer::start() { return impl_->start(); }
uint16_t HttpServer::port() const { return impl_->port(); }
void HttpServer::stop_accepting() { impl_->stop_accepting(); }
void HttpServer::close_connections_after_answers() { impl_->close_connections_after_answers(); }
void HttpServer::stop() { impl_->stop(); }
int64_t HttpServer::n_connections() const { return impl_->n_connections(); }
int64_t HttpServer::n_refused_connections() const { return impl_->n_refused(); }
int64_t HttpServer::n_dropped_slow_readers() const { return impl_->n_dropped(); }

}  // namespace tokenmill::server
