#include "cli/bench_serve_http.h"

#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <charconv>
#include <cstring>

namespace tokenmill::cli {

namespace {

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

// Whether a comma-separated header value holds `token` (case-insensitive).
bool has_token(const std::string& value, std::string_view token) {
  std::string_view rest = value;
  while (!rest.empty()) {
    const size_t comma = rest.find(',');
    if (lower(trim(rest.substr(0, comma))) == token) return true;
    if (comma == std::string_view::npos) break;
    rest.remove_prefix(comma + 1);
  }
  return false;
}

constexpr size_t kMaxHeadBytes = 64 * 1024;
constexpr size_t kMaxChunkSizeDigits = 15;  // < 2^60 bytes: no overflow

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

// --- Response head -----------------------------------------------------------------

const std::string* HttpResponseHead::header(std::string_view lower_name) const {
  for (const auto& [name, value] : headers) {
    if (name == lower_name) return &value;
  }
  return nullptr;
}

bool HttpResponseHead::chunked() const {
  const std::string* te = header("transfer-encoding");
  return te != nullptr && has_token(*te, "chunked");
}

int64_t HttpResponseHead::content_length() const {
  const std::string* cl = header("content-length");
  if (cl == nullptr) return -1;
  int64_t n = -1;
  auto [end, ec] = std::from_chars(cl->data(), cl->data() + cl->size(), n);
  return ec == std::errc() && end == cl->data() + cl->size() && n >= 0 ? n : -1;
}

bool HttpResponseHead::keep_alive() const {
  const std::string* connection = header("connection");
  if (connection != nullptr && has_token(*connection, "close")) return false;
  if (http_minor == 0) return connection != nullptr && has_token(*connection, "keep-alive");
  return true;
}

Result<HttpResponseHead> parse_response_head(std::string_view head) {
  HttpResponseHead out;
  size_t line_end = head.find("\r\n");
  std::string_view status_line = head.substr(0, line_end);
  // "HTTP/1.1 200 OK": the reason phrase may be empty or missing.
  if (status_line.size() < 12 || status_line.substr(0, 7) != "HTTP/1." || !std::isdigit(static_cast<unsigned char>(status_line[7])) ||
      status_line[8] != ' ') {
    return corrupt_data("expected an HTTP/1.x status line, found '" + std::string(status_line.substr(0, 80)) + "'");
  }
  out.http_minor = status_line[7] - '0';
  std::string_view code = status_line.substr(9, 3);
  auto [end, ec] = std::from_chars(code.data(), code.data() + code.size(), out.status);
  if (ec != std::errc() || end != code.data() + 3 || out.status < 100 || (status_line.size() > 12 && status_line[12] != ' ')) {
    return corrupt_data("expected a 3-digit status code, found '" + std::string(status_line.substr(0, 80)) + "'");
  }
  while (line_end != std::string_view::npos) {
    const size_t start = line_end + 2;
    line_end = head.find("\r\n", start);
    std::string_view line = head.substr(start, line_end == std::string_view::npos ? std::string_view::npos : line_end - start);
    if (line.empty()) continue;
    const size_t colon = line.find(':');
    if (colon == std::string_view::npos || colon == 0) {
      return corrupt_data("expected 'Name: value' in the response head, found '" + std::string(line.substr(0, 80)) + "'");
    }
    out.headers.emplace_back(lower(line.substr(0, colon)), std::string(trim(line.substr(colon + 1))));
  }
  return out;
}

// --- Chunked transfer coding -------------------------------------------------------

Status ChunkedDecoder::feed(std::string_view in, std::string& out) {
  size_t i = 0;
  while (i < in.size() && state_ != State::kDone) {
    const char c = in[i];
    switch (state_) {
      case State::kSize:
        if (c == '\r' || c == '\n') {
          if (n_size_digits_ == 0) return corrupt_data("chunked body: empty chunk size line");
          state_ = c == '\r' ? State::kSizeLineEnd : (remaining_ == 0 ? State::kTrailer : State::kData);
          n_size_digits_ = 0;
          in_extension_ = false;
        } else if (in_extension_) {
          // chunk extensions are ignored
        } else if (c == ';') {
          in_extension_ = true;
        } else if (std::isxdigit(static_cast<unsigned char>(c))) {
          if (++n_size_digits_ > static_cast<int>(kMaxChunkSizeDigits)) return corrupt_data("chunked body: chunk size too large");
          const int digit = std::isdigit(static_cast<unsigned char>(c)) ? c - '0' : std::tolower(c) - 'a' + 10;
          remaining_ = remaining_ * 16 + static_cast<uint64_t>(digit);
        } else if (c == ' ' || c == '\t') {
          // whitespace before an extension
        } else {
          return corrupt_data(std::string("chunked body: expected a hex chunk size, found byte '") + c + "'");
        }
        ++i;
        break;
      case State::kSizeLineEnd:
        if (c != '\n') return corrupt_data("chunked body: expected LF after CR in a chunk size line");
        state_ = remaining_ == 0 ? State::kTrailer : State::kData;
        ++i;
        break;
      case State::kData: {
        const size_t n = static_cast<size_t>(std::min<uint64_t>(remaining_, in.size() - i));
        out.append(in.substr(i, n));
        remaining_ -= n;
        i += n;
        if (remaining_ == 0) state_ = State::kDataCr;
        break;
      }
      case State::kDataCr:
        if (c == '\n') {
          state_ = State::kSize;  // a bare LF, tolerated
        } else if (c == '\r') {
          state_ = State::kDataLf;
        } else {
          return corrupt_data("chunked body: expected CRLF after chunk data");
        }
        ++i;
        break;
      case State::kDataLf:
        if (c != '\n') return corrupt_data("chunked body: expected LF after CR following chunk data");
        state_ = State::kSize;
        ++i;
        break;
      case State::kTrailer:
        if (c == '\n') {
          if (trailer_line_.empty()) state_ = State::kDone;
          trailer_line_.clear();
        } else if (c != '\r') {
          if (trailer_line_.size() > kMaxHeadBytes) return corrupt_data("chunked body: trailer line too long");
          trailer_line_.push_back(c);
        }
        ++i;
        break;
      case State::kDone:
        break;
    }
  }
  return Status();
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

Status HttpConnection::connect() {
  if (fd_ >= 0) return Status();
  const std::string where = url_.host + ":" + std::to_string(url_.port);
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* addresses = nullptr;
  const int gai = getaddrinfo(url_.host.c_str(), std::to_string(url_.port).c_str(), &hints, &addresses);
  if (gai != 0) return io_error("cannot resolve host '" + url_.host + "': " + gai_strerror(gai));
  std::string last_error = "no address";
  for (addrinfo* a = addresses; a != nullptr; a = a->ai_next) {
    const int fd = ::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
    if (fd < 0) {
      last_error = std::strerror(errno);
      continue;
    }
    // On Linux the send timeout also bounds connect().
    timeval tv{};
    tv.tv_sec = static_cast<time_t>(io_timeout_.count() / 1000);
    tv.tv_usec = static_cast<suseconds_t>((io_timeout_.count() % 1000) * 1000);
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    const int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    if (::connect(fd, a->ai_addr, a->ai_addrlen) == 0) {
      fd_ = fd;
      reused_ = false;
      freeaddrinfo(addresses);
      return Status();
    }
    last_error = errno == EINPROGRESS || errno == EAGAIN ? "timed out" : std::strerror(errno);
    ::close(fd);
  }
  freeaddrinfo(addresses);
  return io_error("cannot connect to " + where + ": " + last_error);
}

void HttpConnection::close() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
  reused_ = false;
}

Status HttpConnection::read_some(std::string& buffer, bool* eof) {
  char bytes[16384];
  for (;;) {
    const ssize_t n = ::recv(fd_, bytes, sizeof bytes, 0);
    if (n > 0) {
      buffer.append(bytes, static_cast<size_t>(n));
      *eof = false;
      return Status();
    }
    if (n == 0) {
      *eof = true;
      return Status();
    }
    if (errno == EINTR) continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK) {
      return io_error("no answer from the server for " + std::to_string(io_timeout_.count() / 1000) + " s");
    }
    if (errno == ECONNRESET) {  // reported like an EOF so that the caller can retry
      *eof = true;
      return Status();
    }
    return io_error(std::string("reading from the server: ") + std::strerror(errno));
  }
}

Result<HttpConnection::Exchange> HttpConnection::request(
    const std::string& method, const std::string& path,
    const std::vector<std::pair<std::string, std::string>>& headers, const std::string& body,
    const BodyCallback& on_body) {
  std::string wire = method + " " + url_.base_path + path + " HTTP/1.1\r\n";
  const bool v6 = url_.host.find(':') != std::string::npos;
  wire += "Host: " + (v6 ? "[" + url_.host + "]" : url_.host) + ":" + std::to_string(url_.port) + "\r\n";
  for (const auto& [name, value] : headers) wire += name + ": " + value + "\r\n";
  if (!body.empty() || method == "POST") wire += "Content-Length: " + std::to_string(body.size()) + "\r\n";
  wire += "\r\n";
  wire += body;

  bool retryable = false;
  Result<Exchange> result = request_once(wire, on_body, &retryable);
  if (!result.ok() && retryable) {
    close();  // the server closed an idle keep-alive connection: one fresh try
    result = request_once(wire, on_body, &retryable);
  }
  return result;
}

Result<HttpConnection::Exchange> HttpConnection::request_once(const std::string& wire, const BodyCallback& on_body,
                                                              bool* retryable) {
  *retryable = false;
  TM_RETURN_IF_ERROR(connect());
  const bool reused = reused_;
  auto fail = [&](Status s) -> Result<Exchange> {
    close();
    return s;
  };

  for (size_t sent = 0; sent < wire.size();) {
    const ssize_t n = ::send(fd_, wire.data() + sent, wire.size() - sent, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      *retryable = reused && (errno == EPIPE || errno == ECONNRESET);
      return fail(io_error(std::string("sending the request: ") + std::strerror(errno)));
    }
    sent += static_cast<size_t>(n);
  }
  Exchange exchange;
  exchange.sent = SteadyClock::now();

  // The head, skipping any 1xx interim responses.
  std::string buffer;
  size_t head_end = std::string::npos;
  for (;;) {
    head_end = buffer.find("\r\n\r\n");
    if (head_end != std::string::npos) {
      Result<HttpResponseHead> head = parse_response_head(std::string_view(buffer).substr(0, head_end));
      if (!head.ok()) return fail(head.status());
      exchange.head = std::move(*head);
      buffer.erase(0, head_end + 4);
      if (exchange.head.status >= 200) break;
      continue;  // 100 Continue and friends
    }
    if (buffer.size() > kMaxHeadBytes) return fail(corrupt_data("response head larger than 64 KiB"));
    bool eof = false;
    if (Status s = read_some(buffer, &eof); !s.ok()) return fail(s);
    if (eof) {
      *retryable = reused && buffer.empty();
      return fail(io_error(buffer.empty() ? "the server closed the connection without answering"
                                          : "the server closed the connection in the middle of the response head"));
    }
  }
  const SteadyClock::time_point head_arrived = SteadyClock::now();

  const HttpResponseHead& head = exchange.head;
  const bool no_body = head.status == 204 || head.status == 304;
  const int64_t content_length = head.content_length();
  bool keep_alive = head.keep_alive();
  if (no_body) {
    // nothing to read
  } else if (head.chunked()) {
    ChunkedDecoder decoder;
    std::string decoded;
    std::string pending = std::move(buffer);
    SteadyClock::time_point arrived = head_arrived;
    for (;;) {
      decoded.clear();
      if (Status s = decoder.feed(pending, decoded); !s.ok()) return fail(s);
      if (!decoded.empty()) on_body(decoded, arrived);
      if (decoder.done()) break;
      pending.clear();
      bool eof = false;
      if (Status s = read_some(pending, &eof); !s.ok()) return fail(s);
      arrived = SteadyClock::now();
      if (eof) return fail(io_error("the server closed the connection in the middle of a chunked body"));
    }
  } else if (content_length >= 0) {
    int64_t left = content_length;
    std::string pending = std::move(buffer);
    SteadyClock::time_point arrived = head_arrived;
    for (;;) {
      const size_t n = static_cast<size_t>(std::min<int64_t>(left, static_cast<int64_t>(pending.size())));
      if (n > 0) on_body(std::string_view(pending).substr(0, n), arrived);
      left -= static_cast<int64_t>(n);
      if (left == 0) break;
      pending.clear();
      bool eof = false;
      if (Status s = read_some(pending, &eof); !s.ok()) return fail(s);
      arrived = SteadyClock::now();
      if (eof) return fail(io_error("the server closed the connection before the end of a Content-Length body"));
    }
  } else {
    // No length: the body runs to the end of the connection.
    keep_alive = false;
    std::string pending = std::move(buffer);
    SteadyClock::time_point arrived = head_arrived;
    for (;;) {
      if (!pending.empty()) on_body(pending, arrived);
      pending.clear();
      bool eof = false;
      if (Status s = read_some(pending, &eof); !s.ok()) return fail(s);
      arrived = SteadyClock::now();
      if (eof) break;
    }
  }
  if (keep_alive) {
    reused_ = true;
  } else {
    close();
  }
  return exchange;
}

}  // namespace tokenmill::cli
