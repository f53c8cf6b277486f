// The lines of a batch input file (OpenAI's batch format: one JSON object per line with
// custom_id, method, url and body), the result line each request becomes, and the call
// that runs one line through the route code of its url. The Batches API's runner and
// the offline `tokenmill batch` share them.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "engine/request.h"
#include "server/http_types.h"
#include "server/json_fields.h"
#include "server/route_context.h"

namespace tokenmill::server {

struct BatchLine {
  int64_t line = 0;  // 1-based, in the file
  std::string custom_id;
  std::string url;
  Json body;
};

struct BatchFileRules {
  std::vector<std::string> urls;  // the endpoints a line may name
  int64_t max_requests = 50000;
  // Whether the line's model exists for its url; null: any model is taken.
  std::function<bool(const std::string& url, const std::string& model)> knows_model{};
};

// The batch endpoints this server can run (the embeddings one only with an embedding model).
bool is_batch_endpoint(const std::string& url);

// Reads and checks a batch input file. Each refused line adds {code, message, param,
// line} to errors (at most 100 are kept); blank lines are skipped.
std::vector<BatchLine> read_batch_lines(const std::string& path, const BatchFileRules& rules, Json& errors);

// Whether the server behind context has the model a line names at url.
bool batch_model_known(const RouteContext& context, const std::string& url, const std::string& model);

// Runs one line's body through its url's route code now (it may wait for the model to
// load); the answer, or the error a route would send, arrives on out.
void start_batch_request(const RouteContext& context, const std::string& url, const Json& body,
                         std::shared_ptr<Responder> out, engine::Priority priority);

// A result line: {"id", "custom_id", "response": {"status_code", "request_id", "body"}, "error"}.
Json batch_result_line(const std::string& custom_id, int status, const std::string& body);

}  // namespace tokenmill::server
