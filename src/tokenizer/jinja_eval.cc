#include "tokenizer/jinja_eval.h"

#include <cmath>
#include <unordered_map>

#include "tokenizer/jinja_builtins.h"
#include "tokenizer/jinja_parser.h"

namespace tokenmill::tokenizer::jinja {
namespace {

std::string where(int line) { return "line " + std::to_string(line) + ": "; }

// Adds "line N: " to an error raised by a built-in that does not know where it is.
[[noreturn]] void rethrow_at(const Error& e, int line) {
  std::string message = e.what();
  if (message.rfind("line ", 0) == 0) throw e;
  throw Error(where(line) + message);
}

// ---- checks run once at parse time ----

// Unknown filters and tests are refused at parse time, except inside an if's branches: there
// jinja2 defers the check to the moment one is evaluated, so a template can guard a filter
// another engine provides ({% if 'from_json' is filter %}) or use it on a path never taken.
void check_expr(const Expr* e, bool deferred) {
  if (e == nullptr) return;
  if (!deferred && e->kind == Expr::Kind::kFilter && !is_known_filter(e->name)) {
    throw Error(where(e->line) + "unknown filter '" + e->name + "'");
  }
  if (!deferred && e->kind == Expr::Kind::kTest && !is_known_test(e->name)) {
    throw Error(where(e->line) + "unknown test '" + e->name + "'");
  }
  for (const auto& child : e->children) check_expr(child.get(), deferred);
  for (const auto& key : e->key_exprs) check_expr(key.get(), deferred);
  for (const auto& [name, arg] : e->kwargs) check_expr(arg.get(), deferred);
}

void check_body(const Body& body, bool deferred) {
  for (const auto& s : body) {
    check_expr(s->expr.get(), deferred);
    check_expr(s->filter.get(), deferred);
    for (const auto& c : s->conditions) check_expr(c.get(), deferred);
    for (const auto& p : s->params) check_expr(p.default_value.get(), deferred);
    const bool branches = deferred || s->kind == Stmt::Kind::kIf;
    for (const auto& b : s->bodies) check_body(b, branches);
  }
}

// ---- arithmetic and comparison ----

[[noreturn]] void bad_operands(const std::string& op, const Value& a, const Value& b) {
  throw Error(std::string("unsupported operand types for ") + op + ": '" + a.type_name() + "' and '" +
              b.type_name() + "'");
}

bool numeric(const Value& v) { return v.is_number() || v.is_bool(); }
double to_double(const Value& v) { return v.is_bool() ? (v.as_bool() ? 1 : 0) : v.as_double(); }
int64_t to_int(const Value& v) { return v.is_bool() ? (v.as_bool() ? 1 : 0) : v.as_int(); }
bool both_int(const Value& a, const Value& b) { return (a.is_int() || a.is_bool()) && (b.is_int() || b.is_bool()); }

Value repeat(const Value& seq, int64_t n) {
  const size_t unit = seq.is_string() ? seq.as_string().size() : seq.as_list().size();
  const size_t limit = seq.is_string() ? kMaxStringBytes : kMaxListItems;
  if (n > 0 && unit > 0 && static_cast<uint64_t>(n) > limit / unit) {
    throw Error("repeating " + std::to_string(unit) + (seq.is_string() ? " bytes " : " items ") +
                std::to_string(n) + " times is too large");
  }
  if (seq.is_string()) {
    std::string out;
    for (int64_t i = 0; i < n; ++i) out += seq.as_string();
    return Value(std::move(out));
  }
  List out;
  for (int64_t i = 0; i < n; ++i) out.insert(out.end(), seq.as_list().begin(), seq.as_list().end());
  return Value(std::move(out));
}

// "%s and %d" % (a, b): the printf-style formatting chat templates occasionally use.
Value percent_format(const std::string& format, const Value& args) {
  List values = args.is_list() ? args.as_list() : List{args};
  std::string out;
  size_t next = 0;
  for (size_t i = 0; i < format.size(); ++i) {
    if (format[i] != '%' || i + 1 >= format.size()) {
      out += format[i];
      continue;
    }
    char spec = format[++i];
    if (spec == '%') {
      out += '%';
      continue;
    }
    if (next >= values.size()) throw Error("not enough arguments for format string");
    const Value& v = values[next++];
    if (spec == 's') {
      out += v.to_str();
    } else if (spec == 'r') {
      out += v.repr();
    } else if (spec == 'd' || spec == 'i') {
      if (!numeric(v)) throw Error("%d format: a number is required");
      out += std::to_string(v.is_float() ? static_cast<int64_t>(v.as_double()) : to_int(v));
    } else {
      throw Error(std::string("unsupported format character '") + spec + "'");
    }
  }
  return Value(std::move(out));
}

// Integer arithmetic that refuses to overflow (Python's integers are unbounded; ours are
// int64, and signed overflow is undefined in C++).
[[noreturn]] void overflow(const std::string& op, int64_t a, int64_t b) {
  throw Error("integer overflow in " + std::to_string(a) + " " + op + " " + std::to_string(b));
}

int64_t checked_int(const std::string& op, int64_t a, int64_t b) {
  int64_t r = 0;
  const bool overflowed = op == "+" ? __builtin_add_overflow(a, b, &r)
                          : op == "-" ? __builtin_sub_overflow(a, b, &r)
                                      : __builtin_mul_overflow(a, b, &r);
  if (overflowed) overflow(op, a, b);
  return r;
}

int64_t int_power(int64_t base, int64_t exponent) {
  int64_t result = 1;
  int64_t factor = base;
  for (int64_t e = exponent; e > 0; e >>= 1) {
    if ((e & 1) && __builtin_mul_overflow(result, factor, &result)) overflow("**", base, exponent);
    if (e > 1 && __builtin_mul_overflow(factor, factor, &factor)) overflow("**", base, exponent);
  }
  return result;
}

Value arithmetic(const std::string& op, const Value& a, const Value& b) {
  if (op == "~") return Value(a.to_str() + b.to_str());
  if (op == "+") {
    if (numeric(a) && numeric(b)) {
      return both_int(a, b) ? Value(checked_int(op, to_int(a), to_int(b))) : Value(to_double(a) + to_double(b));
    }
    if (a.is_string() && b.is_string()) return Value(a.as_string() + b.as_string());
    if (a.is_list() && b.is_list()) {
      List out = a.as_list();
      out.insert(out.end(), b.as_list().begin(), b.as_list().end());
      return Value(std::move(out));
    }
    bad_operands(op, a, b);
  }
  if (op == "*") {
    if (numeric(a) && numeric(b)) {
      return both_int(a, b) ? Value(checked_int(op, to_int(a), to_int(b))) : Value(to_double(a) * to_double(b));
    }
    if ((a.is_string() || a.is_list()) && both_int(b, b)) return repeat(a, to_int(b));
    if ((b.is_string() || b.is_list()) && both_int(a, a)) return repeat(b, to_int(a));
    bad_operands(op, a, b);
  }
  if (op == "%" && a.is_string()) return percent_format(a.as_string(), b);
  if (!numeric(a) || !numeric(b)) bad_operands(op, a, b);
  if (op == "-") return both_int(a, b) ? Value(checked_int(op, to_int(a), to_int(b))) : Value(to_double(a) - to_double(b));
  if (op == "**") {
    if (both_int(a, b) && to_int(b) >= 0) return Value(int_power(to_int(a), to_int(b)));
    return Value(std::pow(to_double(a), to_double(b)));
  }
  if ((op == "/" || op == "//" || op == "%") && to_double(b) == 0) throw Error("division by zero");
  if ((op == "//" || op == "%") && both_int(a, b) && to_int(a) == INT64_MIN && to_int(b) == -1) {
    overflow(op, INT64_MIN, -1);
  }
  if (op == "/") return Value(to_double(a) / to_double(b));
  if (op == "//") {
    if (both_int(a, b)) {
      int64_t q = to_int(a) / to_int(b);
      if ((to_int(a) % to_int(b) != 0) && ((to_int(a) < 0) != (to_int(b) < 0))) --q;  // floor
      return Value(q);
    }
    return Value(std::floor(to_double(a) / to_double(b)));
  }
  if (op == "%") {
    if (both_int(a, b)) {
      int64_t r = to_int(a) % to_int(b);
      if (r != 0 && ((r < 0) != (to_int(b) < 0))) r += to_int(b);  // sign of the divisor
      return Value(r);
    }
    double r = std::fmod(to_double(a), to_double(b));
    if (r != 0 && ((r < 0) != (to_double(b) < 0))) r += to_double(b);
    return Value(r);
  }
  throw Error("unknown operator '" + op + "'");
}

// Python's <, for numbers, strings and lists. Returns -1, 0, 1.
int compare(const Value& a, const Value& b, const std::string& op) {
  if (numeric(a) && numeric(b)) {
    double x = to_double(a), y = to_double(b);
    return x < y ? -1 : x > y ? 1 : 0;
  }
  if (a.is_string() && b.is_string()) return a.as_string().compare(b.as_string()) < 0 ? -1 : a.as_string() == b.as_string() ? 0 : 1;
  if (a.is_list() && b.is_list()) {
    const List& x = a.as_list();
    const List& y = b.as_list();
    for (size_t i = 0; i < x.size() && i < y.size(); ++i) {
      if (!x[i].equals(y[i])) return compare(x[i], y[i], op);
    }
    return x.size() < y.size() ? -1 : x.size() > y.size() ? 1 : 0;
  }
  throw Error("'" + op + "' not supported between '" + a.type_name() + "' and '" + b.type_name() + "'");
}

bool contains(const Value& container, const Value& item) {
  if (container.is_string()) {
    if (!item.is_string()) throw Error(std::string("'in <string>' requires a string, not '") + item.type_name() + "'");
    return container.as_string().find(item.as_string()) != std::string::npos;
  }
  if (container.is_list()) {
    for (const Value& v : container.as_list()) {
      if (v.equals(item)) return true;
    }
    return false;
  }
  if (container.is_dict()) return item.is_string() && container.find(item.as_string()) != nullptr;
  if (container.is_undefined()) return false;  // jinja2's Undefined iterates as empty
  throw Error(std::string("argument of type '") + container.type_name() + "' is not iterable");
}

// Python slice semantics over a sequence of n items.
std::vector<int64_t> slice_indices(int64_t n, const Value& start, const Value& stop, const Value& step_value) {
  auto as_index = [](const Value& v, const char* what) {
    if (!v.is_int()) throw Error(std::string("slice ") + what + " must be an integer, not " + v.type_name());
    return v.as_int();
  };
  int64_t step = step_value.is_none() || step_value.is_undefined() ? 1 : as_index(step_value, "step");
  if (step == 0) throw Error("slice step cannot be zero");
  auto clamp = [&](const Value& v, int64_t fallback) {
    if (v.is_none() || v.is_undefined()) return fallback;
    int64_t i = as_index(v, "index");
    if (i < 0) i += n;
    if (step > 0) return std::min(std::max<int64_t>(i, 0), n);
    return std::min(std::max<int64_t>(i, -1), n - 1);
  };
  int64_t begin = clamp(start, step > 0 ? 0 : n - 1);
  int64_t end = clamp(stop, step > 0 ? n : -1);
  std::vector<int64_t> out;
  for (int64_t i = begin; step > 0 ? i < end : i > end; i += step) out.push_back(i);
  return out;
}

// ---- the evaluator ----

enum class Flow { kNormal, kBreak, kContinue };

class Renderer {
 public:
  explicit Renderer(const Dict& variables) {
    frames_.emplace_back();
    for (auto& [name, value] : builtin_globals()) frames_.back()[name] = value;
    for (const auto& [name, value] : variables) frames_.back()[name] = value;
  }

