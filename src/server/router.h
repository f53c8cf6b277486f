// Maps (method, path) to a handler. A path with no route is answered 404, a known path
// asked with the wrong method 405 (with an Allow header); an ApiError thrown by a handler
// becomes its JSON error response: Ollama's shape under /api/, OpenAI's elsewhere.
// HEAD is answered by a path's GET handler, without the body.
//
// Thread-safety: add() before serving; dispatch() from any number of threads.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "server/api_error.h"
#include "server/http_types.h"

namespace tokenmill::server {

class Router {
 public:
  void add(const std::string& method, const std::string& path, Handler handler);
  // Every path that starts with prefix (e.g. "/v1/models/"), after exact routes.
  void add_prefix(const std::string& method, const std::string& prefix, Handler handler);

  void dispatch(const HttpRequest& request, const std::shared_ptr<Responder>& out) const;

 private:
  std::map<std::string, std::map<std::string, Handler>> routes_;  // path -> method -> handler
  struct PrefixRoute {
    std::string method, prefix;
    Handler handler;
  };
  std::vector<PrefixRoute> prefix_routes_;
};

// Answers error in the shape the path's API expects.
void send_error(Responder& out, const std::string& path, const ApiError& error);

}  // namespace tokenmill::server
