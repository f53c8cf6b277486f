#include "server/http_request_parser.h"

#include <atomic>
#include <cctype>
#include <cerrno>
#include <cstdint>
#include <filesystem>

#include <unistd.h>

#include <boost/asio/buffer.hpp>
#include <boost/beast/core/error.hpp>

namespace tokenmill::server {

namespace beast = boost::beast;
namespace http = beast::http;
namespace net = boost::asio;

SpooledBody::~SpooledBody() { ::unlink(path_.c_str()); }

namespace {

bool is_upload(const http::request_header<>& header) {
  return header.method() == http::verb::post && header.target() == "/v1/files";
}

// The disk (or the quota) of the spool directory is full.
bool is_disk_full(const boost::system::error_code& ec) {
  return ec == boost::system::errc::no_space_on_device || ec == boost::system::errc::file_too_large ||
         (ec.category() == boost::system::system_category() && ec.value() == EDQUOT);
}

HttpRejection disk_full_rejection() {
  return HttpRejection{507, "The server could not store the upload: its disk is full"};
}

// Everything but the body.
template <class Body>
HttpRequest header_of(const http::request<Body>& message) {
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
  request.http_1_0 = message.version() == 10;
  request.keep_alive = message.keep_alive();
  return request;
}

}  // namespace

void apply_limits(RequestParser& parser, const HttpLimits& limits) {
  // The larger limit until the header says which route this is (check_header).
  parser.body_limit(std::max(limits.max_body_bytes, limits.max_upload_bytes));
  parser.header_limit(static_cast<uint32_t>(std::min<size_t>(limits.max_header_bytes, UINT32_MAX)));
}

size_t body_limit_of(const RequestParser& parser, const HttpLimits& limits) {
  return is_upload(parser.get()) ? std::max(limits.max_upload_bytes, limits.max_body_bytes) : limits.max_body_bytes;
}

std::optional<HttpRejection> check_header(RequestParser& parser, const HttpLimits& limits) {
  size_t n_fields = 0;
  for (auto it = parser.get().begin(); it != parser.get().end(); ++it) {
    if (++n_fields > limits.max_header_fields) {
      return HttpRejection{431, "The request has more than " + std::to_string(limits.max_header_fields) +
                                    " header fields"};
    }
  }
  const size_t body_limit = body_limit_of(parser, limits);
  if (parser.content_length() && *parser.content_length() > body_limit) {
    return HttpRejection{413, "The request body is larger than the limit of " + std::to_string(body_limit) + " bytes"};
  }
  parser.body_limit(body_limit);  // for a chunked body, counted as it arrives
  return std::nullopt;
}

bool spools_body(const RequestParser& parser, const HttpLimits& limits) {
  return !limits.upload_spool_dir.empty() && is_upload(parser.get());
}

SpoolStart start_spool(RequestParser&& parser, const HttpLimits& limits, size_t body_limit, std::string* spool_path) {
  static std::atomic<uint64_t> counter{0};
  *spool_path = limits.upload_spool_dir + "/.incoming-upload-" + std::to_string(::getpid()) + "-" +
                std::to_string(counter++);
  auto upload = std::make_unique<UploadParser>(std::move(parser));
  upload->body_limit(body_limit);
  beast::error_code ec;
  upload->get().body().open(spool_path->c_str(), beast::file_mode::write_new, ec);
  if (ec) {
    if (is_disk_full(ec)) return disk_full_rejection();
    return HttpRejection{500, "The server cannot store the upload: " + ec.message()};
  }
  return upload;
}

void discard_spool(UploadParser& parser, const std::string& spool_path) {
  parser.get().body().close();
  ::unlink(spool_path.c_str());
}

std::optional<HttpRejection> rejection_for(const boost::system::error_code& ec, const HttpLimits& limits,
                                           size_t body_limit) {
  if (is_disk_full(ec)) return disk_full_rejection();
  if (ec == http::error::end_of_stream || ec == net::error::eof || ec == beast::error::timeout ||
      ec == net::error::connection_reset || ec == net::error::operation_aborted) {
    return std::nullopt;
  }
  if (ec == http::error::body_limit) {
    return HttpRejection{413, "The request body is larger than the limit of " + std::to_string(body_limit) + " bytes"};
  }
  if (ec == http::error::header_limit) {
    return HttpRejection{431, "The request line and headers are larger than the limit of " +
                                  std::to_string(limits.max_header_bytes) + " bytes"};
  }
  return HttpRejection{400, "Malformed HTTP request: " + ec.message()};
}

HttpRequest to_http_request(RequestParser& parser) {
  auto message = parser.release();
  HttpRequest request = header_of(message);
  request.body = std::move(message.body());
  return request;
}

std::optional<HttpRejection> check_trailer(const HttpRequest& request, const HttpLimits& limits) {
  if (request.headers.size() <= limits.max_header_fields) return std::nullopt;
  return HttpRejection{431, "The request has more than " + std::to_string(limits.max_header_fields) +
                                " header and trailer fields"};
}

HttpRequest to_http_request(UploadParser& parser, const std::string& spool_path) {
  auto message = parser.release();
  message.body().close();
  HttpRequest request = header_of(message);
  std::error_code ec;
  const auto size = std::filesystem::file_size(spool_path, ec);
  request.body_file = std::make_shared<SpooledBody>(spool_path, ec ? 0 : static_cast<size_t>(size));
  return request;
}

namespace {

// Offers every byte left to the parser until it is done (eager) or, when not eager, until
// it has parsed the next element. nullopt: go on; otherwise what parse_http_request returns.
template <class Parser>
std::optional<std::optional<ParsedRequest>> feed(Parser& parser, std::string_view& bytes, const HttpLimits& limits,
                                                  size_t body_limit) {
  beast::error_code ec;
  const size_t used = parser.put(net::buffer(bytes.data(), bytes.size()), ec);
  bytes.remove_prefix(used);
  // Every byte left is always offered, so needing more means the request is cut short.
  if (ec == http::error::need_more) return std::optional<ParsedRequest>();
  if (ec) {
    if (auto rejection = rejection_for(ec, limits, body_limit)) return ParsedRequest(std::move(*rejection));
    return std::optional<ParsedRequest>();
  }
  if (used == 0 && !parser.is_done() && !parser.is_header_done()) return std::optional<ParsedRequest>();
  return std::nullopt;
}

// The body after the header: nullopt once the parser is done (the caller converts the
// request); otherwise what parse_http_request returns.
template <class Parser>
std::optional<std::optional<ParsedRequest>> read_body(Parser& parser, std::string_view bytes,
                                                      const HttpLimits& limits, size_t body_limit) {
  parser.eager(true);
  while (!parser.is_done()) {
    const size_t before = bytes.size();
    if (auto end = feed(parser, bytes, limits, body_limit)) return end;
    if (bytes.size() == before && !parser.is_done()) return std::optional<ParsedRequest>();
  }
  return std::nullopt;
}

}  // namespace

std::optional<ParsedRequest> parse_http_request(std::string_view bytes, const HttpLimits& limits) {
  RequestParser parser;
  apply_limits(parser, limits);
  parser.eager(false);  // stop after the header, which decides where the body goes
  while (!parser.is_header_done()) {
    if (auto end = feed(parser, bytes, limits, body_limit_of(parser, limits))) return std::move(*end);
  }
  if (auto rejection = check_header(parser, limits)) return ParsedRequest(std::move(*rejection));
  const size_t body_limit = body_limit_of(parser, limits);
  if (!spools_body(parser, limits)) {
    if (auto end = read_body(parser, bytes, limits, body_limit)) return std::move(*end);
    HttpRequest request = to_http_request(parser);
    if (auto rejection = check_trailer(request, limits)) return ParsedRequest(std::move(*rejection));
    return ParsedRequest(std::move(request));
  }
  std::string spool_path;
  auto spool = start_spool(std::move(parser), limits, body_limit, &spool_path);
  if (auto* rejection = std::get_if<HttpRejection>(&spool)) return ParsedRequest(std::move(*rejection));
  auto& upload = *std::get<std::unique_ptr<UploadParser>>(spool);
  if (auto end = read_body(upload, bytes, limits, body_limit)) {
    discard_spool(upload, spool_path);
    return std::move(*end);
  }
  HttpRequest request = to_http_request(upload, spool_path);
  if (auto rejection = check_trailer(request, limits)) return ParsedRequest(std::move(*rejection));  // drops the spool
  return ParsedRequest(std::move(request));
}

}  // namespace tokenmill::server