  std::string render(const Body& body) {
    std::string out;
    run_body(body, out);
    return out;
  }

 private:
  using Frame = std::unordered_map<std::string, Value>;

  Flow run_body(const Body& body, std::string& out) {
    for (const auto& s : body) {
      Flow flow = run(*s, out);
      if (flow != Flow::kNormal) return flow;
    }
    return Flow::kNormal;
  }

  static Flow append_output(std::string& out, const std::string& text) {
    if (out.size() + text.size() > kMaxOutputBytes) {
      throw Error("the template's output passed " + std::to_string(kMaxOutputBytes >> 20) + " MiB");
    }
    out += text;
    return Flow::kNormal;
  }

  Flow run(const Stmt& s, std::string& out) {
    switch (s.kind) {
      case Stmt::Kind::kText: return append_output(out, s.text);
      case Stmt::Kind::kOutput: return append_output(out, eval(*s.expr).to_str());
      case Stmt::Kind::kIf:
        for (size_t i = 0; i < s.bodies.size(); ++i) {
          if (i >= s.conditions.size() || eval(*s.conditions[i]).truthy()) return run_body(s.bodies[i], out);
        }
        return Flow::kNormal;
      case Stmt::Kind::kFor: run_for(s, out); return Flow::kNormal;
      case Stmt::Kind::kSet: run_set(s); return Flow::kNormal;
      case Stmt::Kind::kSetBlock: {
        std::string captured;
        run_body(s.bodies[0], captured);
        assign(s.targets[0], Value(std::move(captured)));
        return Flow::kNormal;
      }
      case Stmt::Kind::kMacro: assign(s.targets[0], make_macro(s)); return Flow::kNormal;
      case Stmt::Kind::kBreak: return Flow::kBreak;
      case Stmt::Kind::kContinue: return Flow::kContinue;
      case Stmt::Kind::kFilterBlock: {
        std::string captured;
        run_body(s.bodies[0], captured);
        filter_input_ = Value(std::move(captured));
        out += eval(*s.expr).to_str();
        return Flow::kNormal;
      }
      case Stmt::Kind::kBlock: return run_body(s.bodies[0], out);
    }
    return Flow::kNormal;
  }

