// Ollama's API: POST /api/chat, POST /api/generate, GET /api/tags, POST /api/show,
// GET /api/ps, GET /api/version, and GET / ("... is running").
//
// Streams are newline-delimited JSON (one object per line, "done": false), ending with a
// "done": true object that carries done_reason and the timings in nanoseconds. Streaming
// is the default; "stream": false answers one object. Sampling defaults are Ollama's
// (temperature 0.8, top_k 40, top_p 0.9, repeat_penalty 1.1 over the last 64 tokens).
#include <chrono>
#include <climits>

#include "server/json_fields.h"
#include "server/ollama_request.h"
#include "server/openai_request.h"
#include "server/response_ids.h"
#include "server/route_context.h"

namespace tokenmill::server {

namespace {

constexpr const char* kOllamaApiVersion = "0.1.0";

int64_t nanoseconds(std::chrono::steady_clock::duration d) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(d).count();
}

class OllamaSink : public EventSink {
 public:
  OllamaSink(const OllamaRequest& request, const ServedModel& model)
      : chat_(request.chat),
        stream_(request.stream),
        model_name_(model.name()),
        context_(request.request.prompt),
        tools_(request.tools),
        tool_syntax_(request.tool_syntax) {}

  void on_start(Responder& out) override {
    if (stream_) out.begin_stream(200, "application/x-ndjson");
  }

  void on_events(std::vector<engine::StreamEvent>& events, Responder& out) override {
    std::string batch;
    for (const engine::StreamEvent& event : events) {
      if (event.choice != 0) continue;
      context_.insert(context_.end(), event.token_ids.begin(), event.token_ids.end());
      if (event.finish) {
        done_reason_ = engine::finish_reason_name(*event.finish);
        if (*event.finish == engine::FinishReason::kError) error_ = event.error.empty() ? "generation failed" : event.error;
      }
      if (!stream_ || tools_) {  // with tools, the answer is read whole for its calls
        text_ += event.text;
      } else if (!event.text.empty()) {
        Json line = envelope();
        put_text(line, event.text);
        line["done"] = false;
        batch += dump_json(line) + "\n";
      }
    }
    if (!batch.empty()) out.write_chunk(std::move(batch));
  }

  void on_complete(const CallStats& stats, Responder& out) override {
    if (!error_.empty()) {
      if (stream_) {
        out.write_chunk(dump_json(Json{{"error", error_}}) + "\n");
        out.end_stream();
      } else {
        out.send(500, "application/json", dump_json(Json{{"error", error_}}));
      }
      return;
    }
    Json last = envelope();
    if (tools_) {
      const ParsedOutput parsed = parse_tool_calls(text_, tool_syntax_, *tools_, /*forced=*/false);
      last["message"] = {{"role", "assistant"}, {"content", parsed.content}};
      if (!parsed.calls.empty()) {
        Json calls = Json::array();
        for (const ParsedToolCall& call : parsed.calls) {
          calls.push_back({{"function", {{"name", call.name}, {"arguments", Json::parse(call.arguments)}}}});
        }
        last["message"]["tool_calls"] = std::move(calls);
      }
      if (stream_) {  // Ollama sends the message, then the closing object
        Json message = last;
        message["done"] = false;
        out.write_chunk(dump_json(message) + "\n");
        put_text(last, "");
      }
    } else {
      put_text(last, stream_ ? "" : text_);
    }
    last["done"] = true;
    last["done_reason"] = done_reason_;
    if (!chat_) last["context"] = context_;
    last["total_duration"] = nanoseconds(stats.finished - stats.submitted);
    last["load_duration"] = 0;  // the model is loaded when the server starts
    last["prompt_eval_count"] = stats.prompt_tokens;
    last["prompt_eval_duration"] = nanoseconds(stats.first_token - stats.submitted);
    last["eval_count"] = stats.completion_tokens;
    last["eval_duration"] = nanoseconds(stats.finished - stats.first_token);
    if (stream_) {
      out.write_chunk(dump_json(last) + "\n");
      out.end_stream();
    } else {
      out.send(200, "application/json", dump_json(last));
    }
  }

 private:
  Json envelope() const { return {{"model", model_name_}, {"created_at", rfc3339(std::chrono::system_clock::now())}}; }

  void put_text(Json& line, const std::string& text) const {
    if (chat_) {
      line["message"] = {{"role", "assistant"}, {"content", text}};
    } else {
      line["response"] = text;
    }
  }

