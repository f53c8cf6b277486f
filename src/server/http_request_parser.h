// Reading one HTTP/1.1 request with the server's limits, shared by the connections of
// http_server.cc and by the fuzz target that attacks it: Beast parses, these functions
// configure its parser, check what Beast does not (the number of header fields) and turn
// the message into the HttpRequest a route handler sees, or a request the server must
// refuse into the status it answers (400, 413, 431).
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <variant>

#include <boost/beast/http.hpp>

#include "server/http_types.h"

namespace tokenmill::server {

struct HttpLimits {
  size_t max_body_bytes = 4u << 20;     // larger bodies: 413
  size_t max_upload_bytes = 200u << 20;  // the body limit of file uploads (POST /v1/files)
  size_t max_header_bytes = 64u << 10;  // the request line and headers together: 431
  size_t max_header_fields = 100;       // more header fields: 431
};

// What the server answers itself for a request it will not hand to a route.
struct HttpRejection {
  int status = 400;
  std::string message;
};

using RequestParser = boost::beast::http::request_parser<boost::beast::http::string_body>;

// A fresh parser with the limits applied.
void apply_limits(RequestParser& parser, const HttpLimits& limits);

// After the header is parsed: the rejection for a header the limits refuse. A file
// upload's body limit is raised to max_upload_bytes here.
std::optional<HttpRejection> check_header(RequestParser& parser, const HttpLimits& limits);
// The body limit of the request whose header parser holds.
size_t body_limit_of(const RequestParser& parser, const HttpLimits& limits);

// The rejection for an error Beast reported while reading a request; nullopt for the
// errors that only mean the client went away (end of stream, reset, timeout).
std::optional<HttpRejection> rejection_for(const boost::system::error_code& ec, const HttpLimits& limits,
                                           size_t body_limit);

// REQUIRES: parser.is_done().
HttpRequest to_http_request(RequestParser& parser);

// One request from bytes, as a connection reads it: the request, the rejection, or
// nullopt when the bytes end before the request does. For tests and fuzzing.
using ParsedRequest = std::variant<HttpRequest, HttpRejection>;
std::optional<ParsedRequest> parse_http_request(std::string_view bytes, const HttpLimits& limits);

}  // namespace tokenmill::server
