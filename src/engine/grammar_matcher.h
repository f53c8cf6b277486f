// Runs a byte grammar (engine/grammar.h) over the text as it is generated: the state is
// the set of every parse still possible, each a stack of frames (a rule's alternative
// and the position in it), with the top frame at a byte element. A byte keeps the
// stacks whose top allows it, each expanded until its top is again at a byte (or the
// grammar's root has ended: the text so far is accepted). Ambiguous grammars (unanchored
// patterns, overlapping anyOf alternatives) simply keep several stacks; equal stacks are
// merged, so their number is bounded by the grammar's positions, not by the text.
//
// Bounds: a stack deeper than kMaxDepth frames is dropped (it bounds recursive $refs),
// at most kMaxStacks parses are kept, and each byte may cost at most kMaxExpansions
// expansion steps. Each bound only ever removes parses, so whatever is accepted is still
// in the grammar.
//
// Thread-safety: a value; the Grammar it reads is shared and immutable.
#pragma once

#include <cstdint>
#include <memory>
#include <string_view>
#include <vector>

#include "engine/grammar.h"

namespace tokenmill::engine {

class GrammarMatcher {
 public:
  static constexpr size_t kMaxDepth = 192;
  static constexpr size_t kMaxStacks = 2048;
  static constexpr int kMaxExpansions = 200000;

  explicit GrammarMatcher(std::shared_ptr<const Grammar> grammar);

  // True if every byte of text is allowed next (the state is not changed).
  bool allows(std::string_view text) const;
  // Feeds text. REQUIRES: allows(text).
  void advance(std::string_view text);
  // The text so far is a whole sentence of the grammar.
  bool accepts_end() const { return state_.accepted; }
  // It is, and no byte may follow.
  bool complete() const { return state_.accepted && state_.ends.empty(); }
  // The bytes that may come next.
  const ByteSet& next_bytes() const { return first_bytes_; }

 private:
  struct Frame {
    int32_t rule = 0;
    int32_t alternative = 0;
    int32_t position = 0;  // the next element; while a callee runs, the element that called it
    int32_t count = 0;      // at a repeat: iterations begun; at a count: marks so far
    bool operator==(const Frame&) const = default;
  };
  // Every live stack, back to back: stack i is frames[ends[i-1], ends[i]), its top last.
  struct StackSet {
    std::vector<Frame> frames;
    std::vector<uint32_t> ends;
    std::vector<uint64_t> hashes;  // per stack, to merge equal ones
    bool accepted = false;
    void clear() {
      frames.clear();
      ends.clear();
      hashes.clear();
      accepted = false;
    }
  };
  class Expander;

  // next = the parses of `from` that take byte b, expanded.
  void step(const StackSet& from, unsigned char b, StackSet& next) const;
  void refresh_first_bytes();

  std::shared_ptr<const Grammar> grammar_;
  StackSet state_;
  ByteSet first_bytes_;  // the bytes some stack's top allows
};

}  // namespace tokenmill::engine
