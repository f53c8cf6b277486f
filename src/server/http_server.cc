#include "server/http_server.h"

#include <array>
#include <atomic>
#include <cctype>
#include <cstdio>
#include <optional>
#include <thread>
#include <vector>

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
  HttpServerConfig config;
  Handler handler;
};

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
  Connection(tcp::socket socket, const Shared& shared) : stream_(std::move(socket)), shared_(shared) {}

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
    std::string head = status_line(status) + common_headers(content_type, extra);
    if (http_1_0_) {
      close_after_ = true;  // the end of the body is the end of the connection
    } else {
      head += "Transfer-Encoding: chunked\r\n";
    }
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
    parser_->body_limit(shared_.config.max_body_bytes);
    parser_->header_limit(static_cast<uint32_t>(shared_.config.max_header_bytes));
    stream_.expires_after(shared_.config.idle_timeout);
    http::async_read_header(stream_, buffer_, *parser_,
                            [self = shared_from_this()](beast::error_code ec, size_t) { self->on_header(ec); });
  }

  void on_header(beast::error_code ec) {
    if (ec) return on_read_error(ec);
    const auto& request = parser_->get();
    auto expect = request[http::field::expect];
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
    http::async_read(stream_, buffer_, *parser_,
                     [self = shared_from_this()](beast::error_code ec, size_t) { self->on_request(ec); });
  }

  void on_read_error(beast::error_code ec) {
    if (ec == http::error::end_of_stream || ec == net::error::eof || ec == beast::error::timeout ||
        ec == net::error::connection_reset || ec == net::error::operation_aborted) {
      return close();
    }
    // The request itself is bad: answer, then close (its remaining bytes are unparseable).
    close_after_ = true;
    exchange_open_ = true;
    http_1_0_ = false;
    if (ec == http::error::body_limit) {
      ApiError error{413,
                     "The request body is larger than the limit of " + std::to_string(shared_.config.max_body_bytes) +
                         " bytes",
                     "invalid_request_error", "", "request_too_large"};
      send(413, "application/json", openai_error_body(error), {});
    } else if (ec == http::error::header_limit) {
      send(431, "application/json", openai_error_body(ApiError{431, "The request headers are too large", "invalid_request_error", "", ""}), {});
    } else {
      send(400, "application/json", openai_error_body(bad_request("Malformed HTTP request: " + ec.message())), {});
    }
  }

  void on_request(beast::error_code ec) {
    if (ec) return on_read_error(ec);
    stream_.expires_never();  // an answer may take as long as generation does
    auto message = parser_->release();
    parser_.reset();

    HttpRequest request;
    request.method = std::string(message.method_string());
    const auto raw_target = message.target();
    const std::string_view target(raw_target.data(), raw_target.size());
    const size_t q = target.find('?');
    request.path = std::string(target.substr(0, q));
    if (q != std::string_view::npos) request.query = std::string(target.substr(q + 1));
    for (const auto& field : message) {
      std::string name(field.name_string());
      for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      request.headers[name] = std::string(field.value());
    }
    request.body = std::move(message.body());
    request.http_1_0 = message.version() == 10;

    http_1_0_ = request.http_1_0;
    head_request_ = request.method == "HEAD";
    close_after_ = !message.keep_alive();
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

  std::string common_headers(const std::string& content_type, const HeaderList& extra) const {
    std::string out = "Server: tokenmill\r\nContent-Type: " + content_type + "\r\n";
    for (const auto& [name, value] : extra) out += name + ": " + value + "\r\n";
    out += close_after_ ? "Connection: close\r\n" : "Connection: keep-alive\r\n";
    return out;
  }

  void queue_write(std::string bytes) {
    if (gone_) return;
    outbox_ += bytes;
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
    if (exchange_ending_) maybe_finish_exchange();
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
  const Shared& shared_;
  beast::flat_buffer buffer_;
  std::optional<http::request_parser<http::string_body>> parser_;
  std::string continue_line_;

  bool exchange_open_ = false;    // a request is being answered
  bool response_begun_ = false;   // send() or begin_stream() was called for it
  bool streaming_ = false;
  bool exchange_ending_ = false;  // the answer is complete; its bytes may still be in flight
  bool close_after_ = false;
  bool http_1_0_ = false;
  bool head_request_ = false;
  bool gone_ = false;             // the socket is closed or broken

  std::string outbox_;   // bytes queued behind the write in flight
  std::string writing_;  // bytes of the write in flight
  bool write_in_flight_ = false;
  bool watch_pending_ = false;
  std::function<void()> on_gone_;
};

}  // namespace

class HttpServer::Impl {
 public:
  Impl(HttpServerConfig config, Handler handler) : shared_{std::move(config), std::move(handler)} {}

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
      if (!ec) std::make_shared<Connection>(std::move(socket), shared_)->start();
      accept();  // errors such as EMFILE affect one connection, not the listener
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
void HttpServer::stop() { impl_->stop(); }

}  // namespace tokenmill::server
