#include "tokenizer/jinja_value.h"

#include <charconv>
#include <cmath>
#include <cstdio>

#include <nlohmann/json.hpp>

namespace tokenmill::tokenizer::jinja {

const Value* CallArgs::get(size_t i, const char* name) const {
  if (i < positional.size()) return &positional[i];
  for (const auto& [key, value] : keyword) {
    if (key == name) return &value;
  }
  return nullptr;
}

Value Value::undefined(std::string name) {
  Value v;
  v.string_ = std::make_shared<const std::string>(std::move(name));
  return v;
}

Value Value::none() {
  Value v;
  v.kind_ = Kind::kNone;
  return v;
}

Value::Value(bool b) : kind_(Kind::kBool), bool_(b) {}
Value::Value(int64_t i) : kind_(Kind::kInt), int_(i) {}
Value::Value(double d) : kind_(Kind::kFloat), float_(d) {}
Value::Value(std::string s)
    : kind_(Kind::kString), string_((check_string_size(s.size()), std::make_shared<const std::string>(std::move(s)))) {}
Value::Value(List list) : kind_(Kind::kList) {
  if (list.size() > kMaxListItems) {
    throw Error("the template built a list of more than " + std::to_string(kMaxListItems) + " items");
  }
  list_ = std::make_shared<List>(std::move(list));
}
Value::Value(Dict dict) : kind_(Kind::kDict), dict_(std::make_shared<Dict>(std::move(dict))) {}

Value Value::function(std::string name, Function f) {
  Value v;
  v.kind_ = Kind::kFunction;
  v.string_ = std::make_shared<const std::string>(std::move(name));
  v.function_ = std::make_shared<Function>(std::move(f));
  return v;
}

namespace {

thread_local NamespaceScope* current_namespace_scope = nullptr;

[[noreturn]] void throw_nested_too_deep() {
  throw Error("a value nested more than " + std::to_string(kMaxPrintDepth) + " deep (a namespace inside itself?)");
}

}  // namespace

NamespaceScope::NamespaceScope() : outer_(current_namespace_scope) { current_namespace_scope = this; }

NamespaceScope::~NamespaceScope() {
  current_namespace_scope = outer_;
  for (const auto& dict : namespaces_) dict->clear();  // breaks any cycle through them
}

Value Value::namespace_object(Dict dict) {
  Value v(std::move(dict));
  v.is_namespace_ = true;
  if (current_namespace_scope != nullptr) current_namespace_scope->namespaces_.push_back(v.dict_);
  return v;
}

Value Value::from_json(const nlohmann::ordered_json& j) {
  switch (j.type()) {
    case nlohmann::ordered_json::value_t::null: return none();
    case nlohmann::ordered_json::value_t::boolean: return Value(j.get<bool>());
    case nlohmann::ordered_json::value_t::number_integer: return Value(j.get<int64_t>());
    case nlohmann::ordered_json::value_t::number_unsigned: return Value(static_cast<int64_t>(j.get<uint64_t>()));
    case nlohmann::ordered_json::value_t::number_float: return Value(j.get<double>());
    case nlohmann::ordered_json::value_t::string: return Value(j.get<std::string>());
    case nlohmann::ordered_json::value_t::array: {
      List list;
      for (const auto& item : j) list.push_back(from_json(item));
      return Value(std::move(list));
    }
    case nlohmann::ordered_json::value_t::object: {
      Dict dict;
      for (const auto& [key, item] : j.items()) dict.emplace_back(key, from_json(item));
      return Value(std::move(dict));
    }
    default: return Value();
  }
}

Value* Value::find(const std::string& key) const {
  for (auto& [k, v] : *dict_) {
    if (k == key) return &v;
  }
  return nullptr;
}

void Value::set(const std::string& key, Value value) const {
  if (Value* existing = find(key)) {
    *existing = std::move(value);
  } else {
    dict_->emplace_back(key, std::move(value));
  }
}

bool Value::truthy() const {
  switch (kind_) {
    case Kind::kUndefined:
    case Kind::kNone: return false;
    case Kind::kBool: return bool_;
    case Kind::kInt: return int_ != 0;
    case Kind::kFloat: return float_ != 0;
    case Kind::kString: return !string_->empty();
    case Kind::kList: return !list_->empty();
    case Kind::kDict: return is_namespace_ || !dict_->empty();
    case Kind::kFunction: return true;
  }
  return false;
}

std::string format_float(double d) {
  if (std::isnan(d)) return "nan";
  if (std::isinf(d)) return d < 0 ? "-inf" : "inf";
  // Shortest round-trip digits in scientific form, then laid out the way Python's
  // float.__repr__ does: positional for exponents in [-4, 16), scientific otherwise.
  char buf[64];
  auto r = std::to_chars(buf, buf + sizeof(buf), d, std::chars_format::scientific);
  std::string sci(buf, r.ptr);
  bool negative = sci[0] == '-';
  if (negative) sci.erase(0, 1);
  size_t e_pos = sci.find('e');
  std::string mantissa = sci.substr(0, e_pos);
  int exponent = std::stoi(sci.substr(e_pos + 1));
  std::string digits;
  for (char c : mantissa) {
    if (c != '.') digits += c;
  }
  std::string out;
  if (exponent >= 16 || exponent < -4) {
    out = digits.substr(0, 1);
    if (digits.size() > 1) {
      out += '.';
      out.append(digits, 1, std::string::npos);
    }
    char exp_buf[16];
    std::snprintf(exp_buf, sizeof(exp_buf), "e%c%02d", exponent < 0 ? '-' : '+', std::abs(exponent));
    out += exp_buf;
  } else if (exponent < 0) {
    out = "0." + std::string(-exponent - 1, '0') + digits;
  } else {
    if (digits.size() <= static_cast<size_t>(exponent) + 1) {
      out = digits + std::string(exponent + 1 - digits.size(), '0') + ".0";
    } else {
      out = digits.substr(0, exponent + 1) + "." + digits.substr(exponent + 1);
    }
  }
  return negative ? "-" + out : out;
}

std::string Value::to_str() const {
  switch (kind_) {
    case Kind::kUndefined: return "";
    case Kind::kNone: return "None";
    case Kind::kBool: return bool_ ? "True" : "False";
    case Kind::kInt: return std::to_string(int_);
    case Kind::kFloat: return format_float(float_);
    case Kind::kString: return *string_;
    default: return repr();
  }
}

static std::string python_quote(const std::string& s) {
  // Python prefers single quotes unless the string holds a single quote and no double.
  bool has_single = s.find('\'') != std::string::npos;
  bool has_double = s.find('"') != std::string::npos;
  char quote = has_single && !has_double ? '"' : '\'';
  std::string out(1, quote);
  for (char c : s) {
    if (c == quote || c == '\\') {
      out += '\\';
      out += c;
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c == '\r') {
      out += "\\r";
    } else {
      out += c;
    }
  }
  return out + quote;
}

std::string Value::repr(int depth) const {
  if (depth > kMaxPrintDepth) throw_nested_too_deep();
  switch (kind_) {
    case Kind::kString: return python_quote(*string_);
    case Kind::kList: {
      std::string out = "[";
      for (size_t i = 0; i < list_->size(); ++i) {
        if (i > 0) out += ", ";
        out += (*list_)[i].repr(depth + 1);
      }
      return out + "]";
    }
    case Kind::kDict: {
      std::string out = is_namespace_ ? "<Namespace {" : "{";
      for (size_t i = 0; i < dict_->size(); ++i) {
        if (i > 0) out += ", ";
        out += python_quote((*dict_)[i].first) + ": " + (*dict_)[i].second.repr(depth + 1);
      }
      return out + (is_namespace_ ? "}>" : "}");
    }
    case Kind::kFunction: return "<function " + *string_ + ">";
    default: return to_str();
  }
}

static void append_json_string(std::string& out, const std::string& s) {
  out += '"';
  for (unsigned char c : s) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      case '\b': out += "\\b"; break;
      case '\f': out += "\\f"; break;
      default:
        if (c < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof(buf), "\\u%04x", c);
          out += buf;
        } else {
          out += static_cast<char>(c);
        }
    }
  }
  out += '"';
}

