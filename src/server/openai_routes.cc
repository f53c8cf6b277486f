// OpenAI's API: POST /v1/chat/completions, POST /v1/completions, GET /v1/models.
//
// Streams are Server-Sent Events, one "data: {chunk}\n\n" per event and "data: [DONE]"
// last. A chat choice's first chunk carries the assistant role, its last the
// finish_reason with an empty delta; with stream_options.include_usage every chunk has
// "usage": null and one more chunk with no choices carries the usage.
#include <chrono>
#include <map>
#include <optional>
#include <random>

#include "server/openai_request.h"
#include "server/harmony_chat.h"
#include "server/reasoning.h"
#include "server/schema_notes.h"
#include "server/response_cache.h"
#include "server/stored_completions.h"
#include "server/response_ids.h"
#include "server/route_context.h"

namespace tokenmill::server {

namespace {

std::string sse(const Json& chunk) { return "data: " + dump_json(chunk) + "\n\n"; }

// JSON cannot hold -inf; OpenAI writes -9999 for "impossible".
double finite_logprob(float logprob) { return logprob < -9999.0f ? -9999.0 : static_cast<double>(logprob); }

Json utf8_bytes(const std::string& piece) {
  Json bytes = Json::array();
  for (unsigned char c : piece) bytes.push_back(static_cast<int>(c));
  return bytes;
}

Json usage_json(const CallStats& stats) {
  return {{"prompt_tokens", stats.prompt_tokens},
          {"completion_tokens", stats.completion_tokens},
          {"total_tokens", stats.prompt_tokens + stats.completion_tokens},
          {"prompt_tokens_details", {{"cached_tokens", stats.cached_tokens}}},
          {"completion_tokens_details",
           {{"accepted_prediction_tokens", stats.accepted_prediction_tokens},
            {"rejected_prediction_tokens", stats.rejected_prediction_tokens}}}};
}

// Turns engine events into chat.completion(.chunk) or text_completion objects.
class OpenAiSink : public EventSink {
 public:
  // id: the response's, which the engine requests' ids start with.
  OpenAiSink(bool chat, const OpenAiRequest& request, const ServedModel& model, std::string id)
      : chat_(chat),
        stream_(request.stream),
        include_usage_(request.include_usage),
        logprobs_(request.requests.front().sampling.logprobs),
        tokens_as_ids_(request.tokens_as_ids),
        tokenizer_(model.tokenizer()),
        id_(std::move(id)),
        model_name_(model.name()),
        created_(unix_now()),
        tools_(request.tools),
        tool_syntax_(request.tool_syntax),
        unenforced_(unenforced_json(request.requests.front())),
        schema_to_check_(request.requests.front().json_schema && !request.requests.front().json_schema->unenforced().empty()
                             ? request.requests.front().json_schema
                             : nullptr),
        reasoning_(request.requests.front().reasoning),
        harmony_(request.harmony),
        include_reasoning_(request.include_reasoning) {
    // Prompt i's choices are i * n .. i * n + n - 1, each with that prompt's echo.
    for (size_t i = 0; i < request.requests.size(); ++i) {
      const engine::Request& r = request.requests[i];
      prompts_.push_back({request.echo ? request.prompt_texts[i] : "",
                          r.prompt_logprobs ? r.prompt : std::vector<int32_t>()});
      for (int32_t j = 0; j < r.n; ++j) {
        Choice& c = choices_.emplace_back();
        c.prompt = static_cast<int32_t>(i);
        c.text = prompts_[i].echo_text;
        c.next_offset = static_cast<int64_t>(c.text.size());
        if (chat && harmony_) {
          c.splitter = std::make_unique<HarmonySplitter>(request.harmony_prefix);
        } else if (chat && reasoning_) {
          c.splitter = std::make_unique<ReasoningSplitter>(*reasoning_);
        }
      }
    }
  }

