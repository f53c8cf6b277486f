#include "engine/json_schema.h"

#include <cmath>
#include <list>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <unordered_map>

#include "engine/json_grammar.h"
#include "engine/json_string_chars.h"
#include "engine/number_grammar.h"
#include "engine/regex_grammar.h"
#include "engine/schema_merge.h"
#include "engine/string_formats.h"

namespace tokenmill::engine {

namespace {

using Json = nlohmann::ordered_json;
using Sequence = Grammar::Sequence;

// Keywords that only describe, and the schema-level bookkeeping ones: never constraints.
const std::set<std::string, std::less<>> kAnnotations = {
    "title",    "description", "default",  "examples",  "$schema",       "$id",    "$comment", "$anchor",
    "deprecated", "readOnly",  "writeOnly", "strict",   "discriminator", "$defs",  "definitions", "nullable",
    "$dynamicAnchor", "$vocabulary"};

// What a grammar cannot enforce (each names why in the docs' table).
const std::set<std::string, std::less<>> kUnenforceable = {
    "uniqueItems", "multipleOf", "if", "then", "else", "dependentSchemas", "contentEncoding", "contentMediaType",
    "contentSchema", "unevaluatedItems", "dependencies", "$dynamicRef"};

const std::set<std::string, std::less<>> kObjectKeywords = {
    "properties", "required", "additionalProperties", "unevaluatedProperties", "patternProperties",
    "propertyNames", "minProperties", "maxProperties", "dependentRequired"};
const std::set<std::string, std::less<>> kArrayKeywords = {"items", "prefixItems", "minItems", "maxItems", "contains",
                                                           "minContains"};
const std::set<std::string, std::less<>> kStringKeywords = {"minLength", "maxLength", "pattern", "format"};
const std::set<std::string, std::less<>> kNumberKeywords = {"minimum", "maximum", "exclusiveMinimum",
                                                            "exclusiveMaximum"};

bool has_any(const Json& schema, const std::set<std::string, std::less<>>& keys) {
  for (const auto& item : schema.items()) {
    if (keys.contains(item.key())) return true;
  }
  return false;
}

// The schema without the given keyword, and whether what is left constrains anything.
Json without(const Json& schema, const char* key) {
  Json rest = schema;
  rest.erase(key);
  return rest;
}
bool constrains(const Json& schema) {
  for (const auto& item : schema.items()) {
    if (!kAnnotations.contains(item.key())) return true;
  }
  return false;
}

bool is_whole(double d) { return std::isfinite(d) && std::floor(d) == d; }

bool json_type_is(const Json& v, const std::string& type) {
  if (type == "object") return v.is_object();
  if (type == "array") return v.is_array();
  if (type == "string") return v.is_string();
  if (type == "boolean") return v.is_boolean();
  if (type == "null") return v.is_null();
  if (type == "number") return v.is_number();
  if (type == "integer") return v.is_number_integer() || (v.is_number_float() && is_whole(v.get<double>()));
  return false;
}

}  // namespace

class SchemaCompiler {
 public:
  SchemaCompiler(const Json& root, JsonSchema::Options options, Grammar& g, std::vector<JsonSchema::Unenforced>& unenforced)
      : root_(root), options_(options), g_(g), unenforced_(unenforced) {}

  // The rule for one JSON value valid against schema (no whitespace around it).
  Result<int32_t> value(const Json& schema, const std::string& path, int depth) {
    if (depth > JsonSchema::kMaxDepth) {
      return invalid_argument("the schema nests deeper than " + std::to_string(JsonSchema::kMaxDepth) + " levels at " + path);
    }
    if (g_.n_elements() > JsonSchema::kMaxElements) {
      return invalid_argument("the schema is too large: its grammar passed " + std::to_string(JsonSchema::kMaxElements) +
                              " elements at " + path);
    }
    if (schema.is_boolean()) {
      if (schema.get<bool>()) return any_value();
      return invalid_argument("the schema at " + path + " is false: no value is valid");
    }
    if (!schema.is_object()) return invalid_argument("the schema at " + path + " must be an object or a boolean");
    if (schema.contains("$ref")) return reference(schema, path, depth);
    if (schema.contains("allOf")) return all_of(schema, path, depth);
    for (const char* key : {"anyOf", "oneOf"}) {
      if (schema.contains(key)) return any_of(schema, key, path, depth);
    }
    TM_RETURN_IF_ERROR(note_unenforceable(schema, path));
    if (schema.contains("enum") || schema.contains("const")) return literals(schema, path);
    if (schema.contains("type")) {
      const Json& type = schema["type"];
      if (type.is_array()) return type_list(schema, path, depth);
      if (!type.is_string()) return invalid_argument("'type' at " + path + " must be a type name or a list of them");
      return typed(schema, type.get<std::string>(), path, depth);
    }
    // No type: the keywords' own kind (a subset of what the schema allows), else any value.
    if (has_any(schema, kObjectKeywords)) return typed(schema, "object", path, depth);
    if (has_any(schema, kArrayKeywords)) return typed(schema, "array", path, depth);
    if (has_any(schema, kStringKeywords)) return typed(schema, "string", path, depth);
    if (has_any(schema, kNumberKeywords)) return typed(schema, "number", path, depth);
    if (schema.contains("not")) return typed(schema, "string", path, depth);
    return any_value();
  }

 private:
  Status note_unenforceable(const Json& schema, const std::string& path) {
    for (const auto& item : schema.items()) {
      const std::string& key = item.key();
      if (!kUnenforceable.contains(key)) continue;
      if (key == "uniqueItems" && !(item.value().is_boolean() && item.value().get<bool>())) continue;
      TM_RETURN_IF_ERROR(unenforced(key, path));
    }
    return {};
  }

