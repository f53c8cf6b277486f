// Ollama's API: POST /api/chat, POST /api/generate, GET /api/tags, POST /api/show,
// GET /api/ps, POST /api/pull, DELETE /api/delete, POST /api/copy, GET /api/version,
// and GET / ("... is running").
//
// Streams are newline-delimited JSON (one object per line, "done": false), ending with a
// "done": true object that carries done_reason and the timings in nanoseconds. Streaming
// is the default; "stream": false answers one object. Sampling defaults are Ollama's
// (temperature 0.8, top_k 40, top_p 0.9, repeat_penalty 1.1 over the last 64 tokens).
#include <chrono>
#include <climits>
#include <filesystem>
#include <system_error>

#include "gguf/file_summary.h"
#include "server/chat_page.h"
#include "server/json_fields.h"
#include "server/ollama_request.h"
#include "server/openai_request.h"
#include "server/harmony_chat.h"
#include "server/reasoning.h"
#include "server/response_ids.h"
#include "server/route_context.h"
#include "store/pull.h"
#include "tokenizer/chat_template.h"

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
        tool_syntax_(request.tool_syntax),
        include_reasoning_(request.include_reasoning) {
    if (request.harmony) {
      splitter_ = std::make_unique<HarmonySplitter>(request.harmony_prefix);
    } else if (request.request.reasoning) {
      splitter_ = std::make_unique<ReasoningSplitter>(*request.request.reasoning);
    }
  }

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
      std::string text = event.text;
      std::string thinking;
      if (splitter_) {
        OutputSplitter::Parts parts = splitter_->feed(text);
        if (event.finish) {
          OutputSplitter::Parts rest = splitter_->finish();
          parts.reasoning += rest.reasoning;
          parts.content += rest.content;
        }
        text = std::move(parts.content);
        if (include_reasoning_) thinking = std::move(parts.reasoning);
      }
      if (!stream_ || tools_) {  // with tools, the answer is read whole for its calls
        text_ += text;
        thinking_ += thinking;
      }
      if (stream_ && (!thinking.empty() || (!tools_ && !text.empty()))) {
        Json line = envelope();
        put_text(line, tools_ ? "" : text, thinking);
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
      if (!stream_ && !thinking_.empty()) last["message"]["thinking"] = thinking_;
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
      put_text(last, stream_ ? "" : text_, stream_ ? "" : thinking_);
    }
    last["done"] = true;
    last["done_reason"] = done_reason_;
    if (!chat_) last["context"] = context_;
    last["total_duration"] = nanoseconds(stats.finished - stats.submitted);
    last["load_duration"] = 0;
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

  // The answer's text, and its reasoning where there is some ("thinking").
  void put_text(Json& line, const std::string& text, const std::string& thinking = "") const {
    if (chat_) {
      line["message"] = {{"role", "assistant"}, {"content", text}};
      if (!thinking.empty()) line["message"]["thinking"] = thinking;
    } else {
      line["response"] = text;
      if (!thinking.empty()) line["thinking"] = thinking;
    }
  }

  const bool chat_;
  const bool stream_;
  const std::string model_name_;
  std::vector<int32_t> context_;  // prompt and generated tokens, for generate's "context"
  std::string text_;      // not streamed, or with tools: the answer so far
  std::string thinking_;  // ... and its reasoning
  std::unique_ptr<OutputSplitter> splitter_;  // a model that writes a reasoning span, or harmony
  std::string done_reason_ = "stop";
  std::string error_;
  const std::optional<ToolRequest> tools_;
  const ToolSyntax tool_syntax_;
  const bool include_reasoning_;
};

Json details_json(const std::string& architecture, const std::string& parameter_size,
                  const std::string& quantization) {
  return {{"parent_model", ""},
          {"format", "gguf"},
          {"family", architecture},
          {"families", Json::array({architecture})},
          {"parameter_size", parameter_size},
          {"quantization_level", quantization}};
}

Json details_json(const ServedModel& model) {
  return details_json(model.architecture(), model.parameter_size(), model.quantization_level());
}

Json model_entry(const ServedModel& model) {
  return {{"name", model.name()},
          {"model", model.name()},
          {"modified_at", rfc3339(std::chrono::system_clock::from_time_t(model.modified_unix()))},
          {"size", model.file_size()},
          {"digest", ""},
          {"details", details_json(model)}};
}

Json store_entry_json(const RouteContext& context, const store::StoreEntry& entry) {
  Json out = {{"name", entry.name.full()},
              {"model", entry.name.full()},
              {"modified_at", rfc3339(std::chrono::system_clock::from_time_t(entry.modified_unix))},
              {"size", entry.size},
              {"digest", entry.digest}};
  auto summary = context.models.summary(entry);
  out["details"] = summary.ok() ? details_json(summary->architecture, gguf::parameter_size_text(summary->parameter_count),
                                               summary->quantization)
                                : details_json("", "", "unknown");
  return out;
}

