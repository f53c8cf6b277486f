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

  struct Frame {
    int32_t rule = 0;
    int32_t alternative = 0;
    int32_t position = 0;  // the next element; while a callee runs, the element that called it
    int32_t count = 0;      // at a repeat: iterations begun; at a count: marks so far
    bool operator==(const Frame&) const = default;
  };
  // Every live stack, back to back: stack i is frames[ends[i-1], ends[i]), its top last.
  // Stacks are kept normalized: a frame at an unbounded repeat or count that has reached
  // its minimum holds exactly the minimum (what follows cannot tell more from it), so
  // the state inside a free string or an unbounded array is the same at every length.
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
    bool operator==(const StackSet& o) const { return accepted == o.accepted && ends == o.ends && frames == o.frames; }
    uint64_t hash() const;
  };

  // The parses now (engine/grammar_token_masks.h reads them).
  const StackSet& state() const { return state_; }
  // next = the parses of `from` that take byte b, expanded (the step allows() and
  // advance() take, byte by byte).
  void step(const StackSet& from, unsigned char b, StackSet& next) const;
  const std::shared_ptr<const Grammar>& grammar() const { return grammar_; }

 private:
  class Expander;

  void refresh_first_bytes();

  std::shared_ptr<const Grammar> grammar_;
  StackSet state_;
  ByteSet first_bytes_;  // the bytes some stack's top allows
};

}  // namespace tokenmill::engine
