// Filters ({{ x | name }}) and tests ({{ x is name }}).
#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <functional>
#include <unordered_map>

#include "tokenizer/jinja_builtins.h"

namespace tokenmill::tokenizer::jinja {
namespace {

using FilterFn = std::function<Value(const Value&, const CallArgs&)>;
using TestFn = std::function<bool(const Value&, const CallArgs&)>;

const Value& arg(const CallArgs& args, size_t i, const char* name, const Value& fallback) {
  const Value* v = args.get(i, name);
  return v != nullptr ? *v : fallback;
}

const Value& required(const CallArgs& args, size_t i, const char* name, const char* who) {
  const Value* v = args.get(i, name);
  if (v == nullptr) throw Error(std::string(who) + ": missing argument '" + name + "'");
  return *v;
}

const std::string& string_arg(const Value& v, const char* who) {
  if (!v.is_string()) throw Error(std::string(who) + ": expected a string, got " + v.type_name());
  return v.as_string();
}

const std::string& string_operand(const Value& v, const char* who) {
  if (v.is_undefined()) throw Error(std::string(who) + ": '" + v.undefined_name() + "' is undefined");
  if (!v.is_string()) throw Error(std::string(who) + ": expected a string, got " + v.type_name());
  return v.as_string();
}

// Item lookup by a dotted path ("a.b"), as the attribute= argument of filters does.
Value get_path(const Value& v, const std::string& path) {
  Value current = v;
  size_t start = 0;
  while (start <= path.size()) {
    size_t dot = path.find('.', start);
    std::string part = path.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
    if (current.is_dict()) {
      const Value* found = current.find(part);
      current = found != nullptr ? *found : Value::undefined(part);
    } else if (current.is_list() && !part.empty() && std::all_of(part.begin(), part.end(), ::isdigit)) {
      size_t i = 0;
      const auto [end, ec] = std::from_chars(part.data(), part.data() + part.size(), i);
      const bool in_range = ec == std::errc() && end == part.data() + part.size() && i < current.as_list().size();
      current = in_range ? current.as_list()[i] : Value::undefined(part);
    } else {
      return Value::undefined(part);
    }
    if (dot == std::string::npos) break;
    start = dot + 1;
  }
  return current;
}

// Orders values the way Python's sorted() does for numbers and strings; strings compare
// case-insensitively unless case_sensitive (Jinja's sort default).
bool less_than(const Value& a, const Value& b, bool case_sensitive) {
  if ((a.is_number() || a.is_bool()) && (b.is_number() || b.is_bool())) {
    auto d = [](const Value& v) { return v.is_bool() ? (v.as_bool() ? 1.0 : 0.0) : v.as_double(); };
    return d(a) < d(b);
  }
  if (a.is_string() && b.is_string()) {
    return case_sensitive ? a.as_string() < b.as_string() : to_lower(a.as_string()) < to_lower(b.as_string());
  }
  throw Error(std::string("cannot compare '") + a.type_name() + "' with '" + b.type_name() + "'");
}

// selectattr / rejectattr / select / reject. attribute empty: test the items themselves.
Value select_items(const Value& operand, const CallArgs& args, bool by_attribute, bool keep_matching) {
  const char* who = by_attribute ? (keep_matching ? "selectattr" : "rejectattr") : (keep_matching ? "select" : "reject");
  std::string attribute;
  size_t next = 0;
  if (by_attribute) attribute = string_arg(required(args, next++, "attribute", who), who);
  std::string test;
  CallArgs test_args;
  if (next < args.positional.size()) {
    test = string_arg(args.positional[next++], who);
    if (!is_known_test(test)) throw Error(std::string(who) + ": unknown test '" + test + "'");
    test_args.positional.assign(args.positional.begin() + static_cast<std::ptrdiff_t>(next), args.positional.end());
  }
  List out;
  if (operand.is_none()) return Value(std::move(out));  // jinja2 selects only from a true operand
  for (const Value& item : iterate(operand)) {
    Value subject = by_attribute ? get_path(item, attribute) : item;
    bool match = test.empty() ? subject.truthy() : apply_test(test, subject, test_args);
    if (match == keep_matching) out.push_back(item);
  }
  return Value(std::move(out));
}

std::string html_escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&#34;"; break;
      case '\'': out += "&#39;"; break;
      default: out += c;
    }
  }
  return out;
}

