#include "tokenizer/spm_tokenizer.h"

#include <queue>
#include <string>

#include "tokenizer/unicode.h"

namespace tokenmill::tokenizer {

namespace {

// A run of bytes in a doubly linked list of symbols; merging empties the right symbol.
struct Symbol {
  int prev = -1;
  int next = -1;
  size_t begin = 0;   // offset in the text
  size_t length = 0;  // 0 once merged into the symbol on its left
};

// A candidate merge of symbols left and right (adjacent when queued).
struct Candidate {
  int left = 0;
  int right = 0;
  float score = 0.0f;
  size_t length = 0;  // bytes of the merged text; stale if the symbols changed since

  // Priority: higher score first, then the leftmost pair.
  bool operator<(const Candidate& other) const {
    if (score != other.score) return score < other.score;
    return left > other.left;
  }
};

}  // namespace

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
  std::vector<Symbol> symbols;
  for (size_t pos = 0; pos < text.size();) {
    const size_t length = std::min(utf8_sequence_length(static_cast<uint8_t>(text[pos])),
                                   text.size() - pos);
    Symbol symbol;
    symbol.begin = pos;
    symbol.length = length;
    symbol.prev = static_cast<int>(symbols.size()) - 1;
    pos += length;
    symbol.next = pos == text.size() ? -1 : static_cast<int>(symbols.size()) + 1;
    symbols.push_back(symbol);
  }

  std::priority_queue<Candidate> queue;
  const auto consider = [&](int left, int right) {
    if (left < 0 || right < 0) return;
    const size_t length = symbols[left].length + symbols[right].length;
    const std::optional<int32_t> id = vocab_->find(text.substr(symbols[left].begin, length));
    if (!id) return;
    queue.push(Candidate{left, right, vocab_->tokens[*id].score, length});
  };
  for (int i = 1; i < static_cast<int>(symbols.size()); ++i) consider(i - 1, i);

  while (!queue.empty()) {
    const Candidate best = queue.top();
    queue.pop();
    Symbol& left = symbols[best.left];
    Symbol& right = symbols[best.right];
    // Skip candidates that an earlier merge made stale.
    if (left.length == 0 || right.length == 0 || left.length + right.length != best.length) {
      continue;
    }
    left.length += right.length;
    right.length = 0;
    left.next = right.next;
    if (right.next >= 0) symbols[right.next].prev = best.left;
    consider(left.prev, best.left);
    consider(best.left, left.next);
  }

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
