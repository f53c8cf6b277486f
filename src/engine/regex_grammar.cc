#include "engine/regex_grammar.h"

#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "engine/json_string_chars.h"

namespace tokenmill::engine {

namespace {

// The parsed expression: a tree of nodes in one vector.
struct Node {
  enum class Kind : uint8_t { kChars, kConcat, kAlternatives, kRepeat, kStart, kEnd };
  Kind kind = Kind::kConcat;
  CodePoints chars;             // kChars
  std::vector<int32_t> children;  // kConcat, kAlternatives; kRepeat: one
  int32_t min = 0, max = 0;     // kRepeat
};

CodePoints digits() { return CodePoints::range('0', '9'); }
CodePoints word_chars() {
  CodePoints c = CodePoints::range('a', 'z');
  c.add('A', 'Z');
  c.add('0', '9');
  c.add('_', '_');
  return c;
}
// ECMA-262's WhiteSpace and LineTerminator.
CodePoints space_chars() {
  CodePoints c = CodePoints::range(0x09, 0x0D);
  for (uint32_t x : {0x20u, 0xA0u, 0x1680u, 0x2028u, 0x2029u, 0x202Fu, 0x205Fu, 0x3000u, 0xFEFFu}) c.add(x, x);
  c.add(0x2000, 0x200A);
  return c;
}
CodePoints line_terminators() {
  CodePoints c = CodePoints::one('\n');
  c.add('\r', '\r');
  c.add(0x2028, 0x2029);
  return c;
}

class RegexParser {
 public:
  explicit RegexParser(std::string_view pattern) : text_(pattern) {}

  Status parse(int32_t& root) {
    TM_RETURN_IF_ERROR(decode());
    TM_RETURN_IF_ERROR(alternatives(root));
    if (at_ < chars_.size()) return error("an unmatched ')'");
    return {};
  }

  std::vector<Node> nodes;

 private:
  Status error(const std::string& what) const {
    return invalid_argument("the pattern " + std::string(text_) + " has " + what);
  }

  Status decode() {
    for (size_t i = 0; i < text_.size();) {
      const auto b = static_cast<unsigned char>(text_[i]);
      const int n = b < 0x80 ? 1 : b >= 0xF0 ? 4 : b >= 0xE0 ? 3 : b >= 0xC0 ? 2 : 0;
      if (n == 0 || i + n > text_.size()) return invalid_argument("the pattern is not UTF-8");
      uint32_t c = n == 1 ? b : n == 2 ? b & 0x1F : n == 3 ? b & 0x0F : b & 0x07;
      for (int k = 1; k < n; ++k) c = (c << 6) | (static_cast<unsigned char>(text_[i + k]) & 0x3F);
      chars_.push_back(c);
      i += n;
    }
    return {};
  }

  bool at_end() const { return at_ >= chars_.size(); }
  uint32_t peek(size_t ahead = 0) const { return at_ + ahead < chars_.size() ? chars_[at_ + ahead] : 0; }
  bool take(uint32_t c) {
    if (at_end() || chars_[at_] != c) return false;
    ++at_;
    return true;
  }

  int32_t add(Node n) {
    nodes.push_back(std::move(n));
    return static_cast<int32_t>(nodes.size() - 1);
  }
  int32_t add_chars(CodePoints c) {
    Node n;
    n.kind = Node::Kind::kChars;
    n.chars = std::move(c);
    return add(std::move(n));
  }

  Status alternatives(int32_t& out) {
    if (++depth_ > 256) return error("groups nested deeper than 256");
    Node alt;
    alt.kind = Node::Kind::kAlternatives;
    while (true) {
      int32_t branch = 0;
      TM_RETURN_IF_ERROR(sequence(branch));
      alt.children.push_back(branch);
      if (!take('|')) break;
    }
    --depth_;
    out = alt.children.size() == 1 ? alt.children[0] : add(std::move(alt));
    return {};
  }

  Status sequence(int32_t& out) {
    Node seq;
    seq.kind = Node::Kind::kConcat;
    while (!at_end() && peek() != '|' && peek() != ')') {
      int32_t item = 0;
      TM_RETURN_IF_ERROR(quantified(item));
      seq.children.push_back(item);
    }
    out = add(std::move(seq));
    return {};
  }

