#include "tokenizer/jinja_parser.h"

#include <charconv>
#include <initializer_list>
#include <string>

namespace tokenmill::tokenizer::jinja {
namespace {

using Type = Token::Type;

class Parser {
 public:
  explicit Parser(const std::vector<Token>& tokens) : tokens_(tokens) {}

  Body parse_template() {
    std::string end_tag;
    Body body = parse_body({}, &end_tag);
    return body;
  }

 private:
  // ---- statements ----

  // Parses statements until a block tag whose name is in `ends` (left unconsumed after
  // its name, which goes to *end_tag) or the end of the template (only when ends is empty).
  Body parse_body(std::initializer_list<const char*> ends, std::string* end_tag) {
    DepthGuard guard(this);
    Body body;
    while (true) {
      const Token& t = peek();
      if (t.type == Type::kEnd) {
        if (ends.size() == 0) return body;
        throw Error(where(t) + "unexpected end of template: expected " + describe(ends));
      }
      if (t.type == Type::kText) {
        auto s = make_stmt(Stmt::Kind::kText, t.line);
        s->text = t.text;
        body.push_back(std::move(s));
        ++pos_;
      } else if (t.type == Type::kVarBegin) {
        ++pos_;
        auto s = make_stmt(Stmt::Kind::kOutput, t.line);
        s->expr = parse_expression();
        expect(Type::kVarEnd, "'}}'");
        body.push_back(std::move(s));
      } else if (t.type == Type::kBlockBegin) {
        const Token& name = peek(1);
        if (name.type != Type::kName) throw Error(where(name) + "expected a tag name after '{%'");
        for (const char* end : ends) {
          if (name.text == end) {
            pos_ += 2;
            *end_tag = name.text;
            return body;
          }
        }
        pos_ += 2;
        body.push_back(parse_tag(name));
      } else {
        throw Error(where(t) + "unexpected token '" + t.text + "'");
      }
    }
  }

  StmtPtr parse_tag(const Token& name) {
    const std::string& tag = name.text;
    if (tag == "if") return parse_if(name.line);
    if (tag == "for") return parse_for(name.line);
    if (tag == "set") return parse_set(name.line);
    if (tag == "macro") return parse_macro(name.line);
    if (tag == "filter") return parse_filter_block(name.line);
    if (tag == "break" || tag == "continue") {
      expect(Type::kBlockEnd, "'%}'");
      return make_stmt(tag == "break" ? Stmt::Kind::kBreak : Stmt::Kind::kContinue, name.line);
    }
    if (tag == "generation") {
      expect(Type::kBlockEnd, "'%}'");
      auto s = make_stmt(Stmt::Kind::kBlock, name.line);
      std::string end;
      s->bodies.push_back(parse_body({"endgeneration"}, &end));
      expect(Type::kBlockEnd, "'%}'");
      return s;
    }
    static const char* const kEndTags[] = {"endif", "endfor", "endset", "endmacro", "endfilter",
                                           "else", "elif", "endgeneration", "endraw"};
    for (const char* end : kEndTags) {
      if (tag == end) throw Error(where(name) + "unexpected tag '" + tag + "' (no matching opening tag)");
    }
    throw Error(where(name) + "unknown or unsupported tag '" + tag + "'");
  }

  StmtPtr parse_if(int line) {
    auto s = make_stmt(Stmt::Kind::kIf, line);
    s->conditions.push_back(parse_expression());
    expect(Type::kBlockEnd, "'%}'");
    while (true) {
      std::string end;
      s->bodies.push_back(parse_body({"elif", "else", "endif"}, &end));
      if (end == "elif") {
        s->conditions.push_back(parse_expression());
        expect(Type::kBlockEnd, "'%}'");
      } else if (end == "else") {
        expect(Type::kBlockEnd, "'%}'");
        s->bodies.push_back(parse_body({"endif"}, &end));
        expect(Type::kBlockEnd, "'%}'");
        return s;
      } else {
        expect(Type::kBlockEnd, "'%}'");
        return s;
      }
    }
  }

  StmtPtr parse_for(int line) {
    auto s = make_stmt(Stmt::Kind::kFor, line);
    s->targets = parse_targets();
    expect_name("in");
    s->expr = parse_or();  // not a full expression: "if" here starts the loop filter
    if (peek_name("if")) {
      ++pos_;
      s->filter = parse_or();
    }
    if (peek_name("recursive")) throw Error(where(peek()) + "recursive for loops are not supported");
    expect(Type::kBlockEnd, "'%}'");
    std::string end;
    s->bodies.push_back(parse_body({"else", "endfor"}, &end));
    if (end == "else") {
      expect(Type::kBlockEnd, "'%}'");
      s->bodies.push_back(parse_body({"endfor"}, &end));
    }
    expect(Type::kBlockEnd, "'%}'");
    return s;
  }