Value filter_int(const Value& v, const CallArgs& args) {
  Value fallback = arg(args, 0, "default", Value(0));
  if (v.is_int()) return v;
  if (v.is_bool()) return Value(static_cast<int64_t>(v.as_bool()));
  if (v.is_float()) return Value(static_cast<int64_t>(v.as_double()));
  if (v.is_string()) {
    std::string s = strip(v.as_string(), "", 'b');
    char* end = nullptr;
    long long i = std::strtoll(s.c_str(), &end, 10);
    if (!s.empty() && *end == '\0') return Value(static_cast<int64_t>(i));
    double d = std::strtod(s.c_str(), &end);
    if (!s.empty() && *end == '\0') return Value(static_cast<int64_t>(d));
  }
  return fallback;
}

Value filter_float(const Value& v, const CallArgs& args) {
  Value fallback = arg(args, 0, "default", Value(0.0));
  if (v.is_number() || v.is_bool()) return Value(v.is_bool() ? (v.as_bool() ? 1.0 : 0.0) : v.as_double());
  if (v.is_string()) {
    std::string s = strip(v.as_string(), "", 'b');
    char* end = nullptr;
    double d = std::strtod(s.c_str(), &end);
    if (!s.empty() && *end == '\0') return Value(d);
  }
  return fallback;
}

Value filter_join(const Value& v, const CallArgs& args) {
  Value separator = arg(args, 0, "d", Value(""));
  const Value* attribute = args.get(1, "attribute");
  std::string out;
  bool first = true;
  for (const Value& item : iterate(v)) {
    if (!first) out += separator.to_str();
    first = false;
    out += (attribute != nullptr ? get_path(item, attribute->to_str()) : item).to_str();
  }
  return Value(std::move(out));
}

Value filter_map(const Value& v, const CallArgs& args) {
  List out;
  if (v.is_none()) return Value(std::move(out));  // jinja2 maps only over a true operand
  if (const Value* attribute = args.get(99, "attribute")) {
    const Value* fallback = args.get(99, "default");
    for (const Value& item : iterate(v)) {
      Value x = get_path(item, attribute->to_str());
      out.push_back(x.is_undefined() && fallback != nullptr ? *fallback : x);
    }
    return Value(std::move(out));
  }
  const std::string& filter = string_arg(required(args, 0, "filter", "map"), "map");
  if (!is_known_filter(filter)) throw Error("map: unknown filter '" + filter + "'");
  CallArgs rest;
  rest.positional.assign(args.positional.begin() + 1, args.positional.end());
  rest.keyword = args.keyword;
  for (const Value& item : iterate(v)) out.push_back(apply_filter(filter, item, rest));
  return Value(std::move(out));
}

Value filter_sort(const Value& v, const CallArgs& args) {
  bool reverse = arg(args, 0, "reverse", Value(false)).truthy();
  bool case_sensitive = arg(args, 1, "case_sensitive", Value(false)).truthy();
  const Value* attribute = args.get(2, "attribute");
  List items = iterate(v);
  auto key = [&](const Value& item) { return attribute != nullptr ? get_path(item, attribute->to_str()) : item; };
  std::stable_sort(items.begin(), items.end(), [&](const Value& a, const Value& b) {
    return reverse ? less_than(key(b), key(a), case_sensitive) : less_than(key(a), key(b), case_sensitive);
  });
  return Value(std::move(items));
}

Value filter_indent(const Value& v, const CallArgs& args) {
  Value width = arg(args, 0, "width", Value(4));
  bool indent_first = arg(args, 1, "first", Value(false)).truthy();
  bool indent_blank = arg(args, 2, "blank", Value(false)).truthy();
  if (!width.is_string() && (!width.is_int() || width.as_int() < 0 || width.as_int() > 1024)) {
    throw Error("indent: width must be a string or an integer from 0 to 1024");
  }
  std::string pad = width.is_string() ? width.as_string() : std::string(static_cast<size_t>(width.as_int()), ' ');
  const std::string& s = string_operand(v, "indent");
  std::string out;
  size_t start = 0;
  bool first_line = true;
  while (start <= s.size()) {
    size_t nl = s.find('\n', start);
    std::string line = s.substr(start, nl == std::string::npos ? std::string::npos : nl - start);
    bool pad_it = first_line ? indent_first : (indent_blank || !strip(line, "", 'b').empty());
    out += (pad_it ? pad : "") + line;
    check_string_size(out.size());
    if (nl == std::string::npos) break;
    out += '\n';
    start = nl + 1;
    first_line = false;
  }
  return Value(std::move(out));
}

