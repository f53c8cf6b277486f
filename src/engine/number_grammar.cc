#include "engine/number_grammar.h"

#include <charconv>
#include <cmath>
#include <vector>

namespace tokenmill::engine {

Decimal Decimal::from_double(double v) {
  char buffer[400];
  const auto [end, error] = std::to_chars(buffer, buffer + sizeof buffer, v, std::chars_format::fixed);
  std::string text = error == std::errc() ? std::string(buffer, end) : std::string("0");
  Decimal d;
  if (!text.empty() && text[0] == '-') {
    d.negative = true;
    text.erase(0, 1);
  }
  const size_t point = text.find('.');
  d.integer = text.substr(0, point);
  d.fraction = point == std::string::npos ? "" : text.substr(point + 1);
  while (d.integer.size() > 1 && d.integer[0] == '0') d.integer.erase(0, 1);
  if (d.integer.empty()) d.integer = "0";
  while (!d.fraction.empty() && d.fraction.back() == '0') d.fraction.pop_back();
  if (d.is_zero()) d.negative = false;
  return d;
}

Decimal Decimal::from_int(int64_t v) {
  Decimal d;
  d.negative = v < 0;
  const uint64_t magnitude = v < 0 ? 0 - static_cast<uint64_t>(v) : static_cast<uint64_t>(v);
  d.integer = std::to_string(magnitude);
  return d;
}

std::string Decimal::to_string() const {
  return (negative ? "-" : "") + integer + (fraction.empty() ? "" : "." + fraction);
}

namespace {

// -1, 0, 1 as a < b, a == b, a > b (magnitudes: signs ignored).
int compare_magnitudes(const Decimal& a, const Decimal& b) {
  if (a.integer.size() != b.integer.size()) return a.integer.size() < b.integer.size() ? -1 : 1;
  if (a.integer != b.integer) return a.integer < b.integer ? -1 : 1;
  if (a.fraction != b.fraction) return a.fraction < b.fraction ? -1 : 1;  // no trailing zeros: lexicographic
  return 0;
}

int compare(const Decimal& a, const Decimal& b) {
  if (a.negative != b.negative) return a.negative ? -1 : 1;
  const int m = compare_magnitudes(a, b);
  return a.negative ? -m : m;
}

class DigitBuilder {
 public:
  explicit DigitBuilder(Grammar& g) : g_(g) {}

  GrammarElement digits(char first, char last) {
    ByteSet set;
    for (char c = first; c <= last; ++c) set.set(static_cast<unsigned char>(c));
    return g_.bytes(set);
  }
  void append_any(Grammar::Sequence& s, size_t n) {
    for (size_t i = 0; i < n; ++i) s.push_back(digits('0', '9'));
  }
  GrammarElement any_tail() { return Grammar::repeat(g_.rule_of({{digits('0', '9')}}), 0, kMaxFracDigits); }

  // Digit strings of a's length between a and b (a <= b, same length).
  Grammar::Sequence same_length(const std::string& a, const std::string& b) {
    Grammar::Sequence s;
    size_t i = 0;
    for (; i < a.size() && a[i] == b[i]; ++i) s.push_back(g_.byte(static_cast<unsigned char>(a[i])));
    if (i == a.size()) return s;
    const size_t rest = a.size() - i - 1;
    std::vector<Grammar::Sequence> alternatives;
    Grammar::Sequence low = {g_.byte(static_cast<unsigned char>(a[i]))};
    append(low, at_least(a.substr(i + 1)));
    alternatives.push_back(std::move(low));
    if (a[i] + 1 <= b[i] - 1) {
      Grammar::Sequence middle = {digits(static_cast<char>(a[i] + 1), static_cast<char>(b[i] - 1))};
      append_any(middle, rest);
      alternatives.push_back(std::move(middle));
    }
    Grammar::Sequence high = {g_.byte(static_cast<unsigned char>(b[i]))};
    append(high, at_most(b.substr(i + 1)));
    alternatives.push_back(std::move(high));
    s.push_back(Grammar::rule(g_.rule_of(std::move(alternatives))));
    return s;
  }

  // Digit strings of s's length, at least / at most s.
  Grammar::Sequence at_least(const std::string& s) { return bounded_same_length(s, /*up=*/true); }
  Grammar::Sequence at_most(const std::string& s) { return bounded_same_length(s, /*up=*/false); }

