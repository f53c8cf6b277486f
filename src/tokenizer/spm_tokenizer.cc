#include "tokenizer/spm_tokenizer.h"

#include <string>

#include "tokenizer/symbol_merge.h"
#include "tokenizer/unicode.h"

namespace tokenmill::tokenizer {

std::string escape_spaces(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    if (c == ' ') {
      out += "\xE2\x96\x81";
    } else {
      out.push_back(c);
    }
  }
  return out;
}

void SpmTokenizer::encode(std::string_view text, std::vector<int32_t>& out) const {
  std::vector<MergeSymbol> symbols = character_symbols(text);
  // A pair merges when the vocabulary has its text; higher scores first.
  merge_symbols<float>(symbols, [&](int left, int right) -> std::optional<float> {
    const std::optional<int32_t> id =
        vocab_->find(text.substr(symbols[left].begin, symbols[left].length + symbols[right].length));
    if (!id) return std::nullopt;
    return vocab_->tokens[*id].score;
  });

  for (int i = symbols.empty() ? -1 : 0; i != -1; i = symbols[i].next) {
    const std::string_view piece = text.substr(symbols[i].begin, symbols[i].length);
    if (const std::optional<int32_t> id = vocab_->find(piece)) {
      out.push_back(*id);
      continue;
    }
    // Only a single character can get here (every merge produced a token): spell it in
    // byte tokens. A byte the vocabulary cannot express is dropped.
    for (char c : piece) {
      if (const std::optional<int32_t> id = vocab_->byte_token(static_cast<uint8_t>(c))) {
        out.push_back(*id);
      }
    }
  }
}

}  // namespace tokenmill::tokenizer
