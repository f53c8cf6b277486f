#include "server/openai_request.h"

#include <climits>
#include <cstdlib>
#include <set>

#include "engine/json_schema.h"
#include "server/chat_prompt.h"
#include "server/schema_notes.h"

namespace tokenmill::server {

namespace {

// temperature, top_p, penalties, seed, n, stop, logprobs: what both endpoints share.
void read_sampling(const Fields& f, const ServedModel& model, engine::Request& r) {
  engine::SamplingParams& s = r.sampling;
  if (auto v = f.number("temperature", 0, 2)) s.temperature = static_cast<float>(*v);
  if (auto v = f.number("top_p", 0, 1)) s.top_p = static_cast<float>(*v);
  if (auto v = f.integer("top_k", -1, INT32_MAX)) s.top_k = *v < 0 ? 0 : static_cast<int32_t>(*v);  // -1: off
  if (auto v = f.number("min_p", 0, 1)) s.min_p = static_cast<float>(*v);
  if (auto v = f.number("repetition_penalty", 0, 10)) s.repetition_penalty = static_cast<float>(*v);
  if (auto v = f.number("presence_penalty", -2, 2)) s.presence_penalty = static_cast<float>(*v);
  if (auto v = f.number("frequency_penalty", -2, 2)) s.frequency_penalty = static_cast<float>(*v);
  if (auto v = f.integer("seed", INT64_MIN, INT64_MAX)) s.seed = static_cast<uint64_t>(*v);
  if (auto v = f.integer("n", 1, kMaxChoices)) r.n = static_cast<int32_t>(*v);
  for (std::string& stop : f.strings("stop", kMaxStopStrings)) {
    if (!stop.empty()) r.stop.push_back(std::move(stop));
  }
  if (auto v = f.boolean("ignore_eos")) r.ignore_eos = *v;
  if (auto v = f.boolean("speculative")) r.speculative = *v;  // false: never speculate on it
  if (const Json* ids = f.array("stop_token_ids")) {
    for (const Json& id : *ids) {
      if (!id.is_number_integer() || id.get<int64_t>() < 0 || id.get<int64_t>() >= model.tokenizer().n_vocab()) {
        throw bad_request("'stop_token_ids' must hold token ids in [0, " +
                              std::to_string(model.tokenizer().n_vocab()) + "), found " + dump_json(id),
                          "stop_token_ids");
      }
      r.stop_token_ids.push_back(id.get<int32_t>());
    }
  }
  if (const Json* bias = f.object("logit_bias")) {
    // {"token id": bias}: ids as strings (JSON keys), biases in [-100, 100].
    if (bias->size() > kMaxLogitBias) {
      throw bad_request("'logit_bias' may hold at most " + std::to_string(kMaxLogitBias) + " tokens", "logit_bias");
    }
    const int32_t n_vocab = model.tokenizer().n_vocab();
    for (const auto& [key, value] : bias->items()) {
      char* end = nullptr;
      const long id = std::strtol(key.c_str(), &end, 10);
      if (key.empty() || *end != '\0' || id < 0 || id >= n_vocab) {
        throw bad_request("'logit_bias' keys must be token ids in [0, " + std::to_string(n_vocab) + "), found " +
                              dump_json(key),
                          "logit_bias");
      }
      if (!value.is_number() || !(value.get<double>() >= -100 && value.get<double>() <= 100)) {
        throw bad_request("'logit_bias' values must be numbers in [-100, 100], found " + dump_json(value) +
                              " for token " + key,
                          "logit_bias");
      }
      s.logit_bias.emplace_back(static_cast<int32_t>(id), static_cast<float>(value.get<double>()));
    }
  }
  if (auto v = f.integer("best_of", 1, kMaxChoices); v && *v != r.n) {
    throw bad_request("'best_of' other than n is not supported", "best_of");
  }
}

// OpenAI Predicted Outputs: {"type": "content", "content": a string or [{"type": "text",
// "text": ...}]}, tokenized as plain text (no special tokens). An empty one is no
// prediction.
void read_prediction(const Fields& f, const ServedModel& model, engine::Request& r) {
  const Json* prediction = f.object("prediction");
  if (prediction == nullptr) return;
  Fields p(*prediction, "prediction");
  if (p.string("type").value_or("") != "content") {
    throw bad_request("'prediction.type' must be \"content\"", "prediction.type");
  }
  auto it = prediction->find("content");
  std::string text;
  if (it != prediction->end() && it->is_string()) {
    text = it->get<std::string>();
  } else if (it != prediction->end() && it->is_array()) {
    for (size_t i = 0; i < it->size(); ++i) {
      const Json& part = (*it)[i];
      const std::string where = "prediction.content[" + std::to_string(i) + "]";
      if (!part.is_object() || Fields(part, where).string("type").value_or("") != "text") {
        throw bad_request("'" + where + "' must be a {\"type\": \"text\", \"text\": ...} part", where);
      }
      text += Fields(part, where).string("text").value_or("");
    }
  } else {
    throw bad_request("'prediction.content' must be a string or an array of text parts", "prediction.content");
  }
  if (!text.empty()) r.prediction = model.tokenizer().encode(text, /*add_special=*/false, /*parse_special=*/false);
}

void read_stream(const Fields& f, OpenAiRequest& out) {
  out.stream = f.boolean("stream").value_or(false);
  if (const Json* options = f.object("stream_options")) {
    if (!out.stream) throw bad_request("'stream_options' is only allowed when 'stream' is true", "stream_options");
    out.include_usage = Fields(*options, "stream_options").boolean("include_usage").value_or(false);
  }
}

// The fields OpenAI documents that change nothing in what is generated here are checked
// and accepted (user, safety_identifier, metadata, prompt_cache_key - prefix caching is
// automatic -, service_tier, store: false); those asking for what this server does not
// do are refused by name. docs/serving.md has the table.
void check_documented_fields(const Fields& f, bool chat) {
  for (const char* name : {"user", "safety_identifier", "prompt_cache_key"}) f.string(name);
  if (const Json* metadata = f.object("metadata"); metadata && metadata->size() > 16) {
    throw bad_request("'metadata' may hold at most 16 keys", "metadata");
  }
  if (auto tier = f.string("service_tier")) {
    static const std::set<std::string> kTiers = {"auto", "default", "flex", "priority", "scale"};
    if (!kTiers.count(*tier)) {
      throw bad_request("'service_tier' must be one of auto, default, flex, priority, scale; found " + dump_json(*tier),
                        "service_tier");
    }
  }
  f.boolean("store");  // stored by the route (server/stored_completions.h)
  if (!chat) return;
  if (const Json* modalities = f.array("modalities"); modalities && *modalities != Json::array({"text"})) {
    throw bad_request("this model writes text only: 'modalities' must be [\"text\"]", "modalities");
  }
  for (const char* name : {"audio", "web_search_options", "verbosity"}) {
    if (f.raw(name) != nullptr) {
      throw bad_request("'" + std::string(name) + "' is not supported by this model", name);
    }
  }
}

void check_sampling(const engine::SamplingParams& sampling) {
  if (Status s = sampling.validate(); !s.ok()) throw bad_request(s.message());
}

// A chat message's content: a string, null, or an array of {"type": "text", "text"} parts.
std::string message_content(const Json& message, size_t index) {
  const std::string where = "messages[" + std::to_string(index) + "].content";
  auto it = message.find("content");
  if (it == message.end() || it->is_null()) return "";
  if (it->is_string()) return it->get<std::string>();
  if (!it->is_array()) throw bad_request("'" + where + "' must be a string or an array of text parts", where);
  std::string text;
  for (const Json& part : *it) {
    if (!part.is_object() || part.value("type", "") != "text" || !part.contains("text") || !part["text"].is_string()) {
      throw bad_request("'" + where + "' may only hold parts {\"type\": \"text\", \"text\": ...}; this model reads text only",
                        where);
    }
    text += part["text"].get<std::string>();
  }
  return text;
}

}  // namespace

void check_model_name(const std::string& name, const ServedModel& model) {
  if (!model.answers_to(name)) throw model_not_found(name);
}

int32_t resolve_max_tokens(int64_t requested, size_t n_prompt, int32_t max_context, const char* prompt_param,
                           const char* max_param) {
  if (n_prompt == 0) throw bad_request("The prompt is empty", prompt_param);
  if (n_prompt >= static_cast<size_t>(max_context)) {
    throw bad_request("This model's maximum context length is " + std::to_string(max_context) +
                          " tokens, but the prompt has " + std::to_string(n_prompt) +
                          " tokens, leaving no room for the completion. Please shorten the prompt.",
                      prompt_param, "context_length_exceeded");
  }
  const int64_t room = max_context - static_cast<int64_t>(n_prompt);
  if (requested < 0) return static_cast<int32_t>(room);
  if (requested > room) {
    throw bad_request("This model's maximum context length is " + std::to_string(max_context) +
                          " tokens. However, you requested " + std::to_string(n_prompt + requested) + " tokens (" +
                          std::to_string(n_prompt) + " in the prompt, " + std::to_string(requested) +
                          " for the completion). Please reduce the prompt or '" + max_param + "' (at most " +
                          std::to_string(room) + " here).",
                      max_param, "context_length_exceeded");
  }
  return static_cast<int32_t>(requested);
}

namespace {

// response_format: {"type": "text"} (or absent), {"type": "json_object"} (JSON mode), or
// {"type": "json_schema", "json_schema": {"name": ..., "schema": {...}, "strict": bool}}
// (structured output, engine/json_schema.h: with strict, a keyword the grammar cannot
// enforce is a 400 naming it; without, it is listed in the response's
// tokenmill.unenforced and logged).
void read_response_format(const Fields& f, engine::Request& request) {
  const Json* format = f.object("response_format");
  if (format == nullptr) return;
  const Json type = format->contains("type") ? (*format)["type"] : Json("text");
  if (type == "text") return;
  if (type == "json_object") {
    request.json_object = true;
    return;
  }
  if (type == "json_schema") {
    const auto spec = format->find("json_schema");
    if (spec == format->end() || !spec->is_object() || !spec->contains("schema")) {
      throw bad_request("'response_format.json_schema.schema' is required for type json_schema", "response_format");
    }
    const auto strict = spec->find("strict");
    if (strict != spec->end() && !strict->is_boolean() && !strict->is_null()) {
      throw bad_request("'response_format.json_schema.strict' must be a boolean", "response_format");
    }
    const bool is_strict = strict != spec->end() && strict->is_boolean() && strict->get<bool>();
    auto compiled = engine::JsonSchema::compile((*spec)["schema"], {.strict = is_strict});
    if (!compiled.ok()) {
      throw bad_request("Unsupported 'response_format' schema: " + compiled.status().message(), "response_format");
    }
    log_unenforced((*compiled)->unenforced(), "response_format");
    request.json_schema = *compiled;
    return;
  }
  throw bad_request("'response_format.type' must be \"text\", \"json_object\" or \"json_schema\", found " +
                        dump_json(type),
                    "response_format");
}

}  // namespace

OpenAiRequest parse_chat_request(const Json& body, const ServedModel& model) {
  Fields f(body);
  OpenAiRequest out;
  engine::Request& request = out.requests.emplace_back();
  check_model_name(f.string("model").value_or(model.name()), model);

  const Json* messages = f.array("messages");
  if (!messages || messages->empty()) throw bad_request("'messages' must be a non-empty array", "messages");
  Json chat_json = Json::array();  // the messages as the template reads them
  bool tool_messages = false;
  for (size_t i = 0; i < messages->size(); ++i) {
    const Json& m = (*messages)[i];
    const std::string where = "messages[" + std::to_string(i) + "]";
    if (!m.is_object()) throw bad_request("'" + where + "' must be an object", where);
    std::string role = Fields(m, where).string("role").value_or("");
    if (role.empty()) throw bad_request("'" + where + ".role' is required", where + ".role");
    if (role == "developer") role = "system";
    Json message = {{"role", role}, {"content", message_content(m, i)}};
    for (const char* key : {"tool_calls", "tool_call_id", "name", "reasoning_content"}) {
      if (m.contains(key) && !m[key].is_null()) message[key] = m[key];
    }
    tool_messages = tool_messages || role == "tool" || message.contains("tool_calls");
    chat_json.push_back(std::move(message));
  }
  check_documented_fields(f, /*chat=*/true);
  std::optional<ToolRequest> tools = read_tool_request(f);
  read_response_format(f, request);
  const ReasoningOptions reasoning = read_openai_reasoning(f);
  ChatPrompt prompt;
  if (tools || tool_messages) {
    const ToolSyntax syntax =
        model.speaks_harmony() ? ToolSyntax::kHarmony : tool_syntax_for_template(model.chat_template_source());
    const bool calls_allowed = tools && tools->choice != ToolRequest::Choice::kNone;
    if (calls_allowed && (request.json_object || request.json_schema)) {
      throw bad_request("'response_format' cannot be combined with 'tools' here", "response_format");
    }
    const Json template_tools = calls_allowed && syntax != ToolSyntax::kBuiltin ? *f.array("tools") : Json();
    const bool forced = calls_allowed && tools->forced();
    prompt = render_chat_prompt(model, template_messages(chat_json, calls_allowed ? &*tools : nullptr, syntax),
                                template_tools, forced ? forced_call_opener(syntax) : "", reasoning, "messages",
                                forced ? AnswerGrammar::kToolCall : AnswerGrammar::kNone);
    if (calls_allowed) {
      // Forced calls are constrained from the first byte. With "auto" the grammar takes
      // over at the opening tag where that is plain text (the built-in syntax); the other
      // families open calls with a special token and are parsed afterwards.
      if (tools->forced() || syntax == ToolSyntax::kBuiltin) request.tool_calls = tool_call_spec(*tools, syntax);
      out.tools = std::move(tools);
      out.tool_syntax = syntax;
    }
  } else {
    prompt = render_chat_prompt(model, chat_json, Json(), "", reasoning, "messages", output_grammar(request));
  }
  request.prompt = std::move(prompt.tokens);
  request.reasoning = std::move(prompt.reasoning);
  out.include_reasoning = prompt.include_reasoning;
  out.harmony = prompt.harmony;
  out.harmony_prefix = prompt.harmony_prefix;

  read_sampling(f, model, request);
  read_prediction(f, model, request);
  read_stream(f, out);
  out.tokens_as_ids = f.boolean("return_tokens_as_token_ids").value_or(false);
  request.sampling.logprobs = f.boolean("logprobs").value_or(false);
  if (auto top = f.integer("top_logprobs", 0, engine::kMaxTopLogprobs)) {
    if (!request.sampling.logprobs) {
      throw bad_request("'top_logprobs' requires 'logprobs' to be true", "top_logprobs");
    }
    request.sampling.top_logprobs = static_cast<int32_t>(*top);
  }
  check_sampling(request.sampling);

  auto max_tokens = f.integer("max_completion_tokens", 1, INT32_MAX);
  const char* max_param = "max_completion_tokens";
  if (!max_tokens) {
    max_tokens = f.integer("max_tokens", 1, INT32_MAX);
    max_param = "max_tokens";
  }
  request.max_tokens =
      resolve_max_tokens(max_tokens.value_or(-1), request.prompt.size(), model.max_context(), "messages", max_param);
  return out;
}

namespace {

// One prompt of a completions request: a string, or an array of token ids. `where` names
// it in errors ("prompt" or "prompt[i]").
std::vector<int32_t> read_prompt(const Json& prompt, const ServedModel& model, const std::string& where,
                                 std::string& text) {
  if (prompt.is_string()) {
    text = prompt.get<std::string>();
    return model.text_prompt(text);
  }
  if (prompt.is_array() && !prompt.empty() && prompt[0].is_number_integer()) {
    const int32_t n_vocab = model.tokenizer().n_vocab();
    std::vector<int32_t> tokens;
    for (const Json& id : prompt) {
      if (!id.is_number_integer() || id.get<int64_t>() < 0 || id.get<int64_t>() >= n_vocab) {
        throw bad_request("'" + where + "' token ids must be integers in [0, " + std::to_string(n_vocab) +
                              "), found " + dump_json(id),
                          where);
      }
      tokens.push_back(id.get<int32_t>());
    }
    text = model.tokenizer().decode(tokens, /*render_special=*/false);
    return tokens;
  }
  throw bad_request("'" + where + "' must be a string or an array of token ids, found " + json_kind(prompt), where);
}

}  // namespace

OpenAiRequest parse_completion_request(const Json& body, const ServedModel& model) {
  Fields f(body);
  OpenAiRequest out;
  check_model_name(f.string("model").value_or(model.name()), model);
  check_documented_fields(f, /*chat=*/false);

  // The prompt: a string or token ids, or a list of prompts (each a string or token ids).
  auto it = body.find("prompt");
  if (it == body.end() || it->is_null()) throw bad_request("'prompt' is required", "prompt");
  std::vector<const Json*> prompts;
  const bool is_list = it->is_array() && !it->empty() && ((*it)[0].is_string() || (*it)[0].is_array());
  if (is_list) {
    if (it->size() > kMaxPrompts) {
      throw bad_request("'prompt' lists at most " + std::to_string(kMaxPrompts) + " prompts, found " +
                            std::to_string(it->size()),
                        "prompt");
    }
    for (const Json& p : *it) prompts.push_back(&p);
  } else {
    prompts.push_back(&*it);
  }
  if (auto suffix = f.string("suffix"); suffix && !suffix->empty()) {
    throw bad_request("'suffix' is not supported", "suffix");
  }

  engine::Request shared;
  read_response_format(f, shared);  // an extension here, as in vLLM
  read_sampling(f, model, shared);
  read_prediction(f, model, shared);
  read_stream(f, out);
  out.tokens_as_ids = f.boolean("return_tokens_as_token_ids").value_or(false);
  out.echo = f.boolean("echo").value_or(false);
  if (auto top = f.integer("logprobs", 0, engine::kMaxTopLogprobs)) {
    shared.sampling.logprobs = true;
    shared.sampling.top_logprobs = static_cast<int32_t>(*top);
    shared.prompt_logprobs = out.echo;  // the echoed prompt's tokens get theirs too
  }
  check_sampling(shared.sampling);
  if (static_cast<int64_t>(prompts.size()) * shared.n > kMaxChoicesPerRequest) {
    throw bad_request("'n' x the number of prompts may be at most " + std::to_string(kMaxChoicesPerRequest) +
                          ", found " + std::to_string(shared.n) + " x " + std::to_string(prompts.size()),
                      "n");
  }
  // OpenAI's completions default is 16 tokens.
  const int64_t max_tokens = f.integer("max_tokens", 1, INT32_MAX).value_or(16);
  for (size_t i = 0; i < prompts.size(); ++i) {
    const std::string where = is_list ? "prompt[" + std::to_string(i) + "]" : "prompt";
    engine::Request& request = out.requests.emplace_back(shared);
    request.prompt = read_prompt(*prompts[i], model, where, out.prompt_texts.emplace_back());
    request.max_tokens =
        resolve_max_tokens(max_tokens, request.prompt.size(), model.max_context(), where.c_str(), "max_tokens");
  }
  return out;
}

}  // namespace tokenmill::server