  // {n}, {n,}, {n,m} at the cursor (after '{'), or nullopt (then '{' is a literal).
  std::optional<std::pair<int64_t, int64_t>> braces() {
    const size_t start = at_;
    auto number = [&]() -> std::optional<int64_t> {
      int64_t v = 0;
      size_t n = 0;
      while (!at_end() && peek() >= '0' && peek() <= '9') {
        v = std::min<int64_t>(v * 10 + (peek() - '0'), INT32_MAX);
        ++at_;
        ++n;
      }
      return n ? std::optional<int64_t>(v) : std::nullopt;
    };
    auto low = number();
    if (low) {
      int64_t high = *low;
      if (take(',')) high = number().value_or(-1);
      if (take('}')) return std::make_pair(*low, high);
    }
    at_ = start;
    return std::nullopt;
  }

  Status quantified(int32_t& out) {
    int32_t atom_index = 0;
    TM_RETURN_IF_ERROR(atom(atom_index));
    while (!at_end()) {
      int64_t min = 0, max = 0;
      const uint32_t c = peek();
      if (c == '*') {
        min = 0, max = -1;
      } else if (c == '+') {
        min = 1, max = -1;
      } else if (c == '?') {
        min = 0, max = 1;
      } else if (c == '{') {
        const size_t brace = at_++;
        auto counts = braces();  // on success the cursor is past the '}'
        if (!counts) {
          at_ = brace;  // a literal '{'
          break;
        }
        std::tie(min, max) = *counts;
      } else {
        break;
      }
      if (c != '{') ++at_;
      const Node::Kind k = nodes[atom_index].kind;
      if (k == Node::Kind::kStart || k == Node::Kind::kEnd) return error("a quantified anchor");
      if (min > kMaxRegexCount || max > kMaxRegexCount) {
        return error("a count over " + std::to_string(kMaxRegexCount));
      }
      if (max >= 0 && min > max) return error("a count {n,m} with n > m");
      take('?');  // lazy: the same strings
      Node r;
      r.kind = Node::Kind::kRepeat;
      r.children = {atom_index};
      r.min = static_cast<int32_t>(min);
      r.max = max < 0 ? Grammar::kUnbounded : static_cast<int32_t>(max);
      atom_index = add(std::move(r));
    }
    out = atom_index;
    return {};
  }

  Status atom(int32_t& out) {
    const uint32_t c = chars_[at_++];
    switch (c) {
      case '(': {
        if (take('?')) {
          if (take(':')) {
          } else if (peek() == '=' || peek() == '!') {
            return error("a look-ahead (?" + std::string(1, static_cast<char>(peek())) + "...): not supported");
          } else if (peek() == '<' && (peek(1) == '=' || peek(1) == '!')) {
            return error("a look-behind (?<" + std::string(1, static_cast<char>(peek(1))) + "...): not supported");
          } else if (take('<')) {
            while (!at_end() && peek() != '>') ++at_;
            if (!take('>')) return error("an unterminated group name");
          } else {
            return error("an unknown group kind (?" + std::string(1, static_cast<char>(peek())));
          }
        }
        TM_RETURN_IF_ERROR(alternatives(out));
        if (!take(')')) return error("an unclosed '('");
        return {};
      }
      case '[': return char_class(out);
      case '.': out = add_chars(line_terminators().complement()); return {};
      case '^': out = add(Node{Node::Kind::kStart, {}, {}, 0, 0}); return {};
      case '$': out = add(Node{Node::Kind::kEnd, {}, {}, 0, 0}); return {};
      case '\\': {
        CodePoints set;
        TM_RETURN_IF_ERROR(escape(/*in_class=*/false, set));
        out = add_chars(std::move(set));
        return {};
      }
      case '*': case '+': case '?': return error("a quantifier with nothing to repeat");
      case ')': return error("an unmatched ')'");
      default: out = add_chars(CodePoints::one(c)); return {};
    }
  }

  Status hex_digits(int n, uint32_t& value) {
    value = 0;
    for (int i = 0; i < n; ++i) {
      const uint32_t h = peek();
      const int d = h >= '0' && h <= '9' ? int(h - '0') : h >= 'a' && h <= 'f' ? int(h - 'a' + 10)
                  : h >= 'A' && h <= 'F' ? int(h - 'A' + 10) : -1;
      if (d < 0) return error("a malformed hexadecimal escape");
      value = value * 16 + static_cast<uint32_t>(d);
      ++at_;
    }
    return {};
  }

