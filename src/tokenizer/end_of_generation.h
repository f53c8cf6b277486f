// Which token texts end a generation besides the vocabulary's EOS id: the end-of-turn
// markers of the chat formats in use (Gemma's <end_of_turn>, Llama 3's <|eot_id|>,
// ChatML's <|im_end|> ...). GGUF files do not list them, so they are known by name.
#pragma once

#include <string_view>

namespace tokenmill::tokenizer {

bool is_end_of_generation_text(std::string_view text);

}  // namespace tokenmill::tokenizer
