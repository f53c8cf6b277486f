// The merge loop shared by the BPE and SentencePiece tokenizers: a text split into
// symbols (one UTF-8 character each, a doubly linked list of byte ranges) whose adjacent
// pairs are merged best first, until no pair may merge. The tokenizers differ only in
// which pairs may merge and which is best (BPE: the lowest merge rank; SentencePiece: the
// highest vocabulary score); ties go to the leftmost pair.
#pragma once

#include <algorithm>
#include <cstddef>
#include <optional>
#include <queue>
#include <string_view>
#include <vector>

#include "tokenizer/unicode.h"

namespace tokenmill::tokenizer {

struct MergeSymbol {
  int prev = -1;
  int next = -1;
  size_t begin = 0;   // offset in the text
  size_t length = 0;  // 0 once merged into the symbol on its left
};

// The text's characters as symbols, linked in order.
inline std::vector<MergeSymbol> character_symbols(std::string_view text) {
  std::vector<MergeSymbol> symbols;
  for (size_t pos = 0; pos < text.size();) {
    const size_t length = std::min(utf8_sequence_length(static_cast<uint8_t>(text[pos])), text.size() - pos);
    MergeSymbol symbol;
    symbol.begin = pos;
    symbol.length = length;
    symbol.prev = static_cast<int>(symbols.size()) - 1;
    pos += length;
    symbol.next = pos == text.size() ? -1 : static_cast<int>(symbols.size()) + 1;
    symbols.push_back(symbol);
  }
  return symbols;
}

// Merges `symbols` in place. priority_of(left, right) gives the priority of merging the
// adjacent symbols with those indices (larger merges first), or nullopt where they may
// not merge. Afterwards the surviving symbols are those reached from index 0 by `next`.
template <typename Priority, typename PriorityOf>
void merge_symbols(std::vector<MergeSymbol>& symbols, PriorityOf&& priority_of) {
  struct Candidate {
    int left = 0;
    int right = 0;
    Priority priority{};
    size_t length = 0;  // bytes of the merged text; stale if the symbols changed since

    bool operator<(const Candidate& other) const {
      if (priority != other.priority) return priority < other.priority;
      return left > other.left;
    }
  };
  std::priority_queue<Candidate> queue;
  const auto consider = [&](int left, int right) {
    if (left < 0 || right < 0) return;
    const std::optional<Priority> priority = priority_of(left, right);
    if (!priority) return;
    queue.push(Candidate{left, right, *priority, symbols[left].length + symbols[right].length});
  };
  for (int i = 1; i < static_cast<int>(symbols.size()); ++i) consider(i - 1, i);

  while (!queue.empty()) {
    const Candidate best = queue.top();
    queue.pop();
    MergeSymbol& left = symbols[best.left];
    MergeSymbol& right = symbols[best.right];
    // Symbols only grow, so an unchanged total length means neither side has changed.
    if (left.length == 0 || right.length == 0 || left.length + right.length != best.length) continue;
    left.length += right.length;
    right.length = 0;
    left.next = right.next;
    if (right.next >= 0) symbols[right.next].prev = best.left;
    consider(left.prev, best.left);
    consider(best.left, left.next);
  }
}

}  // namespace tokenmill::tokenizer
