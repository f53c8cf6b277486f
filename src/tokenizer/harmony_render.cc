// harmony::render_for_completion and tool_declaration (harmony_format.h).
//
// The tool declarations follow openai-harmony's rendering of JSON Schema, quirks
// included (integers are `number`, an enum is rendered only for strings, anyOf is `any`,
// oneOf lists its variants on lines of their own, nested objects indent their members
// and closing brace by four spaces), because that is the text gpt-oss was trained on.
#include <algorithm>
#include <sstream>

#include "tokenizer/harmony_format.h"

namespace tokenmill::tokenizer::harmony {

namespace {

using json = nlohmann::ordered_json;

// "// line" for each line of text.
std::string comment_lines(const std::string& text, const std::string& indent) {
  std::string out;
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) out += indent + "// " + line + "\n";
  return out;
}

std::string type_expression(const json& schema, const std::string& indent);

std::string type_name(const std::string& type) {
  if (type == "integer" || type == "number") return "number";
  if (type == "string" || type == "boolean" || type == "null") return type;
  return "any";
}

// The members of an object type, one line each, then its closing brace.
std::string object_expression(const json& schema, const std::string& indent, bool nested) {
  std::string out = "{\n";
  const json* properties = schema.contains("properties") && schema["properties"].is_object() ? &schema["properties"]
                                                                                             : nullptr;
  const json required = schema.value("required", json::array());
  const std::string member_indent = nested ? indent + "    " : indent;
  if (properties != nullptr) {
    for (const auto& [name, property] : properties->items()) {
      if (property.contains("title") && property["title"].is_string()) {
        out += member_indent + "// " + property["title"].get<std::string>() + "\n" + member_indent + "//\n";
      }
      if (property.contains("description") && property["description"].is_string()) {
        out += comment_lines(property["description"].get<std::string>(), member_indent);
      }
      const bool is_required = std::find(required.begin(), required.end(), name) != required.end();
      const bool one_of = property.contains("oneOf") && property["oneOf"].is_array();
      out += member_indent + name + (is_required ? "" : "?") + (one_of ? ":" : ": ") +
             type_expression(property, member_indent) + ",";
      if (property.contains("default")) {
        const json& d = property["default"];
        const bool string_enum = d.is_string() && property.contains("enum");
        out += " // default: " + (string_enum ? d.get<std::string>() : d.dump());
      }
      out += "\n";
    }
  }
  return out + (nested ? member_indent : indent) + "}";
}

std::string type_expression(const json& schema, const std::string& indent) {
  if (!schema.is_object()) return "any";
  if (schema.contains("oneOf") && schema["oneOf"].is_array()) {
    std::string out = "\n";
    for (const json& variant : schema["oneOf"]) {
      // A variant is written by its type name alone; what has none (null too) is any.
      const std::string type = variant.is_object() && variant.contains("type") && variant["type"].is_string()
                                   ? type_name(variant["type"].get<std::string>())
                                   : "any";
      out += indent + " | " + (type == "null" ? "any" : type) + "\n";
    }
    return out;
  }
  if (!schema.contains("type")) return "any";
  const json& type = schema["type"];
  if (type.is_array()) {
    std::string out;
    for (const json& t : type) out += (out.empty() ? "" : " | ") + (t.is_string() ? type_name(t.get<std::string>()) : "any");
    return out.empty() ? "any" : out;
  }
  if (!type.is_string()) return "any";
  const std::string t = type.get<std::string>();
  if (t == "string" && schema.contains("enum") && schema["enum"].is_array()) {
    std::string out;
    for (const json& v : schema["enum"]) out += (out.empty() ? "" : " | ") + v.dump();
    return out;
  }
  if (t == "array") {
    if (!schema.contains("items")) return "Array<any>";
    return type_expression(schema["items"], indent) + "[]";
  }
  if (t == "object") {
    // A nested object repeats its description before its brace.
    std::string out;
    if (schema.contains("description") && schema["description"].is_string()) {
      out += indent + "    // " + schema["description"].get<std::string>() + "\n";
    }
    return out + object_expression(schema, indent, true);
  }
  return type_name(t);
}

std::string developer_message(const std::vector<Message>& messages, const std::vector<Tool>& tools) {
  std::string instructions;
  bool any_instructions = false;  // even an empty system message gives the section
  for (const Message& m : messages) {
    if (m.role != "system" && m.role != "developer") continue;
    instructions += (any_instructions ? "\n\n" : "") + m.content;
    any_instructions = true;
  }
  if (!any_instructions && tools.empty()) return "";
  std::string body;
  if (any_instructions) body += "# Instructions\n\n" + instructions;
  if (!tools.empty()) {
    if (!body.empty()) body += "\n\n";
    body += "# Tools\n\n## functions\n\nnamespace functions {\n\n";
    for (const Tool& tool : tools) body += tool_declaration(tool) + "\n\n";
    body += "} // namespace functions";
  }
  return std::string(kStart) + "developer" + std::string(kMessage) + body + std::string(kEnd);
}

std::string system_message(const RenderOptions& o, bool has_tools) {
  std::string body = o.model_identity + "\nKnowledge cutoff: " + o.knowledge_cutoff + "\n";
  if (!o.current_date.empty()) body += "Current date: " + o.current_date + "\n";
  body += "\nReasoning: " + o.reasoning_effort +
          "\n\n# Valid channels: analysis, commentary, final. Channel must be included for every message.";
  if (has_tools) body += "\nCalls to these tools must go to the commentary channel: 'functions'.";
  return std::string(kStart) + "system" + std::string(kMessage) + body + std::string(kEnd);
}

// One rendered message of the conversation, with its channel for the analysis rule.
struct Rendered {
  std::string text;
  std::string channel;
  bool from_assistant = false;
};

Rendered assistant_message(const std::string& channel, const std::string& text) {
  return {std::string(kStart) + "assistant" + std::string(kChannel) + channel + std::string(kMessage) + text +
              std::string(kEnd),
          channel, true};
}

}  // namespace

