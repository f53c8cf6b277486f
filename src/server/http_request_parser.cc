#include "server/http_request_parser.h"

#include <cctype>
#include <cstdint>

#include <boost/asio/buffer.hpp>
#include <boost/beast/core/error.hpp>

namespace tokenmill::server {

namespace beast = boost::beast;
namespace http = beast::http;
namespace net = boost::asio;

void apply_limits(RequestParser& parser, const HttpLimits& limits) {
  // The larger limit until the header says which route this is (check_header).
  parser.body_limit(std::max(limits.max_body_bytes, limits.max_upload_bytes));
  parser.header_limit(static_cast<uint32_t>(std::min<size_t>(limits.max_header_bytes, UINT32_MAX)));
}

size_t body_limit_of(const RequestParser& parser, const HttpLimits& limits) {
  const auto& request = parser.get();
  const bool upload = request.method() == http::verb::post && request.target() == "/v1/files";
  return upload ? std::max(limits.max_upload_bytes, limits.max_body_bytes) : limits.max_body_bytes;
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

std::optional<HttpRejection> rejection_for(const boost::system::error_code& ec, const HttpLimits& limits,
                                           size_t body_limit) {
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
  request.keep_alive = message.keep_alive();
  return request;
}

std::optional<ParsedRequest> parse_http_request(std::string_view bytes, const HttpLimits& limits) {
  RequestParser parser;
  apply_limits(parser, limits);
  parser.eager(true);
  bool header_checked = false;
  while (!parser.is_done()) {
    beast::error_code ec;
    const size_t used = parser.put(net::buffer(bytes.data(), bytes.size()), ec);
    bytes.remove_prefix(used);
    // Every byte left is always offered, so needing more means the request is cut short.
    if (ec == http::error::need_more) return std::nullopt;
    if (ec) {
      if (auto rejection = rejection_for(ec, limits, body_limit_of(parser, limits))) {
        return ParsedRequest(std::move(*rejection));
      }
      return std::nullopt;
    }
    if (parser.is_header_done() && !header_checked) {
      header_checked = true;
      if (auto rejection = check_header(parser, limits)) return ParsedRequest(std::move(*rejection));
    }
    if (used == 0 && !parser.is_done()) return std::nullopt;
  }
  return ParsedRequest(to_http_request(parser));
}

}  // namespace tokenmill::server