static void append_json(std::string& out, const Value& v, int indent, int depth) {
  if (depth > kMaxPrintDepth) throw_nested_too_deep();
  auto newline = [&](int level) {
    out += '\n';
    out.append(static_cast<size_t>(indent) * static_cast<size_t>(level), ' ');
    check_string_size(out.size());
  };
  switch (v.kind()) {
    case Value::Kind::kUndefined:
    case Value::Kind::kNone: out += "null"; return;
    case Value::Kind::kBool: out += v.as_bool() ? "true" : "false"; return;
    case Value::Kind::kInt: out += std::to_string(v.as_int()); return;
    case Value::Kind::kFloat: {
      double d = v.as_double();
      out += std::isnan(d) ? "NaN" : std::isinf(d) ? (d < 0 ? "-Infinity" : "Infinity") : format_float(d);
      return;
    }
    case Value::Kind::kString: append_json_string(out, v.as_string()); return;
    case Value::Kind::kFunction: throw Error("tojson: cannot serialize a function");
    case Value::Kind::kList: {
      const List& list = v.as_list();
      if (list.empty()) {
        out += "[]";
        return;
      }
      out += '[';
      for (size_t i = 0; i < list.size(); ++i) {
        if (i > 0) out += indent < 0 ? ", " : ",";
        if (indent >= 0) newline(depth + 1);
        append_json(out, list[i], indent, depth + 1);
      }
      if (indent >= 0) newline(depth);
      out += ']';
      return;
    }
    case Value::Kind::kDict: {
      const Dict& dict = v.as_dict();
      if (dict.empty()) {
        out += "{}";
        return;
      }
      out += '{';
      for (size_t i = 0; i < dict.size(); ++i) {
        if (i > 0) out += indent < 0 ? ", " : ",";
        if (indent >= 0) newline(depth + 1);
        append_json_string(out, dict[i].first);
        out += ": ";
        append_json(out, dict[i].second, indent, depth + 1);
      }
      if (indent >= 0) newline(depth);
      out += '}';
      return;
    }
  }
}

