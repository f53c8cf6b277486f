#include "cli/bench_serve_http.h"

#include <array>
#include <cctype>
#include <charconv>
#include <optional>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

namespace tokenmill::cli {

namespace beast = boost::beast;
namespace http = beast::http;
namespace net = boost::asio;
using tcp = net::ip::tcp;

namespace {

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

std::string_view view(beast::string_view s) { return std::string_view(s.data(), s.size()); }

constexpr uint32_t kMaxHeadBytes = 64 * 1024;
// Far beyond any completion response; a larger Content-Length or chunk size is garbage.
constexpr uint64_t kMaxBodyBytes = uint64_t{1} << 30;

}  // namespace

// --- URL ---------------------------------------------------------------------------

Result<HttpUrl> parse_http_url(std::string_view url) {
  std::string quoted = "'";  // built by appends: GCC 12 warns (-Wrestrict) on "'" + std::string
  quoted.append(url).push_back('\'');
  const size_t scheme_end = url.find("://");
  if (scheme_end == std::string_view::npos) {
    return invalid_argument("expected a URL like http://127.0.0.1:8080, found " + quoted);
  }
  const std::string scheme = lower(url.substr(0, scheme_end));
  if (scheme == "https") return unsupported("https is not supported, only plain http://: " + quoted);
  if (scheme != "http") return invalid_argument("expected an http:// URL, found " + quoted);
  std::string_view rest = url.substr(scheme_end + 3);
  const size_t slash = rest.find_first_of("/?#");
  std::string_view authority = rest.substr(0, slash);
  std::string_view path = slash == std::string_view::npos ? std::string_view() : rest.substr(slash);
  if (authority.find('@') != std::string_view::npos) return invalid_argument("user names in URLs are not supported: " + quoted);

  HttpUrl out;
  std::string_view port_text;
  if (!authority.empty() && authority.front() == '[') {
    const size_t close = authority.find(']');
    if (close == std::string_view::npos) return invalid_argument("unclosed '[' in the host of " + quoted);
    out.host = std::string(authority.substr(1, close - 1));
    std::string_view after = authority.substr(close + 1);
    if (!after.empty()) {
      if (after.front() != ':') return invalid_argument("expected ':PORT' after ']' in " + quoted);
      port_text = after.substr(1);
      if (port_text.empty()) return invalid_argument("empty port in " + quoted);
    }
  } else {
    const size_t colon = authority.rfind(':');
    out.host = std::string(authority.substr(0, colon));
    if (colon != std::string_view::npos) {
      port_text = authority.substr(colon + 1);
      if (port_text.empty()) return invalid_argument("empty port in " + quoted);
    }
  }
  if (out.host.empty()) return invalid_argument("no host in " + quoted);
  if (!port_text.empty()) {
    unsigned port = 0;
    auto [end, ec] = std::from_chars(port_text.data(), port_text.data() + port_text.size(), port);
    if (ec != std::errc() || end != port_text.data() + port_text.size() || port == 0 || port > 65535) {
      return invalid_argument("expected a port in 1..65535, found '" + std::string(port_text) + "' in " + quoted);
    }
    out.port = static_cast<uint16_t>(port);
  }
  if (path.find_first_of("?#") != std::string_view::npos) {
    return invalid_argument("the URL names the server, not a route; drop the query from " + quoted);
  }
  while (!path.empty() && path.back() == '/') path.remove_suffix(1);
  // Routes are /v1/...; accept a base URL that already ends in /v1, as OpenAI clients take.
  if (path.size() >= 3 && path.substr(path.size() - 3) == "/v1") path.remove_suffix(3);
  out.base_path = std::string(path);
  return out;
}

// --- Reading a response ------------------------------------------------------------

const std::string* HttpResponseHead::header(std::string_view lower_name) const {
  for (const auto& [name, value] : headers) {
    if (name == lower_name) return &value;
  }
  return nullptr;
}

namespace {

// A response body that is passed on instead of stored: the parser's reader hands each
// decoded piece to `sink` the moment it has it. Content-Length bodies, chunked bodies
// (de-chunked by the parser) and bodies that run to the end of the connection all come
// through here.
struct PassThroughBody {
  struct value_type {
    std::function<void(std::string_view)> sink;
  };