// Jinja's title filter (not Python's str.title): each word, split at whitespace and
// -({[<, gets its first character upper-cased and the rest lower-cased.
std::string title_filter(const std::string& s) {
  auto is_break = [](char32_t c) {
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v' || c == '-' || c == '(' ||
           c == '{' || c == '[' || c == '<';
  };
  std::u32string chars = utf8_decode(s);
  std::string out;
  bool word_start = true;
  for (char32_t c : chars) {
    std::string one = utf8_encode(std::u32string(1, c));
    if (is_break(c)) {
      out += one;
      word_start = true;
    } else {
      out += word_start ? to_upper(one) : to_lower(one);
      word_start = false;
    }
  }
  return out;
}

const std::unordered_map<std::string, FilterFn>& filters() {
  static const auto* table = [] {
  auto* t = new std::unordered_map<std::string, FilterFn>{
      {"trim", [](const Value& v, const CallArgs& a) {
         return Value(strip(v.to_str(), arg(a, 0, "chars", Value("")).to_str(), 'b'));
       }},
      {"length", [](const Value& v, const CallArgs&) { return Value(length_of(v)); }},
      {"count", [](const Value& v, const CallArgs&) { return Value(length_of(v)); }},
      {"upper", [](const Value& v, const CallArgs&) { return Value(to_upper(v.to_str())); }},
      {"lower", [](const Value& v, const CallArgs&) { return Value(to_lower(v.to_str())); }},
      {"title", [](const Value& v, const CallArgs&) { return Value(title_filter(v.to_str())); }},
      {"capitalize", [](const Value& v, const CallArgs&) { return Value(capitalize(v.to_str())); }},
      {"default", [](const Value& v, const CallArgs& a) {
         bool boolean = arg(a, 1, "boolean", Value(false)).truthy();
         bool use_default = v.is_undefined() || (boolean && !v.truthy());
         return use_default ? arg(a, 0, "default_value", Value("")) : v;
       }},
      {"join", filter_join},
      {"first", [](const Value& v, const CallArgs&) {
         List items = iterate(v);
         return items.empty() ? Value::undefined("first") : items.front();
       }},
      {"last", [](const Value& v, const CallArgs&) {
         List items = iterate(v);
         return items.empty() ? Value::undefined("last") : items.back();
       }},
      {"tojson", [](const Value& v, const CallArgs& a) {
         Value indent = arg(a, 0, "indent", Value::none());
         const int64_t width = indent.is_int() ? std::clamp<int64_t>(indent.as_int(), -1, 65) : -1;
         return Value(v.to_json(static_cast<int>(width)));
       }},
      {"string", [](const Value& v, const CallArgs&) { return Value(v.to_str()); }},
      {"int", filter_int},
      {"float", filter_float},
      {"replace", [](const Value& v, const CallArgs& a) {
         return find_method(Value(v.to_str()), "replace").call(a);
       }},
      {"list", [](const Value& v, const CallArgs&) { return Value(iterate(v)); }},
      {"items", [](const Value& v, const CallArgs&) {
         if (v.is_undefined()) return Value(List{});
         if (!v.is_dict()) throw Error(std::string("items: expected a dict, got ") + v.type_name());
         List out;
         for (const auto& [key, value] : v.as_dict()) out.push_back(Value(List{Value(key), value}));
         return Value(std::move(out));
       }},
      {"selectattr", [](const Value& v, const CallArgs& a) { return select_items(v, a, true, true); }},
      {"rejectattr", [](const Value& v, const CallArgs& a) { return select_items(v, a, true, false); }},
      {"select", [](const Value& v, const CallArgs& a) { return select_items(v, a, false, true); }},
      {"reject", [](const Value& v, const CallArgs& a) { return select_items(v, a, false, false); }},
      {"map", filter_map},
      {"sort", filter_sort},
      {"reverse", [](const Value& v, const CallArgs&) {
         if (v.is_string()) {
           std::u32string chars = utf8_decode(v.as_string());
           return Value(utf8_encode(std::u32string(chars.rbegin(), chars.rend())));
         }
         List items = iterate(v);
         return Value(List(items.rbegin(), items.rend()));
       }},
      {"unique", [](const Value& v, const CallArgs&) {
         List out;
         for (const Value& item : iterate(v)) {
           if (std::none_of(out.begin(), out.end(), [&](const Value& x) { return x.equals(item); })) out.push_back(item);
         }
         return Value(std::move(out));
       }},
      {"abs", [](const Value& v, const CallArgs&) {
         if (v.is_int()) return Value(v.as_int() < 0 ? -v.as_int() : v.as_int());
         if (v.is_float()) return Value(std::fabs(v.as_double()));
         throw Error(std::string("abs: expected a number, got ") + v.type_name());
       }},
      {"round", [](const Value& v, const CallArgs& a) {
         if (!v.is_number()) throw Error(std::string("round: expected a number, got ") + v.type_name());
         double scale = std::pow(10.0, static_cast<double>(arg(a, 0, "precision", Value(0)).as_int()));
         std::string method = arg(a, 1, "method", Value("common")).to_str();
         double x = v.as_double() * scale;
         x = method == "floor" ? std::floor(x) : method == "ceil" ? std::ceil(x) : std::round(x);
         return Value(x / scale);
       }},
      {"sum", [](const Value& v, const CallArgs& a) {
         const Value* attribute = a.get(0, "attribute");
         Value total = arg(a, 1, "start", Value(0));
         for (const Value& item : iterate(v)) {
           Value x = attribute != nullptr ? get_path(item, attribute->to_str()) : item;
           if (!x.is_number()) throw Error(std::string("sum: cannot add a ") + x.type_name());
           total = total.is_int() && x.is_int() ? Value(total.as_int() + x.as_int()) : Value(total.as_double() + x.as_double());
         }
         return total;
       }},
      {"min", [](const Value& v, const CallArgs&) {
         List items = iterate(v);
         if (items.empty()) return Value::undefined("min");
         return *std::min_element(items.begin(), items.end(), [](const Value& a, const Value& b) { return less_than(a, b, false); });
       }},
      {"max", [](const Value& v, const CallArgs&) {
         List items = iterate(v);
         if (items.empty()) return Value::undefined("max");
         return *std::max_element(items.begin(), items.end(), [](const Value& a, const Value& b) { return less_than(a, b, false); });
       }},
      {"safe", [](const Value& v, const CallArgs&) { return v; }},
      {"escape", [](const Value& v, const CallArgs&) { return Value(html_escape(v.to_str())); }},
      {"e", [](const Value& v, const CallArgs&) { return Value(html_escape(v.to_str())); }},
      {"indent", filter_indent},
      {"attr", [](const Value& v, const CallArgs& a) {
         return get_path(v, string_arg(required(a, 0, "name", "attr"), "attr"));
       }},
      {"dictsort", [](const Value& v, const CallArgs& a) {
         if (!v.is_dict()) throw Error(std::string("dictsort: expected a dict, got ") + v.type_name());
         Dict items = v.as_dict();
         bool case_sensitive = arg(a, 0, "case_sensitive", Value(false)).truthy();
         bool by_value = arg(a, 1, "by", Value("key")).to_str() == "value";
         bool reverse = arg(a, 2, "reverse", Value(false)).truthy();
         std::stable_sort(items.begin(), items.end(), [&](const auto& x, const auto& y) {
           const Value kx = by_value ? x.second : Value(x.first);
           const Value ky = by_value ? y.second : Value(y.first);
           return reverse ? less_than(ky, kx, case_sensitive) : less_than(kx, ky, case_sensitive);
         });
         List out;
         for (const auto& [key, value] : items) out.push_back(Value(List{Value(key), value}));
         return Value(std::move(out));
       }},
      {"wordcount", [](const Value& v, const CallArgs&) {
         return Value(static_cast<int64_t>(find_method(Value(v.to_str()), "split").call({}).as_list().size()));
       }},
  };
  t->emplace("d", t->at("default"));
  return t;
  }();
  return *table;
}

bool is_mapping(const Value& v) { return v.is_dict(); }

const std::unordered_map<std::string, TestFn>& tests() {
  static const auto* table = [] {
    auto* t = new std::unordered_map<std::string, TestFn>{
        {"defined", [](const Value& v, const CallArgs&) { return !v.is_undefined(); }},
        {"undefined", [](const Value& v, const CallArgs&) { return v.is_undefined(); }},
        {"none", [](const Value& v, const CallArgs&) { return v.is_none(); }},
        {"string", [](const Value& v, const CallArgs&) { return v.is_string(); }},
        {"number", [](const Value& v, const CallArgs&) { return v.is_number() || v.is_bool(); }},
        {"integer", [](const Value& v, const CallArgs&) { return v.is_int(); }},
        {"float", [](const Value& v, const CallArgs&) { return v.is_float(); }},
        {"boolean", [](const Value& v, const CallArgs&) { return v.is_bool(); }},
        {"true", [](const Value& v, const CallArgs&) { return v.is_bool() && v.as_bool(); }},
        {"false", [](const Value& v, const CallArgs&) { return v.is_bool() && !v.as_bool(); }},
        {"mapping", [](const Value& v, const CallArgs&) { return is_mapping(v); }},
        {"iterable", [](const Value& v, const CallArgs&) { return v.is_list() || v.is_dict() || v.is_string() || v.is_undefined(); }},
        {"sequence", [](const Value& v, const CallArgs&) { return v.is_list() || v.is_dict() || v.is_string(); }},
        {"callable", [](const Value& v, const CallArgs&) { return v.is_function(); }},
        {"filter", [](const Value& v, const CallArgs&) { return v.is_string() && is_known_filter(v.as_string()); }},
        {"test", [](const Value& v, const CallArgs&) { return v.is_string() && is_known_test(v.as_string()); }},
        {"odd", [](const Value& v, const CallArgs&) { return v.is_int() && v.as_int() % 2 != 0; }},
        {"even", [](const Value& v, const CallArgs&) { return v.is_int() && v.as_int() % 2 == 0; }},
        {"divisibleby", [](const Value& v, const CallArgs& a) {
           const Value& d = required(a, 0, "num", "divisibleby");
           return v.is_int() && d.is_int() && d.as_int() != 0 && v.as_int() % d.as_int() == 0;
         }},
        {"eq", [](const Value& v, const CallArgs& a) { return v.equals(required(a, 0, "other", "eq")); }},
        {"ne", [](const Value& v, const CallArgs& a) { return !v.equals(required(a, 0, "other", "ne")); }},
        {"lt", [](const Value& v, const CallArgs& a) { return less_than(v, required(a, 0, "other", "lt"), true); }},
        {"gt", [](const Value& v, const CallArgs& a) { return less_than(required(a, 0, "other", "gt"), v, true); }},
        {"le", [](const Value& v, const CallArgs& a) { return !less_than(required(a, 0, "other", "le"), v, true); }},
        {"ge", [](const Value& v, const CallArgs& a) { return !less_than(v, required(a, 0, "other", "ge"), true); }},
        {"in", [](const Value& v, const CallArgs& a) {
           const Value& seq = required(a, 0, "seq", "in");
           if (seq.is_string()) return v.is_string() && seq.as_string().find(v.as_string()) != std::string::npos;
           if (seq.is_dict()) return v.is_string() && seq.find(v.as_string()) != nullptr;
           for (const Value& item : iterate(seq)) {
             if (item.equals(v)) return true;
           }
           return false;
         }},
        {"lower", [](const Value& v, const CallArgs&) { return v.is_string() && to_lower(v.as_string()) == v.as_string(); }},
        {"upper", [](const Value& v, const CallArgs&) { return v.is_string() && to_upper(v.as_string()) == v.as_string(); }},
        {"sameas", [](const Value& v, const CallArgs& a) {
           const Value& other = required(a, 0, "other", "sameas");
           if (v.kind() != other.kind()) return false;
           if (v.is_none() || v.is_undefined()) return true;
           if (v.is_bool()) return v.as_bool() == other.as_bool();
           return v.equals(other) && !v.is_list() && !v.is_dict();
         }},
    };
    const std::pair<const char*, const char*> aliases[] = {
        {"equalto", "eq"}, {"==", "eq"}, {"!=", "ne"}, {"lessthan", "lt"}, {"<", "lt"},
        {"greaterthan", "gt"}, {">", "gt"}, {"<=", "le"}, {">=", "ge"}};
    for (const auto& [alias, target] : aliases) t->emplace(alias, t->at(target));
    return t;
  }();
  return *table;
}

}  // namespace

bool is_known_filter(const std::string& name) { return filters().count(name) != 0; }

Value apply_filter(const std::string& name, const Value& operand, const CallArgs& args) {
  auto it = filters().find(name);
  if (it == filters().end()) throw Error("unknown filter '" + name + "'");
  return it->second(operand, args);
}

bool is_known_test(const std::string& name) { return tests().count(name) != 0; }

bool apply_test(const std::string& name, const Value& operand, const CallArgs& args) {
  auto it = tests().find(name);
  if (it == tests().end()) throw Error("unknown test '" + name + "'");
  return it->second(operand, args);
}

}  // namespace tokenmill::tokenizer::jinja
