// Chat templates: turning a list of messages into the prompt text a model was trained on.
//
// Templates are Jinja, as in HF's tokenizer_config.json and GGUF's tokenizer.chat_template,
// rendered the way HF renders them (trim_blocks, lstrip_blocks, raise_exception, loop
// controls) by the interpreter in jinja_*.{h,cc}. Models whose GGUF file carries no
// template get a built-in one chosen from their vocabulary (chat_template_builtins.h).
//
// A ChatTemplate is immutable after parse(); render() may run on many threads at once.
#pragma once

#include <string>
#include <vector>

#include "base/status.h"
#include "gguf/gguf_file.h"
#include "tokenizer/jinja_eval.h"

namespace tokenmill::tokenizer {

struct ChatMessage {
  std::string role;     // "system", "user", "assistant", "tool", ...
  std::string content;
};

class ChatTemplate {
 public:
  // InvalidArgument naming the line and construct on a syntax error, an unknown tag,
  // filter or test.
  static Result<ChatTemplate> parse(std::string source);

  // The prompt for `messages`. add_generation_prompt appends the header that opens the
  // assistant's turn. InvalidArgument when the template raises (raise_exception, e.g.
  // roles that do not alternate) or fails at run time; the message names the line.
  Result<std::string> render(const std::vector<ChatMessage>& messages, bool add_generation_prompt,
                             const std::string& bos_token, const std::string& eos_token) const;

  // Lower level: renders with arbitrary variables (messages with tool calls, tools, ...).
  Result<std::string> render_variables(const jinja::Dict& variables) const;

  const std::string& source() const { return source_; }

 private:
  std::string source_;
  jinja::Template template_;
};

// The model's chat template: tokenizer.chat_template from the GGUF metadata if present,
// else a built-in template chosen by the vocabulary's turn tokens (<start_of_turn>:
// Gemma, <|im_start|>: ChatML, <|start_header_id|>: Llama 3). NotFound when neither.
Result<ChatTemplate> chat_template_for_model(const gguf::File& file);

}  // namespace tokenmill::tokenizer