  Status unenforced(const std::string& keyword, const std::string& path) {
    if (options_.strict) {
      return invalid_argument("the schema keyword '" + keyword + "' at " + path +
                              " cannot be enforced while generating, and the schema is strict");
    }
    unenforced_.push_back({keyword, path});
    return {};
  }

  // A schema of enum / const alone (and annotations).
  static bool literal_only(const Json& n) {
    return n.is_object() && (n.contains("enum") || n.contains("const")) &&
           std::all_of(n.items().begin(), n.items().end(), [](const auto& item) {
             return item.key() == "enum" || item.key() == "const" || kAnnotations.contains(item.key());
           });
  }

  // --- composition -----------------------------------------------------------------

  Result<int32_t> reference(const Json& schema, const std::string& path, int depth) {
    if (!schema["$ref"].is_string()) return invalid_argument("'$ref' at " + path + " must be a string");
    const std::string ref = schema["$ref"].get<std::string>();
    auto target = resolve_ref(root_, ref, path);
    if (!target.ok()) return target.status();
    Json rest = without(schema, "$ref");
    if (constrains(rest)) {  // siblings of $ref apply too
      Json both = rest;
      both["allOf"] = Json::array({Json{{"$ref", ref}}});
      if (rest.contains("allOf")) both["allOf"].insert(both["allOf"].end(), rest["allOf"].begin(), rest["allOf"].end());
      return value(both, path, depth + 1);
    }
    auto [it, fresh] = ref_rules_.try_emplace(*target, -1);
    if (!fresh) return it->second;
    const int32_t rule = g_.add_rule();  // before the body, so a recursive $ref finds it
    it->second = rule;
    auto body = value(**target, ref, depth + 1);
    if (!body.ok()) return body.status();
    g_.add_alternative(rule, {Grammar::rule(*body)});
    return rule;
  }

  // A schema part with its $refs and allOfs flattened into one object, for merging.
  Result<Json> flattened(const Json& part, const std::string& path, int depth) {
    if (depth > JsonSchema::kMaxDepth) return invalid_argument("'allOf' / '$ref' nest deeper than 64 levels at " + path);
    if (part.is_boolean()) {
      if (part.get<bool>()) return Json::object();
      return invalid_argument("the schema at " + path + " is false: no value is valid");
    }
    if (!part.is_object()) return invalid_argument("the schema at " + path + " must be an object or a boolean");
    Json out = part;
    std::vector<std::pair<Json, std::string>> pieces;
    if (out.contains("$ref")) {
      if (!out["$ref"].is_string()) return invalid_argument("'$ref' at " + path + " must be a string");
      const std::string ref = out["$ref"].get<std::string>();
      auto target = resolve_ref(root_, ref, path);
      if (!target.ok()) return target.status();
      pieces.emplace_back(**target, ref);
      out.erase("$ref");
    }
    if (out.contains("allOf")) {
      const Json& parts = out["allOf"];
      if (!parts.is_array() || parts.empty()) return invalid_argument("'allOf' at " + path + " must be a non-empty array");
      for (size_t i = 0; i < parts.size(); ++i) pieces.emplace_back(parts[i], path + ".allOf[" + std::to_string(i) + "]");
      out.erase("allOf");
    }
    for (const auto& [piece, piece_path] : pieces) {
      auto flat = flattened(piece, piece_path, depth + 1);
      if (!flat.ok()) return flat.status();
      auto merged = merge_schemas(out, *flat, path, piece_path);
      if (!merged.ok()) return merged.status();
      out = std::move(*merged);
    }
    return out;
  }

  Result<int32_t> all_of(const Json& schema, const std::string& path, int depth) {
    auto merged = flattened(schema, path, depth);
    if (!merged.ok()) return merged.status();
    return value(*merged, path, depth + 1);
  }

  // anyOf / oneOf: each alternative with the rest of the schema applied to it. (oneOf's
  // "exactly one" holds where the alternatives exclude each other, as the discriminated
  // unions libraries generate do.)
  Result<int32_t> any_of(const Json& schema, const char* key, const std::string& path, int depth) {
    const Json& list = schema[key];
    if (!list.is_array() || list.empty()) return invalid_argument("'" + std::string(key) + "' at " + path + " must be a non-empty array");
    const Json rest = without(schema, key);
    const bool rest_applies = constrains(rest);
    std::vector<Sequence> alternatives;
    for (size_t i = 0; i < list.size(); ++i) {
      const std::string alt_path = path + "." + key + "[" + std::to_string(i) + "]";
      Result<int32_t> alt = rest_applies ? value(Json{{"allOf", Json::array({rest, list[i]})}}, alt_path, depth + 1)
                                         : value(list[i], alt_path, depth + 1);
      if (!alt.ok()) return alt.status();
      alternatives.push_back({Grammar::rule(*alt)});
    }
    return g_.rule_of(std::move(alternatives));
  }

  Result<int32_t> type_list(const Json& schema, const std::string& path, int depth) {
    const Json& types = schema["type"];
    if (types.empty()) return invalid_argument("'type' at " + path + " is an empty list");
    std::vector<Sequence> alternatives;
    for (const auto& type : types) {
      if (!type.is_string()) return invalid_argument("'type' at " + path + " must list type names");
      auto alt = typed(schema, type.get<std::string>(), path, depth);
      if (!alt.ok()) return alt.status();
      alternatives.push_back({Grammar::rule(*alt)});
    }
    return g_.rule_of(std::move(alternatives));
  }

