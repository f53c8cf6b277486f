// Values of the Jinja subset used by chat templates.
//
// A Value behaves like the Python object Jinja would hold: lists, dicts and namespaces
// are shared by reference (copying a Value copies the handle, not the contents), strings
// are UTF-8, dict keys are strings kept in insertion order (like Python 3.7+ dicts), and
// an Undefined value stands for a missing variable or attribute.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace tokenmill::tokenizer::jinja {

// Thrown inside the interpreter only; ChatTemplate turns it into a Status, so it never
// leaves the tokenizer layer.
class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& message) : std::runtime_error(message) {}
};

// A template may build strings and lists no larger than these, and render at most
// kMaxOutputBytes: a template from a GGUF file is untrusted, and a few doublings in a
// loop would otherwise take all memory.
inline constexpr size_t kMaxStringBytes = size_t{16} << 20;
inline constexpr size_t kMaxListItems = size_t{1} << 20;
inline constexpr size_t kMaxOutputBytes = size_t{64} << 20;

// Throws Error when a string of n bytes would pass kMaxStringBytes.
inline void check_string_size(size_t n) {
  if (n > kMaxStringBytes) {
    throw Error("the template built a string of more than " + std::to_string(kMaxStringBytes >> 20) + " MiB");
  }
}

// Lists and dicts print (repr, tojson) at most this deep: only a namespace stored inside
// itself nests deeper, and printing it must not recurse without end.
inline constexpr int kMaxPrintDepth = 128;

class Value;
using List = std::vector<Value>;
using Dict = std::vector<std::pair<std::string, Value>>;  // insertion order

// Arguments of a call: f(a, b, key=c).
struct CallArgs {
  std::vector<Value> positional;
  std::vector<std::pair<std::string, Value>> keyword;

  // Positional i, else keyword `name`, else nullptr.
  const Value* get(size_t i, const char* name) const;
};

using Function = std::function<Value(const CallArgs&)>;

class Value {
 public:
  enum class Kind { kUndefined, kNone, kBool, kInt, kFloat, kString, kList, kDict, kFunction };

  Value() = default;  // Undefined
  // An Undefined that remembers what was looked up, for "'x' is undefined" errors.
  static Value undefined(std::string name);
  static Value none();
  Value(bool b);                 // NOLINT: implicit by design, like the literals they mirror
  Value(int64_t i);              // NOLINT
  Value(int i) : Value(static_cast<int64_t>(i)) {}  // NOLINT
  Value(double d);               // NOLINT
  Value(std::string s);          // NOLINT
  Value(const char* s) : Value(std::string(s)) {}  // NOLINT
  Value(List list);              // NOLINT
  Value(Dict dict);              // NOLINT
  static Value function(std::string name, Function f);
  // A namespace(): a dict whose attributes `set ns.x = ...` may assign.
  static Value namespace_object(Dict dict);
  // From JSON, keeping object keys in document order.
  static Value from_json(const nlohmann::ordered_json& j);

  Kind kind() const { return kind_; }
  bool is_undefined() const { return kind_ == Kind::kUndefined; }
  bool is_none() const { return kind_ == Kind::kNone; }
  bool is_bool() const { return kind_ == Kind::kBool; }
  bool is_int() const { return kind_ == Kind::kInt; }
  bool is_float() const { return kind_ == Kind::kFloat; }
  bool is_number() const { return kind_ == Kind::kInt || kind_ == Kind::kFloat; }
  bool is_string() const { return kind_ == Kind::kString; }
  bool is_list() const { return kind_ == Kind::kList; }
  bool is_dict() const { return kind_ == Kind::kDict; }
  bool is_function() const { return kind_ == Kind::kFunction; }
  bool is_namespace() const { return kind_ == Kind::kDict && is_namespace_; }

  bool as_bool() const { return bool_; }
  int64_t as_int() const { return int_; }
  double as_double() const { return kind_ == Kind::kInt ? static_cast<double>(int_) : float_; }
  const std::string& as_string() const { return *string_; }
  List& as_list() const { return *list_; }
  Dict& as_dict() const { return *dict_; }
  const std::string& function_name() const { return *string_; }
  // The name an Undefined stands for ("" when unknown).
  std::string undefined_name() const { return string_ ? *string_ : std::string(); }
  Value call(const CallArgs& args) const { return (*function_)(args); }

  // Dict lookup; nullptr when absent. REQUIRES: is_dict().
  Value* find(const std::string& key) const;
  // Dict insert-or-assign. REQUIRES: is_dict().
  void set(const std::string& key, Value value) const;

  // Python truthiness: empty strings and containers, 0, None and Undefined are false.
  bool truthy() const;
  // Python str(): what {{ value }} prints. Undefined prints as "".
  std::string to_str() const;
  // Python repr(): strings quoted, used inside printed lists and dicts.
  std::string repr(int depth = 0) const;
  // JSON text as HF's tojson filter writes it (json.dumps, ensure_ascii=False). indent < 0
  // means one line with ", " and ": " separators.
  std::string to_json(int indent = -1) const;
  // Python ==.
  bool equals(const Value& other) const;
  // "string", "int", "list", ... for error messages.
  const char* type_name() const;

 private:
  Kind kind_ = Kind::kUndefined;
  bool bool_ = false;
  bool is_namespace_ = false;
  int64_t int_ = 0;
  double float_ = 0;
  std::shared_ptr<const std::string> string_;  // kString; the name of a kFunction or kUndefined
  std::shared_ptr<List> list_;
  std::shared_ptr<Dict> dict_;
  std::shared_ptr<Function> function_;
};

// Python's repr of a float: shortest round-trip digits, "1.0", "1e+20", "inf", "nan".
std::string format_float(double d);

// UTF-8 <-> code points, for length, slicing and case mapping of non-ASCII strings.
std::u32string utf8_decode(const std::string& s);
std::string utf8_encode(const std::u32string& s);

// While one is alive on a thread, every namespace() made on that thread is emptied when
// it ends: `{% set ns.me = ns %}` makes a reference cycle, which would otherwise never be
// freed. Template::render holds one; nothing a render made outlives it.
class NamespaceScope {
 public:
  NamespaceScope();
  ~NamespaceScope();
  NamespaceScope(const NamespaceScope&) = delete;
  NamespaceScope& operator=(const NamespaceScope&) = delete;

 private:
  friend class Value;
  std::vector<std::shared_ptr<Dict>> namespaces_;
  NamespaceScope* outer_;
};

}  // namespace tokenmill::tokenizer::jinja
