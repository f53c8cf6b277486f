// Reading one HTTP/1.1 request with the server's limits, shared by the connections of
// http_server.cc and by the fuzz target that attacks it: Beast parses, these functions
// configure its parser, check what Beast does not (the number of header fields) and turn
// the message into the HttpRequest a route handler sees, or a request the server must
// refuse into the status it answers (400, 413, 431, 507).
//
// A file upload (POST /v1/files) whose limits name an upload_spool_dir is read into a
// file there as it arrives (UploadParser, a file body), never held whole in memory:
//
//   RequestParser reads the header -> check_header -> is_upload? -> start_spool moves the
//   header into an UploadParser whose body is a new file in upload_spool_dir
#pragma once

#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <variant>

#include <boost/beast/http.hpp>
#include <boost/beast/http/file_body.hpp>

#include "server/http_types.h"

namespace tokenmill::server {

struct HttpLimits {
  size_t max_body_bytes = 4u << 20;     // larger bodies: 413
  size_t max_upload_bytes = 200u << 20;  // the body limit of file uploads (POST /v1/files)
  size_t max_header_bytes = 64u << 10;  // the request line and headers together: 431
  size_t max_header_fields = 100;       // more header fields: 431
  // When set, upload bodies go to a file in this directory as they arrive
  // (HttpRequest::body_file); when empty they are read into memory like any body.
  std::string upload_spool_dir;
};

// What the server answers itself for a request it will not hand to a route.
struct HttpRejection {
  int status = 400;
  std::string message;
};

using RequestParser = boost::beast::http::request_parser<boost::beast::http::string_body>;
using UploadParser = boost::beast::http::request_parser<boost::beast::http::file_body>;

// A fresh parser with the limits applied.
void apply_limits(RequestParser& parser, const HttpLimits& limits);

// After the header is parsed: the rejection for a header the limits refuse. A file
// upload's body limit is raised to max_upload_bytes here.
std::optional<HttpRejection> check_header(RequestParser& parser, const HttpLimits& limits);
// The body limit of the request whose header parser holds.
size_t body_limit_of(const RequestParser& parser, const HttpLimits& limits);

// True when the header parser holds a request whose body should go to a spool file: a
// file upload, with an upload_spool_dir in the limits. REQUIRES: the header is done.
bool spools_body(const RequestParser& parser, const HttpLimits& limits);

// Moves the parsed header into an UploadParser whose body is written to a new file in
// limits.upload_spool_dir (its path in *spool_path). REQUIRES: spools_body(parser) and no
// body byte parsed yet. The rejection (507, or 500) when the file cannot be created.
using SpoolStart = std::variant<std::unique_ptr<UploadParser>, HttpRejection>;
SpoolStart start_spool(RequestParser&& parser, const HttpLimits& limits, size_t body_limit, std::string* spool_path);

// An upload cut short or refused: closes its spool file and removes it.
void discard_spool(UploadParser& parser, const std::string& spool_path);

// The rejection for an error Beast reported while reading a request; nullopt for the
// errors that only mean the client went away (end of stream, reset, timeout).
std::optional<HttpRejection> rejection_for(const boost::system::error_code& ec, const HttpLimits& limits,
                                           size_t body_limit);

// REQUIRES: parser.is_done().
HttpRequest to_http_request(RequestParser& parser);
// A chunked body's trailer adds fields after check_header counted them: the finished
// request's fields against the same limit (431 past it).
std::optional<HttpRejection> check_trailer(const HttpRequest& request, const HttpLimits& limits);
// The spooled request; its body file is the one at spool_path, now owned by the request.
HttpRequest to_http_request(UploadParser& parser, const std::string& spool_path);

// One request from bytes, as a connection reads it: the request, the rejection, or
// nullopt when the bytes end before the request does. For tests and fuzzing.
using ParsedRequest = std::variant<HttpRequest, HttpRejection>;
std::optional<ParsedRequest> parse_http_request(std::string_view bytes, const HttpLimits& limits);

}  // namespace tokenmill::server
