// Chats with a harmony model (gpt-oss) through the OpenAI and Ollama routes: the prompt
// rendered by tokenizer/harmony_format.h in place of a chat template, and the model's
// channels read back as the routes' reasoning and answer:
//   analysis                          -> reasoning_content / thinking
//   final, commentary without a recipient (a preamble the user may see) -> content
//   commentary to=functions.NAME      -> a tool call, handed on as hermes-syntax text
//                                        (<tool_call>{"name", "arguments"}</tool_call>)
//                                        that the routes' tool-call reading takes apart
//                                        (ToolSyntax::kHarmony)
// A forced call (tool_choice "required" or a named function) lets the model reason in
// its analysis message, then constrains the next message to a call:
//   <|channel|>commentary to=functions.NAME <|constrain|>json<|message|>ARGS
// Output that is not harmony (a model that strays from the format) is not lost: from the
// first byte the parser cannot read, the rest of the text is content.
#pragma once

#include <string>
#include <string_view>

#include "engine/reasoning_grammar.h"
#include "engine/tool_call_grammar.h"
#include "server/json_fields.h"
#include "server/reasoning.h"
#include "tokenizer/harmony_format.h"

namespace tokenmill::server {

// The harmony prompt of a chat: messages as the routes pass them (system, developer,
// user, assistant with content and tool_calls whose arguments are JSON text or an
// object, tool with its function named by "name", "tool_name" or the tool_call_id of an
// earlier call), tools as OpenAI function definitions (null: none), the reasoning effort
// ("" or "none"/"minimal": the lowest harmony has, low). Throws ApiError 400 naming
// messages_param for a message harmony cannot carry.
std::string harmony_chat_text(const Json& messages, const Json& tools, const std::string& effort,
                              const char* messages_param);

// The analysis message as a reasoning span (open: its header after <|start|>assistant;
// close: its end and the final message's header, or with before_call its end and the
// next message's <|start|>assistant, whose header the call's grammar writes), for the
// grammar of a thinking budget, a constrained answer or a forced call.
engine::ReasoningSpec harmony_reasoning_span(bool before_call = false);

// A call's message header as the tool-call grammar writes it, from its channel on.
engine::ToolCallSpec::Header harmony_call_header();

class HarmonySplitter final : public OutputSplitter {
 public:
  // prefix: what the prompt wrote of the model's first message after <|start|>assistant
  // (ChatPrompt::harmony_prefix).
  explicit HarmonySplitter(std::string_view prefix = "");

  Parts feed(std::string_view text) override;
  Parts finish() override;

 private:
  void route(const tokenizer::harmony::StreamParser::Update& update, Parts& out);

  tokenizer::harmony::StreamParser parser_;
  bool failed_ = false;  // the output strayed from harmony: the rest is content
};

}  // namespace tokenmill::server