  class reader {
   public:
    template <bool is_request, class Fields>
    reader(http::header<is_request, Fields>&, value_type& body) : body_(body) {}

    void init(const boost::optional<uint64_t>&, beast::error_code& ec) { ec = {}; }

    template <class ConstBufferSequence>
    size_t put(const ConstBufferSequence& buffers, beast::error_code& ec) {
      size_t n = 0;
      for (net::const_buffer piece : beast::buffers_range_ref(buffers)) {
        if (piece.size() > 0) body_.sink(std::string_view(static_cast<const char*>(piece.data()), piece.size()));
        n += piece.size();
      }
      ec = {};
      return n;
    }

    void finish(beast::error_code& ec) { ec = {}; }

   private:
    value_type& body_;
  };
};

using ResponseParser = http::response_parser<PassThroughBody>;

// REQUIRES: parser.is_header_done()
HttpResponseHead head_of(const ResponseParser& parser) {
  HttpResponseHead head;
  head.status = static_cast<int>(parser.get().result_int());
  head.chunked = parser.chunked();
  if (auto length = parser.content_length()) head.content_length = static_cast<int64_t>(*length);
  head.keep_alive = parser.keep_alive();
  for (const auto& field : parser.get()) {
    head.headers.emplace_back(lower(view(field.name_string())), std::string(view(field.value())));
  }
  return head;
}

// Beast 1.74 asserts in debug builds (boostorg/beast#2861, fixed upstream in 2024) when
// the first chunk of a body is the last one ("0\r\n", an empty body), the parser asked for
// more and is called again with fewer than 5 bytes; its parse is right. No message ends
// in fewer than 5 bytes from there ("0\r\n\r\n"), so the caller waits for more bytes.
bool first_chunk_is_last_and_short(const ResponseParser& parser, int64_t n_chunk_headers,
                                   const beast::flat_buffer& unparsed) {
  if (!parser.is_header_done() || !parser.chunked() || n_chunk_headers > 0 || unparsed.size() >= 5) return false;
  const std::string_view bytes(static_cast<const char*>(unparsed.data().data()), unparsed.size());
  const size_t size_end = bytes.find_first_not_of('0');
  return size_end > 0 && size_end != std::string_view::npos && (bytes[size_end] == '\r' || bytes[size_end] == ';');
}

}  // namespace

Result<HttpResponseHead> read_response(ByteSource& source, const BodyCallback& on_body) {
  SteadyClock::time_point arrived;  // of the bytes being parsed
  int64_t n_chunk_headers = 0;      // of this message, the last one included once complete
  auto count_chunk_header = [&](uint64_t, beast::string_view, beast::error_code&) { ++n_chunk_headers; };
  // A parser reads one message; each interim 1xx response takes a fresh one.
  std::optional<ResponseParser> parser;
  auto start_message = [&] {
    parser.emplace();
    parser->eager(true);  // one put() parses everything that is buffered
    parser->header_limit(kMaxHeadBytes);
    parser->body_limit(kMaxBodyBytes);
    parser->get().body().sink = [&](std::string_view piece) { on_body(piece, arrived); };
    parser->on_chunk_header(count_chunk_header);
    n_chunk_headers = 0;
  };
  start_message();

  beast::flat_buffer unparsed;  // bytes read that the parser has not consumed yet
  bool received_any = false;
  for (;;) {
    // The parser consumes a head (or a chunk size line) only once it is complete, so a
    // partial one waits in `unparsed` for the next read.
    while (unparsed.size() > 0 && !parser->is_done() &&
           !first_chunk_is_last_and_short(*parser, n_chunk_headers, unparsed)) {
      beast::error_code ec;
      const size_t n = parser->put(unparsed.data(), ec);
      unparsed.consume(n);
      if (ec == http::error::need_more) break;
      if (ec) return corrupt_data("malformed HTTP response from the server: " + ec.message());
      if (parser->is_done() && parser->get().result_int() / 100 == 1) start_message();
      if (n == 0) break;  // no progress without more bytes
    }
    if (parser->is_done()) return head_of(*parser);

    Result<ByteSource::Piece> piece = source.read_some();
    if (!piece.ok()) return piece.status();
    arrived = piece->arrived;
    if (piece->bytes.empty()) break;
    received_any = true;
    const size_t n = piece->bytes.size();
    unparsed.commit(net::buffer_copy(unparsed.prepare(n), net::buffer(piece->bytes.data(), n)));
  }

  // The connection ended before the parser saw the end of the response, which is fine
  // only for a body without a length.
  if (!parser->is_header_done()) {
    return io_error(received_any ? "the server closed the connection in the middle of the response head"
                                 : "the server closed the connection without answering");
  }
  beast::error_code ec;
  parser->put_eof(ec);
  if (ec) {
    return io_error(parser->chunked() ? "the server closed the connection in the middle of a chunked body"
                                      : "the server closed the connection before the end of a Content-Length body");
  }
  return head_of(*parser);
}

// --- Server-sent events ------------------------------------------------------------

std::vector<std::string> SseParser::feed(std::string_view in) {
  for (char c : in) {
    if (c == '\n' && last_was_cr_) {
      last_was_cr_ = false;  // the LF of a CRLF: the line already ended at the CR
      continue;
    }
    last_was_cr_ = c == '\r';
    if (c == '\r' || c == '\n') {
      end_line();
    } else {
      line_.push_back(c);
    }
  }
  return std::exchange(events_, {});
}

void SseParser::end_line() {
  if (line_.empty()) {  // a blank line dispatches the event
    if (has_data_) events_.push_back(std::move(data_));
    data_.clear();
    has_data_ = false;
    return;
  }
  std::string_view line = line_;
  if (line.front() != ':') {  // ':' starts a comment
    const size_t colon = line.find(':');
    std::string_view field = line.substr(0, colon);
    std::string_view value = colon == std::string_view::npos ? std::string_view() : line.substr(colon + 1);
    if (!value.empty() && value.front() == ' ') value.remove_prefix(1);
    if (field == "data") {
      if (has_data_) data_.push_back('\n');
      data_.append(value);
      has_data_ = true;
    }
  }
  line_.clear();
}

// --- Connection --------------------------------------------------------------------

// One connection's stream, with an io_context of its own.
struct HttpConnection::Socket {
  net::io_context io;
  beast::tcp_stream stream{io};
};

namespace {

// Every operation on a connection is started asynchronously and waited for at once, so
// that the stream's expiry (set before) bounds it with beast::error::timeout; nothing
// runs in the background. Runs the operation just started on `io` to its end.
void wait_for(net::io_context& io) {
  io.restart();
  io.run();
}

std::string describe(std::chrono::milliseconds t) {
  return t.count() % 1000 == 0 ? std::to_string(t.count() / 1000) + " s" : std::to_string(t.count()) + " ms";
}

// The socket's bytes, each read bounded by the timeout. A reset counts as the end of the
// stream: that is how a server that closed an idle keep-alive connection shows up, and
// the caller retries on a fresh connection when nothing had been answered.
class SocketSource final : public ByteSource {
 public:
  SocketSource(beast::tcp_stream& stream, net::io_context& io, std::chrono::milliseconds timeout)
      : stream_(stream), io_(io), timeout_(timeout) {}

