// Methods of strings and dicts ("x".strip(), d.items()), the global functions, and the
// string helpers they share with the filters.
#include <algorithm>
#include <chrono>
#include <ctime>

#include "tokenizer/jinja_builtins.h"

namespace tokenmill::tokenizer::jinja {
namespace {

const char* const kWhitespace = " \t\n\r\f\v";

const Value* opt(const CallArgs& args, size_t i, const char* name) {
  const Value* v = args.get(i, name);
  return v != nullptr && !v->is_none() ? v : nullptr;
}

const std::string& str_arg(const CallArgs& args, size_t i, const char* name, const std::string& method) {
  const Value* v = args.get(i, name);
  if (v == nullptr) throw Error(method + "(): missing argument '" + name + "'");
  if (!v->is_string()) throw Error(method + "(): argument '" + name + "' must be a string, not " + v->type_name());
  return v->as_string();
}

// str.startswith / endswith accept a string or a tuple (list) of strings.
bool affix_matches(const std::string& s, const Value& affix, bool at_start, const std::string& method) {
  List options = affix.is_list() ? affix.as_list() : List{affix};
  for (const Value& option : options) {
    if (!option.is_string()) throw Error(method + "(): expected a string, not " + option.type_name());
    const std::string& a = option.as_string();
    if (a.size() > s.size()) continue;
    if (at_start ? s.compare(0, a.size(), a) == 0 : s.compare(s.size() - a.size(), a.size(), a) == 0) return true;
  }
  return false;
}

List split(const std::string& s, const Value* separator, int64_t max_split) {
  List out;
  if (separator == nullptr) {  // runs of whitespace, no empty pieces
    size_t i = s.find_first_not_of(kWhitespace);
    while (i != std::string::npos) {
      if (max_split >= 0 && static_cast<int64_t>(out.size()) == max_split) {
        out.push_back(Value(strip(s.substr(i), "", 'r')));
        break;
      }
      size_t end = s.find_first_of(kWhitespace, i);
      out.push_back(Value(s.substr(i, end == std::string::npos ? std::string::npos : end - i)));
      i = end == std::string::npos ? end : s.find_first_not_of(kWhitespace, end);
    }
    return out;
  }
  if (!separator->is_string()) throw Error("split(): separator must be a string");
  const std::string& sep = separator->as_string();
  if (sep.empty()) throw Error("split(): empty separator");
  size_t start = 0;
  while (true) {
    size_t hit = s.find(sep, start);
    if (hit == std::string::npos || (max_split >= 0 && static_cast<int64_t>(out.size()) == max_split)) {
      out.push_back(Value(s.substr(start)));
      return out;
    }
    out.push_back(Value(s.substr(start, hit - start)));
    start = hit + sep.size();
  }
}

std::string replace_all(const std::string& s, const std::string& from, const std::string& to, int64_t count) {
  std::string out;
  size_t start = 0;
  int64_t n = 0;
  if (from.empty()) {  // Python inserts `to` around every character
    std::u32string chars = utf8_decode(s);
    for (char32_t c : chars) {
      if (count < 0 || n++ < count) out += to;
      out += utf8_encode(std::u32string(1, c));
      check_string_size(out.size());
    }
    if (count < 0 || n < count) out += to;
    return out;
  }
  while (count < 0 || n < count) {
    size_t hit = s.find(from, start);
    if (hit == std::string::npos) break;
    out += s.substr(start, hit - start) + to;
    check_string_size(out.size());
    start = hit + from.size();
    ++n;
  }
  return out + s.substr(start);
}

// Python's str.format for the replacement fields templates use: "{}", "{0}", "{name}" and the
// "{{" / "}}" escapes. Each value is formatted as str() would; a format spec or conversion
// ("{:>8}", "{!r}") is refused rather than ignored, so no output silently differs.
std::string python_format(const std::string& s, const CallArgs& a) {
  std::string out;
  size_t next_auto = 0;
  char numbering = '\0';  // 'a' once "{}" is used, 'm' once "{0}" is: Python refuses mixing them
  for (size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    if (c == '}') {
      if (i + 1 < s.size() && s[i + 1] == '}') {
        out += '}';
        ++i;
        continue;
      }
      throw Error("format(): single '}' encountered in format string");
    }
    if (c != '{') {
      out += c;
      continue;
    }
    if (i + 1 < s.size() && s[i + 1] == '{') {
      out += '{';
      ++i;
      continue;
    }
    const size_t close = s.find('}', i + 1);
    if (close == std::string::npos) throw Error("format(): single '{' encountered in format string");
    const std::string field = s.substr(i + 1, close - i - 1);
    if (field.find_first_of(":!") != std::string::npos) {
      throw Error("format(): format specifications and conversions are not supported ('{" + field + "}')");
    }
    const bool automatic = field.empty();
    const bool positional = automatic || std::all_of(field.begin(), field.end(), [](char d) { return d >= '0' && d <= '9'; });
    if (positional && numbering != '\0' && numbering != (automatic ? 'a' : 'm')) {
      throw Error("format(): cannot switch between automatic and manual field numbering");
    }
    if (positional) numbering = automatic ? 'a' : 'm';
    const Value* value = nullptr;
    if (automatic) {
      value = next_auto < a.positional.size() ? &a.positional[next_auto] : nullptr;
      ++next_auto;
    } else if (positional) {
      const size_t index = field.size() <= 6 ? std::stoul(field) : a.positional.size();
      value = index < a.positional.size() ? &a.positional[index] : nullptr;
    } else {
      for (const auto& [key, v] : a.keyword) {
        if (key == field) value = &v;
      }
    }
    if (value == nullptr) throw Error("format(): no argument for the field '{" + field + "}'");
    out += value->to_str();
    check_string_size(out.size());
    i = close;
  }
  return out;
}

Value string_method(const std::string& s, const std::string& name) {
  auto bind = [&](Function f) { return Value::function("str." + name, std::move(f)); };
  if (name == "strip" || name == "lstrip" || name == "rstrip") {
    char which = name[0] == 'l' ? 'l' : name[0] == 'r' ? 'r' : 'b';
    return bind([s, which](const CallArgs& a) {
      const Value* chars = opt(a, 0, "chars");
      return Value(strip(s, chars != nullptr ? chars->to_str() : "", which));
    });
  }
  if (name == "startswith" || name == "endswith") {
    bool at_start = name == "startswith";
    return bind([s, at_start, name](const CallArgs& a) {
      const Value* affix = a.get(0, "prefix");
      if (affix == nullptr) throw Error(name + "(): missing argument");
      return Value(affix_matches(s, *affix, at_start, name));
    });
  }
  if (name == "split") {
    return bind([s](const CallArgs& a) {
      const Value* max_split = opt(a, 1, "maxsplit");
      return Value(split(s, opt(a, 0, "sep"), max_split != nullptr ? max_split->as_int() : -1));
    });
  }
  if (name == "upper") return bind([s](const CallArgs&) { return Value(to_upper(s)); });
  if (name == "lower") return bind([s](const CallArgs&) { return Value(to_lower(s)); });
  if (name == "title") return bind([s](const CallArgs&) { return Value(to_title(s)); });
  if (name == "capitalize") return bind([s](const CallArgs&) { return Value(capitalize(s)); });
  if (name == "replace") {
    return bind([s](const CallArgs& a) {
      const Value* count = opt(a, 2, "count");
      return Value(replace_all(s, str_arg(a, 0, "old", "replace"), str_arg(a, 1, "new", "replace"),
                               count != nullptr ? count->as_int() : -1));
    });
  }
  if (name == "find") {
    return bind([s](const CallArgs& a) {
      size_t hit = s.find(str_arg(a, 0, "sub", "find"));
      return Value(hit == std::string::npos ? int64_t{-1} : static_cast<int64_t>(utf8_decode(s.substr(0, hit)).size()));
    });
  }
  if (name == "count") {
    return bind([s](const CallArgs& a) {
      const std::string& sub = str_arg(a, 0, "sub", "count");
      if (sub.empty()) return Value(static_cast<int64_t>(utf8_decode(s).size()) + 1);
      int64_t n = 0;
      for (size_t i = s.find(sub); i != std::string::npos; i = s.find(sub, i + sub.size())) ++n;
      return Value(n);
    });
  }
  if (name == "join") {
    return bind([s](const CallArgs& a) {
      const Value* items = a.get(0, "iterable");
      if (items == nullptr) throw Error("join(): missing argument");
      std::string out;
      bool first = true;
      for (const Value& item : iterate(*items)) {
        if (!item.is_string()) throw Error(std::string("join(): expected strings, found ") + item.type_name());
        if (!first) out += s;
        first = false;
        out += item.as_string();
      }
      return Value(std::move(out));
    });
  }
  if (name == "splitlines") {
    return bind([s](const CallArgs&) {
      List out;
      size_t start = 0;
      while (start < s.size()) {
        size_t nl = s.find('\n', start);
        size_t end = nl == std::string::npos ? s.size() : nl;
        size_t trimmed = end > start && s[end - 1] == '\r' ? end - 1 : end;
        out.push_back(Value(s.substr(start, trimmed - start)));
        start = end + 1;
      }
      return Value(std::move(out));
    });
  }
  if (name == "format") return bind([s](const CallArgs& a) { return Value(python_format(s, a)); });
  if (name == "isdigit" || name == "isspace" || name == "isalpha") {
    return bind([s, name](const CallArgs&) {
      if (s.empty()) return Value(false);
      for (unsigned char c : s) {
        bool ok = name == "isdigit" ? (c >= '0' && c <= '9')
                  : name == "isspace" ? std::string(kWhitespace).find(static_cast<char>(c)) != std::string::npos
                                      : ((c | 0x20) >= 'a' && (c | 0x20) <= 'z') || c >= 0x80;
        if (!ok) return Value(false);
      }
      return Value(true);
    });
  }
  return Value();
}

Value dict_method(const Value& d, const std::string& name) {
  auto bind = [&](Function f) { return Value::function("dict." + name, std::move(f)); };
  if (name == "items") {
    return bind([d](const CallArgs&) {
      List out;
      for (const auto& [key, value] : d.as_dict()) out.push_back(Value(List{Value(key), value}));
      return Value(std::move(out));
    });
  }
  if (name == "keys") {
    return bind([d](const CallArgs&) {
      List out;
      for (const auto& entry : d.as_dict()) out.push_back(Value(entry.first));
      return Value(std::move(out));
    });
  }
  if (name == "values") {
    return bind([d](const CallArgs&) {
      List out;
      for (const auto& entry : d.as_dict()) out.push_back(entry.second);
      return Value(std::move(out));
    });
  }
  if (name == "get") {
    return bind([d](const CallArgs& a) {
      const Value* key = a.get(0, "key");
      if (key == nullptr) throw Error("get(): missing argument 'key'");
      const Value* found = key->is_string() ? d.find(key->as_string()) : nullptr;
      if (found != nullptr) return *found;
      const Value* fallback = a.get(1, "default");
      return fallback != nullptr ? *fallback : Value::none();
    });
  }
  return Value();
}

// Simple case mapping per code point: ASCII, Latin-1, Latin Extended-A, Greek, Cyrillic.
char32_t upper_of(char32_t c) {
  if (c >= 'a' && c <= 'z') return c - 32;
  if (c >= 0xE0 && c <= 0xFE && c != 0xF7) return c - 32;
  if (c == 0xFF) return 0x178;
  if (c >= 0x100 && c <= 0x17F) {
    bool odd_is_lower = (c <= 0x137) || (c >= 0x14A && c <= 0x177);
    if (odd_is_lower && (c & 1)) return c - 1;
    if (!odd_is_lower && c >= 0x139 && c <= 0x148 && !(c & 1)) return c - 1;
    if (c >= 0x179 && c <= 0x17E && !(c & 1)) return c - 1;
    return c;
  }
  if (c >= 0x3B1 && c <= 0x3C9 && c != 0x3C2) return c - 32;
  if (c == 0x3C2) return 0x3A3;
  if (c >= 0x430 && c <= 0x44F) return c - 32;
  if (c >= 0x450 && c <= 0x45F) return c - 80;
  return c;
}

char32_t lower_of(char32_t c) {
  if (c >= 'A' && c <= 'Z') return c + 32;
  if (c >= 0xC0 && c <= 0xDE && c != 0xD7) return c + 32;
  if (c == 0x178) return 0xFF;
  if (c >= 0x100 && c <= 0x17F) {
    bool even_is_upper = (c <= 0x137) || (c >= 0x14A && c <= 0x177);
    if (even_is_upper && !(c & 1)) return c + 1;
    if (c >= 0x139 && c <= 0x148 && (c & 1)) return c + 1;
    if (c >= 0x179 && c <= 0x17E && (c & 1)) return c + 1;
    return c;
  }
  if (c >= 0x391 && c <= 0x3A9 && c != 0x3A2) return c + 32;
  if (c >= 0x410 && c <= 0x42F) return c + 32;
  if (c >= 0x400 && c <= 0x40F) return c + 80;
  return c;
}

bool is_cased(char32_t c) { return upper_of(c) != c || lower_of(c) != c || c == 0xDF; }

std::string map_case(const std::string& s, bool upper) {
  std::u32string out;
  for (char32_t c : utf8_decode(s)) {
    if (upper && c == 0xDF) {  // ß -> SS, as Python does
      out += U"SS";
    } else {
      out += upper ? upper_of(c) : lower_of(c);
    }
  }
  return utf8_encode(out);
}

std::string strftime_now(const std::string& format) {
  std::time_t now = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm local{};
  localtime_r(&now, &local);
  char buf[256];
  size_t n = std::strftime(buf, sizeof(buf), format.c_str(), &local);
  return std::string(buf, n);
}

}  // namespace

std::string to_upper(const std::string& s) { return map_case(s, true); }
std::string to_lower(const std::string& s) { return map_case(s, false); }

std::string to_title(const std::string& s) {
  std::u32string out;
  bool previous_cased = false;
  for (char32_t c : utf8_decode(s)) {
    out += previous_cased ? lower_of(c) : upper_of(c);
    previous_cased = is_cased(c);
  }
  return utf8_encode(out);
}

std::string capitalize(const std::string& s) {
  std::u32string chars = utf8_decode(s);
  for (size_t i = 0; i < chars.size(); ++i) chars[i] = i == 0 ? upper_of(chars[i]) : lower_of(chars[i]);
  return utf8_encode(chars);
}

std::string strip(const std::string& s, const std::string& chars, char which) {
  const std::string& set = chars.empty() ? std::string(kWhitespace) : chars;
  size_t begin = which == 'r' ? 0 : s.find_first_not_of(set);
  if (begin == std::string::npos) return "";
  size_t end = which == 'l' ? s.size() : s.find_last_not_of(set) + 1;
  return s.substr(begin, end - begin);
}

int64_t length_of(const Value& v) {
  if (v.is_string()) return static_cast<int64_t>(utf8_decode(v.as_string()).size());
  if (v.is_list()) return static_cast<int64_t>(v.as_list().size());
  if (v.is_dict()) return static_cast<int64_t>(v.as_dict().size());
  if (v.is_undefined()) return 0;
  throw Error(std::string("object of type '") + v.type_name() + "' has no length");
}

List iterate(const Value& v) {
  if (v.is_list()) return v.as_list();
  if (v.is_undefined()) return {};
  if (v.is_dict()) {
    List keys;
    for (const auto& entry : v.as_dict()) keys.push_back(Value(entry.first));
    return keys;
  }
  if (v.is_string()) {
    List chars;
    for (char32_t c : utf8_decode(v.as_string())) chars.push_back(Value(utf8_encode(std::u32string(1, c))));
    return chars;
  }
  throw Error(std::string("'") + v.type_name() + "' object is not iterable");
}

Value find_method(const Value& object, const std::string& name) {
  if (object.is_string()) return string_method(object.as_string(), name);
  if (object.is_dict() && !object.is_namespace()) return dict_method(object, name);
  return Value();
}

Dict builtin_globals() {
  Dict globals;
  globals.emplace_back("raise_exception", Value::function("raise_exception", [](const CallArgs& a) -> Value {
    const Value* message = a.get(0, "message");
    throw Error("raise_exception: " + (message != nullptr ? message->to_str() : std::string("(no message)")));
  }));
  globals.emplace_back("range", Value::function("range", [](const CallArgs& a) {
    int64_t start = 0, stop = 0, step = 1;
    for (const Value& v : a.positional) {
      if (!v.is_int()) throw Error(std::string("range(): expected integers, got ") + v.type_name());
    }
    if (a.positional.size() == 1) {
      stop = a.positional[0].as_int();
    } else if (a.positional.size() == 2 || a.positional.size() == 3) {
      start = a.positional[0].as_int();
      stop = a.positional[1].as_int();
      if (a.positional.size() == 3) step = a.positional[2].as_int();
    } else {
      throw Error("range() takes 1 to 3 arguments");
    }
    if (step == 0) throw Error("range() step must not be zero");
    List out;
    for (int64_t i = start; step > 0 ? i < stop : i > stop; i += step) {
      if (out.size() >= 100000) throw Error("range() too large");
      out.push_back(Value(i));
    }
    return Value(std::move(out));
  }));
  auto from_kwargs = [](const CallArgs& a, const char* who) {
    Dict d;
    for (const Value& positional : a.positional) {  // namespace(some_dict) copies it
      if (!positional.is_dict()) throw Error(std::string(who) + "(): positional arguments must be dicts");
      for (const auto& entry : positional.as_dict()) d.push_back(entry);
    }
    for (const auto& [key, value] : a.keyword) d.emplace_back(key, value);
    return d;
  };
  globals.emplace_back("namespace", Value::function("namespace", [from_kwargs](const CallArgs& a) {
    return Value::namespace_object(from_kwargs(a, "namespace"));
  }));
  globals.emplace_back("dict", Value::function("dict", [from_kwargs](const CallArgs& a) {
    return Value(from_kwargs(a, "dict"));
  }));
  globals.emplace_back("strftime_now", Value::function("strftime_now", [](const CallArgs& a) {
    const Value* format = a.get(0, "format");
    if (format == nullptr || !format->is_string()) throw Error("strftime_now(): expected a format string");
    return Value(strftime_now(format->as_string()));
  }));
  return globals;
}

}  // namespace tokenmill::tokenizer::jinja
