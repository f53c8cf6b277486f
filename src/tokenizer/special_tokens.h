// Finding special tokens in raw text before the subword algorithm runs, the way
// llama.cpp does: every control, user-defined and unknown token is a literal string;
// longer tokens are cut out first, each over every remaining stretch of plain text, so
// "<start_of_turn>" wins over any shorter token inside it and plain text between the
// cuts is tokenized on its own.
//
// User-defined tokens (Gemma's "\n\n", runs of spaces, HTML tags) are always cut out;
// control and unknown tokens only when the caller parses special tokens.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "tokenizer/vocab.h"

namespace tokenmill::tokenizer {

// One piece of the partitioned text: either a special token or a stretch of plain text.
struct Fragment {
  int32_t token = kNoToken;  // the special token, or kNoToken for plain text
  size_t begin = 0;          // plain text: [begin, end) of the input
  size_t end = 0;

  bool is_token() const { return token != kNoToken; }
};

class SpecialTokenSplitter {
 public:
  // REQUIRES: vocab outlives the splitter.
  explicit SpecialTokenSplitter(const Vocab& vocab);

  std::vector<Fragment> split(std::string_view text, bool parse_special) const;

 private:
  // Marks present[i] for every ids_[i] whose text occurs somewhere in text: one pass
  // over the text with a trie, so the cutting loop only visits the few tokens that can
  // match instead of all of them (Gemma has over 6,000).
  void find_present(std::string_view text, std::vector<bool>& present) const;

  const Vocab* vocab_;
  std::vector<int32_t> ids_;  // special tokens, longest text first

  // A byte trie of the special texts. Node 0 is the root; an edge is keyed by
  // (node << 8 | byte). ends_[node] lists the indexes into ids_ whose text ends there.
  std::unordered_map<uint64_t, int32_t> edges_;
  std::vector<std::vector<int32_t>> ends_;
};

}  // namespace tokenmill::tokenizer