  // Non-negative integers as JSON writes them, from lo to hi (nullopt: no upper bound,
  // up to kMaxIntDigits digits). REQUIRES: lo <= hi.
  Grammar::Sequence integers(uint64_t lo, std::optional<uint64_t> hi) {
    const std::string lo_text = std::to_string(lo);
    std::vector<Grammar::Sequence> alternatives;
    const size_t max_length = hi ? std::to_string(*hi).size() : lo_text.size();
    for (size_t length = lo_text.size(); length <= max_length; ++length) {
      const uint64_t first = length == lo_text.size() ? lo : power_of_ten(length - 1);
      const uint64_t last = hi && length == max_length ? *hi : power_of_ten(length) - 1;
      if (first > last) continue;
      alternatives.push_back(same_length(std::to_string(first), std::to_string(last)));
    }
    if (!hi && lo_text.size() < static_cast<size_t>(kMaxIntDigits)) {  // every longer one
      Grammar::Sequence longer = {digits('1', '9')};
      append_any(longer, lo_text.size());
      longer.push_back(Grammar::repeat(g_.rule_of({{digits('0', '9')}}), 0,
                                       kMaxIntDigits - 1 - static_cast<int32_t>(lo_text.size())));
      alternatives.push_back(std::move(longer));
    }
    return {Grammar::rule(g_.rule_of(std::move(alternatives)))};
  }

  // Fraction digit strings D (after the point) against a bound's fraction digits,
  // compared as if padded with zeros. Each gives whether the empty string qualifies and
  // a rule for the non-empty ones (-1: none).
  struct Fraction {
    bool empty_ok = false;
    int32_t non_empty = -1;
  };
  Fraction at_least_fraction(const std::string& s, bool strict) {
    if (s.empty()) {
      if (!strict) return {true, g_.rule_of({{digits('0', '9'), any_tail()}})};
      const int32_t some_nonzero = g_.add_rule();  // 0* [1-9] [0-9]*
      g_.add_alternative(some_nonzero, {g_.byte('0'), Grammar::rule(some_nonzero)});
      g_.add_alternative(some_nonzero, {digits('1', '9'), any_tail()});
      return {false, some_nonzero};
    }
    std::vector<Grammar::Sequence> alternatives;
    if (s[0] < '9') alternatives.push_back({digits(static_cast<char>(s[0] + 1), '9'), any_tail()});
    add_continuations(alternatives, s[0], at_least_fraction(s.substr(1), strict));
    return {false, rule_or_none(std::move(alternatives))};
  }
  Fraction at_most_fraction(const std::string& s, bool strict) {
    if (s.empty()) {
      if (strict) return {false, -1};
      return {true, g_.rule_of({{Grammar::repeat(g_.rule_of({{g_.byte('0')}}), 1, kMaxFracDigits)}})};
    }
    std::vector<Grammar::Sequence> alternatives;
    if (s[0] > '0') alternatives.push_back({digits('0', static_cast<char>(s[0] - 1)), any_tail()});
    add_continuations(alternatives, s[0], at_most_fraction(s.substr(1), strict));
    return {true, rule_or_none(std::move(alternatives))};
  }
  Fraction between_fractions(const std::string& lo, bool lo_strict, const std::string& hi, bool hi_strict) {
    if (lo.empty() && hi.empty()) {
      if (lo_strict || hi_strict) return {false, -1};
      return at_most_fraction("", false);  // zeros only
    }
    const char l0 = lo.empty() ? '0' : lo[0], h0 = hi.empty() ? '0' : hi[0];
    const std::string lo_rest = lo.empty() ? "" : lo.substr(1), hi_rest = hi.empty() ? "" : hi.substr(1);
    std::vector<Grammar::Sequence> alternatives;
    if (l0 == h0) {
      add_continuations(alternatives, l0, between_fractions(lo_rest, lo_strict, hi_rest, hi_strict));
    } else {
      if (l0 + 1 <= h0 - 1) alternatives.push_back({digits(static_cast<char>(l0 + 1), static_cast<char>(h0 - 1)), any_tail()});
      add_continuations(alternatives, l0, at_least_fraction(lo_rest, lo_strict));
      add_continuations(alternatives, h0, at_most_fraction(hi_rest, hi_strict));
    }
    const bool empty_ok = lo.empty() && !lo_strict && (!hi.empty() || !hi_strict);
    return {empty_ok, rule_or_none(std::move(alternatives))};
  }

  // The text after the integer digits for fraction digits f: "" and/or "." f.
  std::vector<Grammar::Sequence> fraction_texts(const Fraction& f) {
    std::vector<Grammar::Sequence> texts;
    if (f.empty_ok) texts.emplace_back();
    if (f.non_empty >= 0) texts.push_back({g_.byte('.'), Grammar::rule(f.non_empty)});
    return texts;
  }
  std::vector<Grammar::Sequence> any_fraction_texts() { return fraction_texts(at_least_fraction("", false)); }

  static void append(Grammar::Sequence& s, const Grammar::Sequence& more) { s.insert(s.end(), more.begin(), more.end()); }