  // After a backslash: the characters the escape stands for.
  Status escape(bool in_class, CodePoints& out) {
    if (at_end()) return error("a trailing backslash");
    const uint32_t c = chars_[at_++];
    switch (c) {
      case 'd': out = digits(); return {};
      case 'D': out = digits().complement(); return {};
      case 'w': out = word_chars(); return {};
      case 'W': out = word_chars().complement(); return {};
      case 's': out = space_chars(); return {};
      case 'S': out = space_chars().complement(); return {};
      case 't': out = CodePoints::one('\t'); return {};
      case 'n': out = CodePoints::one('\n'); return {};
      case 'r': out = CodePoints::one('\r'); return {};
      case 'f': out = CodePoints::one('\f'); return {};
      case 'v': out = CodePoints::one('\v'); return {};
      case '0':
        if (peek() >= '0' && peek() <= '9') return error("an octal escape: not supported");
        out = CodePoints::one(0);
        return {};
      case 'b':
        if (in_class) {
          out = CodePoints::one('\b');
          return {};
        }
        return error("a word boundary \\b: not supported");
      case 'B': return error("a word boundary \\B: not supported");
      case 'k': return error("a back-reference \\k<...>: not supported");
      case 'p': case 'P': return error("a Unicode property class \\" + std::string(1, static_cast<char>(c)) + "{...}: not supported");
      case 'c': {
        const uint32_t l = peek();
        if (!((l >= 'a' && l <= 'z') || (l >= 'A' && l <= 'Z'))) return error("a malformed \\c escape");
        ++at_;
        out = CodePoints::one(l % 32);
        return {};
      }
      case 'x': {
        uint32_t v = 0;
        TM_RETURN_IF_ERROR(hex_digits(2, v));
        out = CodePoints::one(v);
        return {};
      }
      case 'u': {
        uint32_t v = 0;
        if (take('{')) {
          while (!at_end() && peek() != '}') {
            uint32_t d = 0;
            TM_RETURN_IF_ERROR(hex_digits(1, d));
            v = v * 16 + d;
            if (v > CodePoints::kMax) return error("a \\u{...} escape past U+10FFFF");
          }
          if (!take('}')) return error("an unterminated \\u{...} escape");
        } else {
          TM_RETURN_IF_ERROR(hex_digits(4, v));
        }
        out = CodePoints::one(v);
        return {};
      }
      default:
        if (c >= '1' && c <= '9') return error("a back-reference \\" + std::string(1, static_cast<char>(c)) + ": not supported");
        out = CodePoints::one(c);  // an identity escape: \. \/ \- \[ ...
        return {};
    }
  }

  // After '[': a class up to its ']'.
  Status char_class(int32_t& out) {
    const bool negated = take('^');
    CodePoints set;
    while (true) {
      if (at_end()) return error("an unclosed '['");
      if (peek() == ']') break;  // "[]" matches nothing, "[^]" anything
      CodePoints low;
      bool single = true;
      uint32_t low_char = 0;
      TM_RETURN_IF_ERROR(class_atom(low, single, low_char));
      if (single && peek() == '-' && peek(1) != ']' && at_ + 1 < chars_.size()) {
        ++at_;
        CodePoints high;
        bool high_single = true;
        uint32_t high_char = 0;
        TM_RETURN_IF_ERROR(class_atom(high, high_single, high_char));
        if (!high_single) return error("a range ending in a class escape");
        if (high_char < low_char) return error("a range out of order");
        set.add(low_char, high_char);
        continue;
      }
      set.add(low);
    }
    take(']');
    out = add_chars(negated ? set.complement() : set);
    return {};
  }

  Status class_atom(CodePoints& out, bool& single, uint32_t& c) {
    c = chars_[at_++];
    if (c != '\\') {
      out = CodePoints::one(c);
      single = true;
      return {};
    }
    TM_RETURN_IF_ERROR(escape(/*in_class=*/true, out));
    single = out.ranges().size() == 1 && out.ranges()[0].first == out.ranges()[0].second;
    if (single) c = out.ranges()[0].first;
    return {};
  }