  void on_start(Responder& out) override {
    if (!stream_) return;
    out.begin_stream(200, "text/event-stream");
    // Echoed prompts go first, as their own chunk per choice (with prompt logprobs, when
    // they come: on_events).
    std::string batch;
    for (size_t i = 0; i < choices_.size(); ++i) {
      const PromptEcho& p = prompts_[choices_[i].prompt];
      if (!p.echo_text.empty() && p.tokens.empty()) batch += sse(chunk(static_cast<int32_t>(i), p.echo_text, nullptr, nullptr));
    }
    if (!batch.empty()) out.write_chunk(std::move(batch));
  }

  void on_events(std::vector<engine::StreamEvent>& events, Responder& out) override {
    std::string batch;
    for (engine::StreamEvent& event : events) {
      if (event.choice < 0 || event.choice >= static_cast<int32_t>(choices_.size())) continue;
      Choice& c = choices_[event.choice];
      const PromptEcho& echo = prompts_[c.prompt];
      if (!echo.tokens.empty() && !c.prompt_logprobs_done) {
        // The echoed prompt with its tokens' logprobs, before the choice's first token.
        c.prompt_logprobs_done = true;
        Json prompt = prompt_logprobs_json(echo.tokens, event.prompt_logprobs);
        if (stream_) {
          batch += sse(chunk(event.choice, Json(echo.echo_text), std::move(prompt), nullptr));
        } else {
          c.logprobs = std::move(prompt);
        }
      }
      Json logprobs = logprobs_ && !event.logprobs.empty() ? logprobs_json(c, event) : Json();
      std::string text = std::move(event.text);
      std::string reasoning;
      if (c.splitter) take_reasoning(c, event.finish.has_value(), text, reasoning);
      if (schema_to_check_) c.output += text;
      if (stream_) {
        if (chat_ && !c.role_sent) {
          batch += sse(chunk(event.choice, Json{{"role", "assistant"}, {"content", ""}}, nullptr, nullptr));
          c.role_sent = true;
        }
        if (!reasoning.empty()) {  // the tokens' logprobs go with the reasoning when no content came
          Json carried;
          if (text.empty()) std::swap(carried, logprobs);
          batch += sse(chunk(event.choice, Json{{"reasoning_content", reasoning}}, std::move(carried), nullptr));
        }
        if (tools_) {  // text that may be (the start of) a tool call is held back
          c.text += text;
          text = release_content(c);
        }
        if (!text.empty() || !logprobs.is_null()) {
          Json delta = chat_ ? Json{{"content", text}} : Json(text);
          batch += sse(chunk(event.choice, std::move(delta), std::move(logprobs), nullptr));
        }
      } else {
        c.reasoning += reasoning;
        c.text += text;
        if (!logprobs.is_null()) append_logprobs(c, logprobs);
      }
      if (event.finish) {
        c.finish_reason = engine::finish_reason_name(*event.finish);
        if (*event.finish == engine::FinishReason::kError) {
          c.error = event.error.empty() ? "generation failed" : event.error;
          if (stream_) batch += sse(Json::parse(openai_error_body(server_error(c.error))));
        }
        if (stream_ && tools_ && c.error.empty()) batch += finish_tool_stream(event.choice, c);
        if (stream_) batch += sse(chunk(event.choice, chat_ ? Json::object() : Json(""), nullptr, c.finish_reason));
      }
    }
    if (!batch.empty()) out.write_chunk(std::move(batch));
  }