  // enum and const (both: the values in both), restricted to the schema's type.
  Result<int32_t> literals(const Json& schema, const std::string& path) {
    Json values = Json::array();
    if (schema.contains("enum")) {
      if (!schema["enum"].is_array() || schema["enum"].empty()) return invalid_argument("'enum' at " + path + " must be a non-empty array");
      values = schema["enum"];
    }
    if (schema.contains("const")) {
      const Json& c = schema["const"];
      if (schema.contains("enum") && std::find(values.begin(), values.end(), c) == values.end()) {
        return invalid_argument("'const' at " + path + " is not one of its 'enum' values");
      }
      values = Json::array({c});
    }
    // not of enum / const: those values left out.
    Json excluded = Json::array();
    if (schema.contains("not")) {
      const Json& n = schema["not"];
      if (!literal_only(n)) TM_RETURN_IF_ERROR(unenforced("not", path));
      if (n.contains("enum") && n["enum"].is_array()) excluded = n["enum"];
      if (n.contains("const")) excluded.push_back(n["const"]);
    }
    std::set<std::string> types;
    if (schema.contains("type")) {
      const Json& t = schema["type"];
      if (t.is_string()) types.insert(t.get<std::string>());
      if (t.is_array()) for (const auto& x : t) if (x.is_string()) types.insert(x.get<std::string>());
    }
    std::vector<Sequence> alternatives;
    for (const auto& v : values) {
      if (std::find(excluded.begin(), excluded.end(), v) != excluded.end()) continue;
      if (!types.empty() && std::none_of(types.begin(), types.end(), [&](const std::string& t) { return json_type_is(v, t); })) continue;
      const std::string text = v.dump();
      literal_bytes_ += static_cast<int64_t>(text.size());
      if (++n_literals_ > JsonSchema::kMaxLiterals || literal_bytes_ > JsonSchema::kMaxLiteralBytes) {
        return invalid_argument("the schema's enum / const values exceed " + std::to_string(JsonSchema::kMaxLiterals) +
                                " values or " + std::to_string(JsonSchema::kMaxLiteralBytes / 1024) + " KiB");
      }
      alternatives.push_back(g_.literal(text));
    }
    if (alternatives.empty()) return invalid_argument("no value of 'enum' / 'const' at " + path + " has the schema's type");
    return g_.rule_of(std::move(alternatives));
  }

  Result<int32_t> typed(const Json& schema, const std::string& type, const std::string& path, int depth) {
    if (type == "object") return object(schema, path, depth);
    if (type == "array") return array(schema, path, depth);
    if (type == "string") return string(schema, path);
    if (type == "number" || type == "integer") return number(schema, path, type == "integer");
    if (schema.contains("not")) TM_RETURN_IF_ERROR(unenforced("not", path));
    if (type == "boolean") return g_.rule_of({g_.literal("true"), g_.literal("false")});
    if (type == "null") return g_.rule_of({g_.literal("null")});
    return invalid_argument("unknown type '" + type + "' at " + path);
  }

  // --- objects ---------------------------------------------------------------------

  struct Member {
    std::string key;       // the key as JSON text, quotes included
    int32_t value = -1;
    bool required = false;
  };

