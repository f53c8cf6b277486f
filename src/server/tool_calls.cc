#include "server/tool_calls.h"

#include <algorithm>
#include <set>

#include "engine/json_schema.h"
#include "server/harmony_chat.h"
#include "server/schema_notes.h"

namespace tokenmill::server {

namespace {

constexpr size_t kMaxTools = 128;
constexpr std::string_view kHermesOpen = "<tool_call>";
constexpr std::string_view kHermesClose = "</tool_call>";
constexpr std::string_view kPythonTag = "<|python_tag|>";
constexpr std::string_view kMistralCalls = "[TOOL_CALLS]";

// OpenAI's rule for function names.
bool valid_function_name(const std::string& name) {
  if (name.empty() || name.size() > 64) return false;
  return std::all_of(name.begin(), name.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-';
  });
}

ToolDefinition read_tool(const Json& tool, size_t index) {
  const std::string where = "tools[" + std::to_string(index) + "]";
  if (!tool.is_object()) throw bad_request("'" + where + "' must be an object", where);
  Fields f(tool, where);
  if (f.string("type").value_or("") != "function") {
    throw bad_request("'" + where + ".type' must be \"function\"", where + ".type");
  }
  const Json* function = f.object("function");
  if (function == nullptr) throw bad_request("'" + where + ".function' is required", where + ".function");
  Fields fn(*function, where + ".function");
  ToolDefinition out;
  out.name = fn.string("name").value_or("");
  if (!valid_function_name(out.name)) {
    throw bad_request("'" + where + ".function.name' must be 1-64 letters, digits, '_' or '-', found " +
                          dump_json(out.name),
                      where + ".function.name");
  }
  out.description = fn.string("description").value_or("");
  if (const Json* parameters = fn.object("parameters")) out.parameters = *parameters;
  out.strict = fn.boolean("strict").value_or(false);
  return out;
}

std::string trim(std::string_view text) {
  const size_t begin = text.find_first_not_of(" \t\r\n");
  if (begin == std::string_view::npos) return "";
  const size_t end = text.find_last_not_of(" \t\r\n");
  return std::string(text.substr(begin, end - begin + 1));
}

const ToolDefinition* find_tool(const ToolRequest& tools, const std::string& name) {
  auto it = std::find_if(tools.tools.begin(), tools.tools.end(), [&](const ToolDefinition& t) { return t.name == name; });
  return it == tools.tools.end() ? nullptr : &*it;
}

// One call object: {"name": ..., "arguments" | "parameters": {...}} naming a known tool.
// Arguments given as a JSON string (some models write them so) are parsed.
std::optional<ParsedToolCall> read_call(const Json& call, const ToolRequest& tools) {
  if (!call.is_object() || !call.contains("name") || !call["name"].is_string()) return std::nullopt;
  const std::string name = call["name"].get<std::string>();
  if (find_tool(tools, name) == nullptr) return std::nullopt;
  Json arguments = Json::object();
  for (const char* key : {"arguments", "parameters"}) {
    if (!call.contains(key)) continue;
    arguments = call[key];
    if (arguments.is_string()) {
      arguments = Json::parse(arguments.get<std::string>(), nullptr, /*allow_exceptions=*/false);
    }
    break;
  }
  if (!arguments.is_object()) return std::nullopt;
  return ParsedToolCall{name, dump_json(arguments)};
}

// Parses text as one JSON value; nullopt when it is not exactly that.
std::optional<Json> parse_json(std::string_view text) {
  Json value = Json::parse(text.begin(), text.end(), nullptr, /*allow_exceptions=*/false);
  if (value.is_discarded()) return std::nullopt;
  return value;
}

// <tool_call>{...}</tool_call> blocks; text around them is content. The closing tag of
// the last block may be missing (the model ended instead).
std::optional<ParsedOutput> parse_hermes(std::string_view text, const ToolRequest& tools) {
  ParsedOutput out;
  std::string content;
  size_t at = 0;
  while (true) {
    const size_t open = text.find(kHermesOpen, at);
    if (open == std::string_view::npos) {
      content += text.substr(at);
      break;
    }
    content += text.substr(at, open - at);
    const size_t body = open + kHermesOpen.size();
    size_t close = text.find(kHermesClose, body);
    const size_t end = close == std::string_view::npos ? text.size() : close;
    auto value = parse_json(trim(text.substr(body, end - body)));
    if (!value) return std::nullopt;
    auto call = read_call(*value, tools);
    if (!call) return std::nullopt;
    out.calls.push_back(std::move(*call));
    at = close == std::string_view::npos ? text.size() : close + kHermesClose.size();
  }
  out.content = trim(content);
  return out;
}

// A whole output that is one call object or a list of them (after <|python_tag|>, or
// Llama 3.1's bare JSON), or Mistral's [TOOL_CALLS] followed by a list.
std::optional<ParsedOutput> parse_json_calls(std::string_view text, const ToolRequest& tools) {
  auto value = parse_json(trim(text));
  if (!value) return std::nullopt;
  ParsedOutput out;
  const Json list = value->is_array() ? *value : Json::array({*value});
  if (list.empty()) return std::nullopt;
  for (const Json& item : list) {
    auto call = read_call(item, tools);
    if (!call) return std::nullopt;
    out.calls.push_back(std::move(*call));
  }
  return out;
}

}  // namespace

