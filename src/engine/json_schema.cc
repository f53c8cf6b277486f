#include "engine/json_schema.h"

#include <algorithm>
#include <map>
#include <set>

#include "engine/json_grammar.h"

namespace tokenmill::engine {

namespace {

bool is_whitespace(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

// Whether some literal continues `matched` with c (no copy: this runs for every byte of
// every candidate token).
bool some_literal_continues(const std::vector<std::string>& literals, std::string_view matched, char c) {
  return std::any_of(literals.begin(), literals.end(), [&](const std::string& l) {
    return l.size() > matched.size() && l[matched.size()] == c && std::string_view(l).starts_with(matched);
  });
}

// Keywords that only describe: accepted and ignored.
const std::set<std::string, std::less<>> kAnnotations = {"title",   "description", "default", "examples",
                                                         "$schema", "$id",         "$comment", "strict"};

}  // namespace

// Builds the node list depth first. A $ref's target is compiled once and shared.
class SchemaCompiler {
 public:
  explicit SchemaCompiler(const nlohmann::ordered_json& root) : root_(root) {}

  Status compile(const nlohmann::ordered_json& schema, const std::string& path, int depth, int32_t& index) {
    if (depth > JsonSchema::kMaxDepth) return invalid_argument("the schema nests deeper than 32 levels at " + path);
    if (static_cast<int32_t>(nodes_.size()) >= JsonSchema::kMaxNodes) {
      return invalid_argument("the schema has more than 4096 parts");
    }
    if (!schema.is_object()) return invalid_argument("the schema at " + path + " must be an object");
    TM_RETURN_IF_ERROR(check_keywords(schema, path));
    if (schema.contains("$ref")) return compile_ref(schema["$ref"], path, depth, index);
    if (schema.contains("anyOf") || schema.contains("oneOf")) {
      const nlohmann::ordered_json& list = schema.contains("anyOf") ? schema["anyOf"] : schema["oneOf"];
      if (!list.is_array() || list.empty()) return invalid_argument("'anyOf' / 'oneOf' at " + path + " must be a non-empty array");
      return compile_alternatives(list, path, depth, index);
    }
    if (schema.contains("type") && schema["type"].is_array() && !schema.contains("enum") && !schema.contains("const")) {
      return compile_type_list(schema, path, depth, index);
    }
    index = static_cast<int32_t>(nodes_.size());
    nodes_.emplace_back();
    JsonSchema::Node node;
    if (schema.contains("enum") || schema.contains("const")) {
      TM_RETURN_IF_ERROR(compile_literals(schema, path, node));
    } else {
      TM_RETURN_IF_ERROR(compile_typed(schema, path, depth, node));
    }
    nodes_[static_cast<size_t>(index)] = std::move(node);
    return {};
  }

  std::vector<JsonSchema::Node> take() { return std::move(nodes_); }
  const JsonSchema::Node& node(int32_t i) const { return nodes_[static_cast<size_t>(i)]; }

 private:
  // Every keyword is one compile() understands or an annotation; $defs only at the top.
  Status check_keywords(const nlohmann::ordered_json& schema, const std::string& path) const {
    for (const auto& item : schema.items()) {
      static const std::set<std::string, std::less<>> kKnown = {
          "type", "properties", "required", "additionalProperties", "items", "minItems", "maxItems", "minLength", "maxLength", "enum", "const",
          "$ref", "anyOf", "oneOf", "$defs", "definitions"};
      const std::string& key = item.key();
      if (!kKnown.contains(key) && !kAnnotations.contains(key)) {
        return invalid_argument("the schema keyword '" + key + "' at " + path + " is not supported");
      }
      if ((key == "$defs" || key == "definitions") && &schema != &root_) {
        return invalid_argument("'" + key + "' at " + path + " is supported at the top level only");
      }
    }
    return {};
  }

  // "type": [a, b, ...]: the alternatives of the schema with each type in turn.
  Status compile_type_list(const nlohmann::ordered_json& schema, const std::string& path, int depth, int32_t& index) {
    nlohmann::ordered_json alternatives = nlohmann::ordered_json::array();
    for (const auto& type : schema["type"]) {
      nlohmann::ordered_json one = schema;
      one["type"] = type;
      alternatives.push_back(std::move(one));
    }
    if (alternatives.empty()) return invalid_argument("'type' at " + path + " is an empty list");
    return compile_alternatives(alternatives, path, depth, index);
  }

