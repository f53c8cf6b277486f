// Ollama's API: POST /api/chat, POST /api/generate, GET /api/tags, POST /api/show,
// GET /api/ps, GET /api/version, and GET / ("... is running").
//
// Streams are newline-delimited JSON (one object per line, "done": false), ending with a
// "done": true object that carries done_reason and the timings in nanoseconds. Streaming
// is the default; "stream": false answers one object. Sampling defaults are Ollama's
// (temperature 0.8, top_k 40, top_p 0.9, repeat_penalty 1.1 over the last 64 tokens).
#include <chrono>
#include <climits>

#include "engine/json_schema.h"
#include "server/json_fields.h"
#include "server/openai_request.h"
#include "server/response_ids.h"
#include "server/route_context.h"

namespace tokenmill::server {

namespace {

constexpr const char* kOllamaApiVersion = "0.1.0";

struct OllamaRequest {
  engine::Request request;
  bool stream = true;
  bool chat = false;
  bool load_only = false;  // an empty generate prompt: Ollama answers done_reason "load"
};

int64_t nanoseconds(std::chrono::steady_clock::duration d) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(d).count();
}

// Ollama's "options": the Modelfile parameters a request may override.
void read_options(const Json& body, const ServedModel& model, OllamaRequest& out, int64_t& num_predict,
                  int32_t& max_context) {
  engine::SamplingParams& s = out.request.sampling;
  s.temperature = 0.8f;
  s.top_k = 40;
  s.top_p = 0.9f;
  s.repetition_penalty = 1.1f;
  s.penalty_last_n = 64;
  const Json* options = Fields(body).object("options");
  if (!options) return;
  Fields f(*options, "options");
  if (auto v = f.integer("num_ctx", 1, INT32_MAX)) max_context = std::min<int32_t>(max_context, static_cast<int32_t>(*v));
  if (auto v = f.number("temperature", 0, 100)) s.temperature = static_cast<float>(*v);
  if (auto v = f.integer("top_k", 0, INT32_MAX)) s.top_k = static_cast<int32_t>(*v);
  if (auto v = f.number("top_p", 0, 1)) s.top_p = static_cast<float>(*v);
  if (auto v = f.number("min_p", 0, 1)) s.min_p = static_cast<float>(*v);
  if (auto v = f.number("repeat_penalty", 0, 100)) s.repetition_penalty = static_cast<float>(*v);
  if (auto v = f.integer("repeat_last_n", -1, INT32_MAX)) s.penalty_last_n = static_cast<int32_t>(*v);
  if (auto v = f.number("presence_penalty", -2, 2)) s.presence_penalty = static_cast<float>(*v);
  if (auto v = f.number("frequency_penalty", -2, 2)) s.frequency_penalty = static_cast<float>(*v);
  if (auto v = f.integer("seed", INT64_MIN, INT64_MAX)) s.seed = static_cast<uint64_t>(*v);
  if (auto v = f.integer("num_predict", -2, INT32_MAX)) num_predict = *v;
  for (std::string& stop : f.strings("stop", kMaxStopStrings)) {
    if (!stop.empty()) out.request.stop.push_back(std::move(stop));
  }
  (void)model;
}

// Ollama's format: "json" asks for one JSON object (JSON mode), a JSON schema for a value
// valid against it (engine/json_schema.h's subset); "" for neither.
void read_format(const Fields& f, engine::Request& request) {
  const Json* format = f.raw("format");
  if (format == nullptr || format->is_null()) return;
  if (format->is_string() && format->get<std::string>().empty()) return;
  if (format->is_string() && format->get<std::string>() == "json") {
    request.json_object = true;
    return;
  }
  if (format->is_object()) {
    auto compiled = engine::JsonSchema::compile(*format);
    if (!compiled.ok()) throw bad_request("Unsupported 'format' schema: " + compiled.status().message(), "format");
    request.json_schema = *compiled;
    return;
  }
  throw bad_request("'format' must be \"json\" or a JSON schema object, found " + dump_json(*format), "format");
}

void reject_unsupported(const Fields& f) {
  if (const Json* images = f.array("images"); images && !images->empty()) {
    throw bad_request("this model reads text only; 'images' are not supported", "images");
  }
  if (const Json* tools = f.array("tools"); tools && !tools->empty()) {
    throw bad_request("'tools' are not supported", "tools");
  }
  if (auto t = f.string("template"); t && !t->empty()) throw bad_request("a per-request 'template' is not supported", "template");
  if (auto s = f.string("suffix"); s && !s->empty()) throw bad_request("'suffix' is not supported", "suffix");
}

OllamaRequest parse_ollama_request(bool chat, const Json& body, const ServedModel& model) {
  Fields f(body);
  OllamaRequest out;
  out.chat = chat;
  auto name = f.string("model");
  if (!name) name = f.string("name");  // older clients
  if (!name) throw bad_request("'model' is required", "model");
  check_model_name(*name, model);
  reject_unsupported(f);
  read_format(f, out.request);
  out.stream = f.boolean("stream").value_or(true);

  int64_t num_predict = -1;
  int32_t max_context = model.max_context();
  read_options(body, model, out, num_predict, max_context);
  if (Status s = out.request.sampling.validate(); !s.ok()) throw bad_request(s.message(), "options");

  if (chat) {
    const Json* messages = f.array("messages");
    if (!messages || messages->empty()) {
      out.load_only = true;
      return out;
    }
    std::vector<tokenizer::ChatMessage> chat_messages;
    for (size_t i = 0; i < messages->size(); ++i) {
      const std::string where = "messages[" + std::to_string(i) + "]";
      if (!(*messages)[i].is_object()) throw bad_request("'" + where + "' must be an object", where);
      Fields m((*messages)[i], where);
      if (const Json* images = m.array("images"); images && !images->empty()) {
        throw bad_request("this model reads text only; 'images' are not supported", where + ".images");
      }
      chat_messages.push_back({m.string("role").value_or("user"), m.string("content").value_or("")});
    }
    auto prompt = model.chat_prompt(chat_messages);
    if (!prompt.ok()) throw bad_request("Cannot apply the chat template: " + prompt.status().message(), "messages");
    out.request.prompt = std::move(prompt).value();
  } else {
    const std::string prompt = f.string("prompt").value_or("");
    if (prompt.empty()) {
      out.load_only = true;
      return out;
    }
    if (f.boolean("raw").value_or(false)) {
      out.request.prompt = model.text_prompt(prompt);
    } else {
      std::vector<tokenizer::ChatMessage> messages;
      if (auto system = f.string("system"); system && !system->empty()) messages.push_back({"system", *system});
      messages.push_back({"user", prompt});
      auto tokens = model.chat_prompt(messages);
      if (!tokens.ok()) throw bad_request("Cannot apply the chat template: " + tokens.status().message(), "prompt");
      out.request.prompt = std::move(tokens).value();
    }
    // "context" from an earlier answer continues that conversation.
    if (const Json* context = f.array("context"); context && !context->empty()) {
      std::vector<int32_t> tokens;
      for (const Json& id : *context) {
        if (!id.is_number_integer() || id.get<int64_t>() < 0 || id.get<int64_t>() >= model.tokenizer().n_vocab()) {
          throw bad_request("'context' must hold token ids from an earlier response", "context");
        }
        tokens.push_back(id.get<int32_t>());
      }
      auto& continuation = out.request.prompt;
      if (!continuation.empty() && continuation.front() == model.tokenizer().bos_id()) continuation.erase(continuation.begin());
      tokens.insert(tokens.end(), continuation.begin(), continuation.end());
      continuation = std::move(tokens);
    }
  }
  // num_predict: -1 is "until done", -2 "fill the context"; both are bounded by the context.
  out.request.max_tokens = resolve_max_tokens(num_predict < 0 ? -1 : num_predict, out.request.prompt.size(),
                                              max_context, chat ? "messages" : "prompt", "options.num_predict");
  return out;
}

class OllamaSink : public EventSink {
 public:
  OllamaSink(const OllamaRequest& request, const ServedModel& model)
      : chat_(request.chat), stream_(request.stream), model_name_(model.name()), context_(request.request.prompt) {}

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
      if (!stream_) {
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
    put_text(last, stream_ ? "" : text_);
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
