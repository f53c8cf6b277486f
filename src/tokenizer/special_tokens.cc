#include "tokenizer/special_tokens.h"

#include <algorithm>
#include <list>

namespace tokenmill::tokenizer {

SpecialTokenSplitter::SpecialTokenSplitter(const Vocab& vocab) : vocab_(&vocab) {
  for (int32_t id = 0; id < vocab.n_tokens(); ++id) {
    const TokenType type = vocab.tokens[id].type;
    if (type == TokenType::kControl || type == TokenType::kUserDefined ||
        type == TokenType::kUnknown) {
      ids_.push_back(id);
    }
  }
  // Longest first. Among tokens of equal length the order is std::sort's (not stable):
  // llama.cpp orders them with this same call on this same id list, and the order only
  // matters when two equal-length tokens overlap in the text.
  std::sort(ids_.begin(), ids_.end(), [&vocab](int32_t a, int32_t b) {
    return vocab.tokens[a].text.size() > vocab.tokens[b].text.size();
  });
}

std::vector<Fragment> SpecialTokenSplitter::split(std::string_view text,
                                                  bool parse_special) const {
  std::list<Fragment> fragments;
  if (!text.empty()) fragments.push_back(Fragment{kNoToken, 0, text.size()});

  for (const int32_t id : ids_) {
    const TokenData& token = vocab_->tokens[id];
    if (!parse_special && token.type != TokenType::kUserDefined) continue;
    const std::string_view needle = token.text;
    for (auto it = fragments.begin(); it != fragments.end(); ++it) {
      if (it->is_token()) continue;
      // Cut every occurrence out of this stretch, left to right; the pieces replace it.
      size_t begin = it->begin;
      const size_t end = it->end;
      size_t match = text.substr(0, end).find(needle, begin);
      if (match == std::string_view::npos) continue;
      while (match != std::string_view::npos) {
        if (match > begin) fragments.insert(it, Fragment{kNoToken, begin, match});
        fragments.insert(it, Fragment{id, 0, 0});
        begin = match + needle.size();
        match = begin < end ? text.substr(0, end).find(needle, begin) : std::string_view::npos;
      }
      if (begin < end) {
        it->begin = begin;  // the remainder stays in place and is not searched again
      } else {
        it = fragments.erase(it);
        --it;
      }
    }
  }
  return {fragments.begin(), fragments.end()};
}

}  // namespace tokenmill::tokenizer