const char* tool_syntax_name(ToolSyntax syntax) {
  switch (syntax) {
    case ToolSyntax::kHermes: return "hermes";
    case ToolSyntax::kLlama3: return "llama3";
    case ToolSyntax::kMistral: return "mistral";
    case ToolSyntax::kBuiltin: return "builtin";
    case ToolSyntax::kHarmony: return "harmony";
  }
  return "builtin";
}

ToolSyntax tool_syntax_for_template(std::string_view source) {
  if (source.find("tools") == std::string_view::npos) return ToolSyntax::kBuiltin;
  if (source.find(kMistralCalls) != std::string_view::npos) return ToolSyntax::kMistral;
  if (source.find(kHermesOpen) != std::string_view::npos) return ToolSyntax::kHermes;
  if (source.find(kPythonTag) != std::string_view::npos || source.find("ipython") != std::string_view::npos) {
    return ToolSyntax::kLlama3;
  }
  return ToolSyntax::kBuiltin;  // it names tools but writes no call syntax we know
}

bool ToolRequest::forced() const {
  if (choice == Choice::kRequired || choice == Choice::kNamed) return true;
  return false;
}

std::optional<ToolRequest> read_tool_request(const Fields& f) {
  if (f.has("functions") || f.has("function_call")) {
    throw bad_request("'functions' and 'function_call' are deprecated: send 'tools' and 'tool_choice'",
                      f.has("functions") ? "functions" : "function_call");
  }
  const Json* list = f.array("tools");
  if (list == nullptr || list->empty()) {
    if (const Json* choice = f.raw("tool_choice"); choice && *choice != "none" && *choice != "auto") {
      throw bad_request("'tool_choice' needs 'tools'", "tool_choice");
    }
    return std::nullopt;
  }
  if (list->size() > kMaxTools) {
    throw bad_request("'tools' may hold at most " + std::to_string(kMaxTools) + " tools", "tools");
  }
  ToolRequest out;
  std::set<std::string> names;
  for (size_t i = 0; i < list->size(); ++i) {
    ToolDefinition tool = read_tool((*list)[i], i);
    if (!names.insert(tool.name).second) {
      throw bad_request("Two tools are named '" + tool.name + "'", "tools[" + std::to_string(i) + "].function.name");
    }
    out.tools.push_back(std::move(tool));
  }
  if (const Json* choice = f.raw("tool_choice")) {
    if (*choice == "none") {
      out.choice = ToolRequest::Choice::kNone;
    } else if (*choice == "auto") {
      out.choice = ToolRequest::Choice::kAuto;
    } else if (*choice == "required") {
      out.choice = ToolRequest::Choice::kRequired;
    } else if (choice->is_object() && choice->value("type", "") == "function" && choice->contains("function") &&
               (*choice)["function"].is_object() && (*choice)["function"].contains("name") &&
               (*choice)["function"]["name"].is_string()) {
      out.choice = ToolRequest::Choice::kNamed;
      out.named = (*choice)["function"]["name"].get<std::string>();
      if (!names.count(out.named)) {
        throw bad_request("'tool_choice' names the function '" + out.named + "', which is not in 'tools'",
                          "tool_choice");
      }
    } else {
      throw bad_request("'tool_choice' must be \"none\", \"auto\", \"required\" or "
                        "{\"type\": \"function\", \"function\": {\"name\": ...}}, found " + dump_json(*choice),
                        "tool_choice");
    }
  }
  out.parallel = f.boolean("parallel_tool_calls").value_or(true);
  return out;
}

