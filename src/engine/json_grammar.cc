#include "engine/json_grammar.h"

namespace tokenmill::engine {

namespace {

bool is_whitespace(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

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

void JsonGrammar::close_container() {
  stack_.pop_back();
  end_value();
}

void JsonGrammar::begin_string(bool is_key) {
  mode_ = Mode::kString;
  string_.begin();
  string_is_key_ = is_key;
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
      begin_string(/*is_key=*/false);
      return true;
    case 't': mode_ = Mode::kLiteral; literal_ = "rue"; return true;
    case 'f': mode_ = Mode::kLiteral; literal_ = "alse"; return true;
    case 'n': mode_ = Mode::kLiteral; literal_ = "ull"; return true;
    default:
      mode_ = Mode::kNumber;
      return number_.begin(c, /*integer_only=*/false);
  }
}

bool JsonGrammar::step_string(char c) {
  switch (string_.step(c)) {
    case JsonStringLexer::Step::kRefused: return false;
    case JsonStringLexer::Step::kTaken: return true;
    case JsonStringLexer::Step::kClosed:
      if (string_is_key_) {
        mode_ = Mode::kColon;
      } else {
        end_value();
      }
      return true;
  }
  return false;
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
        close_container();
        return true;
      }
      return start_value(c);
    case Mode::kKeyOrClose:
      if (c == '}') {
        close_container();
        return true;
      }
      [[fallthrough]];
    case Mode::kKey:
      if (c != '"') return false;
      begin_string(/*is_key=*/true);
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
        close_container();
        return true;
      }
      return false;
    case Mode::kString:
      return step_string(c);
    case Mode::kLiteral:
      if (c != *literal_) return false;
      if (*++literal_ == '\0') end_value();
      return true;
    case Mode::kNumber:
      switch (number_.step(c)) {
        case JsonNumberLexer::Step::kRefused: return false;
        case JsonNumberLexer::Step::kTaken: return true;
        case JsonNumberLexer::Step::kEnded:  // a complete number followed by c: c follows the value
          end_value();
          return step(c);
      }
      return false;
    case Mode::kDone:
      return false;
  }
  return false;
}

}  // namespace tokenmill::engine
