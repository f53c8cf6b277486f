#include "tokenizer/end_of_generation.h"

#include <array>

namespace tokenmill::tokenizer {

bool is_end_of_generation_text(std::string_view text) {
  static constexpr std::array<std::string_view, 14> kMarkers = {
      "<end_of_turn>",   // Gemma
      "<|eot_id|>",      // Llama 3
      "<|eom_id|>",      // Llama 3 tool calls
      "<|end_of_text|>", // Llama 3 base
      "<|im_end|>",      // ChatML: Qwen, SmolLM
      "<|endoftext|>",   // GPT-2, Qwen base
      "<|end|>",         // Phi-3
      "<EOT>",           // CodeLlama infill
      "_<EOT>",
      "<|return|>",      // gpt-oss
      "<|call|>",
      "<end_of_utterance>",
      "<eos>",
      "</s>",
  };
  for (std::string_view marker : kMarkers) {
    if (text == marker) return true;
  }
  return false;
}

}  // namespace tokenmill::tokenizer
