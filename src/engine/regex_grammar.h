// JSON Schema's `pattern` (an ECMA-262 regular expression, unanchored unless it says
// ^ or $) as a grammar rule over the inside of a JSON string: every text the rule
// matches is the JSON encoding (engine/json_string_chars.h) of a string the pattern
// matches, and every string it matches has such an encoding.
//
// Supported: literals and escapes (\t \n \r \f \v \0 \xHH \uHHHH \u{H..} \cX, identity
// escapes), classes ([...], [^...], ranges, \d \D \w \W \s \S inside and out), `.`,
// groups ((...), (?:...), (?<name>...)), alternation, the quantifiers * + ? {n} {n,}
// {n,m} (lazy or not: the same strings), ^ at the start and $ at the end of a top-level
// alternative. Refused by name: back-references, look-ahead and look-behind, word
// boundaries, \p{...} property classes, anchors anywhere else, a quantified group that
// can match the empty string, counts over kMaxCount.
#pragma once

#include <cstdint>
#include <string_view>

#include "base/status.h"
#include "engine/grammar.h"

namespace tokenmill::engine {

inline constexpr int32_t kMaxRegexCount = 10000;

// The rule for the string's contents (between its quotes). Each character carries a
// mark of length_counter when it is >= 0.
Result<int32_t> regex_rule(Grammar& grammar, std::string_view pattern, int32_t length_counter);

}  // namespace tokenmill::engine
