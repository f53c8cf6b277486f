#include "engine/schema_merge.h"

#include <algorithm>
#include <set>
#include <vector>

namespace tokenmill::engine {

Result<const SchemaJson*> resolve_ref(const SchemaJson& root, const std::string& ref, const std::string& path) {
  auto unknown = [&](const std::string& why) {
    return invalid_argument("'$ref' " + ref + " at " + path + " " + why);
  };
  if (ref.empty() || ref[0] != '#') return unknown("is not a reference into this schema (only \"#...\" ones are)");
  const SchemaJson* at = &root;
  size_t i = 1;
  if (i < ref.size() && ref[i] != '/') return unknown("is not a JSON pointer");
  while (i < ref.size()) {
    const size_t next = ref.find('/', i + 1);
    std::string token = ref.substr(i + 1, next == std::string::npos ? std::string::npos : next - i - 1);
    i = next == std::string::npos ? ref.size() : next;
    std::string name;
    for (size_t k = 0; k < token.size(); ++k) {
      if (token[k] == '~' && k + 1 < token.size() && (token[k + 1] == '0' || token[k + 1] == '1')) {
        name += token[k + 1] == '0' ? '~' : '/';
        ++k;
      } else if (token[k] == '%') {
        return unknown("has a percent-escape: not supported");
      } else {
        name += token[k];
      }
    }
    if (at->is_object() && at->contains(name)) {
      at = &(*at)[name];
    } else if (at->is_array() && !name.empty() && name.find_first_not_of("0123456789") == std::string::npos &&
               std::stoull(name.substr(0, 9)) < at->size()) {
      at = &(*at)[std::stoull(name)];
    } else {
      return unknown("names nothing in the schema");
    }
  }
  return at;
}

namespace {

using Json = SchemaJson;

std::set<std::string> type_names(const Json& type) {
  std::set<std::string> names;
  if (type.is_string()) names.insert(type.get<std::string>());
  if (type.is_array()) {
    for (const auto& t : type) {
      if (t.is_string()) names.insert(t.get<std::string>());
    }
  }
  return names;
}

class Merger {
 public:
  Merger(const std::string& path_a, const std::string& path_b) : path_a_(path_a), path_b_(path_b) {}

  Result<Json> merge(const Json& a, const Json& b) {
    Json out = a;
    for (const auto& item : b.items()) {
      const std::string& key = item.key();
      const Json& vb = item.value();
      if (!out.contains(key)) {
        out[key] = vb;
        continue;
      }
      const Json va = out[key];
      if (va == vb) continue;
      TM_RETURN_IF_ERROR(merge_keyword(key, va, vb, out));
    }
    return out;
  }

 private:
  Status conflict(const std::string& key, const std::string& why) const {
    return invalid_argument("'allOf' parts at " + path_a_ + " and " + path_b_ + " conflict: '" + key + "' " + why);
  }

  static Json both(const Json& a, const Json& b) { return Json{{"allOf", Json::array({a, b})}}; }

