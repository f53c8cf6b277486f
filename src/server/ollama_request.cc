#include "server/ollama_request.h"

#include <climits>

#include "engine/json_schema.h"
#include "server/schema_notes.h"
#include "server/api_error.h"
#include "server/chat_prompt.h"
#include "server/model_set.h"
#include "server/openai_request.h"

namespace tokenmill::server {

namespace {

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
  if (auto v = f.integer("num_predict", -2, INT32_MAX)) {
    if (*v == 0) throw bad_request("'options.num_predict' must be -1 (until done), -2 (fill the context) or at least 1",
                                   "options.num_predict");
    num_predict = *v;
  }
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
    log_unenforced((*compiled)->unenforced(), "format");
    request.json_schema = *compiled;
    return;
  }
  throw bad_request("'format' must be \"json\" or a JSON schema object, found " + dump_json(*format), "format");
}

void reject_unsupported(const Fields& f) {
  if (const Json* images = f.array("images"); images && !images->empty()) {
    throw bad_request("this model reads text only; 'images' are not supported", "images");
  }
  if (auto t = f.string("template"); t && !t->empty()) throw bad_request("a per-request 'template' is not supported", "template");
  if (auto s = f.string("suffix"); s && !s->empty()) throw bad_request("'suffix' is not supported", "suffix");
}

void use_prompt(ChatPrompt prompt, OllamaRequest& out) {
  out.request.prompt = std::move(prompt.tokens);
  out.request.reasoning = std::move(prompt.reasoning);
  out.include_reasoning = prompt.include_reasoning;
  out.harmony = prompt.harmony;
  out.harmony_prefix = prompt.harmony_prefix;
}

}  // namespace

std::string ollama_model_name(const Json& body) {
  Fields f(body);
  auto name = f.string("model");
  if (!name) name = f.string("name");  // older clients
  if (!name) throw bad_request("'model' is required", "model");
  return *name;
}

std::optional<std::chrono::milliseconds> ollama_keep_alive(const Json& body) {
  const Json* value = Fields(body).raw("keep_alive");
  if (value == nullptr) return std::nullopt;
  Result<std::chrono::milliseconds> parsed = invalid_argument("'keep_alive' must be a number of seconds or a duration");
  if (value->is_number()) {
    parsed = parse_keep_alive_seconds(value->get<double>());
  } else if (value->is_string()) {
    parsed = parse_keep_alive(value->get<std::string>());
  }
  if (!parsed.ok()) throw bad_request(parsed.status().message(), "keep_alive");
  return *parsed;
}

bool is_load_only(bool chat, const Json& body) {
  Fields f(body);
  if (chat) {
    const Json* messages = f.array("messages");
    return messages == nullptr || messages->empty();
  }
  return f.string("prompt").value_or("").empty();
}

OllamaRequest parse_ollama_request(bool chat, const Json& body, const ServedModel& model) {
  Fields f(body);
  OllamaRequest out;
  out.chat = chat;
  check_model_name(ollama_model_name(body), model);
  reject_unsupported(f);
  read_format(f, out.request);
  out.stream = f.boolean("stream").value_or(true);
  const ReasoningOptions reasoning = read_ollama_reasoning(f);

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
    Json chat_json = Json::array();  // the messages as the template reads them
    bool tool_messages = false;
    for (size_t i = 0; i < messages->size(); ++i) {
      const std::string where = "messages[" + std::to_string(i) + "]";
      if (!(*messages)[i].is_object()) throw bad_request("'" + where + "' must be an object", where);
      Fields m((*messages)[i], where);
      if (const Json* images = m.array("images"); images && !images->empty()) {
        throw bad_request("this model reads text only; 'images' are not supported", where + ".images");
      }
      Json message = {{"role", m.string("role").value_or("user")}, {"content", m.string("content").value_or("")}};
      if (const Json* calls = m.raw("tool_calls")) message["tool_calls"] = *calls;
      for (const char* key : {"tool_name", "thinking"}) {  // what a harmony prompt renders
        if (auto value = m.string(key)) message[key] = *value;
      }
      tool_messages = tool_messages || message["role"] == "tool" || message.contains("tool_calls");
      chat_json.push_back(std::move(message));
    }
    out.tools = read_tool_request(f);
    ChatPrompt prompt;
    if (out.tools || tool_messages) {
      if (out.tools && (out.request.json_object || out.request.json_schema)) {
        throw bad_request("'format' cannot be combined with 'tools' here", "format");
      }
      // Ollama has no tool_choice: the model decides, and the grammar takes over once it
      // opens a call in the built-in syntax.
      out.tool_syntax =
          model.speaks_harmony() ? ToolSyntax::kHarmony : tool_syntax_for_template(model.chat_template_source());
      const Json template_tools = out.tools && out.tool_syntax != ToolSyntax::kBuiltin ? *f.array("tools") : Json();
      prompt = render_chat_prompt(
          model, template_messages(chat_json, out.tools ? &*out.tools : nullptr, out.tool_syntax, /*ids_required=*/false),
          template_tools, "", reasoning, "messages");
      if (out.tools && out.tool_syntax == ToolSyntax::kBuiltin) {
        out.request.tool_calls = tool_call_spec(*out.tools, out.tool_syntax);
      }
    } else {
      prompt = render_chat_prompt(model, chat_json, Json(), "", reasoning, "messages", output_grammar(out.request));
    }
    use_prompt(std::move(prompt), out);
  } else {
    const std::string prompt = f.string("prompt").value_or("");
    if (prompt.empty()) {
      out.load_only = true;
      return out;
    }
    if (f.boolean("raw").value_or(false)) {
      out.request.prompt = model.text_prompt(prompt);
    } else {
      Json messages = Json::array();
      if (auto system = f.string("system"); system && !system->empty()) {
        messages.push_back({{"role", "system"}, {"content", *system}});
      }
      messages.push_back({{"role", "user"}, {"content", prompt}});
      use_prompt(render_chat_prompt(model, messages, Json(), "", reasoning, "prompt", output_grammar(out.request)), out);
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

}  // namespace tokenmill::server