  Result<Piece> read_some() override {
    beast::error_code ec;
    size_t n = 0;
    stream_.expires_after(timeout_);
    stream_.async_read_some(net::buffer(bytes_), [&](beast::error_code e, size_t got) {
      ec = e;
      n = got;
    });
    wait_for(io_);
    const SteadyClock::time_point arrived = SteadyClock::now();
    if (ec == net::error::eof || ec == net::error::connection_reset) {
      closed_before_any_byte_ = n_bytes_read_ == 0;
      return Piece{std::string_view(), arrived};
    }
    if (ec == beast::error::timeout) return io_error("no answer from the server for " + describe(timeout_));
    if (ec) return io_error("reading from the server: " + ec.message());
    n_bytes_read_ += n;
    return Piece{std::string_view(bytes_.data(), n), arrived};
  }

  // Whether the server closed the connection without sending a byte.
  bool closed_before_any_byte() const { return closed_before_any_byte_; }

 private:
  beast::tcp_stream& stream_;
  net::io_context& io_;
  std::chrono::milliseconds timeout_;
  std::array<char, 16384> bytes_;
  size_t n_bytes_read_ = 0;
  bool closed_before_any_byte_ = false;
};

}  // namespace

HttpConnection::HttpConnection(HttpUrl url, std::chrono::milliseconds io_timeout)
    : url_(std::move(url)), io_timeout_(io_timeout) {}

HttpConnection::~HttpConnection() = default;

Status HttpConnection::connect() {
  if (socket_ != nullptr) return Status();
  auto socket = std::make_unique<Socket>();
  const std::string where = url_.host + ":" + std::to_string(url_.port);
  beast::error_code ec;
  tcp::resolver resolver(socket->io);
  const tcp::resolver::results_type addresses = resolver.resolve(url_.host, std::to_string(url_.port), ec);
  if (ec) return io_error("cannot resolve host '" + url_.host + "': " + ec.message());
  socket->stream.expires_after(io_timeout_);
  socket->stream.async_connect(addresses, [&](beast::error_code e, const tcp::endpoint&) { ec = e; });
  wait_for(socket->io);
  if (ec == beast::error::timeout) {
    return io_error("cannot connect to " + where + ": timed out after " + describe(io_timeout_));
  }
  if (ec) return io_error("cannot connect to " + where + ": " + ec.message());
  socket->stream.socket().set_option(tcp::no_delay(true), ec);  // requests are small: send them at once
  socket_ = std::move(socket);
  reused_ = false;
  return Status();
}

void HttpConnection::close() {
  socket_.reset();
  reused_ = false;
}

Result<HttpConnection::Exchange> HttpConnection::request(
    const std::string& method, const std::string& path,
    const std::vector<std::pair<std::string, std::string>>& headers, const std::string& body,
    const BodyCallback& on_body) {
  http::request<http::string_body> message;
  message.method_string(method);
  message.target(url_.base_path + path);
  message.version(11);
  const bool v6 = url_.host.find(':') != std::string::npos;
  message.set(http::field::host, (v6 ? "[" + url_.host + "]" : url_.host) + ":" + std::to_string(url_.port));
  for (const auto& [name, value] : headers) message.set(name, value);
  if (!body.empty() || method == "POST") message.content_length(body.size());
  message.body() = body;

  bool closed_unanswered = false;  // the server had closed the connection before the request
  auto exchange_once = [&](Socket& socket) -> Result<Exchange> {
    beast::error_code ec;
    socket.stream.expires_after(io_timeout_);
    http::async_write(socket.stream, message, [&](beast::error_code e, size_t) { ec = e; });
    wait_for(socket.io);
    if (ec == beast::error::timeout) return io_error("sending the request: timed out after " + describe(io_timeout_));
    if (ec) {
      closed_unanswered = ec == net::error::broken_pipe || ec == net::error::connection_reset;
      return io_error("sending the request: " + ec.message());
    }
    Exchange exchange;
    exchange.sent = SteadyClock::now();
    SocketSource source(socket.stream, socket.io, io_timeout_);
    Result<HttpResponseHead> head = read_response(source, on_body);
    closed_unanswered = source.closed_before_any_byte();
    if (!head.ok()) return head.status();
    exchange.head = std::move(*head);
    return exchange;
  };

  for (;;) {
    TM_RETURN_IF_ERROR(connect());
    const bool reused = reused_;
    closed_unanswered = false;
    Result<Exchange> result = exchange_once(*socket_);
    if (result.ok() && result->head.keep_alive) {
      reused_ = true;
    } else {
      close();
    }
    // A reused connection may have been closed by the server while it sat idle: one
    // fresh try. A fresh connection is never reused, so this retries at most once.
    if (result.ok() || !reused || !closed_unanswered) return result;
  }
}

}  // namespace tokenmill::cli
