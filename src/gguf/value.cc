#include "gguf/value.h"

#include <cmath>
#include <limits>
#include <sstream>

namespace tokenmill::gguf {

std::string_view value_type_name(ValueType type) {
  switch (type) {
    case ValueType::kUint8: return "u8";
    case ValueType::kInt8: return "i8";
    case ValueType::kUint16: return "u16";
    case ValueType::kInt16: return "i16";
    case ValueType::kUint32: return "u32";
    case ValueType::kInt32: return "i32";
    case ValueType::kFloat32: return "f32";
    case ValueType::kBool: return "bool";
    case ValueType::kString: return "str";
    case ValueType::kArray: return "arr";
    case ValueType::kUint64: return "u64";
    case ValueType::kInt64: return "i64";
    case ValueType::kFloat64: return "f64";
  }
  return "?";
}

std::optional<int64_t> Value::as_int() const {
  return std::visit(
      [](const auto& v) -> std::optional<int64_t> {
        using T = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<T, bool>) {
          return v ? 1 : 0;
        } else if constexpr (std::is_same_v<T, uint64_t>) {
          if (v > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) return std::nullopt;
          return static_cast<int64_t>(v);
        } else if constexpr (std::is_integral_v<T>) {
          return static_cast<int64_t>(v);
        } else {
          return std::nullopt;
        }
      },
      storage);
}

std::optional<uint64_t> Value::as_uint() const {
  if (const auto* u = std::get_if<uint64_t>(&storage)) return *u;
  auto i = as_int();
  if (!i || *i < 0) return std::nullopt;
  return static_cast<uint64_t>(*i);
}

std::optional<double> Value::as_double() const {
  if (const auto* f = std::get_if<float>(&storage)) return *f;
  if (const auto* d = std::get_if<double>(&storage)) return *d;
  if (const auto* u = std::get_if<uint64_t>(&storage)) return static_cast<double>(*u);
  if (std::holds_alternative<bool>(storage)) return std::nullopt;
  auto i = as_int();
  if (!i) return std::nullopt;
  return static_cast<double>(*i);
}

std::optional<bool> Value::as_bool() const {
  if (const auto* b = std::get_if<bool>(&storage)) return *b;
  return std::nullopt;
}

std::string Value::to_display_string(size_t max_items) const {
  std::ostringstream out;
  std::visit(
      [&](const auto& v) {
        using T = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<T, std::string>) {
          std::string s = v.size() > 200 ? v.substr(0, 200) + "..." : v;
          out << '"';
          for (char c : s) {
            if (c == '\n') out << "\\n";
            else if (c == '"') out << "\\\"";
            else out << c;
          }
          out << '"';
        } else if constexpr (std::is_same_v<T, Array>) {
          out << '[';
          for (size_t i = 0; i < v.items.size() && i < max_items; ++i) {
            if (i) out << ", ";
            out << v.items[i].to_display_string(max_items);
          }
          if (v.items.size() > max_items) out << ", ... (" << v.items.size() << " items)";
          out << ']';
        } else if constexpr (std::is_same_v<T, bool>) {
          out << (v ? "true" : "false");
        } else if constexpr (std::is_same_v<T, uint8_t> || std::is_same_v<T, int8_t>) {
          out << static_cast<int>(v);
        } else {
          out << v;
        }
      },
      storage);
  return out.str();
}

}  // namespace tokenmill::gguf