  StmtPtr parse_set(int line) {
    auto s = make_stmt(Stmt::Kind::kSet, line);
    std::string first = expect_identifier();
    if (peek_operator(".")) {
      ++pos_;
      s->targets.push_back(first);
      s->attribute = expect_identifier();
    } else {
      s->targets.push_back(first);
      while (peek_operator(",")) {
        ++pos_;
        s->targets.push_back(expect_identifier());
      }
    }
    if (peek().type == Type::kBlockEnd && s->attribute.empty() && s->targets.size() == 1) {
      ++pos_;
      s->kind = Stmt::Kind::kSetBlock;
      std::string end;
      s->bodies.push_back(parse_body({"endset"}, &end));
      expect(Type::kBlockEnd, "'%}'");
      return s;
    }
    expect_operator("=");
    s->expr = parse_expression();
    expect(Type::kBlockEnd, "'%}'");
    return s;
  }

  StmtPtr parse_macro(int line) {
    auto s = make_stmt(Stmt::Kind::kMacro, line);
    s->targets.push_back(expect_identifier());
    expect_operator("(");
    while (!peek_operator(")")) {
      MacroParam param;
      param.name = expect_identifier();
      if (peek_operator("=")) {
        ++pos_;
        param.default_value = parse_expression();
      }
      s->params.push_back(std::move(param));
      if (!peek_operator(",")) break;
      ++pos_;
    }
    expect_operator(")");
    expect(Type::kBlockEnd, "'%}'");
    std::string end;
    s->bodies.push_back(parse_body({"endmacro"}, &end));
    if (peek().type == Type::kName) ++pos_;  // {% endmacro name %}
    expect(Type::kBlockEnd, "'%}'");
    return s;
  }

  StmtPtr parse_filter_block(int line) {
    auto s = make_stmt(Stmt::Kind::kFilterBlock, line);
    s->expr = parse_filter(nullptr);
    while (peek_operator("|")) {
      ++pos_;
      s->expr = parse_filter(std::move(s->expr));
    }
    expect(Type::kBlockEnd, "'%}'");
    std::string end;
    s->bodies.push_back(parse_body({"endfilter"}, &end));
    expect(Type::kBlockEnd, "'%}'");
    return s;
  }

  std::vector<std::string> parse_targets() {
    std::vector<std::string> targets;
    bool parenthesized = peek_operator("(");
    if (parenthesized) ++pos_;
    targets.push_back(expect_identifier());
    while (peek_operator(",")) {
      ++pos_;
      targets.push_back(expect_identifier());
    }
    if (parenthesized) expect_operator(")");
    return targets;
  }

  // ---- expressions, lowest precedence first ----

  ExprPtr parse_expression() {
    DepthGuard guard(this);
    ExprPtr value = parse_or();
    if (!peek_name("if")) return value;
    int line = next().line;
    auto e = make_expr(Expr::Kind::kConditional, line);
    ExprPtr condition = parse_or();
    ExprPtr otherwise;
    if (peek_name("else")) {
      ++pos_;
      otherwise = parse_expression();
    }
    e->children.push_back(std::move(condition));
    e->children.push_back(std::move(value));
    e->children.push_back(std::move(otherwise));
    return e;
  }

  ExprPtr parse_or() {
    ExprPtr left = parse_and();
    while (peek_name("or")) {
      int line = next().line;
      left = binary("or", std::move(left), parse_and(), line);
    }
    return left;
  }

  ExprPtr parse_and() {
    ExprPtr left = parse_not();
    while (peek_name("and")) {
      int line = next().line;
      left = binary("and", std::move(left), parse_not(), line);
    }
    return left;
  }

  ExprPtr parse_not() {
    DepthGuard guard(this);
    if (peek_name("not")) {
      int line = next().line;
      auto e = make_expr(Expr::Kind::kUnary, line);
      e->name = "not";
      e->children.push_back(parse_not());
      return e;
    }
    return parse_compare();
  }