  // Every head followed by every tail.
  static void cross(std::vector<Grammar::Sequence>& out, const Grammar::Sequence& head,
                    const std::vector<Grammar::Sequence>& tails) {
    for (const auto& tail : tails) {
      Grammar::Sequence s = head;
      append(s, tail);
      out.push_back(std::move(s));
    }
  }

 private:
  static uint64_t power_of_ten(size_t n) {
    uint64_t p = 1;
    for (size_t i = 0; i < n; ++i) p *= 10;
    return p;
  }

  Grammar::Sequence bounded_same_length(const std::string& s, bool up) {
    if (s.empty()) return {};
    const char free_digit = up ? '0' : '9';
    if (s.find_first_not_of(free_digit) == std::string::npos) {
      Grammar::Sequence any;
      append_any(any, s.size());
      return any;
    }
    std::vector<Grammar::Sequence> alternatives;
    Grammar::Sequence same = {g_.byte(static_cast<unsigned char>(s[0]))};
    append(same, bounded_same_length(s.substr(1), up));
    alternatives.push_back(std::move(same));
    if (s[0] != free_digit) {
      Grammar::Sequence other = {up ? digits(static_cast<char>(s[0] + 1), '9') : digits('0', static_cast<char>(s[0] - 1))};
      append_any(other, s.size() - 1);
      alternatives.push_back(std::move(other));
    }
    return {Grammar::rule(g_.rule_of(std::move(alternatives)))};
  }

  // digit d, then what `rest` allows (nothing more where it allows the empty string).
  void add_continuations(std::vector<Grammar::Sequence>& alternatives, char d, const Fraction& rest) {
    if (rest.empty_ok) alternatives.push_back({g_.byte(static_cast<unsigned char>(d))});
    if (rest.non_empty >= 0) alternatives.push_back({g_.byte(static_cast<unsigned char>(d)), Grammar::rule(rest.non_empty)});
  }

  int32_t rule_or_none(std::vector<Grammar::Sequence> alternatives) {
    return alternatives.empty() ? -1 : g_.rule_of(std::move(alternatives));
  }