std::string Value::to_json(int indent) const {
  if (indent > 64) throw Error("tojson: indent " + std::to_string(indent) + " is more than 64");
  std::string out;
  append_json(out, *this, indent, 0);
  return out;
}

bool Value::equals(const Value& other) const {
  if (is_number() || is_bool()) {
    if (!(other.is_number() || other.is_bool())) return false;
    auto numeric = [](const Value& v) { return v.is_bool() ? (v.bool_ ? 1.0 : 0.0) : v.as_double(); };
    if (is_int() && other.is_int()) return int_ == other.int_;
    return numeric(*this) == numeric(other);
  }
  if (kind_ != other.kind_) return false;
  switch (kind_) {
    case Kind::kUndefined:
    case Kind::kNone: return true;
    case Kind::kString: return *string_ == *other.string_;
    case Kind::kList: {
      if (list_->size() != other.list_->size()) return false;
      for (size_t i = 0; i < list_->size(); ++i) {
        if (!(*list_)[i].equals((*other.list_)[i])) return false;
      }
      return true;
    }
    case Kind::kDict: {
      if (dict_ == other.dict_) return true;
      if (is_namespace_ || other.is_namespace_ || dict_->size() != other.dict_->size()) return false;
      for (const auto& [key, value] : *dict_) {
        const Value* theirs = other.find(key);
        if (theirs == nullptr || !value.equals(*theirs)) return false;
      }
      return true;
    }
    case Kind::kFunction: return function_ == other.function_;
    default: return false;
  }
}

const char* Value::type_name() const {
  switch (kind_) {
    case Kind::kUndefined: return "undefined";
    case Kind::kNone: return "none";
    case Kind::kBool: return "bool";
    case Kind::kInt: return "int";
    case Kind::kFloat: return "float";
    case Kind::kString: return "string";
    case Kind::kList: return "list";
    case Kind::kDict: return is_namespace_ ? "namespace" : "dict";
    case Kind::kFunction: return "function";
  }
  return "?";
}

std::u32string utf8_decode(const std::string& s) {
  std::u32string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size();) {
    unsigned char c = static_cast<unsigned char>(s[i]);
    int n = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xE ? 3 : (c >> 3) == 0x1E ? 4 : 0;
    if (n == 0 || i + n > s.size()) {  // invalid byte: keep it as its own code point
      out += static_cast<char32_t>(c);
      ++i;
      continue;
    }
    char32_t cp = n == 1 ? c : n == 2 ? (c & 0x1F) : n == 3 ? (c & 0x0F) : (c & 0x07);
    for (int k = 1; k < n; ++k) cp = (cp << 6) | (static_cast<unsigned char>(s[i + k]) & 0x3F);
    out += cp;
    i += n;
  }
  return out;
}

std::string utf8_encode(const std::u32string& s) {
  std::string out;
  out.reserve(s.size());
  for (char32_t cp : s) {
    if (cp < 0x80) {
      out += static_cast<char>(cp);
    } else if (cp < 0x800) {
      out += static_cast<char>(0xC0 | (cp >> 6));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
      out += static_cast<char>(0xE0 | (cp >> 12));
      out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    } else {
      out += static_cast<char>(0xF0 | (cp >> 18));
      out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
      out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    }
  }
  return out;
}

}  // namespace tokenmill::tokenizer::jinja