  ExprPtr parse_compare() {
    ExprPtr first = parse_math1();
    ExprPtr chain;
    while (true) {
      const Token& t = peek();
      std::string op;
      if (t.type == Type::kOperator &&
          (t.text == "==" || t.text == "!=" || t.text == "<" || t.text == ">" || t.text == "<=" || t.text == ">=")) {
        op = t.text;
        ++pos_;
      } else if (peek_name("in")) {
        op = "in";
        ++pos_;
      } else if (peek_name("not") && peek(1).type == Type::kName && peek(1).text == "in") {
        op = "not in";
        pos_ += 2;
      } else {
        return chain ? std::move(chain) : std::move(first);
      }
      if (!chain) {
        chain = make_expr(Expr::Kind::kCompare, t.line);
        chain->children.push_back(std::move(first));
      }
      chain->ops.push_back(op);
      chain->children.push_back(parse_math1());
    }
  }

  ExprPtr parse_math1() {
    ExprPtr left = parse_concat();
    while (peek_operator("+") || peek_operator("-")) {
      const Token& t = next();
      left = binary(t.text, std::move(left), parse_concat(), t.line);
    }
    return left;
  }

  ExprPtr parse_concat() {
    ExprPtr left = parse_math2();
    while (peek_operator("~")) {
      int line = next().line;
      left = binary("~", std::move(left), parse_math2(), line);
    }
    return left;
  }

  ExprPtr parse_math2() {
    ExprPtr left = parse_pow();
    while (peek_operator("*") || peek_operator("/") || peek_operator("//") || peek_operator("%")) {
      const Token& t = next();
      left = binary(t.text, std::move(left), parse_pow(), t.line);
    }
    return left;
  }

  ExprPtr parse_pow() {
    ExprPtr left = parse_unary(true);
    while (peek_operator("**")) {
      int line = next().line;
      left = binary("**", std::move(left), parse_unary(true), line);
    }
    return left;
  }

  ExprPtr parse_unary(bool with_filter) {
    DepthGuard guard(this);
    ExprPtr node;
    if (peek_operator("-") || peek_operator("+")) {
      const Token& t = next();
      node = make_expr(Expr::Kind::kUnary, t.line);
      node->name = t.text;
      node->children.push_back(parse_unary(false));
    } else {
      node = parse_postfix(parse_primary());
    }
    if (!with_filter) return node;
    while (true) {
      if (peek_operator("|")) {
        ++pos_;
        node = parse_filter(std::move(node));
      } else if (peek_name("is")) {
        node = parse_test(std::move(node));
      } else {
        return node;
      }
    }
  }

  ExprPtr parse_primary() {
    const Token& t = next();
    switch (t.type) {
      case Type::kName: {
        if (t.text == "true" || t.text == "True") return literal(Value(true), t.line);
        if (t.text == "false" || t.text == "False") return literal(Value(false), t.line);
        if (t.text == "none" || t.text == "None") return literal(Value::none(), t.line);
        auto e = make_expr(Expr::Kind::kName, t.line);
        e->name = t.text;
        return e;
      }
      case Type::kString: {
        std::string s = t.text;
        while (peek().type == Type::kString) s += next().text;  // "a" "b" concatenates
        return literal(Value(std::move(s)), t.line);
      }
      case Type::kInt: return literal(Value(int_literal(t)), t.line);
      case Type::kFloat: return literal(Value(float_literal(t)), t.line);
      case Type::kOperator:
        if (t.text == "(") {
          if (peek_operator(")")) {
            ++pos_;
            return make_expr(Expr::Kind::kList, t.line);
          }
          ExprPtr first = parse_expression();
          if (!peek_operator(",")) {
            expect_operator(")");
            return first;
          }
          auto tuple = make_expr(Expr::Kind::kList, t.line);  // tuples are lists here
          tuple->children.push_back(std::move(first));
          while (peek_operator(",")) {
            ++pos_;
            if (peek_operator(")")) break;
            tuple->children.push_back(parse_expression());
          }
          expect_operator(")");
          return tuple;
        }
        if (t.text == "[") {
          auto list = make_expr(Expr::Kind::kList, t.line);
          while (!peek_operator("]")) {
            list->children.push_back(parse_expression());
            if (!peek_operator(",")) break;
            ++pos_;
          }
          expect_operator("]");
          return list;
        }
        if (t.text == "{") {
          auto dict = make_expr(Expr::Kind::kDict, t.line);
          while (!peek_operator("}")) {
            dict->key_exprs.push_back(parse_expression());
            expect_operator(":");
            dict->children.push_back(parse_expression());
            if (!peek_operator(",")) break;
            ++pos_;
          }
          expect_operator("}");
          return dict;
        }
        break;
      default: break;
    }
    throw Error(where(t) + "unexpected " + describe(t) + " in expression");
  }

