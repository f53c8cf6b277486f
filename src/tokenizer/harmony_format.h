// The harmony format gpt-oss speaks: rendering a chat into its prompt, and parsing what the
// model writes back while it streams.
//
// A harmony message is `<|start|>ROLE[ to=RECIPIENT]<|channel|>CHANNEL[ to=RECIPIENT]
// [ CONTENT_TYPE]<|message|>TEXT` ended by `<|end|>`, `<|call|>` (a tool call) or
// `<|return|>` (the last message of a turn). The assistant writes on three channels:
// `analysis` (its reasoning), `commentary` (tool calls, addressed to functions.NAME, and
// preambles the user may see) and `final` (the answer). The system message holds the model
// identity, the reasoning effort and the channels; the developer message the instructions
// and the tools, as TypeScript-like declarations in a `functions` namespace.
//
// The chat request maps to harmony as vLLM and Ollama map it: system and developer
// messages become the developer message's instructions, an assistant's reasoning an
// analysis message, its content a final message, each tool call a commentary message to
// functions.NAME of content type `<|constrain|>json`, a tool result a message from
// functions.NAME to the assistant. Reasoning is kept only after the conversation's last
// final answer, as openai-harmony drops it (the model never saw its earlier reasoning).
//
// Checked against OpenAI's openai-harmony library (tools/make_harmony_fixtures.py).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/status.h"

namespace tokenmill::tokenizer::harmony {

struct ToolCall {
  std::string name;       // the function
  std::string arguments;  // JSON text, as the client sent it
};

struct Message {
  std::string role;  // system, developer, user, assistant, tool
  std::string content;
  std::string reasoning;            // assistant: its reasoning (analysis channel)
  std::vector<ToolCall> tool_calls;  // assistant
  std::string tool_name;            // tool: the function whose result this is
};

struct Tool {
  std::string name;
  std::string description;
  nlohmann::ordered_json parameters;  // JSON Schema of the arguments (member order kept); null: none
};

struct RenderOptions {
  std::string reasoning_effort = "medium";  // low, medium, high
  std::string model_identity = "You are ChatGPT, a large language model trained by OpenAI.";
  std::string knowledge_cutoff = "2024-06";
  std::string current_date;  // "": not stated
};

// The prompt for the assistant's next message: the conversation, then `<|start|>assistant`.
// InvalidArgument for an unknown role or reasoning effort, or a tool message without the
// function's name.
Result<std::string> render_for_completion(const std::vector<Message>& messages, const std::vector<Tool>& tools,
                                          const RenderOptions& options);

// TypeScript-like declaration of one tool's arguments, as the developer message lists it
// ("() => any" without parameters).
std::string tool_declaration(const Tool& tool);

// The special token texts of the format.
inline constexpr std::string_view kStart = "<|start|>";
inline constexpr std::string_view kChannel = "<|channel|>";
inline constexpr std::string_view kMessage = "<|message|>";
inline constexpr std::string_view kEnd = "<|end|>";
inline constexpr std::string_view kCall = "<|call|>";
inline constexpr std::string_view kReturn = "<|return|>";
inline constexpr std::string_view kConstrain = "<|constrain|>";

// One parsed message of the model's output.
struct ParsedMessage {
  std::string channel;       // analysis, commentary or final
  std::string recipient;     // "functions.get_weather"; "" when none
  std::string content_type;  // "<|constrain|>json", "json"; "" when none
  std::string text;
  std::string_view terminator;  // kEnd, kCall or kReturn; empty while the message is open
};

// What the model writes after `<|start|>assistant`, parsed as it streams. feed() takes
// text in pieces of any size (special tokens as their text, possibly split across
// pieces) and returns what became known: new text of the open message and the messages
// that ended. Text that may be the start of a terminator is held back until the next
// piece tells.
class StreamParser {
 public:
  struct Update {
    // New text, in the order written, each piece with the header of the message it
    // belongs to (`message.text` is left empty: a piece never copies what came before it).
    struct Piece {
      ParsedMessage message;
      std::string text;
    };
    std::vector<Piece> pieces;
    // Messages that ended in this piece, whole.
    std::vector<ParsedMessage> ended;
  };

  // InvalidArgument on output that is not harmony: an unknown channel, a role other than
  // the assistant's, text between messages, a header that never ends. After an error
  // the parser stays failed.
  Result<Update> feed(std::string_view piece);
  // The end of the output: what was held back, and the message still open (the model's
  // last, whose <|return|> or <|call|> ends the generation and is not in the text; or
  // one cut by the length limit), ended unterminated.
  Result<Update> finish();

  // The message being written, if its header is complete.
  const std::optional<ParsedMessage>& open_message() const { return open_; }
  // Text fed but not given out yet (a header, a possible terminator; after an error,
  // what the parser could not read).
  std::string_view pending() const { return pending_; }

 private:
  enum class Phase { kHeader, kBody, kBetween };

  Status parse_header(std::string_view header);
  Status fail(std::string message);

  Phase phase_ = Phase::kHeader;  // the prompt ended with <|start|>assistant
  bool first_ = true;             // the first header's role was in the prompt
  std::string pending_;
  std::optional<ParsedMessage> open_;
  Status error_;
};

// A whole output at once.
Result<std::vector<ParsedMessage>> parse_completion(std::string_view completion);

}  // namespace tokenmill::tokenizer::harmony