  Result<int32_t> object(const Json& schema, const std::string& path, int depth) {
    if (schema.contains("not")) TM_RETURN_IF_ERROR(unenforced("not", path));
    std::vector<Member> members;
    std::map<std::string, size_t> index;  // name -> member
    std::vector<std::pair<std::string, const Json*>> named;
    if (schema.contains("properties")) {
      if (!schema["properties"].is_object()) return invalid_argument("'properties' at " + path + " must be an object");
      for (const auto& [key, child] : schema["properties"].items()) named.emplace_back(key, &child);
    }
    // The schema of keys not in properties: additionalProperties, else unevaluatedProperties.
    const Json* extra = nullptr;
    for (const char* key : {"additionalProperties", "unevaluatedProperties"}) {
      if (schema.contains(key) && !extra) extra = &schema[key];
    }
    const bool extra_forbidden = extra && extra->is_boolean() && !extra->get<bool>();
    std::set<std::string> required;
    if (schema.contains("required")) {
      if (!schema["required"].is_array()) return invalid_argument("'required' at " + path + " must be an array of names");
      for (const auto& r : schema["required"]) {
        if (!r.is_string()) return invalid_argument("'required' at " + path + " must be an array of names");
        required.insert(r.get<std::string>());
      }
    }
    std::set<std::string> left_out;  // optional properties never written (dependentRequired)
    if (schema.contains("dependentRequired")) {
      const Json& deps = schema["dependentRequired"];
      if (!deps.is_object()) return invalid_argument("'dependentRequired' at " + path + " must be an object");
      // A dependency's names are always written (then it holds whether or not its
      // property is); where one of them cannot be written, the property is left out.
      for (const auto& [name, needs] : deps.items()) {
        if (!needs.is_array()) return invalid_argument("'dependentRequired' at " + path + " must map names to arrays");
        for (const auto& n : needs) {
          if (!n.is_string()) return invalid_argument("'dependentRequired' at " + path + " must map names to arrays of names");
          const bool known = std::any_of(named.begin(), named.end(), [&](const auto& p) { return p.first == n.get<std::string>(); });
          if (known || !extra_forbidden) {
            required.insert(n.get<std::string>());
          } else if (required.contains(name)) {
            return invalid_argument("'dependentRequired' at " + path + " needs '" + n.get<std::string>() +
                                    "', which additionalProperties forbids, for the required '" + name + "'");
          } else {
            left_out.insert(name);
          }
        }
      }
    }
    for (const auto& [key, child] : named) {
      if (left_out.contains(key)) continue;
      auto rule = value(*child, path + ".properties." + key, depth + 1);
      if (!rule.ok()) return rule.status();
      index[key] = members.size();
      members.push_back({Json(key).dump(), *rule, required.contains(key)});
    }
    // Required names without a property: written with the schema of other keys.
    for (const std::string& name : required) {
      if (index.contains(name)) continue;
      if (extra_forbidden) {
        return invalid_argument("'required' at " + path + " names '" + name + "', which additionalProperties forbids");
      }
      auto rule = extra ? value(*extra, path + ".additionalProperties", depth + 1) : any_value();
      if (!rule.ok()) return rule.status();
      index[name] = members.size();
      members.push_back({Json(name).dump(), *rule, true});
    }

    // Other members: patternProperties' and additionalProperties'.
    std::vector<Sequence> others;
    if (schema.contains("patternProperties")) {
      const Json& patterns = schema["patternProperties"];
      if (!patterns.is_object()) return invalid_argument("'patternProperties' at " + path + " must be an object");
      for (const auto& [pattern, child] : patterns.items()) {
        auto key_rule = regex_rule(g_, pattern, -1);
        if (!key_rule.ok()) return key_rule.status();
        auto rule = value(child, path + ".patternProperties." + pattern, depth + 1);
        if (!rule.ok()) return rule.status();
        others.push_back(member_text(Sequence{g_.byte('"'), Grammar::rule(*key_rule), g_.byte('"')}, *rule));
      }
    }
    const bool extra_allowed = extra && !extra_forbidden && !schema.contains("patternProperties");
    if (extra_allowed) {
      auto rule = value(*extra, path + ".additionalProperties", depth + 1);
      if (!rule.ok()) return rule.status();
      int32_t key_rule = -1;
      if (schema.contains("propertyNames")) {
        Json names = schema["propertyNames"].is_object() ? schema["propertyNames"] : Json::object();
        names["type"] = "string";
        auto names_rule = value(names, path + ".propertyNames", depth + 1);
        if (!names_rule.ok()) return names_rule.status();
        key_rule = *names_rule;
      } else {
        std::vector<std::string> taken;
        for (const auto& [name, i] : index) taken.push_back(name);
        key_rule = string_excluding(taken, -1, 0, Grammar::kUnbounded);
      }
      others.push_back(member_text(Sequence{Grammar::rule(key_rule)}, *rule));
    }

    int32_t min_members = 0, max_members = Grammar::kUnbounded;
    TM_RETURN_IF_ERROR(read_count(schema, path, "minProperties", "maxProperties", min_members, max_members));
    const auto n_required = std::count_if(members.begin(), members.end(), [](const Member& m) { return m.required; });
    if (n_required > max_members) {
      return invalid_argument("'maxProperties' at " + path + " is less than the " + std::to_string(n_required) + " required properties");
    }
    if (others.empty() && static_cast<int64_t>(members.size()) < min_members) {
      return invalid_argument("'minProperties' at " + path + " asks for more properties than the schema allows");
    }
    const bool counted = min_members > 0 || max_members != Grammar::kUnbounded;
    const int32_t counter = counted ? g_.new_counter() : -1;

    std::vector<Sequence> member_texts;
    for (const Member& m : members) member_texts.push_back(member_text(g_.literal(m.key), m.value));
    const int32_t other_rule = others.empty() ? -1 : g_.rule_of(std::move(others));
    // Each member is preceded by a mark of the counter (when counted), before its comma,
    // so that a full object offers no comma.
    auto comma_member = [&](GrammarElement member) { return with_mark(counter, comma_then(member)); };
    // after[i]: the members from i on when at least one was written (each after a comma);
    // first[i]: at least one member from i on when none was. An optional member may be
    // skipped. (An empty object is its own alternative, so no two whitespace runs meet.)
    const size_t n = members.size();
    std::vector<int32_t> after(n + 1), first(n + 1);
    after[n] = other_rule < 0 ? g_.rule_of({{}})
                              : g_.rule_of({{Grammar::repeat(g_.rule_of({comma_member(Grammar::rule(other_rule))}), 0, Grammar::kUnbounded)}});
    first[n] = other_rule < 0 ? g_.add_rule()
                              : g_.rule_of({with_mark(counter, {Grammar::rule(other_rule), Grammar::rule(after[n])})});
    for (size_t i = n; i-- > 0;) {
      const GrammarElement member = Grammar::rule(g_.rule_of({member_texts[i]}));
      Sequence written = comma_member(member);
      written.push_back(Grammar::rule(after[i + 1]));
      std::vector<Sequence> after_alternatives = {std::move(written)};
      std::vector<Sequence> first_alternatives = {with_mark(counter, {member, Grammar::rule(after[i + 1])})};
      if (!members[i].required) {
        after_alternatives.push_back({Grammar::rule(after[i + 1])});
        first_alternatives.push_back({Grammar::rule(first[i + 1])});
      }
      after[i] = g_.rule_of(std::move(after_alternatives));
      first[i] = g_.rule_of(std::move(first_alternatives));
    }
    std::vector<Sequence> bodies;
    if (n_required == 0 && min_members == 0) bodies.push_back({g_.byte('{'), ws(), g_.byte('}')});
    bodies.push_back({g_.byte('{'), ws(),
                      counted ? Grammar::count(first[0], counter, min_members, max_members) : Grammar::rule(first[0]), ws(),
                      g_.byte('}')});
    return g_.rule_of(std::move(bodies));
  }

  // KEY ws ':' ws VALUE
  Sequence member_text(Sequence key, int32_t value_rule) {
    key.push_back(ws());
    key.push_back(g_.byte(':'));
    key.push_back(ws());
    key.push_back(Grammar::rule(value_rule));
    return key;
  }

  static Sequence with_mark(int32_t counter, Sequence s) {
    if (counter >= 0) s.insert(s.begin(), Grammar::mark(counter));
    return s;
  }

