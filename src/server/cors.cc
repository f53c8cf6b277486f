#include "server/cors.h"

#include <utility>

#include "server/header_responder.h"

namespace tokenmill::server {

std::string allowed_origin(const HttpRequest& request, const std::string& cors_origin) {
  const std::string& origin = request.header("origin");
  if (cors_origin.empty() || origin.empty()) return "";
  if (cors_origin == "*") return "*";
  return origin == cors_origin ? origin : "";
}

bool answer_preflight(const HttpRequest& request, const std::string& origin, Responder& out) {
  if (origin.empty() || request.method != "OPTIONS" || request.header("access-control-request-method").empty()) {
    return false;
  }
  HeaderList headers = {{"Access-Control-Allow-Origin", origin},
                        {"Access-Control-Allow-Methods", "GET, POST, DELETE, OPTIONS"},
                        {"Access-Control-Allow-Headers", "Authorization, Content-Type"},
                        {"Access-Control-Max-Age", "600"}};
  if (origin != "*") headers.emplace_back("Vary", "Origin");
  out.send(204, "text/plain", "", headers);
  return true;
}

std::shared_ptr<Responder> with_cors_headers(std::shared_ptr<Responder> out, std::string origin) {
  HeaderList headers = {{"Access-Control-Allow-Origin", origin}};
  if (origin != "*") headers.emplace_back("Vary", "Origin");
  return with_headers(std::move(out), std::move(headers));
}

}  // namespace tokenmill::server
