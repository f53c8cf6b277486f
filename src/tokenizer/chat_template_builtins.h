// Chat templates we ship for models whose GGUF file has no tokenizer.chat_template.
// Each is plain Jinja, written for tokenmill, rendered like any other template.
#pragma once

#include <string_view>

namespace tokenmill::tokenizer {

// Gemma: <bos>, the system message folded into the first user turn, turns as
// "<start_of_turn>ROLE\nCONTENT<end_of_turn>\n" with "assistant" written as "model",
// content trimmed, user/model strictly alternating.
extern const std::string_view kGemmaChatTemplate;
// ChatML (Qwen): "<|im_start|>ROLE\nCONTENT<|im_end|>\n" per message.
extern const std::string_view kChatMlChatTemplate;
// Llama 3: <|begin_of_text|>, then "<|start_header_id|>ROLE<|end_header_id|>\n\n
// CONTENT<|eot_id|>" per message, content trimmed.
extern const std::string_view kLlama3ChatTemplate;

// The built-in template named "gemma", "chatml" or "llama3"; empty when unknown.
std::string_view builtin_chat_template(std::string_view name);

}  // namespace tokenmill::tokenizer
