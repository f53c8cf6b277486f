#include "tokenizer/jinja_lexer.h"

#include <algorithm>
#include <cctype>
#include <cstring>
#include <regex>

#include "tokenizer/jinja_value.h"

namespace tokenmill::tokenizer::jinja {
namespace {

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'; }

class Lexer {
 public:
  Lexer(const std::string& source, const LexOptions& options) : src_(source), options_(options) {}

  std::vector<Token> run() {
    size_t pos = 0;
    bool strip_next_all = false;      // the previous tag ended with "-"
    bool trim_next_newline = false;   // trim_blocks after the previous %} or #}
    while (pos < src_.size()) {
      size_t tag = find_tag_start(pos);
      size_t text_begin = pos;
      size_t text_end = tag == std::string::npos ? src_.size() : tag;
      if (strip_next_all) {
        while (text_begin < text_end && is_space(src_[text_begin])) ++text_begin;
      } else if (trim_next_newline) {
        if (text_begin < text_end && src_[text_begin] == '\n') {
          ++text_begin;
        } else if (text_begin + 1 < text_end && src_[text_begin] == '\r' && src_[text_begin + 1] == '\n') {
          text_begin += 2;
        }
      }
      strip_next_all = trim_next_newline = false;
      if (tag != std::string::npos) {
        char kind = src_[tag + 1];  // '{', '%' or '#'
        char marker = tag + 2 < src_.size() ? src_[tag + 2] : '\0';
        if (marker == '-') {
          while (text_end > text_begin && is_space(src_[text_end - 1])) --text_end;
        } else if (marker != '+' && kind != '{' && options_.lstrip_blocks) {
          text_end = lstrip_line(text_begin, text_end);
        }
      }
      if (text_end > text_begin) emit(Token::Type::kText, src_.substr(text_begin, text_end - text_begin), text_begin);
      if (tag == std::string::npos) break;

      char kind = src_[tag + 1];
      size_t inner = tag + 2;
      if (inner < src_.size() && (src_[inner] == '-' || src_[inner] == '+')) ++inner;
      char end_marker = '\0';
      size_t after;
      if (kind == '#') {
        size_t close = src_.find("#}", inner);
        if (close == std::string::npos) throw Error(at(tag) + "unterminated comment");
        if (close > inner && (src_[close - 1] == '-' || src_[close - 1] == '+')) end_marker = src_[close - 1];
        after = close + 2;
      } else {
        emit(kind == '{' ? Token::Type::kVarBegin : Token::Type::kBlockBegin, "", tag);
        after = lex_tag_body(inner, kind == '{' ? '}' : '%', &end_marker);
        emit(kind == '{' ? Token::Type::kVarEnd : Token::Type::kBlockEnd, "", after - 2);
      }
      if (end_marker == '-') {
        strip_next_all = true;
      } else if (end_marker != '+' && kind != '{' && options_.trim_blocks) {
        trim_next_newline = true;
      }
      pos = after;
      if (kind == '%' && is_raw_block()) pos = lex_raw(pos, &strip_next_all, &trim_next_newline);
    }
    emit(Token::Type::kEnd, "", src_.size());
    return std::move(tokens_);
  }

 private:
  size_t find_tag_start(size_t from) const {
    for (size_t i = src_.find('{', from); i != std::string::npos; i = src_.find('{', i + 1)) {
      if (i + 1 < src_.size() && (src_[i + 1] == '{' || src_[i + 1] == '%' || src_[i + 1] == '#')) return i;
    }
    return std::string::npos;
  }

  // lstrip_blocks: if only spaces and tabs stand between the start of the line and the
  // tag, drop them. The text's own start counts as a line start only when it follows a
  // newline (or is the start of the template).
  size_t lstrip_line(size_t text_begin, size_t text_end) const {
    size_t i = text_end;
    while (i > text_begin && (src_[i - 1] == ' ' || src_[i - 1] == '\t')) --i;
    bool at_line_start = i > text_begin ? src_[i - 1] == '\n' : (i == 0 || src_[i - 1] == '\n');
    return at_line_start ? i : text_end;
  }

  // Lexes expression tokens up to "}}" or "%}" (closer is '}' or '%'). Returns the
  // position after the closing delimiter and sets *end_marker to '-', '+' or '\0'.
  size_t lex_tag_body(size_t pos, char closer, char* end_marker) {
    int depth = 0;  // open ( [ { inside the tag, so "}}" closing a dict is not the tag end
    while (true) {
      while (pos < src_.size() && is_space(src_[pos])) ++pos;
      if (pos >= src_.size()) throw Error(at(pos) + "unterminated tag: expected '" + closer + "}'");
      char c = src_[pos];
      if ((c == '-' || c == '+') && pos + 2 < src_.size() + 0 && src_[pos + 1] == closer && src_[pos + 2] == '}' &&
          depth == 0) {
        *end_marker = c;
        return pos + 3;
      }
      if (c == closer && pos + 1 < src_.size() && src_[pos + 1] == '}' && depth == 0) {
        *end_marker = '\0';
        return pos + 2;
      }
      if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') {
        size_t end = pos;
        while (end < src_.size() && (std::isalnum(static_cast<unsigned char>(src_[end])) || src_[end] == '_')) ++end;
        emit(Token::Type::kName, src_.substr(pos, end - pos), pos);
        pos = end;
      } else if (std::isdigit(static_cast<unsigned char>(c))) {
        pos = lex_number(pos);
      } else if (c == '\'' || c == '"') {
        pos = lex_string(pos);
      } else {
        static const char* const kTwoChar[] = {"**", "//", "==", "!=", "<=", ">="};
        std::string op(1, c);
        for (const char* two : kTwoChar) {
          if (src_.compare(pos, 2, two) == 0) op = two;
        }
        if (op.size() == 1 && std::strchr("+-*/%~<>=()[]{},.:|", c) == nullptr) {
          throw Error(at(pos) + "unexpected character '" + std::string(1, c) + "' in tag");
        }
        if (op == "(" || op == "[" || op == "{") ++depth;
        if ((op == ")" || op == "]" || op == "}") && depth > 0) --depth;
        emit(Token::Type::kOperator, op, pos);
        pos += op.size();
      }
    }
  }