  // ws ',' ws ELEMENT
  Sequence comma_then(GrammarElement e) { return {ws(), g_.byte(','), ws(), e}; }

  // --- arrays ----------------------------------------------------------------------

  Result<int32_t> array(const Json& schema, const std::string& path, int depth) {
    if (schema.contains("not")) TM_RETURN_IF_ERROR(unenforced("not", path));
    int32_t min_items = 0, max_items = Grammar::kUnbounded;
    TM_RETURN_IF_ERROR(read_count(schema, path, "minItems", "maxItems", min_items, max_items));
    std::vector<int32_t> prefix;
    if (schema.contains("prefixItems")) {
      const Json& items = schema["prefixItems"];
      if (!items.is_array()) return invalid_argument("'prefixItems' at " + path + " must be an array of schemas");
      for (size_t i = 0; i < items.size() && static_cast<int32_t>(i) < max_items; ++i) {
        auto rule = value(items[i], path + ".prefixItems[" + std::to_string(i) + "]", depth + 1);
        if (!rule.ok()) return rule.status();
        prefix.push_back(*rule);
      }
    }
    const Json items = schema.contains("items") ? schema["items"] : Json(true);
    const bool more_allowed = !(items.is_boolean() && !items.get<bool>());
    const auto k = static_cast<int32_t>(prefix.size());
    if (!more_allowed && min_items > k) {
      return invalid_argument("'minItems' at " + path + " asks for more items than 'prefixItems' has, and 'items' is false");
    }
    int32_t tail = -1;  // a rule for items after the prefix
    int32_t counter = -1, min_contains = 0, contains_max = Grammar::kUnbounded;
    if (more_allowed) {
      auto rule = value(items, path + ".items", depth + 1);
      if (!rule.ok()) return rule.status();
      tail = *rule;
      if (schema.contains("contains")) {
        // At least minContains items are written valid against contains too (each with a
        // mark); the others need not avoid it, so maxContains is not enforced.
        min_contains = 1;
        if (schema.contains("minContains")) {
          const Json& m = schema["minContains"];
          if (!m.is_number_integer() || m.get<int64_t>() < 0) return invalid_argument("'minContains' at " + path + " must be a non-negative integer");
          min_contains = static_cast<int32_t>(std::min<int64_t>(m.get<int64_t>(), INT32_MAX));
        }
        int32_t max_contains = Grammar::kUnbounded;
        int32_t others = tail;  // items that need not avoid contains
        if (schema.contains("maxContains")) {
          // Enforced where the items that must not match contains can be written as
          // such: contains of enum / const values, left out of the others.
          const Json& m = schema["maxContains"];
          if (!m.is_number_integer() || m.get<int64_t>() < 0) return invalid_argument("'maxContains' at " + path + " must be a non-negative integer");
          const size_t before = unenforced_.size();
          const bool strict = options_.strict;
          options_.strict = false;
          auto avoiding = value(Json{{"allOf", Json::array({items, Json{{"not", schema["contains"]}}})}}, path + ".contains", depth + 1);
          options_.strict = strict;
          if (avoiding.ok() && unenforced_.size() == before) {
            others = *avoiding;
            max_contains = static_cast<int32_t>(std::min<int64_t>(m.get<int64_t>(), Grammar::kUnbounded - 1));
          } else {
            unenforced_.resize(before);
            TM_RETURN_IF_ERROR(unenforced("maxContains", path));
          }
        }
        if (min_contains > 0 || max_contains != Grammar::kUnbounded) {
          auto containing = value(Json{{"allOf", Json::array({items, schema["contains"]})}}, path + ".contains", depth + 1);
          if (!containing.ok()) return containing.status();
          if (k == 0 && max_items <= kMaxUnrolledItems) {
            return contains_unrolled(*containing, others, min_items, max_items, min_contains, max_contains);
          }
          counter = g_.new_counter();
          tail = g_.rule_of({{Grammar::mark(counter), Grammar::rule(*containing)}, {Grammar::rule(others)}});
          contains_max = max_contains;
        }
      }
    } else if (schema.contains("contains")) {
      TM_RETURN_IF_ERROR(unenforced("contains", path));
    }
    auto remaining = [&](int32_t written) -> std::pair<int32_t, int32_t> {  // more tail items: min, max
      const int32_t lo = std::max(0, min_items - written);
      const int32_t hi = max_items == Grammar::kUnbounded ? Grammar::kUnbounded : max_items - written;
      return {lo, hi};
    };
    // after[i]: the items from i on once i >= 1 were written.
    std::vector<int32_t> after(static_cast<size_t>(k) + 1, -1);
    if (k > 0) {
      if (tail >= 0) {
        const auto [lo, hi] = remaining(k);
        after[k] = g_.rule_of({{Grammar::repeat(g_.rule_of({comma_then(Grammar::rule(tail))}), lo, hi)}});
      } else {
        after[k] = g_.rule_of({{}});
      }
      for (int32_t i = k - 1; i >= 1; --i) {
        Sequence more = comma_then(Grammar::rule(prefix[i]));
        more.push_back(Grammar::rule(after[i + 1]));
        std::vector<Sequence> alternatives = {std::move(more)};
        if (i >= min_items) alternatives.push_back({});
        after[i] = g_.rule_of(std::move(alternatives));
      }
    }
    std::vector<Sequence> contents;  // at least one item
    if (k > 0) {
      contents.push_back({Grammar::rule(prefix[0]), Grammar::rule(after[1])});
    } else if (tail >= 0 && max_items >= 1) {
      const auto [lo, hi] = remaining(1);
      contents.push_back({Grammar::rule(tail), Grammar::repeat(g_.rule_of({comma_then(Grammar::rule(tail))}), lo, hi)});
    }
    std::vector<Sequence> bodies;
    if (min_items == 0 && min_contains == 0) bodies.push_back({g_.byte('['), ws(), g_.byte(']')});
    if (!contents.empty()) {
      const int32_t content = g_.rule_of(std::move(contents));
      bodies.push_back({g_.byte('['), ws(),
                        counter >= 0 ? Grammar::count(content, counter, min_contains, contains_max) : Grammar::rule(content),
                        ws(), g_.byte(']')});
    }
    if (bodies.empty()) return invalid_argument("no array fits the bounds at " + path);
    return g_.rule_of(std::move(bodies));
  }