  void on_complete(const CallStats& stats, Responder& out) override {
    if (stream_) {
      std::string tail;
      if (include_usage_) {
        Json last = chunk_envelope();
        last["choices"] = Json::array();
        last["usage"] = usage_json(stats);
        tail += sse(last);
      }
      if (!unenforced_.empty()) {
        Json notes = chunk_envelope();
        notes["choices"] = Json::array();
        notes["tokenmill"] = schema_notes();
        tail += sse(notes);
      }
      tail += "data: [DONE]\n\n";
      out.write_chunk(std::move(tail));
      out.end_stream();
      return;
    }
    for (const Choice& c : choices_) {
      if (!c.error.empty()) {
        out.send(500, "application/json", openai_error_body(server_error(c.error)));
        return;
      }
    }
    Json body = {{"id", id_},
                 {"object", chat_ ? "chat.completion" : "text_completion"},
                 {"created", created_},
                 {"model", model_name_}};
    Json choices = Json::array();
    for (size_t i = 0; i < choices_.size(); ++i) {
      const Choice& c = choices_[i];
      std::string finish_reason = c.finish_reason;
      Json choice = {{"index", i}};
      if (chat_ && tools_) {
        const ParsedOutput parsed = parse_tool_calls(c.text, tool_syntax_, *tools_, tools_->forced());
        Json message = {{"role", "assistant"}, {"content", parsed.content}};
        if (!parsed.calls.empty()) {
          if (parsed.content.empty()) message["content"] = nullptr;
          message["tool_calls"] = tool_calls_json(parsed);
          if (c.finish_reason == "stop") finish_reason = "tool_calls";
        }
        add_reasoning(message, c);
        choice["message"] = std::move(message);
      } else if (chat_) {
        Json message = {{"role", "assistant"}, {"content", c.text}};
        add_reasoning(message, c);
        choice["message"] = std::move(message);
      } else {
        choice["text"] = c.text;
      }
      choice["logprobs"] = logprobs_ ? c.logprobs : Json();
      choice["finish_reason"] = finish_reason.empty() ? Json() : Json(finish_reason);
      choices.push_back(std::move(choice));
    }
    body["choices"] = std::move(choices);
    body["usage"] = usage_json(stats);
    if (!unenforced_.empty()) body["tokenmill"] = schema_notes();
    out.send(200, "application/json", dump_json(body));
  }

 private:
  // {"unenforced": [...], "checked": [{"index", "valid"[, "error"]}, ...]}: what the grammar
  // left out, and each finished choice checked against the whole schema.
  Json schema_notes() const {
    Json notes = {{"unenforced", unenforced_}};
    if (!schema_to_check_) return notes;
    Json checked = Json::array();
    for (size_t i = 0; i < choices_.size(); ++i) {
      if (choices_[i].finish_reason != "stop") continue;
      Json one = check_output(*schema_to_check_, choices_[i].output);
      one["index"] = i;
      checked.push_back(std::move(one));
    }
    notes["checked"] = std::move(checked);
    return notes;
  }

  // What a prompt's choices repeat: its text (echo) and tokens (prompt logprobs).
  struct PromptEcho {
    std::string echo_text;        // empty without echo
    std::vector<int32_t> tokens;  // with prompt logprobs (echo + logprobs) only
  };

  struct Choice {
    int32_t prompt = 0;  // index into prompts_
    std::string text;
    Json logprobs;          // chat: {"content": [...]}; completions: the legacy columns
    std::string finish_reason;
    std::string error;
    std::string output;  // the generated text, kept where it is checked against the schema
    bool role_sent = false;
    bool prompt_logprobs_done = false;
    std::unique_ptr<OutputSplitter> splitter;  // chat with a reasoning span, or harmony
    std::string reasoning;                      // not streamed: the reasoning so far
    size_t released = 0;  // streams with tools: the bytes of text sent as content
    bool in_call = false;  // ... and a call has begun: the rest is held for the parser
    int64_t next_offset = 0;  // completions: text_offset of the next token
  };

  // An event's text split into its reasoning and content (the end of the choice releases
  // what the splitter held back); reasoning is empty where the request drops it.
  void take_reasoning(Choice& c, bool last, std::string& text, std::string& reasoning) const {
    OutputSplitter::Parts parts = c.splitter->feed(text);
    if (last) {
      OutputSplitter::Parts rest = c.splitter->finish();
      parts.reasoning += rest.reasoning;
      parts.content += rest.content;
    }
    text = std::move(parts.content);
    reasoning = include_reasoning_ ? std::move(parts.reasoning) : std::string();
  }

