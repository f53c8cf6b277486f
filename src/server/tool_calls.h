// Function calling on /v1/chat/completions and /api/chat: the request's tools and
// tool_choice, the prompt that tells the model about them, and the tool calls read back
// out of what it wrote.
//
// Each model family writes calls in its own syntax; the chat template tells which:
//   hermes   <tool_call>\n{"name": ..., "arguments": {...}}\n</tool_call>  (Qwen 2.5/3, Hermes)
//   llama3   {"name": ..., "parameters": {...}}, optionally after <|python_tag|>  (Llama 3.1+)
//   mistral  [TOOL_CALLS][{"name": ..., "arguments": {...}}, ...]
//   builtin  for templates that know no tools (Gemma 3's): the tools are described in the
//            system prompt by tokenmill, and calls are written in the hermes syntax.
//   harmony  gpt-oss: commentary messages to functions.NAME (server/harmony_chat.h), which
//            its output splitter hands on in the hermes syntax.
// With tool_choice "required", a named function, or any tool marked strict, the output
// is constrained to a valid call (engine/tool_call_grammar.h); with "auto" the grammar
// takes over once the model opens a call.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "engine/tool_call_grammar.h"
#include "server/json_fields.h"

namespace tokenmill::server {

enum class ToolSyntax { kHermes, kLlama3, kMistral, kBuiltin, kHarmony };
const char* tool_syntax_name(ToolSyntax syntax);

// The syntax a chat template's model writes calls in (kBuiltin when it knows no tools).
ToolSyntax tool_syntax_for_template(std::string_view template_source);

struct ToolDefinition {
  std::string name;
  std::string description;
  Json parameters;  // a JSON schema object; null when the tool takes none
  bool strict = false;
};

struct ToolRequest {
  std::vector<ToolDefinition> tools;
  enum class Choice { kNone, kAuto, kRequired, kNamed } choice = Choice::kAuto;
  std::string named;     // kNamed: the function
  bool parallel = true;  // parallel_tool_calls
  // The calls are constrained to the grammar from the first byte (the prompt ends with
  // the syntax's opener): required, named, or a strict tool among them.
  bool forced() const;
};

// tools / tool_choice / parallel_tool_calls of a chat request; nullopt when it has no
// tools. Throws ApiError (400) naming the field: a malformed tool, a duplicate or invalid
// name, tool_choice naming no tool, tool_choice without tools.
std::optional<ToolRequest> read_tool_request(const Fields& f);

// The grammar's spec for these tools in this syntax. Throws ApiError (400) naming the
// construct when a parameters schema cannot be enforced.
std::shared_ptr<const engine::ToolCallSpec> tool_call_spec(const ToolRequest& tools, ToolSyntax syntax);

// What the prompt ends with when a call is forced: the model's opening syntax.
std::string forced_call_opener(ToolSyntax syntax);

// The system-prompt text describing the tools and how to call them (kBuiltin).
std::string builtin_tool_prompt(const ToolRequest& tools);

// The messages of a chat request as the chat template sees them: assistant tool_calls
// with their arguments parsed into objects (as Hugging Face templates expect), tool
// messages with their tool_call_id. For kBuiltin the calls and results become text of
// the assistant and user turns, and the tool prompt joins the system message. Throws
// ApiError naming the message when one is malformed (a tool message without
// tool_call_id, tool_calls that are not a list of functions). Ollama's tool messages
// carry no tool_call_id: ids_required false.
Json template_messages(const Json& messages, const ToolRequest* tools, ToolSyntax syntax, bool ids_required = true);

struct ParsedToolCall {
  std::string name;
  std::string arguments;  // the arguments object as compact JSON text
};
struct ParsedOutput {
  std::string content;                // the text outside the calls (trimmed)
  std::vector<ParsedToolCall> calls;  // empty: the output is plain text
};

// The calls in a model's output. forced: the text is one call without its opener. A call
// that does not parse, or names a tool not in `tools`, leaves the whole output as text.
ParsedOutput parse_tool_calls(std::string_view text, ToolSyntax syntax, const ToolRequest& tools, bool forced);

}  // namespace tokenmill::server