  // An array of min..max items (max <= kMaxUnrolledItems) of which min_contains..
  // max_contains are `containing` ones and the rest `others`, as one rule per (items
  // written, containing ones so far): an item is offered only while the items left can
  // still reach min_contains, so no prefix is a dead end.
  static constexpr int32_t kMaxUnrolledItems = 64;
  int32_t contains_unrolled(int32_t containing, int32_t others, int32_t min_items, int32_t max_items, int32_t min_contains,
                            int32_t max_contains) {
    const bool capped = max_contains != Grammar::kUnbounded;
    const int32_t top = capped ? max_contains : min_contains;  // containing counts tracked up to here
    // rules[i][j]: the rest once i items (j containing, saturated at top) were written.
    std::vector<std::vector<int32_t>> rules(static_cast<size_t>(max_items) + 2, std::vector<int32_t>(top + 1, -1));
    auto room = [&](int32_t written, int32_t j) { return max_items - written >= min_contains - j; };
    auto rest = [&](int32_t i, int32_t j, bool first) {
      std::vector<Sequence> alternatives;
      if (!first && i >= min_items && j >= min_contains) alternatives.push_back({});
      if (i < max_items) {
        const int32_t after_containing = std::min(j + 1, top);
        for (const auto& [item, next] : {std::pair{containing, after_containing}, std::pair{others, j}}) {
          if (item == containing && capped && j >= max_contains) continue;
          if (!room(i + 1, next)) continue;
          Sequence s = first ? Sequence{Grammar::rule(item)} : comma_then(Grammar::rule(item));
          s.push_back(Grammar::rule(rules[i + 1][next]));
          alternatives.push_back(std::move(s));
        }
      }
      return alternatives;
    };
    for (int32_t i = max_items; i >= 1; --i) {
      for (int32_t j = 0; j <= top; ++j) rules[i][j] = g_.rule_of(rest(i, j, /*first=*/false));
    }
    std::vector<Sequence> bodies;
    if (min_items == 0 && min_contains == 0) bodies.push_back({g_.byte('['), ws(), g_.byte(']')});
    const std::vector<Sequence> firsts = rest(0, 0, /*first=*/true);
    if (!firsts.empty()) bodies.push_back({g_.byte('['), ws(), Grammar::rule(g_.rule_of(firsts)), ws(), g_.byte(']')});
    return g_.rule_of(std::move(bodies));
  }

  // --- strings ---------------------------------------------------------------------

  Result<int32_t> string(const Json& schema, const std::string& path) {
    int32_t min_length = 0, max_length = Grammar::kUnbounded;
    TM_RETURN_IF_ERROR(read_count(schema, path, "minLength", "maxLength", min_length, max_length));
    std::optional<std::string> pattern;
    if (schema.contains("pattern")) {
      if (!schema["pattern"].is_string()) return invalid_argument("'pattern' at " + path + " must be a string");
      pattern = schema["pattern"].get<std::string>();
    }
    if (schema.contains("format")) {
      const Json& f = schema["format"];
      std::optional<std::string> format = f.is_string() ? format_pattern(f.get<std::string>()) : std::nullopt;
      if (!format) {
        TM_RETURN_IF_ERROR(unenforced("format", path));
      } else if (pattern) {
        TM_RETURN_IF_ERROR(unenforced("format", path));  // a pattern and a format: the pattern is enforced
      } else {
        pattern = format;
      }
    }
    std::vector<std::string> excluded;
    if (schema.contains("not")) {
      const Json& n = schema["not"];
      if (!literal_only(n) || pattern) {
        TM_RETURN_IF_ERROR(unenforced("not", path));
      } else {
        if (n.contains("const") && n["const"].is_string()) excluded.push_back(n["const"].get<std::string>());
        if (n.contains("enum") && n["enum"].is_array()) {
          for (const auto& v : n["enum"]) if (v.is_string()) excluded.push_back(v.get<std::string>());
        }
      }
    }
    const bool counted = min_length > 0 || max_length != Grammar::kUnbounded;
    if (pattern) {
      const int32_t counter = counted ? g_.new_counter() : -1;
      auto content = regex_rule(g_, *pattern, counter);
      if (!content.ok()) return invalid_argument(content.status().message() + " (at " + path + ")");
      const GrammarElement inner = counted ? Grammar::count(*content, counter, min_length, max_length) : Grammar::rule(*content);
      return g_.rule_of({{g_.byte('"'), inner, g_.byte('"')}});
    }
    if (!excluded.empty()) return string_excluding(excluded, counted ? g_.new_counter() : -1, min_length, max_length);
    Sequence s = {g_.byte('"'), Grammar::repeat(any_char(), min_length, max_length), g_.byte('"')};
    return g_.rule_of({std::move(s)});
  }