  void run_for(const Stmt& s, std::string& out) {
    Value iterable = eval(*s.expr);
    if (iterable.is_none() || iterable.is_bool() || iterable.is_number() || iterable.is_function()) {
      throw Error(where(s.line) + "cannot loop over a value of type '" + iterable.type_name() + "'");
    }
    List all = iterate(iterable);
    List items;
    if (s.filter) {
      for (const Value& item : all) {
        frames_.emplace_back();
        bind_targets(s, item);
        bool keep = eval(*s.filter).truthy();
        frames_.pop_back();
        if (keep) items.push_back(item);
      }
    } else {
      items = std::move(all);
    }
    if (items.empty()) {
      if (s.bodies.size() > 1) run_body(s.bodies[1], out);
      return;
    }
    const auto n = static_cast<int64_t>(items.size());
    for (int64_t i = 0; i < n; ++i) {
      if (++n_iterations_ > kMaxIterations) {
        throw Error(where(s.line) + "template ran more than " + std::to_string(kMaxIterations) + " loop iterations");
      }
      // Each iteration gets a fresh scope: a plain `set` inside the loop does not
      // survive the iteration (that is what namespace() is for).
      frames_.emplace_back();
      Value loop(Dict{
          {"index", Value(i + 1)},
          {"index0", Value(i)},
          {"revindex", Value(n - i)},
          {"revindex0", Value(n - i - 1)},
          {"first", Value(i == 0)},
          {"last", Value(i == n - 1)},
          {"length", Value(n)},
          {"previtem", i > 0 ? items[i - 1] : Value::undefined("loop.previtem")},
          {"nextitem", i + 1 < n ? items[i + 1] : Value::undefined("loop.nextitem")},
      });
      loop.set("cycle", Value::function("loop.cycle", [i](const CallArgs& args) {
        if (args.positional.empty()) throw Error("loop.cycle() needs at least one argument");
        return args.positional[static_cast<size_t>(i) % args.positional.size()];
      }));
      frames_.back()["loop"] = loop;
      bind_targets(s, items[i]);
      Flow flow = run_body(s.bodies[0], out);
      frames_.pop_back();
      if (flow == Flow::kBreak) break;
    }
  }

