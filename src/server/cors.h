// Cross-origin access for browsers, off unless the server is given an origin
// (--cors-origin): then requests from that origin (or any, for "*") get the
// Access-Control-Allow-* headers on every answer, and their preflight OPTIONS requests are
// answered 204 without reaching a route. Requests from other origins are served as
// before, without the headers, so a browser withholds the answer from the page.
#pragma once

#include <memory>
#include <string>

#include "server/http_types.h"

namespace tokenmill::server {

// The origin a request may be answered to, or "" when CORS does not apply to it.
std::string allowed_origin(const HttpRequest& request, const std::string& cors_origin);

// True (and answered) for a preflight request from an allowed origin.
bool answer_preflight(const HttpRequest& request, const std::string& origin, Responder& out);

// out, with the CORS headers for origin added to its answer.
std::shared_ptr<Responder> with_cors_headers(std::shared_ptr<Responder> out, std::string origin);

}  // namespace tokenmill::server