  // A JSON string (quotes included) that is none of `excluded`, of min..max characters
  // (counted with `counter`; -1: no bounds). A trie of the excluded strings: at each
  // node, a character that leaves the trie frees the rest; the closing quote is refused
  // where an excluded string ends.
  int32_t string_excluding(const std::vector<std::string>& excluded, int32_t counter, int32_t min, int32_t max) {
    struct TrieNode {
      std::map<uint32_t, size_t> next;
      bool terminal = false;
    };
    std::vector<TrieNode> trie(1);
    for (const std::string& text : excluded) {
      size_t at = 0;
      for (uint32_t c : code_points(text)) {
        auto found = trie[at].next.find(c);
        if (found == trie[at].next.end()) {
          trie.emplace_back();
          found = trie[at].next.emplace(c, trie.size() - 1).first;
        }
        at = found->second;
      }
      trie[at].terminal = true;
    }
    const int32_t char_rule = json_string_char_rule(g_, CodePoints::all(), counter);
    const int32_t free_rest = g_.rule_of({{Grammar::repeat(g_.rule_of({{Grammar::rule(char_rule)}}), 0, Grammar::kUnbounded), g_.byte('"')}});
    std::vector<int32_t> rules(trie.size());
    for (size_t i = trie.size(); i-- > 0;) {  // children were added after their parents
      std::vector<Sequence> alternatives;
      if (!trie[i].terminal) alternatives.push_back({g_.byte('"')});
      CodePoints leaving = CodePoints::all();
      CodePoints continuing;
      for (const auto& [c, child] : trie[i].next) {
        alternatives.push_back({Grammar::rule(json_string_char_rule(g_, CodePoints::one(c), counter)), Grammar::rule(rules[child])});
        continuing.add(c, c);
      }
      leaving = continuing.complement();
      alternatives.push_back({Grammar::rule(json_string_char_rule(g_, leaving, counter)), Grammar::rule(free_rest)});
      rules[i] = g_.rule_of(std::move(alternatives));
    }
    const int32_t inner = g_.rule_of({{g_.byte('"'), Grammar::rule(rules[0])}});
    if (counter < 0) return inner;
    return g_.rule_of({{Grammar::count(inner, counter, min, max)}});
  }

  static std::vector<uint32_t> code_points(const std::string& text) {
    std::vector<uint32_t> out;
    for (size_t i = 0; i < text.size();) {
      const auto b = static_cast<unsigned char>(text[i]);
      const int n = b < 0x80 ? 1 : b >= 0xF0 ? 4 : b >= 0xE0 ? 3 : 2;
      uint32_t c = n == 1 ? b : n == 2 ? b & 0x1F : n == 3 ? b & 0x0F : b & 0x07;
      for (int k = 1; k < n && i + k < text.size(); ++k) c = (c << 6) | (static_cast<unsigned char>(text[i + k]) & 0x3F);
      out.push_back(c);
      i += n;
    }
    return out;
  }

  // --- numbers ---------------------------------------------------------------------

  Result<int32_t> number(const Json& schema, const std::string& path, bool integer) {
    if (schema.contains("not")) TM_RETURN_IF_ERROR(unenforced("not", path));
    NumberBounds bounds;
    auto bound = [&](const char* key, bool lower, bool exclusive) -> Status {
      if (!schema.contains(key)) return {};
      const Json& v = schema[key];
      if (v.is_boolean()) return {};  // draft 4's exclusiveMinimum: true, read below
      if (!v.is_number()) return invalid_argument("'" + std::string(key) + "' at " + path + " must be a number");
      const Decimal d = v.is_number_integer() ? (v.is_number_unsigned() && v.get<uint64_t>() > INT64_MAX
                                                     ? Decimal::from_double(v.get<double>())
                                                     : Decimal::from_int(v.get<int64_t>()))
                                              : Decimal::from_double(v.get<double>());
      std::optional<Decimal>& slot = lower ? bounds.lower : bounds.upper;
      bool& slot_exclusive = lower ? bounds.lower_exclusive : bounds.upper_exclusive;
      const std::string old_key = lower ? "exclusiveMinimum" : "exclusiveMaximum";
      const bool draft4_exclusive = !exclusive && schema.contains(old_key) && schema[old_key].is_boolean() && schema[old_key].get<bool>();
      const bool is_exclusive = exclusive || draft4_exclusive;
      if (!slot) {
        slot = d;
        slot_exclusive = is_exclusive;
        return {};
      }
      // Both a minimum and an exclusiveMinimum: the tighter one.
      const double now = std::stod(slot->to_string()), candidate = std::stod(d.to_string());
      if ((lower && (candidate > now || (candidate == now && is_exclusive))) ||
          (!lower && (candidate < now || (candidate == now && is_exclusive)))) {
        slot = d;
        slot_exclusive = is_exclusive;
      }
      return {};
    };
    TM_RETURN_IF_ERROR(bound("minimum", true, false));
    TM_RETURN_IF_ERROR(bound("exclusiveMinimum", true, true));
    TM_RETURN_IF_ERROR(bound("maximum", false, false));
    TM_RETURN_IF_ERROR(bound("exclusiveMaximum", false, true));
    if (!bounds.lower && !bounds.upper) {
      int32_t& cached = integer ? any_integer_ : any_number_;
      if (cached < 0) cached = any_number_rule(g_, integer);
      return cached;
    }
    auto rule = integer ? integer_rule(g_, bounds) : number_rule(g_, bounds);
    if (!rule.ok()) return invalid_argument(rule.status().message() + " at " + path);
    return rule;
  }

  // --- shared pieces ---------------------------------------------------------------

  static Status read_count(const Json& schema, const std::string& path, const char* min_key, const char* max_key,
                           int32_t& min, int32_t& max) {
    for (const char* key : {min_key, max_key}) {
      if (!schema.contains(key)) continue;
      const Json& v = schema[key];
      const bool whole = v.is_number_integer() || (v.is_number_float() && is_whole(v.get<double>()));
      if (!whole || v.get<double>() < 0) return invalid_argument("'" + std::string(key) + "' at " + path + " must be a non-negative integer");
      const double d = v.get<double>();
      (key == min_key ? min : max) = d >= Grammar::kUnbounded ? Grammar::kUnbounded - 1 : static_cast<int32_t>(d);
    }
    if (min > max) return invalid_argument("'" + std::string(min_key) + "' exceeds '" + max_key + "' at " + path);
    return {};
  }