  void bind_targets(const Stmt& s, const Value& item) {
    if (s.targets.size() == 1) {
      frames_.back()[s.targets[0]] = item;
      return;
    }
    List parts = iterate(item);
    if (parts.size() != s.targets.size()) {
      throw Error(where(s.line) + "cannot unpack " + std::to_string(parts.size()) + " values into " +
                  std::to_string(s.targets.size()) + " loop variables");
    }
    for (size_t k = 0; k < parts.size(); ++k) frames_.back()[s.targets[k]] = parts[k];
  }

  void run_set(const Stmt& s) {
    Value value = eval(*s.expr);
    if (!s.attribute.empty()) {
      Value target = lookup(s.targets[0]);
      if (!target.is_namespace()) {
        throw Error(where(s.line) + "cannot assign attribute '" + s.attribute + "' of '" + s.targets[0] +
                    "': only namespace() objects allow attribute assignment");
      }
      target.set(s.attribute, std::move(value));
      return;
    }
    if (s.targets.size() == 1) {
      assign(s.targets[0], std::move(value));
      return;
    }
    List parts = iterate(value);
    if (parts.size() != s.targets.size()) throw Error(where(s.line) + "cannot unpack values in set");
    for (size_t k = 0; k < parts.size(); ++k) assign(s.targets[k], parts[k]);
  }

  void assign(const std::string& name, Value value) { frames_.back()[name] = std::move(value); }

  Value lookup(const std::string& name) const {
    for (auto it = frames_.rbegin(); it != frames_.rend(); ++it) {
      auto found = it->find(name);
      if (found != it->end()) return found->second;
    }
    return Value::undefined(name);
  }

