// Errors the HTTP routes answer with, and their JSON bodies: OpenAI's shape
// {"error": {"message", "type", "param", "code"}} for /v1 and the server's own answers,
// Ollama's {"error": "message"} for /api.
//
// Inside the server layer a handler may throw ApiError from deep in request parsing;
// the router catches it and answers. It never leaves the server layer.
#pragma once

#include <string>

namespace tokenmill::server {

struct ApiError {
  int status = 400;
  std::string message;
  std::string type = "invalid_request_error";
  std::string param;  // the offending request field; "" is written as null
  std::string code;   // a machine-readable code; "" is written as null
  int retry_after_seconds = 0;  // > 0: sent as a Retry-After header
};

// 400 invalid_request_error, naming the field.
ApiError bad_request(std::string message, std::string param = "", std::string code = "");
// 404 model_not_found for a model name the server does not serve.
ApiError model_not_found(const std::string& name);
// 401 for a missing or wrong API key.
ApiError unauthorized(std::string message);
// 500 server_error.
ApiError server_error(std::string message);
// 503 while the server shuts down.
ApiError unavailable(std::string message);
// 429 when the server already holds as many requests as it queues; retry after a second.
ApiError too_busy(std::string message);

std::string openai_error_body(const ApiError& error);
std::string ollama_error_body(const ApiError& error);

}  // namespace tokenmill::server