  // message.reasoning_content where the model writes a span and the request keeps it
  // (null when there was none).
  void add_reasoning(Json& message, const Choice& c) const {
    if (!(reasoning_ || harmony_) || !include_reasoning_) return;
    message["reasoning_content"] = c.reasoning.empty() ? Json() : Json(c.reasoning);
  }

  // How logprobs name a token: its text, or "token_id:N" (OpenAiRequest::tokens_as_ids).
  std::string token_name(int32_t token) const {
    return tokens_as_ids_ ? "token_id:" + std::to_string(token) : tokenizer_.token_piece(token, false);
  }

  // A token's alternatives in the completions' legacy shape: piece -> logprob.
  Json legacy_top(const engine::TokenLogprobs& lp) const {
    Json top = Json::object();
    for (const engine::TokenLogprob& t : lp.top) {
      const std::string p = token_name(t.token);
      if (!top.contains(p)) top[p] = finite_logprob(t.logprob);  // pieces may repeat; keep the likeliest
    }
    return top;
  }

  // The legacy logprobs columns for the echoed prompt: its first token has none (null),
  // the others come from the engine; offsets count from the start of the echoed text.
  Json prompt_logprobs_json(const std::vector<int32_t>& prompt_tokens,
                            const std::vector<engine::TokenLogprobs>& scored) const {
    Json tokens = Json::array(), token_logprobs = Json::array(), top_logprobs = Json::array(),
         offsets = Json::array();
    int64_t offset = 0;
    for (size_t i = 0; i < prompt_tokens.size(); ++i) {
      tokens.push_back(token_name(prompt_tokens[i]));
      offsets.push_back(offset);
      offset += static_cast<int64_t>(tokenizer_.token_piece(prompt_tokens[i], false).size());
      if (i == 0 || i - 1 >= scored.size()) {
        token_logprobs.push_back(nullptr);
        top_logprobs.push_back(nullptr);
        continue;
      }
      const engine::TokenLogprobs& lp = scored[i - 1];
      token_logprobs.push_back(finite_logprob(lp.chosen.logprob));
      top_logprobs.push_back(legacy_top(lp));
    }
    return {{"tokens", std::move(tokens)},
            {"token_logprobs", std::move(token_logprobs)},
            {"top_logprobs", std::move(top_logprobs)},
            {"text_offset", std::move(offsets)}};
  }

  Json chunk_envelope() const {
    Json c = {{"id", id_},
              {"object", chat_ ? "chat.completion.chunk" : "text_completion"},
              {"created", created_},
              {"model", model_name_}};
    if (include_usage_) c["usage"] = nullptr;
    return c;
  }

  // delta: the chat delta object, or the completion's text.
  Json chunk(int32_t index, Json delta, Json logprobs, Json finish_reason) const {
    Json choice = {{"index", index}};
    choice[chat_ ? "delta" : "text"] = std::move(delta);
    choice["logprobs"] = std::move(logprobs);
    choice["finish_reason"] = std::move(finish_reason);
    Json c = chunk_envelope();
    c["choices"] = Json::array({std::move(choice)});
    return c;
  }

  // The logprobs of one event's tokens: chat's {"content": [...]} or the completions'
  // legacy {"tokens", "token_logprobs", "top_logprobs", "text_offset"}.
  Json logprobs_json(Choice& c, const engine::StreamEvent& event) {
    if (chat_) {
      Json content = Json::array();
      for (const engine::TokenLogprobs& lp : event.logprobs) {
        Json top = Json::array();
        for (const engine::TokenLogprob& t : lp.top) {
          top.push_back({{"token", token_name(t.token)},
                         {"logprob", finite_logprob(t.logprob)},
                         {"bytes", utf8_bytes(tokenizer_.token_piece(t.token, false))}});
        }
        content.push_back({{"token", token_name(lp.chosen.token)},
                           {"logprob", finite_logprob(lp.chosen.logprob)},
                           {"bytes", utf8_bytes(tokenizer_.token_piece(lp.chosen.token, false))},
                           {"top_logprobs", std::move(top)}});
      }
      return {{"content", std::move(content)}};
    }
    Json tokens = Json::array(), token_logprobs = Json::array(), top_logprobs = Json::array(),
         offsets = Json::array();
    for (const engine::TokenLogprobs& lp : event.logprobs) {
      tokens.push_back(token_name(lp.chosen.token));
      token_logprobs.push_back(finite_logprob(lp.chosen.logprob));
      top_logprobs.push_back(legacy_top(lp));
      offsets.push_back(c.next_offset);
      c.next_offset += static_cast<int64_t>(tokenizer_.token_piece(lp.chosen.token, false).size());
    }
    return {{"tokens", std::move(tokens)},
            {"token_logprobs", std::move(token_logprobs)},
            {"top_logprobs", std::move(top_logprobs)},
            {"text_offset", std::move(offsets)}};
  }