  size_t lex_number(size_t pos) {
    size_t end = pos;
    auto digits = [&] {
      while (end < src_.size() && (std::isdigit(static_cast<unsigned char>(src_[end])) || src_[end] == '_')) ++end;
    };
    digits();
    bool is_float = false;
    if (end + 1 < src_.size() && src_[end] == '.' && std::isdigit(static_cast<unsigned char>(src_[end + 1]))) {
      is_float = true;
      ++end;
      digits();
    }
    if (end < src_.size() && (src_[end] == 'e' || src_[end] == 'E')) {
      size_t e = end + 1;
      if (e < src_.size() && (src_[e] == '+' || src_[e] == '-')) ++e;
      if (e < src_.size() && std::isdigit(static_cast<unsigned char>(src_[e]))) {
        is_float = true;
        end = e;
        digits();
      }
    }
    std::string text = src_.substr(pos, end - pos);
    text.erase(std::remove(text.begin(), text.end(), '_'), text.end());
    emit(is_float ? Token::Type::kFloat : Token::Type::kInt, text, pos);
    return end;
  }

  size_t lex_string(size_t pos) {
    char quote = src_[pos];
    std::string value;
    size_t i = pos + 1;
    for (; i < src_.size() && src_[i] != quote; ++i) {
      if (src_[i] != '\\' || i + 1 >= src_.size()) {
        value += src_[i];
        continue;
      }
      char e = src_[++i];
      switch (e) {
        case 'n': value += '\n'; break;
        case 't': value += '\t'; break;
        case 'r': value += '\r'; break;
        case '\\': value += '\\'; break;
        case '\'': value += '\''; break;
        case '"': value += '"'; break;
        case '\n': break;  // line continuation
        default: value += '\\'; value += e;
      }
    }
    if (i >= src_.size()) throw Error(at(pos) + "unterminated string literal");
    emit(Token::Type::kString, value, pos);
    return i + 1;
  }

  bool is_raw_block() const {
    size_t n = tokens_.size();
    return n >= 3 && tokens_[n - 1].type == Token::Type::kBlockEnd && tokens_[n - 2].type == Token::Type::kName &&
           tokens_[n - 2].text == "raw" && tokens_[n - 3].type == Token::Type::kBlockBegin;
  }

  // After {% raw %}: everything up to {% endraw %} is text. Replaces the three raw tag
  // tokens with that text and returns the position after the endraw tag.
  size_t lex_raw(size_t pos, bool* strip_next_all, bool* trim_next_newline) {
    static const std::regex kEndRaw(R"(\{%([-+]?)\s*endraw\s*([-+]?)%\})");
    std::smatch m;
    if (!std::regex_search(src_.cbegin() + static_cast<std::ptrdiff_t>(pos), src_.cend(), m, kEndRaw)) {
      throw Error(at(pos) + "unterminated raw block: expected {% endraw %}");
    }
    size_t begin = pos;
    size_t end = pos + static_cast<size_t>(m.position(0));
    if (*strip_next_all) {
      while (begin < end && is_space(src_[begin])) ++begin;
    } else if (*trim_next_newline && begin < end && src_[begin] == '\n') {
      ++begin;
    }
    if (m[1].str() == "-") {
      while (end > begin && is_space(src_[end - 1])) --end;
    } else if (m[1].str() != "+" && options_.lstrip_blocks) {
      end = lstrip_line(begin, end);
    }
    tokens_.resize(tokens_.size() - 3);
    if (end > begin) emit(Token::Type::kText, src_.substr(begin, end - begin), begin);
    *strip_next_all = m[2].str() == "-";
    *trim_next_newline = !*strip_next_all && m[2].str() != "+" && options_.trim_blocks;
    return pos + static_cast<size_t>(m.position(0) + m.length(0));
  }

  int line_of(size_t pos) {
    // Tokens are emitted in source order, so the newline count only moves forward.
    for (; line_pos_ < pos && line_pos_ < src_.size(); ++line_pos_) {
      if (src_[line_pos_] == '\n') ++line_;
    }
    return line_;
  }

  std::string at(size_t pos) {
    size_t line = 1 + static_cast<size_t>(std::count(src_.begin(), src_.begin() + static_cast<std::ptrdiff_t>(std::min(pos, src_.size())), '\n'));
    return "line " + std::to_string(line) + ": ";
  }

  void emit(Token::Type type, std::string text, size_t pos) { tokens_.push_back({type, std::move(text), line_of(pos)}); }

  const std::string& src_;
  LexOptions options_;
  std::vector<Token> tokens_;
  size_t line_pos_ = 0;
  int line_ = 1;
};

}  // namespace

std::vector<Token> lex(const std::string& source, const LexOptions& options) {
  if (options.keep_trailing_newline || source.empty() || source.back() != '\n') return Lexer(source, options).run();
  size_t cut = source.size() >= 2 && source[source.size() - 2] == '\r' ? 2 : 1;
  std::string trimmed = source.substr(0, source.size() - cut);
  return Lexer(trimmed, options).run();
}

}  // namespace tokenmill::tokenizer::jinja