  ExprPtr parse_postfix(ExprPtr node) {
    while (true) {
      if (peek_operator(".")) {
        int line = next().line;
        const Token& attr = next();
        if (attr.type != Type::kName && attr.type != Type::kInt) {
          throw Error(where(attr) + "expected an attribute name after '.'");
        }
        auto e = make_expr(attr.type == Type::kName ? Expr::Kind::kAttribute : Expr::Kind::kSubscript, line);
        e->children.push_back(std::move(node));
        if (attr.type == Type::kName) {
          e->name = attr.text;
        } else {
          e->children.push_back(literal(Value(int_literal(attr)), line));
        }
        node = std::move(e);
      } else if (peek_operator("[")) {
        node = parse_subscript(std::move(node));
      } else if (peek_operator("(")) {
        auto e = make_expr(Expr::Kind::kCall, next().line);
        e->children.push_back(std::move(node));
        parse_call_args(e.get());
        node = std::move(e);
      } else {
        return node;
      }
    }
  }

  ExprPtr parse_subscript(ExprPtr node) {
    int line = next().line;  // [
    ExprPtr parts[3];
    int n_colons = 0;
    while (!peek_operator("]")) {
      if (peek_operator(":")) {
        if (++n_colons > 2) throw Error("line " + std::to_string(line) + ": too many ':' in slice");
        ++pos_;
        continue;
      }
      if (parts[n_colons]) throw Error(where(peek()) + "expected ':' or ']' in subscript");
      parts[n_colons] = parse_expression();
    }
    expect_operator("]");
    auto e = make_expr(n_colons == 0 ? Expr::Kind::kSubscript : Expr::Kind::kSlice, line);
    e->children.push_back(std::move(node));
    if (n_colons == 0) {
      if (!parts[0]) throw Error("line " + std::to_string(line) + ": empty subscript '[]'");
      e->children.push_back(std::move(parts[0]));
    } else {
      for (auto& part : parts) e->children.push_back(std::move(part));
    }
    return e;
  }

  // After "(": positional and keyword arguments up to ")".
  void parse_call_args(Expr* e) {
    while (!peek_operator(")")) {
      if (peek().type == Type::kName && peek(1).type == Type::kOperator && peek(1).text == "=") {
        std::string key = next().text;
        ++pos_;
        e->kwargs.emplace_back(key, parse_expression());
      } else {
        if (!e->kwargs.empty()) throw Error(where(peek()) + "positional argument after keyword argument");
        e->children.push_back(parse_expression());
      }
      if (!peek_operator(",")) break;
      ++pos_;
    }
    expect_operator(")");
  }

  // After "|": name [(args)]. operand may be null for a filter block.
  ExprPtr parse_filter(ExprPtr operand) {
    const Token& name = peek();
    auto e = make_expr(Expr::Kind::kFilter, name.line);
    e->name = expect_identifier();
    e->children.push_back(std::move(operand));
    if (peek_operator("(")) {
      ++pos_;
      parse_call_args(e.get());
    }
    return e;
  }

  // At "is": [not] name [(args) | single argument].
  ExprPtr parse_test(ExprPtr operand) {
    auto e = make_expr(Expr::Kind::kTest, next().line);
    if (peek_name("not")) {
      ++pos_;
      e->negated = true;
    }
    const Token& name = peek();
    if (name.type == Type::kName) {
      e->name = next().text;
    } else if (name.type == Type::kOperator && (name.text == "==" || name.text == "!=" || name.text == "<" ||
                                                name.text == ">" || name.text == "<=" || name.text == ">=")) {
      e->name = next().text;
    } else {
      throw Error(where(name) + "expected a test name after 'is'");
    }
    e->children.push_back(std::move(operand));
    if (peek_operator("(")) {
      ++pos_;
      parse_call_args(e.get());
    } else {
      const Token& t = peek();
      bool starts_argument = t.type == Type::kString || t.type == Type::kInt || t.type == Type::kFloat ||
                             (t.type == Type::kOperator && (t.text == "[" || t.text == "{" || t.text == "(")) ||
                             (t.type == Type::kName && t.text != "else" && t.text != "or" && t.text != "and" &&
                              t.text != "if" && t.text != "is" && t.text != "in" && t.text != "not");
      if (starts_argument) e->children.push_back(parse_postfix(parse_primary()));
    }
    return e;
  }