  // The text a model opens a tool call with, in this request's syntax.
  std::string_view call_opener() const {
    switch (tool_syntax_) {
      case ToolSyntax::kMistral: return "[TOOL_CALLS]";
      case ToolSyntax::kLlama3: return "<|python_tag|>";
      default: return "<tool_call>";
    }
  }

  // Streams with tools: the part of c.text not yet sent that is certainly content, i.e.
  // before any call opener (and, with a forced call or a bare Llama 3 call, nothing).
  std::string release_content(Choice& c) {
    if (c.in_call || tools_->forced()) return "";
    const std::string_view opener = call_opener();
    const std::string_view pending = std::string_view(c.text).substr(c.released);
    if (tool_syntax_ == ToolSyntax::kLlama3 && c.released == 0) {
      const size_t first = pending.find_first_not_of(" \t\r\n");
      if (first == std::string_view::npos) return "";
      if (pending[first] == '{') {  // a bare JSON call
        c.in_call = true;
        return "";
      }
    }
    size_t keep = pending.size();
    if (const size_t at = pending.find(opener); at != std::string_view::npos) {
      c.in_call = true;
      keep = at;
    } else {  // hold back a suffix that could be the start of the opener
      for (size_t n = std::min(opener.size() - 1, pending.size()); n > 0; --n) {
        if (opener.substr(0, n) == pending.substr(pending.size() - n)) {
          keep = pending.size() - n;
          break;
        }
      }
    }
    std::string out(pending.substr(0, keep));
    c.released += keep;
    return out;
  }

  Json tool_calls_json(const ParsedOutput& parsed) const {
    Json calls = Json::array();
    for (const ParsedToolCall& call : parsed.calls) {
      calls.push_back({{"id", new_response_id("call_")},
                       {"type", "function"},
                       {"function", {{"name", call.name}, {"arguments", call.arguments}}}});
    }
    return calls;
  }

  // The end of a stream with tools: its calls as OpenAI streams them (a delta with the
  // id and name, then the arguments in pieces), or the held-back text when it had none.
  std::string finish_tool_stream(int32_t index, Choice& c) {
    const ParsedOutput parsed = parse_tool_calls(c.text, tool_syntax_, *tools_, tools_->forced());
    std::string out;
    if (parsed.calls.empty()) {
      const std::string rest = c.text.substr(c.released);
      if (!rest.empty()) out += sse(chunk(index, Json{{"content", rest}}, nullptr, nullptr));
      return out;
    }
    constexpr size_t kPiece = 24;  // bytes of arguments per delta
    for (size_t k = 0; k < parsed.calls.size(); ++k) {
      const ParsedToolCall& call = parsed.calls[k];
      Json head = {{"index", k},
                   {"id", new_response_id("call_")},
                   {"type", "function"},
                   {"function", {{"name", call.name}, {"arguments", ""}}}};
      out += sse(chunk(index, Json{{"tool_calls", Json::array({head})}}, nullptr, nullptr));
      for (size_t at = 0; at < call.arguments.size(); at += kPiece) {
        Json piece = {{"index", k}, {"function", {{"arguments", call.arguments.substr(at, kPiece)}}}};
        out += sse(chunk(index, Json{{"tool_calls", Json::array({piece})}}, nullptr, nullptr));
      }
    }
    if (c.finish_reason == "stop") c.finish_reason = "tool_calls";
    return out;
  }

