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
  const Vocab* vocab_;
  std::vector<int32_t> ids_;  // special tokens, longest text first
};

}  // namespace tokenmill::tokenizer
