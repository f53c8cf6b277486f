#include "dataset/json_validator.h"

#include <cmath>
#include <set>

#include "dataset/pattern.h"
#include "dataset/text.h"

namespace tokenmill::dataset {

namespace {

using Json = nlohmann::json;

constexpr int kMaxDepth = 64;  // $ref cycles end here

bool has_type(const Json& value, const std::string& type) {
  if (type == "null") return value.is_null();
  if (type == "boolean") return value.is_boolean();
  if (type == "object") return value.is_object();
  if (type == "array") return value.is_array();
  if (type == "string") return value.is_string();
  if (type == "number") return value.is_number();
  if (type == "integer") {
    if (value.is_number_integer()) return true;
    return value.is_number_float() && std::floor(value.get<double>()) == value.get<double>();
  }
  return false;
}

// Every pattern in the schema, so that create() refuses a bad one up front.
Status check_patterns(const Json& schema) {
  if (schema.is_object()) {
    for (auto it = schema.begin(); it != schema.end(); ++it) {
      if (it.key() == "pattern" && it->is_string()) {
        auto compiled = Pattern::compile(it->get<std::string>());
        if (!compiled.ok()) return compiled.status();
      } else if (Status s = check_patterns(*it); !s.ok()) {
        return s;
      }
    }
  } else if (schema.is_array()) {
    for (const Json& item : schema) {
      if (Status s = check_patterns(item); !s.ok()) return s;
    }
  }
  return Status();
}

}  // namespace

Result<JsonValidator> JsonValidator::create(Json schema) {
  if (!schema.is_object() && !schema.is_boolean()) return invalid_argument("a JSON schema is an object or a boolean");
  if (Status s = check_patterns(schema); !s.ok()) return invalid_argument("schema pattern: " + s.message());
  return JsonValidator(std::move(schema));
}

std::string JsonValidator::validate(const Json& value) const { return check(value, *schema_, "$", 0); }

const Json* JsonValidator::resolve(const std::string& ref) const {
  if (ref == "#") return schema_.get();
  if (!ref.starts_with("#/")) return nullptr;
  try {
    const Json& target = schema_->at(Json::json_pointer(ref.substr(1)));
    return &target;
  } catch (const std::exception&) {
    return nullptr;
  }
}

std::string JsonValidator::check(const Json& value, const Json& schema, const std::string& path, int depth) const {
  if (schema.is_boolean()) return schema.get<bool>() ? "" : path + ": no value is allowed here";
  if (!schema.is_object()) return "";
  if (depth > kMaxDepth) return path + ": the schema nests too deeply (a $ref cycle?)";
  auto fail = [&](const std::string& what) { return path + ": " + what; };

  if (auto ref = schema.find("$ref"); ref != schema.end() && ref->is_string()) {
    const Json* target = resolve(ref->get<std::string>());
    if (target == nullptr) return fail("cannot resolve $ref " + ref->get<std::string>());
    if (std::string e = check(value, *target, path, depth + 1); !e.empty()) return e;
  }
  if (auto type = schema.find("type"); type != schema.end()) {
    bool ok = false;
    if (type->is_string()) ok = has_type(value, type->get<std::string>());
    if (type->is_array()) {
      for (const Json& t : *type) ok = ok || (t.is_string() && has_type(value, t.get<std::string>()));
    }
    if (!ok) return fail("expected " + type->dump() + ", found " + value.type_name());
  }
  if (auto e = schema.find("enum"); e != schema.end() && e->is_array()) {
    bool found = false;
    for (const Json& option : *e) found = found || option == value;
    if (!found) return fail("not one of " + e->dump());
  }
  if (auto c = schema.find("const"); c != schema.end() && *c != value) return fail("must be " + c->dump());

  for (const char* key : {"allOf", "anyOf", "oneOf"}) {
    auto list = schema.find(key);
    if (list == schema.end() || !list->is_array()) continue;
    int passed = 0;
    std::string first_error;
    for (const Json& sub : *list) {
      std::string e = check(value, sub, path, depth + 1);
      if (e.empty()) {
        ++passed;
      } else if (first_error.empty()) {
        first_error = e;
      }
    }
    const std::string k = key;
    if (k == "allOf" && passed != static_cast<int>(list->size())) return first_error;
    if (k == "anyOf" && passed == 0) return fail("matches none of anyOf (" + first_error + ")");
    if (k == "oneOf" && passed != 1) return fail("matches " + std::to_string(passed) + " of oneOf, not exactly one");
  }
  if (auto n = schema.find("not"); n != schema.end() && check(value, *n, path, depth + 1).empty()) {
    return fail("matches the schema under 'not'");
  }
  if (auto condition = schema.find("if"); condition != schema.end()) {
    const bool holds = check(value, *condition, path, depth + 1).empty();
    if (auto branch = schema.find(holds ? "then" : "else"); branch != schema.end()) {
      if (std::string e = check(value, *branch, path, depth + 1); !e.empty()) return e;
    }
  }

  if (value.is_string()) {
    const std::string& s = value.get_ref<const std::string&>();
    const int64_t length = code_points(s);
    if (auto m = schema.find("minLength"); m != schema.end() && m->is_number() && length < m->get<double>()) {
      return fail("shorter than " + m->dump() + " characters");
    }
    if (auto m = schema.find("maxLength"); m != schema.end() && m->is_number() && length > m->get<double>()) {
      return fail("longer than " + m->dump() + " characters");
    }
    if (auto p = schema.find("pattern"); p != schema.end() && p->is_string()) {
      auto pattern = Pattern::compile(p->get<std::string>());
      if (pattern.ok() && !pattern->search(s)) return fail("does not match the pattern " + p->dump());
    }
  }
  if (value.is_number()) {
    const double x = value.get<double>();
    if (auto m = schema.find("minimum"); m != schema.end() && m->is_number() && x < m->get<double>()) {
      return fail("less than the minimum " + m->dump());
    }
    if (auto m = schema.find("maximum"); m != schema.end() && m->is_number() && x > m->get<double>()) {
      return fail("more than the maximum " + m->dump());
    }
    if (auto m = schema.find("exclusiveMinimum"); m != schema.end() && m->is_number() && x <= m->get<double>()) {
      return fail("not more than " + m->dump());
    }
    if (auto m = schema.find("exclusiveMaximum"); m != schema.end() && m->is_number() && x >= m->get<double>()) {
      return fail("not less than " + m->dump());
    }
    if (auto m = schema.find("multipleOf"); m != schema.end() && m->is_number() && m->get<double>() > 0) {
      const double q = x / m->get<double>();
      if (std::fabs(q - std::round(q)) > 1e-9 * std::max(1.0, std::fabs(q))) return fail("not a multiple of " + m->dump());
    }
  }
  if (value.is_array()) {
    const double n = static_cast<double>(value.size());
    if (auto m = schema.find("minItems"); m != schema.end() && m->is_number() && n < m->get<double>()) {
      return fail("fewer than " + m->dump() + " items");
    }
    if (auto m = schema.find("maxItems"); m != schema.end() && m->is_number() && n > m->get<double>()) {
      return fail("more than " + m->dump() + " items");
    }
    if (auto u = schema.find("uniqueItems"); u != schema.end() && *u == true) {
      std::set<std::string> seen;
      for (const Json& item : value) {
        if (!seen.insert(item.dump()).second) return fail("items are not unique");
      }
    }
    if (auto contains = schema.find("contains"); contains != schema.end()) {
      int64_t matching = 0;
      for (const Json& item : value) matching += check(item, *contains, path, depth + 1).empty();
      const auto min = schema.find("minContains"), max = schema.find("maxContains");
      const double least = min != schema.end() && min->is_number() ? min->get<double>() : 1;
      if (matching < least) return fail("fewer than " + std::to_string(static_cast<int64_t>(least)) + " items match 'contains'");
      if (max != schema.end() && max->is_number() && matching > max->get<double>()) {
        return fail("more than " + max->dump() + " items match 'contains'");
      }
    }
    size_t first = 0;
    if (auto prefix = schema.find("prefixItems"); prefix != schema.end() && prefix->is_array()) {
      for (; first < prefix->size() && first < value.size(); ++first) {
        std::string e = check(value[first], (*prefix)[first], path + "[" + std::to_string(first) + "]", depth + 1);
        if (!e.empty()) return e;
      }
    }
    if (auto items = schema.find("items"); items != schema.end() && (items->is_object() || items->is_boolean())) {
      for (size_t i = first; i < value.size(); ++i) {
        std::string e = check(value[i], *items, path + "[" + std::to_string(i) + "]", depth + 1);
        if (!e.empty()) return e;
      }
    }
  }
  if (value.is_object()) {
    const double n = static_cast<double>(value.size());
    if (auto m = schema.find("minProperties"); m != schema.end() && m->is_number() && n < m->get<double>()) {
      return fail("fewer than " + m->dump() + " properties");
    }
    if (auto m = schema.find("maxProperties"); m != schema.end() && m->is_number() && n > m->get<double>()) {
      return fail("more than " + m->dump() + " properties");
    }
    if (auto required = schema.find("required"); required != schema.end() && required->is_array()) {
      for (const Json& key : *required) {
        if (key.is_string() && !value.contains(key.get<std::string>())) return fail("missing " + key.dump());
      }
    }
    if (auto deps = schema.find("dependentRequired"); deps != schema.end() && deps->is_object()) {
      for (auto it = deps->begin(); it != deps->end(); ++it) {
        if (!value.contains(it.key()) || !it->is_array()) continue;
        for (const Json& key : *it) {
          if (key.is_string() && !value.contains(key.get<std::string>())) return fail("missing " + key.dump() + ", which \"" + it.key() + "\" needs");
        }
      }
    }
    if (auto deps = schema.find("dependentSchemas"); deps != schema.end() && deps->is_object()) {
      for (auto it = deps->begin(); it != deps->end(); ++it) {
        if (!value.contains(it.key())) continue;
        if (std::string e = check(value, *it, path, depth + 1); !e.empty()) return e;
      }
    }
    const auto properties = schema.find("properties");
    const auto additional = schema.find("additionalProperties");
    for (auto it = value.begin(); it != value.end(); ++it) {
      const std::string child = path + "." + it.key();
      if (properties != schema.end() && properties->is_object() && properties->contains(it.key())) {
        if (std::string e = check(*it, (*properties)[it.key()], child, depth + 1); !e.empty()) return e;
      } else if (additional != schema.end()) {
        if (std::string e = check(*it, *additional, child, depth + 1); !e.empty()) {
          return additional->is_boolean() ? fail("unexpected property \"" + it.key() + "\"") : e;
        }
      }
    }
  }
  return "";
}

}  // namespace tokenmill::dataset