  void append_logprobs(Choice& c, const Json& part) {
    if (c.logprobs.is_null()) {
      c.logprobs = part;
      return;
    }
    for (const auto& [key, values] : part.items()) {
      for (const Json& v : values) c.logprobs[key].push_back(v);
    }
  }

  const bool chat_;
  const bool stream_;
  const bool include_usage_;
  const bool logprobs_;
  const bool tokens_as_ids_;
  std::vector<PromptEcho> prompts_;  // one per prompt of the request
  const tokenizer::Tokenizer& tokenizer_;
  const std::string id_;
  const std::string model_name_;
  const int64_t created_;
  const std::optional<ToolRequest> tools_;
  const ToolSyntax tool_syntax_;
  const Json unenforced_;  // what the request's schemas leave unenforced (server/schema_notes.h)
  // The response format's schema where some of it was not enforced: each finished choice
  // is checked against it.
  const std::shared_ptr<const engine::JsonSchema> schema_to_check_;
  const std::shared_ptr<const engine::ReasoningSpec> reasoning_;  // null: no span to split off
  const bool harmony_;  // the model's channels are split off (server/harmony_chat.h)
  const bool include_reasoning_;
  std::vector<Choice> choices_;
};

Json model_object(const RouteContext& context, const std::string& id, int64_t created,
                  std::optional<int32_t> max_context) {
  Json object = {{"id", id}, {"object", "model"}, {"created", created}, {"owned_by", "tokenmill"}};
  if (max_context) object["max_model_len"] = *max_context;
  if (!context.replica_id.empty()) object["replica_id"] = context.replica_id;
  return object;
}

Json model_object(const RouteContext& context, const ServedModel& model) {
  return model_object(context, model.name(), model.modified_unix(), model.max_context());
}

// The pinned model, then every model of the store (the loaded ones with their context).
Json model_list(const RouteContext& context) {
  Json data = Json::array();
  const ModelLease pinned = context.models.pinned();
  if (pinned) data.push_back(model_object(context, *pinned));
  std::map<std::string, int32_t> loaded_context;
  for (const LoadedInfo& info : context.models.loaded()) loaded_context[info.model->name()] = info.model->max_context();
  if (const store::ModelStore* store = context.models.store()) {
    for (const store::StoreEntry& entry : store->list()) {
      if (!entry.problem.empty()) continue;
      const std::string id = entry.name.full();
      if (pinned && pinned->name() == id) continue;
      const auto it = loaded_context.find(id);
      data.push_back(model_object(context, id, entry.modified_unix,
                                  it == loaded_context.end() ? std::nullopt : std::optional<int32_t>(it->second)));
    }
  }
  return data;
}

Json embedding_model_object(const ServedEmbeddings& model) {
  return {{"id", model.name}, {"object", "model"}, {"created", 0}, {"owned_by", "tokenmill"}};
}

// Parses a body, loads its model, and returns what starts its engine call (on the
// connection's strand).
std::function<void()> prepare_generation(bool chat, const RouteContext& context, const Json& json,
                                         const std::shared_ptr<Responder>& out,
                                         engine::Priority priority = engine::Priority::kInteractive,
                                         ModelLease model = nullptr) {
  if (!model) model = acquire_model(context, Fields(json).string("model").value_or(""));
  auto parsed = std::make_shared<OpenAiRequest>(chat ? parse_chat_request(json, *model)
                                                     : parse_completion_request(json, *model));
  const std::string id = new_response_id(chat ? "chatcmpl-" : "cmpl-");
  for (size_t i = 0; i < parsed->requests.size(); ++i) {
    parsed->requests[i].id = parsed->requests.size() == 1 ? id : id + "-" + std::to_string(i);
    parsed->requests[i].priority = priority;
  }
  return [chat, &context, out, parsed, id, model] {
    if (!out->connected()) return;
    auto sink = std::make_unique<OpenAiSink>(chat, *parsed, *model, id);
    start_engine_call(model, std::move(parsed->requests), out, std::move(sink), context.calls);
  };
}

// Parsing and tokenizing run on the preparation threads; the engine call starts on the
// connection's strand.
void handle_generation(bool chat, const RouteContext& context, const HttpRequest& request,
                       const std::shared_ptr<Responder>& out) {
  prepare_then(context, request.path, out,
               [chat, &context, out, body = request.body, path = request.path,
                cache_control = request.header("cache-control")]() -> std::function<void()> {
                 const Json json = parse_json_object(body);
                 std::shared_ptr<Responder> answer = out;
                 if (chat && Fields(json).boolean("store").value_or(false)) {
                   if (context.batch_state == nullptr) {
                     throw bad_request("'store': true needs the server's data directory (--data-dir); this server "
                                       "runs without one", "store");
                   }
                   answer = storing_completion(out, *context.batch_state, json);
                 }
                 const CachePolicy policy = context.response_cache != nullptr ? cache_policy(cache_control, json)
                                                                              : CachePolicy{};
                 if (!policy.read && !policy.write) return prepare_generation(chat, context, json, answer);
                 // The key names the model's file, so a model pulled again under the same
                 // name never answers from the old one's entries.
                 ModelLease model = acquire_model(context, Fields(json).string("model").value_or(""));
                 const std::string key = response_cache_key(
                     path, model->path() + "@" + std::to_string(model->modified_unix()), json);
                 if (policy.read) {
                   if (auto hit = context.response_cache->get(key)) {
                     return [out, hit = std::move(*hit)] { answer_from_cache(*out, hit); };
                   }
                 }
                 return prepare_generation(chat, context, json,
                                           recording_into_cache(answer, *context.response_cache, key),
                                           engine::Priority::kInteractive, std::move(model));
               });
}

}  // namespace

void start_openai_request(const RouteContext& context, bool chat, const Json& body, std::shared_ptr<Responder> out,
                          engine::Priority priority) {
  std::function<void()> start = prepare_generation(chat, context, body, out, priority);
  out->post([start = std::move(start), out, &context] {
    try {
      start();
    } catch (const ApiError& error) {
      out->send(error.status, "application/json", openai_error_body(error));
    }
  });
}

void add_openai_routes(Router& router, const RouteContext& context) {
  router.add("POST", "/v1/chat/completions", [&context](const HttpRequest& request, std::shared_ptr<Responder> out) {
    handle_generation(/*chat=*/true, context, request, out);
  });
  router.add("POST", "/v1/completions", [&context](const HttpRequest& request, std::shared_ptr<Responder> out) {
    handle_generation(/*chat=*/false, context, request, out);
  });
  router.add("GET", "/v1/models", [&context](const HttpRequest&, std::shared_ptr<Responder> out) {
    Json data = model_list(context);
    if (context.embeddings != nullptr) data.push_back(embedding_model_object(*context.embeddings));
    Json body = {{"object", "list"}, {"data", std::move(data)}};
    out->send(200, "application/json", dump_json(body));
  });
  router.add_prefix("GET", "/v1/models/", [&context](const HttpRequest& request, std::shared_ptr<Responder> out) {
    const std::string name = request.path.substr(std::string("/v1/models/").size());
    if (context.embeddings != nullptr && context.embeddings->answers_to(name)) {
      out->send(200, "application/json", dump_json(embedding_model_object(*context.embeddings)));
      return;
    }
    for (const Json& model : model_list(context)) {
      if (model["id"] == name || model["id"] == name + ":latest") {
        out->send(200, "application/json", dump_json(model));
        return;
      }
    }
    const ModelLease pinned = context.models.pinned();
    if (pinned && pinned->answers_to(name)) {
      out->send(200, "application/json", dump_json(model_object(context, *pinned)));
      return;
    }
    throw model_not_found(name);
  });
}

}  // namespace tokenmill::server