  const bool chat_;
  const bool stream_;
  const std::string model_name_;
  std::vector<int32_t> context_;  // prompt and generated tokens, for generate's "context"
  std::string text_;
  std::string done_reason_ = "stop";
  std::string error_;
  const std::optional<ToolRequest> tools_;
  const ToolSyntax tool_syntax_;
};

Json details_json(const ServedModel& model) {
  return {{"parent_model", ""},
          {"format", "gguf"},
          {"family", model.architecture()},
          {"families", Json::array({model.architecture()})},
          {"parameter_size", model.parameter_size()},
          {"quantization_level", model.quantization_level()}};
}

Json model_entry(const ServedModel& model) {
  return {{"name", model.name()},
          {"model", model.name()},
          {"modified_at", rfc3339(std::chrono::system_clock::from_time_t(model.modified_unix()))},
          {"size", model.file_size()},
          {"details", details_json(model)}};
}

// A GGUF metadata value as JSON; arrays (the vocabulary, merges) are left out as null,
// as Ollama does unless asked to be verbose.
Json metadata_json(const gguf::Value& value) {
  if (const std::string* s = value.as_string()) return *s;
  if (value.as_array()) return nullptr;
  if (value.type() == gguf::ValueType::kBool) return value.as_bool().value_or(false);
  if (value.type() == gguf::ValueType::kFloat32 || value.type() == gguf::ValueType::kFloat64) {
    return value.as_double().value_or(0);
  }
  if (auto i = value.as_int()) return *i;
  if (auto u = value.as_uint()) return *u;
  return nullptr;
}

// Parsing and tokenizing run on the preparation threads; the engine call starts on the
// connection's strand.
void handle_generate(bool chat, const RouteContext& context, const HttpRequest& request,
                     const std::shared_ptr<Responder>& out) {
  prepare_then(context, request.path, out, [chat, &context, out, body = request.body]() -> std::function<void()> {
    const Json json = parse_json_object(body);
    auto parsed = std::make_shared<OllamaRequest>(parse_ollama_request(chat, json, context.model));
    if (parsed->load_only) {
      Json done = {{"model", context.model.name()}, {"created_at", rfc3339(std::chrono::system_clock::now())}};
      if (chat) {
        done["message"] = {{"role", "assistant"}, {"content", ""}};
      } else {
        done["response"] = "";
      }
      done["done"] = true;
      done["done_reason"] = "load";
      return [out, answer = dump_json(done)] { out->send(200, "application/json", answer); };
    }
    parsed->request.id = new_response_id(chat ? "ollama-chat-" : "ollama-generate-");
    return [&context, out, parsed] {
      if (!out->connected()) return;
      auto sink = std::make_unique<OllamaSink>(*parsed, context.model);
      start_engine_call(context.model.engine(), std::move(parsed->request), out, std::move(sink), context.calls);
    };
  });
}

}  // namespace

void add_ollama_routes(Router& router, const RouteContext& context) {
  router.add("POST", "/api/chat", [&context](const HttpRequest& request, std::shared_ptr<Responder> out) {
    handle_generate(/*chat=*/true, context, request, out);
  });
  router.add("POST", "/api/generate", [&context](const HttpRequest& request, std::shared_ptr<Responder> out) {
    handle_generate(/*chat=*/false, context, request, out);
  });
  router.add("GET", "/api/tags", [&context](const HttpRequest&, std::shared_ptr<Responder> out) {
    out->send(200, "application/json", dump_json(Json{{"models", Json::array({model_entry(context.model)})}}));
  });
  router.add("GET", "/api/ps", [&context](const HttpRequest&, std::shared_ptr<Responder> out) {
    Json entry = model_entry(context.model);
    entry["expires_at"] = "2999-12-31T23:59:59.000000Z";  // loaded for the server's lifetime
    entry["size_vram"] = 0;
    entry["context_length"] = context.model.max_context();
    out->send(200, "application/json", dump_json(Json{{"models", Json::array({entry})}}));
  });
  router.add("POST", "/api/show", [&context](const HttpRequest& request, std::shared_ptr<Responder> out) {
    const Json body = parse_json_object(request.body);
    Fields f(body);
    auto name = f.string("model");
    if (!name) name = f.string("name");
    if (!name) throw bad_request("'model' is required", "model");
    check_model_name(*name, context.model);
    const ServedModel& model = context.model;
    Json info = Json::object();
    for (const gguf::KeyValue& kv : model.model().file().metadata()) info[kv.key] = metadata_json(kv.value);
    info["general.parameter_count"] = model.parameter_count();
    Json show = {{"license", model.model().file().get_string_or("general.license", "")},
                 {"modelfile", "# served by tokenmill\nFROM " + model.path() + "\n"},
                 {"parameters", ""},
                 {"template", model.chat_template_source()},
                 {"details", details_json(model)},
                 {"model_info", std::move(info)},
                 {"capabilities", Json::array({"completion"})},
                 {"modified_at", rfc3339(std::chrono::system_clock::from_time_t(model.modified_unix()))}};
    out->send(200, "application/json", dump_json(show));
  });
  router.add("GET", "/api/version", [](const HttpRequest&, std::shared_ptr<Responder> out) {
    out->send(200, "application/json", dump_json(Json{{"version", kOllamaApiVersion}}));
  });
  router.add("GET", "/", [](const HttpRequest&, std::shared_ptr<Responder> out) {
    out->send(200, "text/plain; charset=utf-8", "tokenmill is running");
  });
}

}  // namespace tokenmill::server
