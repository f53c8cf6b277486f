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

  ends_.emplace_back();  // the root
  for (size_t i = 0; i < ids_.size(); ++i) {
    int32_t node = 0;
    for (const char c : vocab.tokens[ids_[i]].text) {
      const uint64_t key = (static_cast<uint64_t>(node) << 8) | static_cast<uint8_t>(c);
      const auto [it, inserted] = edges_.try_emplace(key, static_cast<int32_t>(ends_.size()));
      if (inserted) ends_.emplace_back();
      node = it->second;
    }
    ends_[node].push_back(static_cast<int32_t>(i));
  }
}

void SpecialTokenSplitter::find_present(std::string_view text, std::vector<bool>& present) const {
  present.assign(ids_.size(), false);
  for (size_t start = 0; start < text.size(); ++start) {
    int32_t node = 0;
    for (size_t pos = start; pos < text.size(); ++pos) {
      const uint64_t key = (static_cast<uint64_t>(node) << 8) | static_cast<uint8_t>(text[pos]);
      const auto it = edges_.find(key);
      if (it == edges_.end()) break;
      node = it->second;
      for (const int32_t index : ends_[node]) present[index] = true;
    }
  }
}

std::vector<Fragment> SpecialTokenSplitter::split(std::string_view text,
                                                  bool parse_special) const {
  std::list<Fragment> fragments;
  if (!text.empty()) fragments.push_back(Fragment{kNoToken, 0, text.size()});

  std::vector<bool> present;
  find_present(text, present);
  for (size_t index = 0; index < ids_.size(); ++index) {
    if (!present[index]) continue;  // cannot occur in any part of text
    const int32_t id = ids_[index];
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