  // A macro call renders the body with the parameters bound over the template's globals.
  Value make_macro(const Stmt& s) {
    const Stmt* macro = &s;
    return Value::function(s.targets[0], [this, macro](const CallArgs& args) {
      if (macro_depth_ >= kMaxMacroDepth) {
        throw Error("macro '" + macro->targets[0] + "' nested more than " + std::to_string(kMaxMacroDepth) + " calls deep");
      }
      Frame frame;
      for (size_t i = 0; i < macro->params.size(); ++i) {
        const MacroParam& param = macro->params[i];
        const Value* given = args.get(i, param.name.c_str());
        frame[param.name] = given != nullptr          ? *given
                            : param.default_value    ? eval(*param.default_value)
                                                     : Value::undefined(param.name);
      }
      if (args.positional.size() > macro->params.size()) {
        throw Error("macro '" + macro->targets[0] + "' takes " + std::to_string(macro->params.size()) +
                    " arguments, " + std::to_string(args.positional.size()) + " given");
      }
      std::vector<Frame> saved = std::move(frames_);
      frames_ = {saved.front(), std::move(frame)};
      std::string out;
      ++macro_depth_;
      try {
        run_body(macro->bodies[0], out);
      } catch (...) {
        frames_ = std::move(saved);
        --macro_depth_;
        throw;
      }
      frames_ = std::move(saved);
      --macro_depth_;
      return Value(std::move(out));
    });
  }

  Value eval(const Expr& e) {
    try {
      return eval_inner(e);
    } catch (const Error& error) {
      rethrow_at(error, e.line);
    }
  }

  Value eval_inner(const Expr& e) {
    switch (e.kind) {
      case Expr::Kind::kLiteral: return e.value;
      case Expr::Kind::kName: return lookup(e.name);
      case Expr::Kind::kList: {
        List list;
        for (const auto& child : e.children) list.push_back(eval(*child));
        return Value(std::move(list));
      }
      case Expr::Kind::kDict: {
        Value dict{Dict{}};
        for (size_t i = 0; i < e.children.size(); ++i) {
          Value key = eval(*e.key_exprs[i]);
          dict.set(key.is_string() ? key.as_string() : key.to_str(), eval(*e.children[i]));
        }
        return dict;
      }
      case Expr::Kind::kAttribute: return attribute(eval(*e.children[0]), e.name);
      case Expr::Kind::kSubscript: return subscript(eval(*e.children[0]), eval(*e.children[1]));
      case Expr::Kind::kSlice: return slice(e);
      case Expr::Kind::kCall: {
        Value callee = eval(*e.children[0]);
        if (callee.is_undefined()) throw Error("'" + callee.undefined_name() + "' is undefined");
        if (!callee.is_function()) throw Error(std::string("'") + callee.type_name() + "' object is not callable");
        return callee.call(eval_args(e));
      }
      case Expr::Kind::kFilter: {
        Value operand = e.children[0] ? eval(*e.children[0]) : filter_input_;
        return apply_filter(e.name, operand, eval_args(e));
      }
      case Expr::Kind::kTest: return Value(apply_test(e.name, eval(*e.children[0]), eval_args(e)) != e.negated);
      case Expr::Kind::kUnary: {
        Value v = eval(*e.children[0]);
        if (e.name == "not") return Value(!v.truthy());
        if (!numeric(v)) throw Error("bad operand type for unary " + e.name + ": '" + v.type_name() + "'");
        if (e.name == "+") return v.is_bool() ? Value(to_int(v)) : v;
        if (v.is_float()) return Value(-v.as_double());
        if (to_int(v) == INT64_MIN) throw Error("integer overflow in -(" + std::to_string(INT64_MIN) + ")");
        return Value(-to_int(v));
      }
      case Expr::Kind::kBinary: return binary(e);
      case Expr::Kind::kCompare: {
        Value left = eval(*e.children[0]);
        for (size_t i = 0; i < e.ops.size(); ++i) {
          Value right = eval(*e.children[i + 1]);
          if (!compare_values(e.ops[i], left, right)) return Value(false);
          left = std::move(right);
        }
        return Value(true);
      }
      case Expr::Kind::kConditional:
        if (eval(*e.children[0]).truthy()) return eval(*e.children[1]);
        return e.children[2] ? eval(*e.children[2]) : Value::undefined("");
    }
    throw Error("unknown expression");
  }

  CallArgs eval_args(const Expr& e) {
    CallArgs args;
    for (size_t i = 1; i < e.children.size(); ++i) args.positional.push_back(eval(*e.children[i]));
    for (const auto& [name, arg] : e.kwargs) args.keyword.emplace_back(name, eval(*arg));
    return args;
  }

