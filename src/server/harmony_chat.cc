#include "server/harmony_chat.h"

#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include "base/log.h"
#include "server/api_error.h"

namespace tokenmill::server {

namespace harmony = tokenizer::harmony;

namespace {

std::string string_field(const Json& m, const char* key) {
  const auto it = m.find(key);
  return it != m.end() && it->is_string() ? it->get<std::string>() : std::string();
}

// A tool call as the routes hand it on (server/tool_calls.h's hermes syntax): the
// arguments as the object they are, or as text where they are not JSON.
std::string hermes_call(const harmony::ParsedMessage& m) {
  std::string name = m.recipient;
  if (name.starts_with("functions.")) name.erase(0, std::string_view("functions.").size());
  Json arguments = Json::parse(m.text, nullptr, /*allow_exceptions=*/false);
  if (arguments.is_discarded()) arguments = m.text;
  return "<tool_call>\n" + dump_json(Json{{"name", name}, {"arguments", arguments}}) + "\n</tool_call>";
}

bool is_call(const harmony::ParsedMessage& m) { return m.channel == "commentary" && !m.recipient.empty(); }

// The special tokens of the headers and ends the engine's grammars write.
std::vector<std::string> structural_tokens() {
  std::vector<std::string> out;
  for (std::string_view t : {harmony::kStart, harmony::kChannel, harmony::kMessage, harmony::kEnd, harmony::kConstrain}) {
    out.emplace_back(t);
  }
  return out;
}

}  // namespace

std::string harmony_chat_text(const Json& messages, const Json& tools, const std::string& effort,
                              const char* messages_param) {
  std::vector<harmony::Message> conversation;
  std::map<std::string, std::string> call_names;  // tool_call_id -> function
  std::vector<std::string> unanswered;            // calls without a result yet, in order
  for (size_t i = 0; i < messages.size(); ++i) {
    const Json& m = messages[i];
    const std::string where = std::string(messages_param) + "[" + std::to_string(i) + "]";
    harmony::Message message;
    message.role = string_field(m, "role");
    message.content = string_field(m, "content");
    for (const char* key : {"reasoning_content", "thinking", "reasoning"}) {
      if (message.reasoning.empty()) message.reasoning = string_field(m, key);
    }
    if (const auto calls = m.find("tool_calls"); calls != m.end() && calls->is_array()) {
      for (const Json& call : *calls) {
        const Json& function = call.is_object() ? call.value("function", Json::object()) : Json::object();
        const std::string name = string_field(function, "name");
        if (name.empty()) throw bad_request("'" + where + ".tool_calls' needs each call's function name", where);
        const Json arguments = function.value("arguments", Json::object());
        message.tool_calls.push_back({name, arguments.is_string() ? arguments.get<std::string>() : dump_json(arguments)});
        if (const std::string id = string_field(call, "id"); !id.empty()) call_names[id] = name;
        unanswered.push_back(name);
      }
    }
    if (message.role == "tool") {
      message.tool_name = string_field(m, "name");
      if (message.tool_name.empty()) message.tool_name = string_field(m, "tool_name");
      if (message.tool_name.empty()) {
        const auto it = call_names.find(string_field(m, "tool_call_id"));
        if (it != call_names.end()) message.tool_name = it->second;
      }
      // Ollama's tool messages may name nothing: the earliest call still unanswered.
      if (message.tool_name.empty() && !unanswered.empty()) message.tool_name = unanswered.front();
      if (auto it = std::find(unanswered.begin(), unanswered.end(), message.tool_name); it != unanswered.end()) {
        unanswered.erase(it);
      }
      if (message.tool_name.empty()) {
        throw bad_request("'" + where + "' names no function: give its 'name' (or 'tool_name'), or the "
                          "'tool_call_id' of an earlier call",
                          where);
      }
    }
    conversation.push_back(std::move(message));
  }
  std::vector<harmony::Tool> declared;
  if (tools.is_array()) {
    for (const Json& t : tools) {
      const Json& f = t.value("function", Json::object());
      declared.push_back({string_field(f, "name"), string_field(f, "description"), f.value("parameters", Json())});
    }
  }
  harmony::RenderOptions options;
  options.reasoning_effort = effort == "low" || effort == "medium" || effort == "high" ? effort
                             : effort.empty()                                        ? "medium"
                                                                                     : "low";
  auto text = harmony::render_for_completion(conversation, declared, options);
  if (!text.ok()) throw bad_request(text.status().message(), messages_param);
  return std::move(text).value();
}

engine::ReasoningSpec harmony_reasoning_span(bool before_call) {
  engine::ReasoningSpec spec;
  spec.open = std::string(harmony::kChannel) + "analysis" + std::string(harmony::kMessage);
  spec.close = std::string(harmony::kEnd) + std::string(harmony::kStart) + "assistant";
  if (!before_call) spec.close += std::string(harmony::kChannel) + "final" + std::string(harmony::kMessage);
  spec.close_on_own_line = false;
  spec.whole_tokens = structural_tokens();
  spec.max_gap = 0;  // the close ends in the next message's header: its text follows at once
  return spec;
}

engine::ToolCallSpec::Header harmony_call_header() {
  return {std::string(harmony::kChannel) + "commentary to=functions.", ' ',
          std::string(harmony::kConstrain) + "json" + std::string(harmony::kMessage), structural_tokens()};
}

HarmonySplitter::HarmonySplitter(std::string_view prefix) {
  if (!prefix.empty()) (void)feed(prefix);  // a header: nothing to give out
}

void HarmonySplitter::route(const harmony::StreamParser::Update& update, Parts& out) {
  for (const auto& piece : update.pieces) {
    if (piece.message.channel == "analysis") {
      out.reasoning += piece.text;
    } else if (!is_call(piece.message)) {
      out.content += piece.text;  // the answer, or a preamble the user may see
    }
  }
  for (const harmony::ParsedMessage& m : update.ended) {
    if (is_call(m)) out.content += hermes_call(m);
  }
}

OutputSplitter::Parts HarmonySplitter::feed(std::string_view text) {
  Parts out;
  if (failed_) {
    out.content = std::string(text);
    return out;
  }
  auto update = parser_.feed(text);
  if (!update.ok()) {
    log_warn("harmony: the model's output left the format (" + update.status().message() +
             "); the rest of it is returned as content");
    failed_ = true;
    out.content = std::string(parser_.pending());  // this piece and what was held back
    return out;
  }
  route(*update, out);
  return out;
}

OutputSplitter::Parts HarmonySplitter::finish() {
  Parts out;
  if (failed_) return out;
  auto rest = parser_.finish();
  if (rest.ok()) {
    route(*rest, out);
  } else {
    log_warn("harmony: the model's output left the format (" + rest.status().message() +
             "); the rest of it is returned as content");
    out.content = std::string(parser_.pending());  // an unfinished header: not harmony after all
  }
  return out;
}

}  // namespace tokenmill::server