std::string tool_declaration(const Tool& tool) {
  std::string out = tool.description.empty() ? "" : comment_lines(tool.description, "");
  out += "type " + tool.name + " = ";
  if (tool.parameters.is_null()) return out + "() => any;";
  const bool object = tool.parameters.is_object() && tool.parameters.value("type", json()) == "object";
  out += "(_: " + (object ? object_expression(tool.parameters, "", false) : type_expression(tool.parameters, "")) +
         ") => any;";
  return out;
}

Result<std::string> render_for_completion(const std::vector<Message>& messages, const std::vector<Tool>& tools,
                                          const RenderOptions& options) {
  if (options.reasoning_effort != "low" && options.reasoning_effort != "medium" && options.reasoning_effort != "high") {
    return invalid_argument("reasoning effort '" + options.reasoning_effort + "' is not low, medium or high");
  }
  std::vector<Rendered> body;
  for (const Message& m : messages) {
    if (m.role == "system" || m.role == "developer") continue;  // the developer message's instructions
    if (m.role == "user") {
      body.push_back({std::string(kStart) + "user" + std::string(kMessage) + m.content + std::string(kEnd), "", false});
    } else if (m.role == "assistant") {
      if (!m.reasoning.empty()) body.push_back(assistant_message("analysis", m.reasoning));
      for (const ToolCall& call : m.tool_calls) {
        body.push_back({std::string(kStart) + "assistant to=functions." + call.name + std::string(kChannel) +
                            "commentary " + std::string(kConstrain) + "json" + std::string(kMessage) + call.arguments +
                            std::string(kCall),
                        "commentary", true});
      }
      if (!m.content.empty()) body.push_back(assistant_message("final", m.content));
    } else if (m.role == "tool") {
      if (m.tool_name.empty()) return invalid_argument("a tool message without the name of its function");
      body.push_back({std::string(kStart) + "functions." + m.tool_name + " to=assistant" + std::string(kChannel) +
                          "commentary" + std::string(kMessage) + m.content + std::string(kEnd),
                      "commentary", false});
    } else {
      return invalid_argument("role '" + m.role + "' has no harmony rendering");
    }
  }
  // The model never saw its reasoning of earlier turns: when the conversation's last
  // assistant message is a final answer, analysis before the first final answer is dropped.
  bool last_assistant_final = false;
  for (const Rendered& r : body) {
    if (r.from_assistant) last_assistant_final = r.channel == "final";
  }
  size_t first_final = body.size();
  for (size_t i = 0; i < body.size(); ++i) {
    if (body[i].channel == "final") {
      first_final = i;
      break;
    }
  }
  std::string out = system_message(options, !tools.empty()) + developer_message(messages, tools);
  for (size_t i = 0; i < body.size(); ++i) {
    if (last_assistant_final && i < first_final && body[i].channel == "analysis") continue;
    out += body[i].text;
  }
  return out + std::string(kStart) + "assistant";
}

}  // namespace tokenmill::tokenizer::harmony