std::shared_ptr<const engine::ToolCallSpec> tool_call_spec(const ToolRequest& tools, ToolSyntax syntax) {
  auto spec = std::make_shared<engine::ToolCallSpec>();
  spec->forced = tools.forced();
  spec->single_call = !tools.parallel;
  spec->arguments_key = syntax == ToolSyntax::kLlama3 ? "parameters" : "arguments";
  spec->trigger = syntax == ToolSyntax::kMistral ? std::string(kMistralCalls)
                  : syntax == ToolSyntax::kLlama3 ? std::string(kPythonTag)
                                                  : std::string(kHermesOpen);
  if (syntax == ToolSyntax::kHarmony) spec->header = harmony_call_header();
  for (size_t i = 0; i < tools.tools.size(); ++i) {
    const ToolDefinition& tool = tools.tools[i];
    if (tools.choice == ToolRequest::Choice::kNamed && tool.name != tools.named) continue;
    engine::ToolSchema schema{tool.name, nullptr};
    if (!tool.parameters.is_null()) {
      auto compiled = engine::JsonSchema::compile(tool.parameters, {.strict = tool.strict, .object_only = true});
      if (!compiled.ok()) {
        const std::string where = "tools[" + std::to_string(i) + "].function.parameters";
        throw bad_request("The parameters of tool '" + tool.name + "' cannot be enforced: " +
                              compiled.status().message(),
                          where);
      }
      log_unenforced((*compiled)->unenforced(), "tool '" + tool.name + "'");
      schema.arguments = *compiled;
    }
    spec->tools.push_back(std::move(schema));
  }
  return spec;
}

std::string forced_call_opener(ToolSyntax syntax) {
  switch (syntax) {
    case ToolSyntax::kHermes:
    case ToolSyntax::kBuiltin: return std::string(kHermesOpen) + "\n";
    case ToolSyntax::kLlama3:
    case ToolSyntax::kHarmony: return "";  // the grammar writes the call's header (harmony_chat.h)
    case ToolSyntax::kMistral: return std::string(kMistralCalls) + "[";
  }
  return "";
}

std::string builtin_tool_prompt(const ToolRequest& tools) {
  std::string out =
      "You can call functions to get information or take actions. These are the functions, one JSON object "
      "each, with the JSON schema of their arguments:\n";
  for (const ToolDefinition& tool : tools.tools) {
    Json described = {{"name", tool.name}};
    if (!tool.description.empty()) described["description"] = tool.description;
    described["parameters"] = tool.parameters.is_null() ? Json::object() : tool.parameters;
    out += dump_json(described) + "\n";
  }
  out +=
      "To call a function, write only the call, on a line of its own, exactly in this form:\n"
      "<tool_call>\n{\"name\": \"FUNCTION_NAME\", \"arguments\": {ARGUMENTS AS JSON}}\n</tool_call>\n"
      "Each result comes back inside <tool_response></tool_response>. When no function is needed, answer "
      "normally.";
  return out;
}