  // ---- helpers ----

  const Token& peek(size_t ahead = 0) const {
    size_t i = pos_ + ahead;
    return i < tokens_.size() ? tokens_[i] : tokens_.back();
  }
  const Token& next() {
    const Token& t = peek();
    if (pos_ < tokens_.size() - 1) ++pos_;
    return t;
  }
  bool peek_name(const char* name) const { return peek().type == Type::kName && peek().text == name; }
  bool peek_operator(const char* op) const { return peek().type == Type::kOperator && peek().text == op; }

  void expect(Type type, const char* what) {
    const Token& t = peek();
    if (t.type != type) throw Error(where(t) + "expected " + what + ", found " + describe(t));
    ++pos_;
  }
  void expect_operator(const char* op) {
    if (!peek_operator(op)) throw Error(where(peek()) + "expected '" + op + "', found " + describe(peek()));
    ++pos_;
  }
  void expect_name(const char* name) {
    if (!peek_name(name)) throw Error(where(peek()) + "expected '" + name + "', found " + describe(peek()));
    ++pos_;
  }
  std::string expect_identifier() {
    const Token& t = peek();
    if (t.type != Type::kName) throw Error(where(t) + "expected a name, found " + describe(t));
    ++pos_;
    return t.text;
  }

  static std::string where(const Token& t) { return "line " + std::to_string(t.line) + ": "; }
  // Literals outside int64 / double are refused (Python's integers are unbounded; ours
  // are not), never thrown past the parser as std::out_of_range.
  template <typename T>
  static T number_literal(const Token& t, const char* kind) {
    T value{};
    const auto [end, ec] = std::from_chars(t.text.data(), t.text.data() + t.text.size(), value);
    if (ec != std::errc() || end != t.text.data() + t.text.size()) {
      throw Error(where(t) + kind + " literal '" + t.text.substr(0, 40) + "' is out of range");
    }
    return value;
  }
  static int64_t int_literal(const Token& t) { return number_literal<int64_t>(t, "integer"); }
  static double float_literal(const Token& t) { return number_literal<double>(t, "number"); }
  static std::string describe(const Token& t) {
    switch (t.type) {
      case Type::kText: return "template text";
      case Type::kVarBegin: return "'{{'";
      case Type::kVarEnd: return "'}}'";
      case Type::kBlockBegin: return "'{%'";
      case Type::kBlockEnd: return "'%}'";
      case Type::kString: return "string '" + t.text + "'";
      case Type::kEnd: return "end of template";
      default: return "'" + t.text + "'";
    }
  }
  static std::string describe(std::initializer_list<const char*> ends) {
    std::string out;
    for (const char* end : ends) out += (out.empty() ? "'{% " : " or '{% ") + std::string(end) + " %}'";
    return out;
  }

  static StmtPtr make_stmt(Stmt::Kind kind, int line) {
    auto s = std::make_unique<Stmt>();
    s->kind = kind;
    s->line = line;
    return s;
  }
  static ExprPtr make_expr(Expr::Kind kind, int line) {
    auto e = std::make_unique<Expr>();
    e->kind = kind;
    e->line = line;
    return e;
  }
  static ExprPtr literal(Value v, int line) {
    auto e = make_expr(Expr::Kind::kLiteral, line);
    e->value = std::move(v);
    return e;
  }
  static ExprPtr binary(std::string op, ExprPtr left, ExprPtr right, int line) {
    auto e = make_expr(Expr::Kind::kBinary, line);
    e->name = std::move(op);
    e->children.push_back(std::move(left));
    e->children.push_back(std::move(right));
    return e;
  }

  // Templates come from model files: bound the nesting so "((((..." cannot overflow the
  // stack of the recursive descent.
  static constexpr int kMaxDepth = 200;
  struct DepthGuard {
    explicit DepthGuard(Parser* p) : parser(p) {
      if (++parser->depth_ > kMaxDepth) {
        throw Error(where(parser->peek()) + "template nested too deeply (more than " + std::to_string(kMaxDepth) + " levels)");
      }
    }
    ~DepthGuard() { --parser->depth_; }
    Parser* parser;
  };

  const std::vector<Token>& tokens_;
  size_t pos_ = 0;
  int depth_ = 0;
};

}  // namespace

Body parse(const std::vector<Token>& tokens) { return Parser(tokens).parse_template(); }

}  // namespace tokenmill::tokenizer::jinja
