#include "engine/json_grammar.h"

namespace tokenmill::engine {

namespace {

bool is_whitespace(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }
bool is_digit(char c) { return c >= '0' && c <= '9'; }

}  // namespace

bool JsonGrammar::allows(std::string_view text) const {
  JsonGrammar copy = *this;
  for (char c : text) {
    if (!copy.step(c)) return false;
  }
  return true;
}

void JsonGrammar::advance(std::string_view text) {
  for (char c : text) step(c);
}

void JsonGrammar::end_value() {
  mode_ = stack_.empty() ? Mode::kDone : Mode::kCommaOrClose;
}

bool JsonGrammar::start_value(char c) {
  if (stack_.empty() && c != '{') return false;  // json_object: the top level is an object
  switch (c) {
    case '{':
    case '[':
      if (static_cast<int>(stack_.size()) >= kMaxDepth) return false;
      stack_.push_back(c);
      mode_ = c == '{' ? Mode::kKeyOrClose : Mode::kValueOrClose;
      return true;
    case '"':
      mode_ = Mode::kString;
      string_is_key_ = false;
      return true;
    case '-':
      mode_ = Mode::kNumber;
      number_ = Num::kMinus;
      return true;
    case 't': mode_ = Mode::kLiteral; literal_ = "rue"; return true;
    case 'f': mode_ = Mode::kLiteral; literal_ = "alse"; return true;
    case 'n': mode_ = Mode::kLiteral; literal_ = "ull"; return true;
    default:
      if (!is_digit(c)) return false;
      mode_ = Mode::kNumber;
      number_ = c == '0' ? Num::kZero : Num::kInt;
      return true;
  }
}

bool JsonGrammar::step(char c) {
  // Whitespace between tokens, in bounded runs.
  const bool between_tokens = mode_ == Mode::kValue || mode_ == Mode::kKeyOrClose || mode_ == Mode::kKey ||
                              mode_ == Mode::kColon || mode_ == Mode::kCommaOrClose || mode_ == Mode::kValueOrClose;
  if (between_tokens && is_whitespace(c)) {
    if (stack_.empty() && mode_ == Mode::kValue) return false;  // start with the brace itself
    return ++whitespace_run_ <= kMaxWhitespaceRun;
  }
  whitespace_run_ = 0;
  switch (mode_) {
    case Mode::kValue:
      return start_value(c);
    case Mode::kValueOrClose:
      if (c == ']') {
        stack_.pop_back();
        end_value();
        return true;
      }
      return start_value(c);
    case Mode::kKeyOrClose:
      if (c == '}') {
        stack_.pop_back();
        end_value();
        return true;
      }
      [[fallthrough]];
    case Mode::kKey:
      if (c != '"') return false;
      mode_ = Mode::kString;
      string_is_key_ = true;
      return true;
    case Mode::kColon:
      if (c != ':') return false;
      mode_ = Mode::kValue;
      return true;
    case Mode::kCommaOrClose:
      if (c == ',') {
        mode_ = in_object() ? Mode::kKey : Mode::kValue;
        return true;
      }
      if (c == (in_object() ? '}' : ']')) {
        stack_.pop_back();
        end_value();
        return true;
      }
      return false;
    case Mode::kString:
      if (unicode_.low_surrogate_due()) {  // only the "\u" of the pair's second half
        if (c != '\\') return false;
        mode_ = Mode::kEscape;
        return true;
      }
      if (c == '"') {
        if (string_is_key_) {
          mode_ = Mode::kColon;
        } else {
          end_value();
        }
        return true;
      }
      if (c == '\\') {
        mode_ = Mode::kEscape;
        return true;
      }
      return static_cast<unsigned char>(c) >= 0x20;  // control characters must be escaped
    case Mode::kEscape:
      if (c == 'u') {
        mode_ = Mode::kUnicode;
        unicode_.begin();
        return true;
      }
      if (unicode_.low_surrogate_due()) return false;
      mode_ = Mode::kString;
      return c == '"' || c == '\\' || c == '/' || c == 'b' || c == 'f' || c == 'n' || c == 'r' || c == 't';
    case Mode::kUnicode:
      if (!unicode_.digit(c)) return false;
      if (unicode_.complete()) mode_ = Mode::kString;
      return true;
    case Mode::kLiteral:
      if (c != *literal_) return false;
      if (*++literal_ == '\0') end_value();
      return true;
    case Mode::kNumber: {
      const bool digit = is_digit(c);
      switch (number_) {
        case Num::kMinus:
          if (!digit) return false;
          number_ = c == '0' ? Num::kZero : Num::kInt;
          return true;
        case Num::kZero:
        case Num::kInt:
          if (digit && number_ == Num::kInt) return true;
          if (c == '.') { number_ = Num::kDot; return true; }
          if (c == 'e' || c == 'E') { number_ = Num::kExp; return true; }
          break;  // the number ends here: c must follow a value
        case Num::kDot:
          if (!digit) return false;
          number_ = Num::kFrac;
          return true;
        case Num::kFrac:
          if (digit) return true;
          if (c == 'e' || c == 'E') { number_ = Num::kExp; return true; }
          break;
        case Num::kExp:
          if (c == '+' || c == '-') { number_ = Num::kExpSign; return true; }
          [[fallthrough]];
        case Num::kExpSign:
          if (!digit) return false;
          number_ = Num::kExpDigits;
          return true;
        case Num::kExpDigits:
          if (digit) return true;
          break;
      }
      // A complete number followed by c: the number is a value that just ended.
      end_value();
      return step(c);
    }
    case Mode::kDone:
      return false;
  }
  return false;
}

}  // namespace tokenmill::engine
