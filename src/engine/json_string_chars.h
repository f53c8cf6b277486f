// Characters inside a JSON string, as grammar rules (engine/grammar.h): sets of Unicode
// code points written the way a JSON text carries them, so that a grammar over the
// decoded string (a pattern, a format) becomes one over the bytes a model writes:
//   U+0000..U+001F   \n \t \r \b \f, the others \u00XX (lowercase hex)
//   " and a backslash  escaped with a backslash
//   other ASCII      the byte itself
//   U+0080..         UTF-8 (surrogates are never characters)
// Each character begins with a mark of `length_counter` (when it is >= 0), so a count()
// around the string can bound its length in characters.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "engine/grammar.h"

namespace tokenmill::engine {

// Sorted, disjoint, non-adjacent ranges of code points [first, last].
class CodePoints {
 public:
  static constexpr uint32_t kMax = 0x10FFFF;
  CodePoints() = default;
  static CodePoints range(uint32_t first, uint32_t last);
  static CodePoints one(uint32_t c) { return range(c, c); }
  static CodePoints all() { return range(0, kMax); }

  void add(uint32_t first, uint32_t last);
  void add(const CodePoints& other);
  CodePoints complement() const;  // over U+0000..U+10FFFF
  bool empty() const { return ranges_.empty(); }
  const std::vector<std::pair<uint32_t, uint32_t>>& ranges() const { return ranges_; }

 private:
  std::vector<std::pair<uint32_t, uint32_t>> ranges_;
};

// A rule matching one character of `chars`, as JSON writes it inside a string.
int32_t json_string_char_rule(Grammar& grammar, const CodePoints& chars, int32_t length_counter);

// The sequences of UTF-8 byte ranges that together encode exactly the code points in
// [first, last] (surrogates left out): each inner vector is one sequence, a byte range
// per position.
std::vector<std::vector<std::pair<uint8_t, uint8_t>>> utf8_byte_ranges(uint32_t first, uint32_t last);

}  // namespace tokenmill::engine
