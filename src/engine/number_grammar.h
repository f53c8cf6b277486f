// JSON numbers between bounds as exact digit grammars (engine/grammar.h): every text the
// rule matches is a JSON number inside the bounds, and every such number with at most
// kMaxIntDigits integer and kMaxFracDigits fraction digits has a text it matches (the
// canonical one: no exponent, no "-0"; integers without a fraction).
//
// The construction compares digit strings: a magnitude I.F is at least L.M when I > L, or
// I = L and F >= M digit by digit (F padded with zeros), and likewise for the upper bound;
// a negative value is a magnitude bounded the other way round. A bound is taken as the
// shortest decimal that reads back as the same double, so the grammar agrees with a
// validator comparing doubles for every value of at most 15 significant digits.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "base/status.h"
#include "engine/grammar.h"

namespace tokenmill::engine {

// A finite decimal: sign, integer digits (no leading zeros; "0" for none), fraction
// digits (no trailing zeros).
struct Decimal {
  bool negative = false;
  std::string integer = "0";
  std::string fraction;

  static Decimal from_double(double v);
  static Decimal from_int(int64_t v);
  bool is_zero() const { return integer == "0" && fraction.empty(); }
  std::string to_string() const;
};

struct NumberBounds {
  std::optional<Decimal> lower, upper;
  bool lower_exclusive = false, upper_exclusive = false;
};

inline constexpr int kMaxIntDigits = 18;
inline constexpr int kMaxFracDigits = 12;

// The rule for a JSON integer / number inside the bounds; an error when none is.
Result<int32_t> integer_rule(Grammar& grammar, const NumberBounds& bounds);
Result<int32_t> number_rule(Grammar& grammar, const NumberBounds& bounds);
// Any JSON number (with an optional exponent), or any integer.
int32_t any_number_rule(Grammar& grammar, bool integer_only);

}  // namespace tokenmill::engine
