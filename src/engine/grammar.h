// A context-free grammar over bytes, the form every constrained output is compiled into
// (JSON schemas, regular expressions inside them, numeric ranges): rules of alternatives,
// each alternative a sequence of elements. engine/grammar_matcher.h runs it.
//
// Elements:
//   bytes(set)            one byte out of a set
//   rule(r)               rule r, once
//   repeat(r, min, max)   rule r, min..max times (r must not match the empty text: the
//                         matcher would spin through empty iterations)
//   count(r, c, min, max) rule r once, while counting the marks of counter c written
//                         inside it: the text is refused as soon as more than max are
//                         written, and r may end only after at least min (e.g. the
//                         characters of a string whose pattern and maxLength both hold)
//   mark(c)               no text: one more mark for the innermost count() of counter c
//
// Invariants the builder keeps and the matcher relies on: no rule is left-recursive
// (the matcher bounds its work anyway), and every rule id is one add_rule() returned.
//
// Thread-safety: built by one thread, then immutable and shared.
#pragma once

#include <bitset>
#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace tokenmill::engine {

using ByteSet = std::bitset<256>;

struct GrammarElement {
  enum class Kind : uint8_t { kBytes, kRule, kRepeat, kCount, kMark };
  Kind kind = Kind::kBytes;
  int32_t id = 0;       // kBytes: a byte set; kRule / kRepeat / kCount: a rule; kMark: a counter
  int32_t min = 0;      // kRepeat: iterations; kCount: marks
  int32_t max = 0;
  int32_t counter = 0;  // kCount: the counter whose marks it counts
};

class Grammar {
 public:
  using Sequence = std::vector<GrammarElement>;
  static constexpr int32_t kUnbounded = INT32_MAX;

  // A new rule with no alternatives yet (it matches nothing until it has one).
  int32_t add_rule();
  void add_alternative(int32_t rule, Sequence sequence);
  // A rule with these alternatives.
  int32_t rule_of(std::vector<Sequence> alternatives);
  int32_t new_counter() { return n_counters_++; }

  GrammarElement bytes(const ByteSet& set);
  GrammarElement byte(unsigned char b);
  static GrammarElement rule(int32_t r) { return {GrammarElement::Kind::kRule, r, 0, 0, 0}; }
  static GrammarElement repeat(int32_t r, int32_t min, int32_t max) {
    return {GrammarElement::Kind::kRepeat, r, min, max, 0};
  }
  static GrammarElement count(int32_t r, int32_t counter, int32_t min, int32_t max) {
    return {GrammarElement::Kind::kCount, r, min, max, counter};
  }
  static GrammarElement mark(int32_t counter) { return {GrammarElement::Kind::kMark, counter, 0, 0, 0}; }
  // The bytes of text, one element each.
  Sequence literal(std::string_view text);

  // For every count() of the grammar: the fewest and the most marks of its counter each
  // rule it can reach can write (into that count, not into a nested one of the same
  // counter; kManyMarks: no bound). The matcher drops a parse that could only end outside
  // a count's bounds. Call once, when built.
  static constexpr int64_t kManyMarks = INT64_MAX / 4;
  void compute_mark_bounds();
  // Where not computed: 0 and kManyMarks (no pruning: always safe).
  int64_t min_marks(int32_t rule, int32_t counter) const { return find_marks(min_marks_, rule, counter, 0); }
  int64_t max_marks(int32_t rule, int32_t counter) const { return find_marks(max_marks_, rule, counter, kManyMarks); }
  // The same for one element.
  int64_t element_marks(const GrammarElement& e, int32_t counter, bool most) const;

  const std::vector<Sequence>& alternatives(int32_t rule) const { return rules_[static_cast<size_t>(rule)]; }
  const ByteSet& byte_set(int32_t id) const { return byte_sets_[static_cast<size_t>(id)]; }
  int64_t n_elements() const { return n_elements_; }

  int32_t root = -1;

 private:
  std::vector<std::vector<Sequence>> rules_;
  std::vector<ByteSet> byte_sets_;  // interned: equal sets share an id
  std::unordered_map<ByteSet, int32_t> byte_set_ids_;
  // (counter << 32 | rule) -> fewest / most marks
  std::unordered_map<int64_t, int64_t> min_marks_, max_marks_;
  static int64_t find_marks(const std::unordered_map<int64_t, int64_t>& m, int32_t rule, int32_t counter, int64_t none) {
    const auto it = m.find((static_cast<int64_t>(counter) << 32) | static_cast<uint32_t>(rule));
    return it == m.end() ? none : it->second;
  }
  int32_t n_counters_ = 0;
  int64_t n_elements_ = 0;
};

}  // namespace tokenmill::engine