  // enum / const: the allowed values, counted against the schema-wide literal limits.
  Status compile_literals(const nlohmann::ordered_json& schema, const std::string& path, JsonSchema::Node& node) {
    node.kind = JsonSchema::Kind::kLiterals;
    if (schema.contains("const")) node.literals.push_back(schema["const"].dump());
    if (schema.contains("enum")) {
      const nlohmann::ordered_json& values = schema["enum"];
      if (!values.is_array() || values.empty()) return invalid_argument("'enum' at " + path + " must be a non-empty array");
      for (const auto& v : values) node.literals.push_back(v.dump());
    }
    for (const std::string& literal : node.literals) {
      literal_bytes_ += static_cast<int64_t>(literal.size());
      if (++n_literals_ > JsonSchema::kMaxLiterals || literal_bytes_ > JsonSchema::kMaxLiteralBytes) {
        return invalid_argument("the schema's enum / const values exceed 1024 values or 64 KiB");
      }
    }
    return {};
  }

  // A schema with one type name.
  Status compile_typed(const nlohmann::ordered_json& schema, const std::string& path, int depth, JsonSchema::Node& node) {
    if (!schema.contains("type")) return invalid_argument("the schema at " + path + " needs a 'type' (or 'enum' / 'const')");
    const nlohmann::ordered_json& type = schema["type"];
    if (!type.is_string()) return invalid_argument("'type' at " + path + " must be a type name or a list of them");
    const std::string name = type.get<std::string>();
    if (name == "object") return compile_object(schema, path, depth, node);
    if (name == "array") return compile_array(schema, path, depth, node);
    if (name == "string") {
      node.kind = JsonSchema::Kind::kString;
      TM_RETURN_IF_ERROR(read_bounds(schema, path, "minLength", "maxLength", node.min_length, node.max_length));
    } else if (name == "number") {
      node.kind = JsonSchema::Kind::kNumber;
    } else if (name == "integer") {
      node.kind = JsonSchema::Kind::kInteger;
    } else if (name == "boolean") {
      node.kind = JsonSchema::Kind::kLiterals;
      node.literals = {"true", "false"};
    } else if (name == "null") {
      node.kind = JsonSchema::Kind::kLiterals;
      node.literals = {"null"};
    } else {
      return invalid_argument("unknown type '" + name + "' at " + path);
    }
    return {};
  }

  Status compile_object(const nlohmann::ordered_json& schema, const std::string& path, int depth, JsonSchema::Node& node) {
    node.kind = JsonSchema::Kind::kObject;
    std::set<std::string> names;
    if (schema.contains("properties")) {
      const nlohmann::ordered_json& properties = schema["properties"];
      if (!properties.is_object()) return invalid_argument("'properties' at " + path + " must be an object");
      for (const auto& [key, child] : properties.items()) {
        int32_t child_index = 0;
        TM_RETURN_IF_ERROR(compile(child, path + ".properties." + key, depth + 1, child_index));
        node.properties.emplace_back(nlohmann::ordered_json(key).dump(), child_index);
        names.insert(key);
      }
    }
    if (schema.contains("required")) {
      const nlohmann::ordered_json& required = schema["required"];
      if (!required.is_array()) return invalid_argument("'required' at " + path + " must be an array of names");
      for (const auto& r : required) {
        if (!r.is_string() || !names.contains(r.get<std::string>())) {
          return invalid_argument("'required' at " + path + " names " + r.dump() + ", which is not in 'properties'");
        }
      }
    }
    if (schema.contains("additionalProperties") && !schema["additionalProperties"].is_boolean()) {
      return invalid_argument("'additionalProperties' at " + path + " must be true or false (schemas are not supported)");
    }
    return {};
  }

  Status compile_array(const nlohmann::ordered_json& schema, const std::string& path, int depth, JsonSchema::Node& node) {
    node.kind = JsonSchema::Kind::kArray;
    if (!schema.contains("items")) return invalid_argument("the array at " + path + " needs 'items'");
    TM_RETURN_IF_ERROR(compile(schema["items"], path + ".items", depth + 1, node.items));
    return read_bounds(schema, path, "minItems", "maxItems", node.min_items, node.max_items);
  }

