// GGUF metadata values. The variant's index is the GGUF value-type id, so a Value read
// from a file writes back as the same type.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace tokenmill::gguf {

enum class ValueType : uint32_t {
  kUint8 = 0,
  kInt8 = 1,
  kUint16 = 2,
  kInt16 = 3,
  kUint32 = 4,
  kInt32 = 5,
  kFloat32 = 6,
  kBool = 7,
  kString = 8,
  kArray = 9,
  kUint64 = 10,
  kInt64 = 11,
  kFloat64 = 12,
};

std::string_view value_type_name(ValueType type);

struct Value;

struct Array {
  ValueType element_type = ValueType::kUint8;
  std::vector<Value> items;
};

struct Value {
  using Storage = std::variant<uint8_t, int8_t, uint16_t, int16_t, uint32_t, int32_t, float, bool,
                               std::string, Array, uint64_t, int64_t, double>;
  Storage storage;

  Value() = default;
  template <typename T>
  Value(T v) : storage(std::move(v)) {}  // NOLINT: implicit by design
  Value(const char* s) : storage(std::string(s)) {}  // NOLINT

  ValueType type() const { return static_cast<ValueType>(storage.index()); }

  // Any integer type (and bool) as int64 / uint64 when it fits; nullopt otherwise.
  std::optional<int64_t> as_int() const;
  std::optional<uint64_t> as_uint() const;
  // Any numeric type as double.
  std::optional<double> as_double() const;
  std::optional<bool> as_bool() const;
  const std::string* as_string() const { return std::get_if<std::string>(&storage); }
  const Array* as_array() const { return std::get_if<Array>(&storage); }

  // Short human-readable form; long arrays are elided after max_items.
  std::string to_display_string(size_t max_items = 8) const;
};

// Builds an array Value of one element type from a vector of plain values.
template <typename T>
Value make_array(ValueType element_type, const std::vector<T>& items) {
  Array a;
  a.element_type = element_type;
  a.items.reserve(items.size());
  for (const auto& v : items) a.items.emplace_back(v);
  return Value(std::move(a));
}

struct KeyValue {
  std::string key;
  Value value;
};

}  // namespace tokenmill::gguf
