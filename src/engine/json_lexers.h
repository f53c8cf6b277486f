// The scalar tokens of JSON text, byte by byte, shared by the JSON mode grammar
// (json_grammar.h) and the JSON schema grammar (json_schema.h): a string's inside, with
// its \uXXXX escapes, and a number. Each refuses a byte as soon as no continuation could
// make the token valid, so a constrained writer never reaches a dead end.
//
// Value types, cheap to copy (the grammars copy themselves to test a candidate token).
#pragma once

#include <cstdint>

namespace tokenmill::engine {

// The \uXXXX escapes of a string, with UTF-16 surrogates kept in pairs: a high surrogate
// (D800-DBFF) must be followed at once by "\u" and a low one (DC00-DFFF), and a low one
// may not stand alone (RFC 8259 leaves such strings' meaning undefined, and many parsers
// refuse them).
class JsonUnicodeEscape {
 public:
  // A high surrogate waits for its pair: the string may continue only with "\u".
  bool low_surrogate_due() const { return low_due_; }
  // After "\u": the four digits follow.
  void begin() {
    digits_ = 0;
    high_ = false;
  }
  // Feeds one digit; false if it is not allowed.
  bool digit(char c) {
    int value = -1;
    if (c >= '0' && c <= '9') value = c - '0';
    if (c >= 'a' && c <= 'f') value = c - 'a' + 10;
    if (c >= 'A' && c <= 'F') value = c - 'A' + 10;
    if (value < 0) return false;
    if (digits_ == 0) {
      first_is_d_ = value == 0xd;
      if (low_due_ && !first_is_d_) return false;
    } else if (digits_ == 1 && first_is_d_) {
      const bool low = value >= 0xc;
      if (low != low_due_ && (low || low_due_)) return false;  // a lone low, or a high where a low is due
      high_ = value >= 0x8 && !low;
    }
    if (++digits_ == 4) low_due_ = low_due_ ? false : high_;
    return true;
  }
  bool complete() const { return digits_ == 4; }

 private:
  uint8_t digits_ = 4;
  bool first_is_d_ = false;
  bool high_ = false;
  bool low_due_ = false;
};

// A string after its opening quote: characters (control characters only escaped),
// escapes, up to the closing quote.
class JsonStringLexer {
 public:
  enum class Step : uint8_t { kRefused, kTaken, kClosed };  // kClosed: c was the closing quote

  void begin() { state_ = State::kPlain; }
  // The next byte, unless it is a UTF-8 continuation byte, begins a character (or the
  // closing quote): no escape is under way.
  bool at_character_start() const { return state_ == State::kPlain && !unicode_.low_surrogate_due(); }
  Step step(char c) {
    switch (state_) {
      case State::kPlain:
        if (unicode_.low_surrogate_due()) {  // only the "\u" of the pair's second half
          if (c != '\\') return Step::kRefused;
          state_ = State::kEscape;
          return Step::kTaken;
        }
        if (c == '"') return Step::kClosed;
        if (c == '\\') {
          state_ = State::kEscape;
          return Step::kTaken;
        }
        return static_cast<unsigned char>(c) >= 0x20 ? Step::kTaken : Step::kRefused;
      case State::kEscape:
        if (c == 'u') {
          state_ = State::kUnicode;
          unicode_.begin();
          return Step::kTaken;
        }
        if (unicode_.low_surrogate_due()) return Step::kRefused;
        state_ = State::kPlain;
        return c == '"' || c == '\\' || c == '/' || c == 'b' || c == 'f' || c == 'n' || c == 'r' || c == 't'
                   ? Step::kTaken
                   : Step::kRefused;
      case State::kUnicode:
        if (!unicode_.digit(c)) return Step::kRefused;
        if (unicode_.complete()) state_ = State::kPlain;
        return Step::kTaken;
    }
    return Step::kRefused;
  }

 private:
  enum class State : uint8_t { kPlain, kEscape, kUnicode };
  State state_ = State::kPlain;
  JsonUnicodeEscape unicode_;
};

// A number: -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)?, or only its integer part, with
// at most kMaxIntDigits, kMaxFracDigits and kMaxExpDigits digits in its parts.
class JsonNumberLexer {
 public:
  enum class Step : uint8_t { kRefused, kTaken, kEnded };  // kEnded: complete, and c is not part of it

  // c is the number's first byte (false if a number cannot start with it).
  bool begin(char c, bool integer_only) {
    integer_only_ = integer_only;
    n_digits_ = 0;
    if (c == '-') {
      state_ = State::kMinus;
      return true;
    }
    if (!is_digit(c)) return false;
    state_ = c == '0' ? State::kZero : State::kInt;
    n_digits_ = 1;
    return true;
  }
  Step step(char c) {
    const bool digit = is_digit(c);
    switch (state_) {
      case State::kMinus:
        if (!digit) return Step::kRefused;
        state_ = c == '0' ? State::kZero : State::kInt;
        n_digits_ = 1;
        return Step::kTaken;
      case State::kZero:
      case State::kInt:
        if (digit && state_ == State::kInt) return digit_in(kMaxIntDigits);
        if (!integer_only_ && c == '.') return to(State::kDot);
        if (!integer_only_ && (c == 'e' || c == 'E')) return to(State::kExp);
        return Step::kEnded;
      case State::kDot:
        return digit ? to(State::kFrac, 1) : Step::kRefused;
      case State::kFrac:
        if (digit) return digit_in(kMaxFracDigits);
        if (c == 'e' || c == 'E') return to(State::kExp);
        return Step::kEnded;
      case State::kExp:
        if (c == '+' || c == '-') return to(State::kExpSign);
        [[fallthrough]];
      case State::kExpSign:
        return digit ? to(State::kExpDigits, 1) : Step::kRefused;
      case State::kExpDigits:
        return digit ? digit_in(kMaxExpDigits) : Step::kEnded;
    }
    return Step::kRefused;
  }

 private:
  // After '-', after a leading 0, in integer digits, after '.', in fraction digits, after
  // 'e', after the exponent's sign, in exponent digits.
  enum class State : uint8_t { kMinus, kZero, kInt, kDot, kFrac, kExp, kExpSign, kExpDigits };
  // Digits per part at most, so that every number written is a finite double for any
  // parser (at most 10^20 * 10^99 in magnitude) rather than one some parsers refuse.
  static constexpr int kMaxIntDigits = 20;
  static constexpr int kMaxFracDigits = 40;
  static constexpr int kMaxExpDigits = 2;
  static bool is_digit(char c) { return c >= '0' && c <= '9'; }
  Step to(State next, int n_digits = 0) {
    state_ = next;
    n_digits_ = n_digits;
    return Step::kTaken;
  }
  // One more digit of the current part, unless the part has max already.
  Step digit_in(int max) {
    if (n_digits_ >= max) return Step::kRefused;
    ++n_digits_;
    return Step::kTaken;
  }
  State state_ = State::kInt;
  bool integer_only_ = false;
  int n_digits_ = 0;  // digits so far in the current part (integer, fraction or exponent)
};

}  // namespace tokenmill::engine