  Value binary(const Expr& e) {
    const std::string& op = e.name;
    Value left = eval(*e.children[0]);
    if (op == "and") return left.truthy() ? eval(*e.children[1]) : left;
    if (op == "or") return left.truthy() ? left : eval(*e.children[1]);
    return arithmetic(op, left, eval(*e.children[1]));
  }

  static bool compare_values(const std::string& op, const Value& left, const Value& right) {
    if (op == "==") return left.equals(right);
    if (op == "!=") return !left.equals(right);
    if (op == "<") return compare(left, right, op) < 0;
    if (op == ">") return compare(left, right, op) > 0;
    if (op == "<=") return compare(left, right, op) <= 0;
    if (op == ">=") return compare(left, right, op) >= 0;
    if (op == "in") return contains(right, left);
    return !contains(right, left);  // "not in"
  }

  // Jinja's getattr: a method of the object first, then an item of that name.
  static Value attribute(const Value& object, const std::string& name) {
    if (object.is_undefined()) {
      throw Error("'" + object.undefined_name() + "' is undefined (reading attribute '" + name + "')");
    }
    Value method = find_method(object, name);
    if (!method.is_undefined()) return method;
    if (object.is_dict()) {
      if (const Value* v = object.find(name)) return *v;
    }
    return Value::undefined(name);
  }

  // Jinja's getitem: an item first, then an attribute of that name.
  static Value subscript(const Value& object, const Value& key) {
    if (object.is_undefined()) throw Error("'" + object.undefined_name() + "' is undefined (subscripting it)");
    if (object.is_dict()) {
      if (key.is_string()) {
        if (const Value* v = object.find(key.as_string())) return *v;
        return attribute(object, key.as_string());
      }
      return Value::undefined(key.to_str());
    }
    if (object.is_list() || object.is_string()) {
      if (key.is_string()) return attribute(object, key.as_string());
      if (!key.is_int() && !key.is_bool()) {
        throw Error(std::string("indices must be integers, not ") + key.type_name());
      }
      int64_t n = length_of(object);
      int64_t i = to_int(key);
      if (i < 0) i += n;
      if (i < 0 || i >= n) return Value::undefined("[" + key.to_str() + "]");
      if (object.is_list()) return object.as_list()[static_cast<size_t>(i)];
      std::u32string chars = utf8_decode(object.as_string());
      return Value(utf8_encode(chars.substr(static_cast<size_t>(i), 1)));
    }
    return Value::undefined("[" + key.to_str() + "]");
  }

  Value slice(const Expr& e) {
    Value object = eval(*e.children[0]);
    Value parts[3];
    for (int k = 0; k < 3; ++k) {
      if (e.children[k + 1]) parts[k] = eval(*e.children[k + 1]);
    }
    if (object.is_list()) {
      List out;
      for (int64_t i : slice_indices(length_of(object), parts[0], parts[1], parts[2])) {
        out.push_back(object.as_list()[static_cast<size_t>(i)]);
      }
      return Value(std::move(out));
    }
    if (object.is_string()) {
      std::u32string chars = utf8_decode(object.as_string());
      std::u32string out;
      for (int64_t i : slice_indices(static_cast<int64_t>(chars.size()), parts[0], parts[1], parts[2])) {
        out += chars[static_cast<size_t>(i)];
      }
      return Value(utf8_encode(out));
    }
    if (object.is_undefined()) throw Error("'" + object.undefined_name() + "' is undefined (slicing it)");
    throw Error(std::string("cannot slice a value of type '") + object.type_name() + "'");
  }

  // Templates come from model files: bound the work one render may do.
  static constexpr int64_t kMaxIterations = 1'000'000;
  static constexpr int kMaxMacroDepth = 64;

  std::vector<Frame> frames_;
  int64_t n_iterations_ = 0;
  int macro_depth_ = 0;
  Value filter_input_;  // the rendered body of the innermost {% filter %} block
};

}  // namespace

Template Template::parse(const std::string& source, const LexOptions& options) {
  auto body = std::make_shared<Body>(jinja::parse(lex(source, options)));
  check_body(*body, false);
  Template t;
  t.body_ = std::move(body);
  return t;
}

std::string Template::render(const Dict& variables) const {
  NamespaceScope namespaces;  // declared first: it empties them after the renderer is gone
  return Renderer(variables).render(*body_);
}

}  // namespace tokenmill::tokenizer::jinja
