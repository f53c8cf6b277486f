#include "server/router.h"

namespace tokenmill::server {

void Router::add(const std::string& method, const std::string& path, Handler handler) {
  routes_[path][method] = std::move(handler);
}

void Router::add_prefix(const std::string& method, const std::string& prefix, Handler handler) {
  prefix_routes_.push_back({method, prefix, std::move(handler)});
}

void send_error(Responder& out, const std::string& path, const ApiError& error) {
  const bool ollama = path.rfind("/api/", 0) == 0;
  HeaderList extra;
  if (error.status == 401) extra.emplace_back("WWW-Authenticate", "Bearer");
  if (error.retry_after_seconds > 0) extra.emplace_back("Retry-After", std::to_string(error.retry_after_seconds));
  out.send(error.status, "application/json", ollama ? ollama_error_body(error) : openai_error_body(error), extra);
}

void Router::dispatch(const HttpRequest& request, const std::shared_ptr<Responder>& out) const {
  const Handler* handler = nullptr;
  std::string allowed;
  if (auto it = routes_.find(request.path); it != routes_.end()) {
    auto m = it->second.find(request.method);
    if (m == it->second.end() && request.method == "HEAD") m = it->second.find("GET");  // answered without a body
    if (m != it->second.end()) {
      handler = &m->second;
    } else {
      for (const auto& [method, unused] : it->second) allowed += (allowed.empty() ? "" : ", ") + method;
    }
  } else {
    for (const PrefixRoute& route : prefix_routes_) {
      if (request.path.rfind(route.prefix, 0) != 0) continue;
      if (route.method == request.method) {
        handler = &route.handler;
        break;
      }
      allowed += (allowed.empty() ? "" : ", ") + route.method;
    }
  }
  if (!handler && !allowed.empty()) {
    ApiError error{405, "Method " + request.method + " is not allowed on " + request.path + "; use " + allowed,
                   "invalid_request_error", "", "method_not_allowed"};
    const bool ollama = request.path.rfind("/api/", 0) == 0;
    out->send(405, "application/json", ollama ? ollama_error_body(error) : openai_error_body(error),
              {{"Allow", allowed}});
    return;
  }
  if (!handler) {
    send_error(*out, request.path,
               ApiError{404, "No route for " + request.method + " " + request.path, "invalid_request_error", "",
                        "not_found"});
    return;
  }
  try {
    (*handler)(request, out);
  } catch (const ApiError& error) {
    send_error(*out, request.path, error);
  }
}

}  // namespace tokenmill::server
