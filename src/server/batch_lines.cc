#include "server/batch_lines.h"

#include <fstream>
#include <set>

#include "server/api_error.h"
#include "state/batch_state.h"

namespace tokenmill::server {

namespace {

constexpr const char* kEmbeddings = "/v1/embeddings";

}  // namespace

bool is_batch_endpoint(const std::string& url) {
  return url == "/v1/chat/completions" || url == "/v1/completions" || url == kEmbeddings;
}

std::vector<BatchLine> read_batch_lines(const std::string& path, const BatchFileRules& rules, Json& errors) {
  std::vector<BatchLine> out;
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    errors.push_back({{"code", "file_not_found"}, {"message", "The input file is gone"}, {"param", nullptr}, {"line", nullptr}});
    return out;
  }
  std::set<std::string> seen;
  std::set<std::pair<std::string, std::string>> known_models;
  std::string text;
  int64_t line_no = 0;
  auto error = [&](const char* code, const std::string& message) {
    if (errors.size() < 100) errors.push_back({{"code", code}, {"message", message}, {"param", nullptr}, {"line", line_no}});
  };
  auto allowed = [&](const std::string& url) {
    for (const std::string& u : rules.urls) {
      if (u == url) return true;
    }
    return false;
  };
  while (std::getline(in, text)) {
    ++line_no;
    if (!text.empty() && text.back() == '\r') text.pop_back();
    if (text.find_first_not_of(" \t") == std::string::npos) continue;
    if (static_cast<int64_t>(out.size()) >= rules.max_requests) {
      error("batch_too_large", "A batch may hold at most " + std::to_string(rules.max_requests) + " requests");
      break;
    }
    const Json request = Json::parse(text, nullptr, /*allow_exceptions=*/false);
    if (!request.is_object()) {
      error("invalid_json_line", "This line is not a JSON object (or not valid UTF-8)");
      continue;
    }
    const auto custom_id = request.find("custom_id");
    if (custom_id == request.end() || !custom_id->is_string() || custom_id->get<std::string>().empty()) {
      error("missing_required_parameter", "Each request needs a 'custom_id' string");
      continue;
    }
    if (!seen.insert(custom_id->get<std::string>()).second) {
      error("duplicate_custom_id", "The custom_id '" + custom_id->get<std::string>() + "' appears more than once");
      continue;
    }
    const auto method = request.find("method");
    if (method == request.end() || *method != "POST") {
      error("invalid_method", "'method' must be \"POST\"");
      continue;
    }
    const auto url = request.find("url");
    if (url == request.end() || !url->is_string() || !allowed(url->get<std::string>())) {
      std::string urls;
      for (const std::string& u : rules.urls) urls += (urls.empty() ? "" : " or ") + u;
      error("mismatched_endpoint", "'url' must be " + urls);
      continue;
    }
    const auto body = request.find("body");
    if (body == request.end() || !body->is_object()) {
      error("invalid_request", "'body' must be a JSON object");
      continue;
    }
    const auto model = body->find("model");
    const std::string model_name = model != body->end() && model->is_string() ? model->get<std::string>() : "";
    if (rules.knows_model && !known_models.count({*url, model_name})) {
      if (!rules.knows_model(*url, model_name)) {
        error("model_not_found", "The model '" + model_name + "' does not exist");
        continue;
      }
      known_models.insert({*url, model_name});
    }
    out.push_back({line_no, custom_id->get<std::string>(), url->get<std::string>(), *body});
  }
  if (out.empty() && errors.empty()) {
    errors.push_back({{"code", "empty_file"}, {"message", "The input file has no requests"}, {"param", nullptr},
                      {"line", nullptr}});
  }
  return out;
}

bool batch_model_known(const RouteContext& context, const std::string& url, const std::string& model) {
  if (url == kEmbeddings) return context.embeddings != nullptr && context.embeddings->answers_to(model);
  return context.models.knows(model);
}

void start_batch_request(const RouteContext& context, const std::string& url, const Json& body,
                         std::shared_ptr<Responder> out, engine::Priority priority) {
  try {
    if (url == kEmbeddings) {
      start_embedding_request(context, body, out);
    } else {
      Json generation = body;
      generation.erase("stream");
      generation.erase("stream_options");
      start_openai_request(context, url == "/v1/chat/completions", generation, out, priority);
    }
  } catch (const ApiError& error) {
    out->send(error.status, "application/json", openai_error_body(error), {});
  } catch (const std::exception& e) {
    out->send(500, "application/json", openai_error_body(server_error(e.what())), {});
  }
}

Json batch_result_line(const std::string& custom_id, int status, const std::string& body) {
  Json parsed = Json::parse(body, nullptr, false);
  return {{"id", state::new_state_id("batch_req_")},
          {"custom_id", custom_id},
          {"response",
           {{"status_code", status},
            {"request_id", parsed.is_object() && parsed.contains("id") ? parsed["id"] : Json("")},
            {"body", parsed.is_discarded() ? Json(body) : parsed}}},
          {"error", nullptr}};
}

}  // namespace tokenmill::server