Json template_messages(const Json& messages, const ToolRequest* tools, ToolSyntax syntax, bool ids_required) {
  Json out = Json::array();
  const bool builtin = syntax == ToolSyntax::kBuiltin;
  for (size_t i = 0; i < messages.size(); ++i) {
    const Json& m = messages[i];
    const std::string where = "messages[" + std::to_string(i) + "]";
    Json message = m;
    const std::string role = m.value("role", "");
    if (role == "tool" && ids_required) {
      if (!m.contains("tool_call_id") || !m["tool_call_id"].is_string() || m["tool_call_id"].get<std::string>().empty()) {
        throw bad_request("'" + where + ".tool_call_id' is required in a message of role 'tool'",
                          where + ".tool_call_id");
      }
    }
    if (m.contains("tool_calls") && !m["tool_calls"].is_null()) {
      if (role != "assistant") {
        throw bad_request("'" + where + ".tool_calls' is only allowed in assistant messages", where + ".tool_calls");
      }
      const Json& calls = m["tool_calls"];
      if (!calls.is_array()) throw bad_request("'" + where + ".tool_calls' must be an array", where + ".tool_calls");
      Json parsed_calls = Json::array();
      for (size_t j = 0; j < calls.size(); ++j) {
        const std::string cw = where + ".tool_calls[" + std::to_string(j) + "]";
        const Json& call = calls[j];
        if (!call.is_object() || !call.contains("function") || !call["function"].is_object() ||
            !call["function"].contains("name") || !call["function"]["name"].is_string()) {
          throw bad_request("'" + cw + "' must be {\"id\", \"type\": \"function\", \"function\": {\"name\", \"arguments\"}}",
                            cw);
        }
        Json call_out = call;
        Json arguments = call["function"].value("arguments", Json("{}"));
        if (arguments.is_string()) {
          Json parsed = Json::parse(arguments.get<std::string>(), nullptr, /*allow_exceptions=*/false);
          if (parsed.is_discarded()) {
            throw bad_request("'" + cw + ".function.arguments' must be a JSON object in a string", cw + ".function.arguments");
          }
          arguments = parsed;
        }
        call_out["function"]["arguments"] = arguments;
        parsed_calls.push_back(std::move(call_out));
      }
      message["tool_calls"] = parsed_calls;
    }
    out.push_back(std::move(message));
  }
  if (!builtin) return out;

  // The template knows only system, user and assistant turns that alternate: the tool
  // prompt joins the system message, calls become the assistant's text, and results in
  // a row become one user turn.
  Json turns = Json::array();
  auto text_of = [](const Json& m) {
    return m.contains("content") && m["content"].is_string() ? m["content"].get<std::string>() : std::string();
  };
  for (const Json& m : out) {
    const std::string role = m.value("role", "");
    if (role == "tool") {
      std::string result = "<tool_response>\n" + text_of(m) + "\n</tool_response>";
      if (!turns.empty() && turns.back().value("tool_results", false)) {
        turns.back()["content"] = turns.back()["content"].get<std::string>() + "\n" + result;
      } else {
        turns.push_back({{"role", "user"}, {"content", result}, {"tool_results", true}});
      }
      continue;
    }
    Json turn = {{"role", role}, {"content", text_of(m)}};
    if (m.contains("tool_calls")) {
      std::string text = text_of(m);
      for (const Json& call : m["tool_calls"]) {
        if (!text.empty()) text += "\n";
        text += "<tool_call>\n" +
                dump_json(Json{{"name", call["function"]["name"]}, {"arguments", call["function"]["arguments"]}}) +
                "\n</tool_call>";
      }
      turn["content"] = text;
    }
    turns.push_back(std::move(turn));
  }
  for (Json& turn : turns) turn.erase("tool_results");
  if (tools != nullptr && tools->choice != ToolRequest::Choice::kNone) {
    const std::string prompt = builtin_tool_prompt(*tools);
    if (!turns.empty() && turns[0].value("role", "") == "system") {
      turns[0]["content"] = turns[0]["content"].get<std::string>() + "\n\n" + prompt;
    } else {
      turns.insert(turns.begin(), Json{{"role", "system"}, {"content", prompt}});
    }
  }
  return turns;
}

ParsedOutput parse_tool_calls(std::string_view text, ToolSyntax syntax, const ToolRequest& tools, bool forced) {
  ParsedOutput plain{trim(text), {}};
  std::optional<ParsedOutput> parsed;
  if (forced && syntax != ToolSyntax::kHarmony) {  // harmony's splitter hands on hermes text
    // The opener was the end of the prompt: the text is the call (Mistral's list closes).
    std::string_view call = text;
    if (syntax == ToolSyntax::kMistral) {
      parsed = parse_json_calls("[" + std::string(call), tools);
      if (!parsed) parsed = parse_json_calls(call, tools);
    } else {
      parsed = parse_json_calls(call, tools);
    }
  } else if (syntax == ToolSyntax::kMistral) {
    const size_t at = text.find(kMistralCalls);
    if (at != std::string_view::npos) {
      parsed = parse_json_calls(text.substr(at + kMistralCalls.size()), tools);
      if (parsed) parsed->content = trim(text.substr(0, at));
    }
  } else if (syntax == ToolSyntax::kLlama3) {
    const size_t at = text.find(kPythonTag);
    std::string_view body = at == std::string_view::npos ? text : text.substr(at + kPythonTag.size());
    if (!trim(body).empty() && trim(body)[0] == '{') parsed = parse_json_calls(body, tools);
  } else if (text.find(kHermesOpen) != std::string_view::npos) {
    parsed = parse_hermes(text, tools);
  }
  if (!parsed || parsed->calls.empty()) return plain;
  if (!tools.parallel && parsed->calls.size() > 1) parsed->calls.resize(1);
  return *parsed;
}

}  // namespace tokenmill::server
