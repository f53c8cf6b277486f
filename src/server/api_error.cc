#include "server/api_error.h"

#include <nlohmann/json.hpp>

#include "server/json_fields.h"

namespace tokenmill::server {

ApiError bad_request(std::string message, std::string param, std::string code) {
  return ApiError{400, std::move(message), "invalid_request_error", std::move(param), std::move(code)};
}

ApiError model_not_found(const std::string& name) {
  return ApiError{404, "The model '" + name + "' does not exist", "invalid_request_error", "model", "model_not_found"};
}

ApiError unauthorized(std::string message) {
  return ApiError{401, std::move(message), "invalid_request_error", "", "invalid_api_key"};
}

ApiError server_error(std::string message) { return ApiError{500, std::move(message), "server_error", "", ""}; }

ApiError too_busy(std::string message) {
  ApiError error{429, std::move(message), "server_error", "", "server_busy"};
  error.retry_after_seconds = 1;
  return error;
}

ApiError unavailable(std::string message) {
  return ApiError{503, std::move(message), "server_error", "", "server_shutting_down"};
}

std::string openai_error_body(const ApiError& error) {
  Json body = {{"error",
                          {{"message", error.message},
                           {"type", error.type},
                           {"param", error.param.empty() ? Json() : Json(error.param)},
                           {"code", error.code.empty() ? Json() : Json(error.code)}}}};
  return dump_json(body);
}

std::string ollama_error_body(const ApiError& error) { return dump_json(Json{{"error", error.message}}); }

}  // namespace tokenmill::server