  Status merge_keyword(const std::string& key, const Json& va, const Json& vb, Json& out) {
    static const std::set<std::string> kLower = {"minimum", "exclusiveMinimum", "minLength", "minItems",
                                                 "minProperties", "minContains"};
    static const std::set<std::string> kUpper = {"maximum", "exclusiveMaximum", "maxLength", "maxItems",
                                                 "maxProperties", "maxContains"};
    if (kLower.contains(key) || kUpper.contains(key)) {
      if (!va.is_number() || !vb.is_number()) return conflict(key, "is not a number in both");
      const bool take_b = kLower.contains(key) ? vb.get<double>() > va.get<double>() : vb.get<double>() < va.get<double>();
      if (take_b) out[key] = vb;
      return {};
    }
    if (key == "type") {
      std::set<std::string> ta = type_names(va), tb = type_names(vb), common;
      for (const std::string& t : ta) {
        if (tb.contains(t)) common.insert(t);
        else if (t == "number" && tb.contains("integer")) common.insert("integer");
        else if (t == "integer" && tb.contains("number")) common.insert("integer");
      }
      if (common.empty()) return conflict(key, "has no type in common (" + va.dump() + " and " + vb.dump() + ")");
      out[key] = common.size() == 1 ? Json(*common.begin()) : Json(std::vector<std::string>(common.begin(), common.end()));
      return {};
    }
    if (key == "properties" || key == "patternProperties" || key == "dependentRequired" || key == "$defs" ||
        key == "definitions") {
      if (!va.is_object() || !vb.is_object()) return conflict(key, "is not an object in both");
      Json merged = va;
      for (const auto& [name, schema] : vb.items()) {
        if (!merged.contains(name)) merged[name] = schema;
        else if (merged[name] != schema) merged[name] = key == "dependentRequired" ? union_of(merged[name], schema) : both(merged[name], schema);
      }
      out[key] = std::move(merged);
      return {};
    }
    if (key == "required") {
      out[key] = union_of(va, vb);
      return {};
    }
    if (key == "additionalProperties" || key == "unevaluatedProperties" || key == "items" || key == "propertyNames" ||
        key == "contains") {
      if (va.is_boolean() || vb.is_boolean()) {
        out[key] = (va.is_boolean() && !va.get<bool>()) || (vb.is_boolean() && !vb.get<bool>()) ? Json(false)
                   : va.is_boolean() ? vb : va;
      } else {
        out[key] = both(va, vb);
      }
      return {};
    }
    if (key == "prefixItems") {
      if (!va.is_array() || !vb.is_array()) return conflict(key, "is not an array in both");
      Json merged = Json::array();
      for (size_t i = 0; i < std::max(va.size(), vb.size()); ++i) {
        if (i < va.size() && i < vb.size()) merged.push_back(both(va[i], vb[i]));
        else merged.push_back(i < va.size() ? va[i] : vb[i]);
      }
      out[key] = std::move(merged);
      return {};
    }
    if (key == "enum" || key == "const") {
      const Json la = key == "const" ? Json::array({va}) : va, lb = key == "const" ? Json::array({vb}) : vb;
      Json common = Json::array();
      for (const auto& v : la) {
        if (std::find(lb.begin(), lb.end(), v) != lb.end()) common.push_back(v);
      }
      if (common.empty()) return conflict(key, "allows no value in both (" + va.dump() + " and " + vb.dump() + ")");
      if (key == "const") return conflict(key, "differs (" + va.dump() + " and " + vb.dump() + ")");
      out[key] = std::move(common);
      return {};
    }
    if (key == "anyOf" || key == "oneOf") {
      // (a1 | a2) & (b1 | b2): every pair.
      if (!va.is_array() || !vb.is_array()) return conflict(key, "is not an array in both");
      Json pairs = Json::array();
      for (const auto& x : va) {
        for (const auto& y : vb) pairs.push_back(both(x, y));
      }
      out[key] = std::move(pairs);
      return {};
    }
    if (key == "not") {
      out[key] = Json{{"anyOf", Json::array({va, vb})}};
      return {};
    }
    if (key == "uniqueItems") {
      out[key] = va.is_boolean() && va.get<bool>() ? va : vb;
      return {};
    }
    static const std::set<std::string> kAnnotations = {"title", "description", "default", "examples", "$schema", "$id",
                                                       "$comment", "deprecated", "readOnly", "writeOnly", "discriminator"};
    if (kAnnotations.contains(key)) return {};
    return conflict(key, "differs (" + va.dump() + " and " + vb.dump() + "), and the two cannot be combined");
  }

  static Json union_of(const Json& a, const Json& b) {
    Json out = a.is_array() ? a : Json::array();
    if (b.is_array()) {
      for (const auto& v : b) {
        if (std::find(out.begin(), out.end(), v) == out.end()) out.push_back(v);
      }
    }
    return out;
  }

  std::string path_a_, path_b_;
};

}  // namespace

Result<SchemaJson> merge_schemas(const SchemaJson& a, const SchemaJson& b, const std::string& path_a,
                                 const std::string& path_b) {
  Merger merger(path_a, path_b);
  return merger.merge(a, b);
}

}  // namespace tokenmill::engine
