#include "cli/bench_serve_stream.h"

#include <nlohmann/json.hpp>

namespace tokenmill::cli {

namespace {

using Json = nlohmann::json;

std::string first_line(std::string_view text, size_t max_chars = 160) {
  std::string out(text.substr(0, text.find_first_of("\r\n")));
  if (out.size() > max_chars) out = out.substr(0, max_chars) + "...";
  return out;
}

// The message of {"error": {"message": ...}} or {"error": "..."}; empty if not an error.
std::string error_message(const Json& object) {
  if (!object.is_object() || !object.contains("error")) return "";
  const Json& error = object["error"];
  if (error.is_string()) return error.get<std::string>();
  if (error.is_object() && error.contains("message") && error["message"].is_string()) return error["message"].get<std::string>();
  return error.dump();
}

int64_t integer_or(const Json& object, const char* key, int64_t fallback) {
  if (!object.is_object()) return fallback;
  auto it = object.find(key);
  return it != object.end() && it->is_number_integer() ? it->get<int64_t>() : fallback;
}

}  // namespace

std::string error_body_message(std::string_view body) {
  Json parsed = Json::parse(body, nullptr, /*allow_exceptions=*/false);
  std::string message = error_message(parsed);
  return first_line(message.empty() ? body : std::string_view(message));
}

void StreamRecorder::fail(std::string reason) {
  if (failed_) return;
  failed_ = true;
  result_.error = std::move(reason);
}

void StreamRecorder::on_event(std::string_view data, SteadyClock::time_point t) {
  if (failed_ || done_) return;
  if (data == "[DONE]") {
    done_ = true;
    return;
  }
  Json event = Json::parse(data, nullptr, /*allow_exceptions=*/false);
  if (!event.is_object()) return fail("malformed SSE event (not a JSON object): " + first_line(data, 80));
  if (std::string message = error_message(event); !message.empty()) return fail("error event: " + first_line(message));

  if (auto usage = event.find("usage"); usage != event.end() && usage->is_object()) {
    if (int64_t n = integer_or(*usage, "completion_tokens", -1); n >= 0) usage_completion_tokens_ = n;
    if (int64_t n = integer_or(*usage, "prompt_tokens", -1); n >= 0) result_.n_prompt_tokens = n;
    if (auto details = usage->find("prompt_tokens_details"); details != usage->end()) {
      if (int64_t n = integer_or(*details, "cached_tokens", -1); n >= 0) result_.n_cached_tokens = n;
    }
  }
  auto choices = event.find("choices");
  if (choices == event.end() || !choices->is_array()) {
    if (event.contains("usage")) return;  // the usage chunk may carry no choices at all
    return fail("malformed SSE event (no 'choices'): " + first_line(data, 80));
  }
  bool has_content = false;
  for (const Json& choice : *choices) {
    const Json* text = nullptr;
    if (endpoint_ == Endpoint::kChat) {
      auto delta = choice.find("delta");
      if (delta != choice.end() && delta->is_object()) {
        if (auto content = delta->find("content"); content != delta->end()) text = &*content;
      }
    } else if (auto it = choice.find("text"); it != choice.end()) {
      text = &*it;
    }
    if (text != nullptr && text->is_string() && !text->get_ref<const std::string&>().empty()) has_content = true;
  }
  if (!has_content) return;
  if (!last_content_) {
    result_.ttft_s = since_sent(t);
  } else {
    result_.itl_s.push_back(std::chrono::duration<double>(t - *last_content_).count());
  }
  last_content_ = t;
  ++result_.n_content_chunks;
}

RequestResult StreamRecorder::finish(SteadyClock::time_point end) {
  if (!failed_ && !done_) fail("malformed SSE stream: it ended without 'data: [DONE]'");
  if (!failed_ && result_.n_content_chunks == 0) fail("the stream carried no content");
  result_.e2e_s = since_sent(end);
  result_.n_output_tokens = usage_completion_tokens_.value_or(result_.n_content_chunks);
  result_.ok = !failed_;
  return std::move(result_);
}

}  // namespace tokenmill::cli