  // A pair of count bounds (minItems/maxItems, minLength/maxLength): non-negative
  // integers, the lower one at most the upper one; absent ones keep min and max.
  static Status read_bounds(const nlohmann::ordered_json& schema, const std::string& path, const char* min_key,
                            const char* max_key, int32_t& min, int32_t& max) {
    for (const char* key : {min_key, max_key}) {
      if (!schema.contains(key)) continue;
      const nlohmann::ordered_json& v = schema[key];
      if (!v.is_number_integer() || v.get<int64_t>() < 0 || v.get<int64_t>() > INT32_MAX) {
        return invalid_argument("'" + std::string(key) + "' at " + path + " must be a non-negative integer");
      }
      (key == min_key ? min : max) = static_cast<int32_t>(v.get<int64_t>());
    }
    if (min > max) return invalid_argument("'" + std::string(min_key) + "' exceeds '" + max_key + "' at " + path);
    return {};
  }

  // "#/$defs/NAME" or "#/definitions/NAME", compiled on first use.
  Status compile_ref(const nlohmann::ordered_json& ref, const std::string& path, int depth, int32_t& index) {
    const std::string text = ref.is_string() ? ref.get<std::string>() : ref.dump();
    std::string section, name;
    for (const char* prefix : {"#/$defs/", "#/definitions/"}) {
      if (text.starts_with(prefix)) {
        section = std::string(prefix).substr(2, std::string(prefix).size() - 3);
        name = text.substr(std::string(prefix).size());
      }
    }
    if (section.empty() || name.empty() || name.find('/') != std::string::npos || !root_.contains(section) ||
        !root_[section].is_object() || !root_[section].contains(name)) {
      return invalid_argument("'$ref' " + text + " at " + path + " does not name an entry of the top level's $defs");
    }
    auto [it, fresh] = refs_.try_emplace(text, -1);
    if (!fresh) {
      if (it->second < 0) return invalid_argument("'$ref' " + text + " at " + path + " is recursive: not supported");
      index = it->second;
      return {};
    }
    TM_RETURN_IF_ERROR(compile(root_[section][name], text, depth + 1, index));
    refs_[text] = index;
    return {};
  }

  // The bytes a value of node i can start with.
  std::bitset<256> first_bytes(int32_t i) const {
    std::bitset<256> bytes;
    const JsonSchema::Node& n = node(i);
    switch (n.kind) {
      case JsonSchema::Kind::kObject: bytes.set('{'); break;
      case JsonSchema::Kind::kArray: bytes.set('['); break;
      case JsonSchema::Kind::kString: bytes.set('"'); break;
      case JsonSchema::Kind::kNumber:
      case JsonSchema::Kind::kInteger:
        bytes.set('-');
        for (char c = '0'; c <= '9'; ++c) bytes.set(static_cast<unsigned char>(c));
        break;
      case JsonSchema::Kind::kLiterals:
        for (const std::string& l : n.literals) bytes.set(static_cast<unsigned char>(l[0]));
        break;
      case JsonSchema::Kind::kAnyOf:
        for (const auto& [alternative_bytes, alternative] : n.alternatives) bytes |= alternative_bytes;
        break;
    }
    return bytes;
  }

  // anyOf / oneOf / a list of types: one node choosing among the alternatives by the
  // value's first byte, so their first bytes must not overlap.
  Status compile_alternatives(const nlohmann::ordered_json& list, const std::string& path, int depth, int32_t& index) {
    JsonSchema::Node node;
    node.kind = JsonSchema::Kind::kAnyOf;
    std::bitset<256> taken;
    for (size_t i = 0; i < list.size(); ++i) {
      int32_t alternative = 0;
      TM_RETURN_IF_ERROR(compile(list[i], path + "[" + std::to_string(i) + "]", depth + 1, alternative));
      const std::bitset<256> bytes = first_bytes(alternative);
      if ((bytes & taken).any()) {
        return invalid_argument("the alternatives at " + path +
                                " can start with the same character: only alternatives of different types (such as "
                                "a type and null) are supported");
      }
      taken |= bytes;
      node.alternatives.emplace_back(bytes, alternative);
    }
    index = static_cast<int32_t>(nodes_.size());
    nodes_.push_back(std::move(node));
    return {};
  }