// The store entry a name means, or NotFound as an ApiError.
store::StoreEntry find_in_store(const RouteContext& context, const std::string& name) {
  store::ModelStore* store = context.models.store();
  if (store == nullptr) throw bad_request("This server has no model store (start it with --models-dir)");
  auto parsed = store::parse_model_name(name);
  if (!parsed.ok()) throw bad_request(parsed.status().message(), "model");
  std::vector<std::string> corrupt;
  auto entry = store->find(*parsed);
  if (!entry.ok()) {
    if (entry.status().code() == ErrorCode::kNotFound) {
      ApiError error = model_not_found(name);
      if (entry.status().message().find("cannot be loaded") != std::string::npos) error.message = entry.status().message();
      throw error;
    }
    throw server_error(entry.status().message());
  }
  return *entry;
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
// connection's strand. An empty prompt loads the model (done_reason "load"), or with
// keep_alive 0 unloads it ("unload"), as Ollama does.
void handle_generate(bool chat, const RouteContext& context, const HttpRequest& request,
                     const std::shared_ptr<Responder>& out) {
  prepare_then(context, request.path, out, [chat, &context, out, body = request.body]() -> std::function<void()> {
    const Json json = parse_json_object(body);
    const std::string name = ollama_model_name(json);
    const std::optional<std::chrono::milliseconds> keep_alive = ollama_keep_alive(json);
    const bool unload = keep_alive && keep_alive->count() == 0 && is_load_only(chat, json);
    if (unload && !context.models.knows(name)) throw model_not_found(name);
    ModelLease model = unload ? nullptr : acquire_model(context, name, keep_alive);
    auto parsed = unload ? nullptr : std::make_shared<OllamaRequest>(parse_ollama_request(chat, json, *model));
    if (unload || parsed->load_only) {
      std::string shown = name;
      if (unload) {
        context.models.unload(name);
      } else {
        shown = model->name();
      }
      model.reset();  // the lease ends now: keep_alive counts from here
      Json done = {{"model", shown}, {"created_at", rfc3339(std::chrono::system_clock::now())}};
      if (chat) {
        done["message"] = {{"role", "assistant"}, {"content", ""}};
      } else {
        done["response"] = "";
      }
      done["done"] = true;
      done["done_reason"] = unload ? "unload" : "load";
      return [out, answer = dump_json(done)] { out->send(200, "application/json", answer); };
    }
    parsed->request.id = new_response_id(chat ? "ollama-chat-" : "ollama-generate-");
    return [&context, out, parsed, model] {
      if (!out->connected()) return;
      auto sink = std::make_unique<OllamaSink>(*parsed, *model);
      start_engine_call(model, std::move(parsed->request), out, std::move(sink), context.calls);
    };
  });
}

// /api/show from the file alone: a store model need not be loaded to be described.
Json show_json(const gguf::File& file, const std::string& path, const std::string& chat_template,
               const Json& details) {
  Json info = Json::object();
  for (const gguf::KeyValue& kv : file.metadata()) info[kv.key] = metadata_json(kv.value);
  int64_t n_parameters = 0;
  for (const auto& tensor : file.tensors()) n_parameters += tensor.n_elements();
  info["general.parameter_count"] = n_parameters;
  Json capabilities = Json::array({"completion"});
  if (chat_template.find("tools") != std::string::npos) capabilities.push_back("tools");
  return {{"license", file.get_string_or("general.license", "")},
          {"modelfile", "# served by tokenmill\nFROM " + path + "\n"},
          {"parameters", ""},
          {"template", chat_template},
          {"details", details},
          {"model_info", std::move(info)},
          {"capabilities", std::move(capabilities)}};
}

// One progress line of /api/pull, as Ollama writes them.
Json pull_line(const store::PullProgress& p) {
  Json line = {{"status", p.status}};
  if (!p.digest.empty() || p.status.starts_with("downloading")) {
    line["digest"] = p.digest;
    if (p.total >= 0) line["total"] = p.total;
    line["completed"] = p.completed;
  }
  return line;
}

// POST /api/pull {"model": SOURCE or NAME, "name"?: NAME, "stream"?: bool}. A SOURCE is
// what `tokenmill pull` takes; a bare name of the store answers success at once.
void handle_pull(const RouteContext& context, const HttpRequest& request, const std::shared_ptr<Responder>& out) {
  store::ModelStore* store = context.models.store();
  if (store == nullptr) throw bad_request("This server has no model store (start it with --models-dir)");
  const Json json = parse_json_object(request.body);
  Fields f(json);
  const std::string source = ollama_model_name(json);
  const bool stream = f.boolean("stream").value_or(true);
  const std::optional<std::string> given_name = f.string("name").has_value() && f.string("model").has_value()
                                                    ? f.string("name") : std::nullopt;
  const std::string expected_sha256 = f.string("sha256").value_or("");
  if (stream) out->begin_stream(200, "application/x-ndjson");
  auto cancel = context.jobs->start([&context, store, out, source, stream, given_name, expected_sha256](
                                        const std::atomic<bool>& cancelled) {
    auto send_line = [out](const Json& line) {
      out->post([out, text = dump_json(line) + "\n"] { out->write_chunk(text); });
    };
    auto finish = [&](const Status& status) {
      if (stream) {
        if (!status.ok()) send_line(Json{{"error", status.message()}});
        out->post([out] { out->end_stream(); });
        return;
      }
      const int code = status.ok() ? 200 : status.code() == ErrorCode::kNotFound ? 404
                                         : status.code() == ErrorCode::kInvalidArgument ? 400 : 500;
      const Json body = status.ok() ? Json{{"status", "success"}} : Json{{"error", status.message()}};
      out->post([out, code, text = dump_json(body)] { out->send(code, "application/json", text); });
    };
    // A name already in the store: nothing to fetch.
    if (!source.starts_with("hf:") && source.find("://") == std::string::npos) {
      auto name = store::parse_model_name(source);
      if (!name.ok()) return finish(name.status());
      auto entry = store->find(*name);
      if (entry.ok()) {
        if (stream) send_line(Json{{"status", "success"}});
        return finish({});
      }
      return finish(not_found("'" + source + "' is not in the store; pull an https:// URL, hf:ORG/REPO/FILE.gguf "
                              "or hf:ORG/REPO:QUANT"));
    }
    auto resolved = store::resolve_pull_source(source);
    if (!resolved.ok()) return finish(resolved.status());
    store::ModelName name = resolved->default_name;
    if (given_name) {
      auto parsed = store::parse_model_name(*given_name);
      if (!parsed.ok()) return finish(parsed.status());
      name = *parsed;
    }
    store::PullOptions options;
    options.expected_sha256 = expected_sha256;
    options.cancel = &cancelled;
    auto last_sent = std::chrono::steady_clock::now() - std::chrono::seconds(1);
    options.on_progress = [&](const store::PullProgress& p) {
      if (!stream) return;
      // Byte counts at most every 100 ms; every change of status at once.
      const auto now = std::chrono::steady_clock::now();
      const bool bytes_only = p.status.starts_with("downloading") && p.completed > 0 && p.completed != p.total;
      if (bytes_only && now - last_sent < std::chrono::milliseconds(100)) return;
      last_sent = now;
      send_line(pull_line(p));
    };
    auto entry = store::pull_model(*store, *resolved, name, options);
    finish(entry.ok() ? Status() : entry.status());
  });
  out->watch_disconnect([cancel] { cancel->store(true); });
}

// /api/tags' entry for the embedding model.
Json embedding_entry(const ServedEmbeddings& model) {
  std::error_code size_error, time_error;
  const auto size = std::filesystem::file_size(model.path, size_error);
  const auto written = std::filesystem::last_write_time(model.path, time_error);
  const auto modified = time_error ? std::chrono::system_clock::now()
                                   : std::chrono::time_point_cast<std::chrono::system_clock::duration>(
                                         std::chrono::file_clock::to_sys(written));
  return Json{{"name", model.name},
              {"model", model.name},
              {"modified_at", rfc3339(modified)},
              {"size", size_error ? 0 : static_cast<int64_t>(size)},
              {"digest", ""},
              {"details", {{"format", "gguf"}, {"family", "bert"}, {"families", Json::array({"bert"})}}}};
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
    Json models = Json::array();
    const ModelLease pinned = context.models.pinned();
    if (pinned) models.push_back(model_entry(*pinned));
    if (store::ModelStore* store = context.models.store()) {
      for (const store::StoreEntry& entry : store->list()) {
        if (entry.problem.empty() && !(pinned && pinned->name() == entry.name.full())) {
          models.push_back(store_entry_json(context, entry));
        }
      }
    }
    if (context.embeddings != nullptr) models.push_back(embedding_entry(*context.embeddings));
    out->send(200, "application/json", dump_json(Json{{"models", std::move(models)}}));
  });
  router.add("GET", "/api/ps", [&context](const HttpRequest&, std::shared_ptr<Responder> out) {
    Json models = Json::array();
    for (const LoadedInfo& info : context.models.loaded()) {
      Json entry = model_entry(*info.model);
      if (const store::ModelStore* store = context.models.store()) {
        if (auto stored = store->find(info.model->name()); stored.ok()) entry["digest"] = stored->digest;
      }
      entry["size"] = info.memory_bytes;
      entry["expires_at"] = info.expires ? rfc3339(*info.expires) : "2999-12-31T23:59:59.000000Z";
      entry["size_vram"] = 0;
      entry["context_length"] = info.model->max_context();
      if (auto disk = info.model->engine().kv_disk_state()) {
        // Not an Ollama field: where the prefix cache's disk tier keeps this model's blocks.
        entry["kv_disk"] = {{"folder", disk->folder},
                            {"blocks", disk->counters.n_blocks},
                            {"usage_bytes", disk->counters.usage_bytes},
                            {"max_bytes", disk->counters.max_bytes}};
      }
      models.push_back(std::move(entry));
    }
    for (const LoadedEmbeddingsInfo& info : context.models.loaded_embeddings()) {
      Json entry = embedding_entry(*info.model);
      if (auto stored = context.models.store()->find(info.model->name); stored.ok()) entry["digest"] = stored->digest;
      entry["size"] = info.memory_bytes;
      entry["expires_at"] = info.expires ? rfc3339(*info.expires) : "2999-12-31T23:59:59.000000Z";
      entry["size_vram"] = 0;
      entry["context_length"] = info.model->embedder.config().max_positions;
      models.push_back(std::move(entry));
    }
    out->send(200, "application/json", dump_json(Json{{"models", std::move(models)}}));
  });
  router.add("POST", "/api/show", [&context](const HttpRequest& request, std::shared_ptr<Responder> out) {
    const std::string name = ollama_model_name(parse_json_object(request.body));
    const ModelLease pinned = context.models.pinned();
    if (pinned && pinned->answers_to(name)) {
      Json show = show_json(pinned->model().file(), pinned->path(), std::string(pinned->chat_template_source()),
                            details_json(*pinned));
      show["modified_at"] = rfc3339(std::chrono::system_clock::from_time_t(pinned->modified_unix()));
      out->send(200, "application/json", dump_json(show));
      return;
    }
    const store::StoreEntry entry = find_in_store(context, name);
    auto file = gguf::File::open(entry.path);
    if (!file.ok()) throw server_error("cannot read " + entry.path + ": " + file.status().message());
    auto chat_template = tokenizer::chat_template_for_model(*file);
    const Json details = store_entry_json(context, entry)["details"];
    Json show = show_json(*file, entry.path, chat_template.ok() ? chat_template->source() : "", details);
    show["modified_at"] = rfc3339(std::chrono::system_clock::from_time_t(entry.modified_unix));
    out->send(200, "application/json", dump_json(show));
  });
  router.add("POST", "/api/pull", [&context](const HttpRequest& request, std::shared_ptr<Responder> out) {
    handle_pull(context, request, out);
  });
  router.add("DELETE", "/api/delete", [&context](const HttpRequest& request, std::shared_ptr<Responder> out) {
    const std::string name = ollama_model_name(parse_json_object(request.body));
    const store::StoreEntry entry = find_in_store(context, name);
    context.models.unload(entry.name.full());
    if (Status s = context.models.store()->remove(entry.name); !s.ok()) throw server_error(s.message());
    out->send(200, "application/json", "{}");
  });
  router.add("POST", "/api/copy", [&context](const HttpRequest& request, std::shared_ptr<Responder> out) {
    const Json body = parse_json_object(request.body);
    Fields f(body);
    const auto source = f.string("source");
    const auto destination = f.string("destination");
    if (!source || !destination) throw bad_request("'source' and 'destination' are required");
    const store::StoreEntry entry = find_in_store(context, *source);
    auto to = store::parse_model_name(*destination);
    if (!to.ok()) throw bad_request(to.status().message(), "destination");
    auto copied = context.models.store()->copy(entry.name, *to);
    if (!copied.ok()) throw server_error(copied.status().message());
    out->send(200, "application/json", "{}");
  });
  router.add("GET", "/api/version", [](const HttpRequest&, std::shared_ptr<Responder> out) {
    out->send(200, "application/json", dump_json(Json{{"version", kOllamaApiVersion}}));
  });
  // Browsers get the chat page; Ollama's clients, which probe / for its heartbeat, the text.
  router.add("GET", "/", [&context](const HttpRequest& request, std::shared_ptr<Responder> out) {
    if (context.webui && request.header("accept").find("text/html") != std::string::npos) {
      out->send(200, "text/html; charset=utf-8", std::string(chat_page_html()),
                {{"Content-Security-Policy",
                  "default-src 'self'; script-src 'self' 'unsafe-inline'; style-src 'unsafe-inline'"},
                 {"Cache-Control", "no-cache"}});
      return;
    }
    out->send(200, "text/plain; charset=utf-8", "tokenmill is running");
  });
}

}  // namespace tokenmill::server