  std::string_view text_;
  std::vector<uint32_t> chars_;
  size_t at_ = 0;
  int depth_ = 0;
};

bool nullable(const std::vector<Node>& nodes, int32_t i) {
  const Node& n = nodes[i];
  switch (n.kind) {
    case Node::Kind::kChars: return false;
    case Node::Kind::kStart: case Node::Kind::kEnd: return true;
    case Node::Kind::kRepeat: return n.min == 0 || nullable(nodes, n.children[0]);
    case Node::Kind::kConcat:
      for (int32_t c : n.children) if (!nullable(nodes, c)) return false;
      return true;
    case Node::Kind::kAlternatives:
      for (int32_t c : n.children) if (nullable(nodes, c)) return true;
      return false;
  }
  return false;
}

class RegexCompiler {
 public:
  RegexCompiler(Grammar& grammar, const std::vector<Node>& nodes, int32_t counter, std::string_view pattern)
      : g_(grammar), nodes_(nodes), counter_(counter), pattern_(pattern) {}

  // A sequence for node i, appended to out.
  Status emit(int32_t i, Grammar::Sequence& out) {
    const Node& n = nodes_[i];
    switch (n.kind) {
      case Node::Kind::kChars:
        out.push_back(Grammar::rule(json_string_char_rule(g_, n.chars, counter_)));
        return {};
      case Node::Kind::kConcat:
        for (int32_t c : n.children) TM_RETURN_IF_ERROR(emit(c, out));
        return {};
      case Node::Kind::kAlternatives: {
        std::vector<Grammar::Sequence> alternatives;
        for (int32_t c : n.children) {
          alternatives.emplace_back();
          TM_RETURN_IF_ERROR(emit(c, alternatives.back()));
        }
        out.push_back(Grammar::rule(g_.rule_of(std::move(alternatives))));
        return {};
      }
      case Node::Kind::kRepeat: {
        if (nullable(nodes_, n.children[0])) {
          return invalid_argument("the pattern " + std::string(pattern_) +
                                  " repeats a part that can match the empty string: not supported");
        }
        Grammar::Sequence body;
        TM_RETURN_IF_ERROR(emit(n.children[0], body));
        out.push_back(Grammar::repeat(g_.rule_of({std::move(body)}), n.min, n.max));
        return {};
      }
      case Node::Kind::kStart:
      case Node::Kind::kEnd:
        return invalid_argument("the pattern " + std::string(pattern_) +
                                " has an anchor (^ or $) inside: only at its start or end is supported");
    }
    return {};
  }

  Grammar::Sequence any_string() {
    return {Grammar::repeat(g_.rule_of({{Grammar::rule(json_string_char_rule(g_, CodePoints::all(), counter_))}}), 0,
                            Grammar::kUnbounded)};
  }

 private:
  Grammar& g_;
  const std::vector<Node>& nodes_;
  int32_t counter_;
  std::string_view pattern_;
};

}  // namespace

Result<int32_t> regex_rule(Grammar& grammar, std::string_view pattern, int32_t length_counter) {
  RegexParser parser(pattern);
  int32_t root = 0;
  TM_RETURN_IF_ERROR(parser.parse(root));
  std::vector<Node>& nodes = parser.nodes;
  std::vector<int32_t> branches =
      nodes[root].kind == Node::Kind::kAlternatives ? nodes[root].children : std::vector<int32_t>{root};
  RegexCompiler compiler(grammar, nodes, length_counter, pattern);
  std::vector<Grammar::Sequence> alternatives;
  for (int32_t branch : branches) {
    // A top-level alternative: its leading ^ and trailing $ anchor it; without them the
    // string may have anything before or after the match.
    std::vector<int32_t> items =
        nodes[branch].kind == Node::Kind::kConcat ? nodes[branch].children : std::vector<int32_t>{branch};
    bool anchored_start = false, anchored_end = false;
    while (!items.empty() && nodes[items.front()].kind == Node::Kind::kStart) {
      anchored_start = true;
      items.erase(items.begin());
    }
    while (!items.empty() && nodes[items.back()].kind == Node::Kind::kEnd) {
      anchored_end = true;
      items.pop_back();
    }
    Grammar::Sequence s;
    if (!anchored_start) s = compiler.any_string();
    for (int32_t item : items) TM_RETURN_IF_ERROR(compiler.emit(item, s));
    if (!anchored_end) {
      for (const auto& e : compiler.any_string()) s.push_back(e);
    }
    alternatives.push_back(std::move(s));
  }
  return grammar.rule_of(std::move(alternatives));
}

}  // namespace tokenmill::engine