  const nlohmann::ordered_json& root_;
  std::map<std::string, int32_t> refs_;  // $ref -> its node (-1 while being compiled)
  std::vector<JsonSchema::Node> nodes_;
  int32_t n_literals_ = 0;
  int64_t literal_bytes_ = 0;
};

Result<std::shared_ptr<const JsonSchema>> JsonSchema::compile(const nlohmann::ordered_json& schema) {
  SchemaCompiler compiler(schema);
  int32_t root = 0;
  TM_RETURN_IF_ERROR(compiler.compile(schema, "$", 0, root));
  auto compiled = std::make_shared<JsonSchema>();
  compiled->nodes_ = compiler.take();
  compiled->root_ = root;
  const Kind kind = compiled->node(compiled->root()).kind;
  if (kind != Kind::kObject && kind != Kind::kArray) {
    return invalid_argument("the schema's top level must be an object or an array");
  }
  return std::shared_ptr<const JsonSchema>(std::move(compiled));
}

JsonSchemaGrammar::JsonSchemaGrammar(std::shared_ptr<const JsonSchema> schema) : schema_(std::move(schema)) {}

bool JsonSchemaGrammar::allows(std::string_view text) const {
  JsonSchemaGrammar copy = *this;
  for (char c : text) {
    if (!copy.step(c)) return false;
  }
  return true;
}

void JsonSchemaGrammar::advance(std::string_view text) {
  for (char c : text) step(c);
}

// Object phases: 1 in (or before) key `index`, 2 before ':', 3 '{' of an empty object
// seen, 4 before the value, 5 after it. Array phases: 1 after '[', 2 in an item, 3 after
// one, 4 after ','. Strings and numbers: string_ / number_ say where. Literals: 1
// matching.
bool JsonSchemaGrammar::between_tokens() const {
  if (stack_.empty()) return false;  // before the value: it starts with its first byte
  const Frame& f = stack_.back();
  switch (schema_->node(f.node).kind) {
    case JsonSchema::Kind::kObject:
      return (f.phase == 1 && f.matched.empty()) || f.phase >= 2;
    case JsonSchema::Kind::kArray:
      return f.phase == 1 || f.phase == 3 || f.phase == 4;
    default:
      return false;
  }
}

void JsonSchemaGrammar::end_value() {
  stack_.pop_back();
  if (stack_.empty()) {
    done_ = true;
    return;
  }
  Frame& parent = stack_.back();
  if (schema_->node(parent.node).kind == JsonSchema::Kind::kObject) {
    parent.phase = 5;
  } else {
    parent.phase = 3;
    ++parent.index;
  }
}

bool JsonSchemaGrammar::start(Frame& f, char c) {
  const JsonSchema::Node& n = schema_->node(f.node);
  switch (n.kind) {
    case JsonSchema::Kind::kObject:
      if (c != '{') return false;
      f.phase = n.properties.empty() ? 3 : 1;
      return true;
    case JsonSchema::Kind::kArray:
      if (c != '[') return false;
      f.phase = 1;
      return true;
    case JsonSchema::Kind::kString:
      if (c != '"') return false;
      string_.begin();
      f.phase = 1;
      f.index = 0;  // characters written
      return true;
    case JsonSchema::Kind::kNumber:
    case JsonSchema::Kind::kInteger:
      f.phase = 1;
      return number_.begin(c, /*integer_only=*/n.kind == JsonSchema::Kind::kInteger);
    case JsonSchema::Kind::kLiterals:
      f.phase = 1;
      if (!some_literal_continues(n.literals, "", c)) return false;
      f.matched.assign(1, c);
      return true;
    case JsonSchema::Kind::kAnyOf:
      // The alternative whose values start with c (at most one: compile() checked).
      for (const auto& [bytes, alternative] : n.alternatives) {
        if (bytes.test(static_cast<unsigned char>(c))) {
          f.node = alternative;
          return start(f, c);
        }
      }
      return false;
  }
  return false;
}

bool JsonSchemaGrammar::push_child(int32_t node, char c) {
  if (static_cast<int>(stack_.size()) > JsonSchema::kMaxDepth) return false;
  stack_.emplace_back(node);
  return start(stack_.back(), c);
}

bool JsonSchemaGrammar::step_object(Frame& f, const JsonSchema::Node& n, char c) {
  switch (f.phase) {
    case 1: {
      const std::string& key = n.properties[static_cast<size_t>(f.index)].first;
      if (c != key[f.matched.size()]) return false;
      f.matched.push_back(c);
      if (f.matched.size() == key.size()) {
        f.matched.clear();
        f.phase = 2;
      }
      return true;
    }
    case 2:
      if (c != ':') return false;
      f.phase = 4;
      return true;
    case 3:
      if (c != '}') return false;
      end_value();
      return true;
    case 4:
      return push_child(n.properties[static_cast<size_t>(f.index)].second, c);
    case 5:
      if (static_cast<size_t>(f.index) + 1 < n.properties.size()) {
        if (c != ',') return false;
        ++f.index;
        f.phase = 1;
        return true;
      }
      if (c != '}') return false;
      end_value();
      return true;
  }
  return false;
}

bool JsonSchemaGrammar::step_array(Frame& f, const JsonSchema::Node& n, char c) {
  if ((f.phase == 1 && f.index >= n.min_items) || (f.phase == 3 && f.index >= n.min_items)) {
    if (c == ']') {
      end_value();
      return true;
    }
  }
  if (f.phase == 3) {
    if (c != ',' || f.index >= n.max_items) return false;
    f.phase = 4;
    return true;
  }
  if ((f.phase == 1 || f.phase == 4) && f.index < n.max_items) {
    f.phase = 2;
    return push_child(n.items, c);
  }
  return false;
}

bool JsonSchemaGrammar::step(char c) {
  if (done_) return false;
  if (between_tokens() && is_whitespace(c)) return ++whitespace_run_ <= JsonGrammar::kMaxWhitespaceRun;
  whitespace_run_ = 0;
  if (stack_.empty()) {
    stack_.emplace_back(schema_->root());
    return start(stack_.back(), c);
  }
  Frame& f = stack_.back();
  const JsonSchema::Node& n = schema_->node(f.node);
  switch (n.kind) {
    case JsonSchema::Kind::kObject:
      return step_object(f, n, c);
    case JsonSchema::Kind::kArray:
      return step_array(f, n, c);
    case JsonSchema::Kind::kString: {
      // A byte that begins a character: a plain lead byte, or the backslash of an escape.
      const bool begins = string_.at_character_start() && c != '"' && (static_cast<unsigned char>(c) & 0xC0) != 0x80;
      if (begins && f.index >= n.max_length) return false;
      if (c == '"' && string_.at_character_start() && f.index < n.min_length) return false;
      switch (string_.step(c)) {
        case JsonStringLexer::Step::kRefused: return false;
        case JsonStringLexer::Step::kTaken:
          if (begins) ++f.index;
          return true;
        case JsonStringLexer::Step::kClosed:
          end_value();
          return true;
      }
      return false;
    }
    case JsonSchema::Kind::kNumber:
    case JsonSchema::Kind::kInteger:
      switch (number_.step(c)) {
        case JsonNumberLexer::Step::kRefused: return false;
        case JsonNumberLexer::Step::kTaken: return true;
        case JsonNumberLexer::Step::kEnded:  // a complete number followed by c: c belongs to the enclosing value
          end_value();
          return step(c);
      }
      return false;
    case JsonSchema::Kind::kLiterals:
      if (some_literal_continues(n.literals, f.matched, c)) {
        f.matched.push_back(c);
        return true;
      }
      if (std::find(n.literals.begin(), n.literals.end(), f.matched) == n.literals.end()) return false;
      end_value();  // a whole literal followed by c: c belongs to the enclosing value
      return step(c);
    case JsonSchema::Kind::kAnyOf:
      return false;  // never on the stack: start() replaces it by the chosen alternative
  }
  return false;
}

}  // namespace tokenmill::engine