  Grammar& g_;
};

constexpr uint64_t kLargestInteger = 999999999999999999ull;  // kMaxIntDigits nines
static_assert(kMaxIntDigits == 18);

std::optional<uint64_t> small_integer(const std::string& digits) {
  if (digits.size() > static_cast<size_t>(kMaxIntDigits)) return std::nullopt;
  return std::stoull(digits);
}

// One side of the number line: magnitudes from lo to hi (nullopt: unbounded), as texts.
std::vector<Grammar::Sequence> magnitude_texts(DigitBuilder& b, const Decimal& lo, bool lo_strict,
                                               const std::optional<Decimal>& hi, bool hi_strict) {
  std::vector<Grammar::Sequence> out;
  const uint64_t lo_int = *small_integer(lo.integer);
  const Grammar::Sequence lo_digits = b.integers(lo_int, lo_int);
  if (!hi) {
    DigitBuilder::cross(out, lo_digits, b.fraction_texts(b.at_least_fraction(lo.fraction, lo_strict)));
    if (lo_int + 1 < kLargestInteger) DigitBuilder::cross(out, b.integers(lo_int + 1, std::nullopt), b.any_fraction_texts());
    return out;
  }
  const uint64_t hi_int = *small_integer(hi->integer);
  if (lo_int == hi_int) {
    DigitBuilder::cross(out, lo_digits, b.fraction_texts(b.between_fractions(lo.fraction, lo_strict, hi->fraction, hi_strict)));
    return out;
  }
  DigitBuilder::cross(out, lo_digits, b.fraction_texts(b.at_least_fraction(lo.fraction, lo_strict)));
  if (lo_int + 1 <= hi_int - 1) DigitBuilder::cross(out, b.integers(lo_int + 1, hi_int - 1), b.any_fraction_texts());
  DigitBuilder::cross(out, b.integers(hi_int, hi_int), b.fraction_texts(b.at_most_fraction(hi->fraction, hi_strict)));
  return out;
}


// A bound whose integer part has more digits than any value we write: a lower bound
// below every such value (or an upper one above) is no bound; the other way round, no
// value qualifies.
Status fit_bounds(NumberBounds& b) {
  for (bool lower : {true, false}) {
    std::optional<Decimal>& bound = lower ? b.lower : b.upper;
    if (!bound || bound->integer.size() <= static_cast<size_t>(kMaxIntDigits)) continue;
    if (bound->negative == lower) {
      bound.reset();
    } else {
      return invalid_argument(std::string(lower ? "the minimum " : "the maximum ") + bound->to_string() +
                              " is beyond the numbers that can be generated (" + std::to_string(kMaxIntDigits) +
                              " digits)");
    }
  }
  if (b.lower && b.upper) {
    const int c = compare(*b.lower, *b.upper);
    if (c > 0 || (c == 0 && (b.lower_exclusive || b.upper_exclusive))) {
      return invalid_argument("no number is between the bounds " + b.lower->to_string() + " and " + b.upper->to_string());
    }
  }
  return {};
}

Decimal magnitude(Decimal d) {
  d.negative = false;
  return d;
}

}  // namespace

Result<int32_t> number_rule(Grammar& grammar, const NumberBounds& given) {
  NumberBounds b = given;
  TM_RETURN_IF_ERROR(fit_bounds(b));
  DigitBuilder digits(grammar);
  std::vector<Grammar::Sequence> alternatives;
  const Decimal zero;
  if (!b.upper || !b.upper->negative) {  // values >= 0, written without a sign
    const bool lower_positive = b.lower && !b.lower->negative;
    alternatives = magnitude_texts(digits, lower_positive ? *b.lower : zero, lower_positive && b.lower_exclusive,
                                   b.upper, b.upper_exclusive);
  }
  if (!b.lower || b.lower->negative) {  // values < 0: "-" and a magnitude > 0
    const bool upper_negative = b.upper && b.upper->negative;
    std::optional<Decimal> most;
    if (b.lower) most = magnitude(*b.lower);
    const auto negatives = magnitude_texts(digits, upper_negative ? magnitude(*b.upper) : zero,
                                           upper_negative ? b.upper_exclusive : true, most, b.lower_exclusive);
    DigitBuilder::cross(alternatives, {grammar.byte('-')}, negatives);
  }
  if (alternatives.empty()) return invalid_argument("no number is between the bounds");
  return grammar.rule_of(std::move(alternatives));
}

Result<int32_t> integer_rule(Grammar& grammar, const NumberBounds& given) {
  NumberBounds b = given;
  TM_RETURN_IF_ERROR(fit_bounds(b));
  // The integer bounds: the least integer >= (or >) the lower bound, the greatest <= (or <) the upper.
  std::optional<int64_t> lo, hi;
  if (b.lower) {
    const auto m = static_cast<int64_t>(*small_integer(b.lower->integer));
    const bool whole = b.lower->fraction.empty();
    lo = b.lower->negative ? -m + ((whole && b.lower_exclusive) ? 1 : 0)
                           : m + ((!whole || b.lower_exclusive) ? 1 : 0);
  }
  if (b.upper) {
    const auto m = static_cast<int64_t>(*small_integer(b.upper->integer));
    const bool whole = b.upper->fraction.empty();
    hi = b.upper->negative ? -m - ((!whole || b.upper_exclusive) ? 1 : 0)
                           : m - ((whole && b.upper_exclusive) ? 1 : 0);
  }
  if (lo && hi && *lo > *hi) {
    return invalid_argument("no integer is between the bounds " + b.lower->to_string() + " and " + b.upper->to_string());
  }
  DigitBuilder digits(grammar);
  std::vector<Grammar::Sequence> alternatives;
  if (!hi || *hi >= 0) {
    const auto first = static_cast<uint64_t>(lo ? std::max<int64_t>(*lo, 0) : 0);
    alternatives.push_back(digits.integers(first, hi ? std::optional<uint64_t>(static_cast<uint64_t>(*hi)) : std::nullopt));
  }
  if (!lo || *lo < 0) {
    const auto first = static_cast<uint64_t>(hi && *hi < 0 ? -*hi : 1);
    Grammar::Sequence negative = {grammar.byte('-')};
    DigitBuilder::append(negative, digits.integers(first, lo ? std::optional<uint64_t>(static_cast<uint64_t>(-*lo)) : std::nullopt));
    alternatives.push_back(std::move(negative));
  }
  return grammar.rule_of(std::move(alternatives));
}

int32_t any_number_rule(Grammar& grammar, bool integer_only) {
  NumberBounds none;
  auto integers = integer_rule(grammar, none);
  if (integer_only) return *integers;
  auto numbers = number_rule(grammar, none);
  DigitBuilder digits(grammar);
  // An optional exponent: e / E, a sign, at most two digits.
  ByteSet e, sign;
  e.set('e'), e.set('E'), sign.set('+'), sign.set('-');
  const int32_t exponent = grammar.rule_of(
      {{}, {grammar.bytes(e), Grammar::repeat(grammar.rule_of({{grammar.bytes(sign)}}), 0, 1), digits.digits('0', '9'),
            Grammar::repeat(grammar.rule_of({{digits.digits('0', '9')}}), 0, 1)}});
  return grammar.rule_of({{Grammar::rule(*numbers), Grammar::rule(exponent)}});
}

}  // namespace tokenmill::engine