  GrammarElement ws() {
    if (ws_ < 0) {
      ByteSet space;
      for (char c : {' ', '\t', '\n', '\r'}) space.set(static_cast<unsigned char>(c));
      ws_ = g_.rule_of({{Grammar::repeat(g_.rule_of({{g_.bytes(space)}}), 0, JsonGrammar::kMaxWhitespaceRun)}});
    }
    return Grammar::rule(ws_);
  }

  int32_t any_char() {
    if (any_char_ < 0) any_char_ = json_string_char_rule(g_, CodePoints::all(), -1);
    return any_char_;
  }

  // Any JSON value (a `true` schema, an array without items, ...).
  int32_t any_value() {
    if (any_value_ >= 0) return any_value_;
    any_value_ = g_.add_rule();
    const int32_t string = g_.rule_of({{g_.byte('"'), Grammar::repeat(any_char(), 0, Grammar::kUnbounded), g_.byte('"')}});
    const int32_t member = g_.rule_of({member_text({Grammar::rule(string)}, any_value_)});
    const int32_t object = g_.rule_of({{g_.byte('{'), ws(), g_.byte('}')},
                                       {g_.byte('{'), ws(), Grammar::rule(member),
                                        Grammar::repeat(g_.rule_of({comma_then(Grammar::rule(member))}), 0, Grammar::kUnbounded),
                                        ws(), g_.byte('}')}});
    const int32_t array = g_.rule_of({{g_.byte('['), ws(), g_.byte(']')},
                                      {g_.byte('['), ws(), Grammar::rule(any_value_),
                                       Grammar::repeat(g_.rule_of({comma_then(Grammar::rule(any_value_))}), 0, Grammar::kUnbounded),
                                       ws(), g_.byte(']')}});
    if (any_number_ < 0) any_number_ = any_number_rule(g_, false);
    for (int32_t r : {object, array, string, any_number_}) g_.add_alternative(any_value_, {Grammar::rule(r)});
    for (const char* word : {"true", "false", "null"}) g_.add_alternative(any_value_, g_.literal(word));
    return any_value_;
  }

  const Json& root_;
  JsonSchema::Options options_;
  Grammar& g_;
  std::vector<JsonSchema::Unenforced>& unenforced_;
  std::map<const Json*, int32_t> ref_rules_;  // a $ref's target -> its rule
  int32_t ws_ = -1, any_char_ = -1, any_value_ = -1, any_number_ = -1, any_integer_ = -1;
  int32_t n_literals_ = 0;
  int64_t literal_bytes_ = 0;
};

namespace {

// The most recently compiled schemas by text and options, least recently used first out.
class CompiledSchemas {
 public:
  std::shared_ptr<const JsonSchema> find(const std::string& key) {
    std::lock_guard lock(mutex_);
    auto it = index_.find(key);
    if (it == index_.end()) return nullptr;
    order_.splice(order_.begin(), order_, it->second);
    return it->second->second;
  }
  void add(const std::string& key, std::shared_ptr<const JsonSchema> schema) {
    std::lock_guard lock(mutex_);
    if (index_.contains(key)) return;
    order_.emplace_front(key, std::move(schema));
    index_[key] = order_.begin();
    if (order_.size() > JsonSchema::kCacheEntries) {
      index_.erase(order_.back().first);
      order_.pop_back();
    }
  }

 private:
  std::mutex mutex_;
  std::list<std::pair<std::string, std::shared_ptr<const JsonSchema>>> order_;
  std::unordered_map<std::string, decltype(order_)::iterator> index_;
};

CompiledSchemas& compiled_schemas() {
  static CompiledSchemas cache;
  return cache;
}

}  // namespace

Result<std::shared_ptr<const JsonSchema>> JsonSchema::compile(const nlohmann::ordered_json& schema, Options options) {
  std::string key = schema.dump();
  if (key.size() > kMaxSchemaBytes) {
    return invalid_argument("the schema is larger than " + std::to_string(kMaxSchemaBytes >> 20) + " MiB");
  }
  key += options.strict ? "\x01s" : "\x01-";
  key += options.object_only ? 'o' : '-';
  if (auto cached = compiled_schemas().find(key)) return cached;
  auto grammar = std::make_shared<Grammar>();
  auto compiled = std::make_shared<JsonSchema>();
  SchemaCompiler compiler(schema, options, *grammar, compiled->unenforced_);
  auto root = compiler.value(schema, "$", 0);
  if (!root.ok()) return root.status();
  grammar->root = *root;
  grammar->compute_mark_bounds();
  compiled->grammar_ = grammar;
  compiled->source_ = schema;
  if (options.object_only) {
    ByteSet object;
    object.set('{');
    if (GrammarMatcher(grammar).next_bytes() != object) return invalid_argument("the schema's top level must be an object");
  }
  std::shared_ptr<const JsonSchema> result = std::move(compiled);
  compiled_schemas().add(key, result);
  return result;
}

std::shared_ptr<GrammarTokenMasks> JsonSchema::token_masks(const std::shared_ptr<const TokenTrie>& trie) const {
  std::lock_guard lock(masks_mutex_);
  if (masks_ == nullptr || masks_->trie() != trie) masks_ = std::make_shared<GrammarTokenMasks>(grammar_, trie);
  return masks_;
}

}  // namespace tokenmill::engine
