#include "server/api_lists.h"

#include <cstdlib>

namespace tokenmill::server {

Json list_page(Json data, bool has_more) {
  Json out = {{"object", "list"}, {"data", data}};
  out["first_id"] = data.empty() ? Json(nullptr) : data.front()["id"];
  out["last_id"] = data.empty() ? Json(nullptr) : data.back()["id"];
  out["has_more"] = has_more;
  return out;
}

ApiError state_error(const Status& status) {
  if (status.code() == ErrorCode::kNotFound) return ApiError{404, status.message(), "invalid_request_error", "", ""};
  if (status.code() == ErrorCode::kResourceExhausted) {
    return ApiError{507, status.message() + " (the data directory's disk is full)", "server_error", "",
                    "insufficient_storage"};
  }
  return ApiError{500, status.message(), "server_error", "", ""};
}

int64_t limit_param(const QueryPairs& query, int64_t fallback, int64_t max) {
  const std::string text = query_value(query, "limit");
  if (text.empty()) return fallback;
  char* end = nullptr;
  const long long v = std::strtoll(text.c_str(), &end, 10);
  if (*end != '\0' || v < 1 || v > max) {
    throw bad_request("'limit' must be an integer from 1 to " + std::to_string(max), "limit");
  }
  return v;
}

void check_metadata(const Json& metadata) {
  if (metadata.size() > 16) throw bad_request("'metadata' may hold at most 16 pairs", "metadata");
  for (const auto& [key, value] : metadata.items()) {
    if (key.size() > 64 || !value.is_string() || value.get<std::string>().size() > 512) {
      throw bad_request("'metadata' keys are at most 64 characters, values strings of at most 512", "metadata");
    }
  }
}

}  // namespace tokenmill::server
