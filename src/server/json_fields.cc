#include "server/json_fields.h"

#include <cmath>

namespace tokenmill::server {

std::string dump_json(const Json& value) {
  return value.dump(-1, ' ', /*ensure_ascii=*/false, Json::error_handler_t::replace);
}

std::string json_kind(const Json& value) {
  switch (value.type()) {
    case Json::value_t::null: return "null";
    case Json::value_t::boolean: return "a boolean";
    case Json::value_t::string: return "a string";
    case Json::value_t::number_integer:
    case Json::value_t::number_unsigned: return "an integer";
    case Json::value_t::number_float: return "a number";
    case Json::value_t::array: return "an array";
    case Json::value_t::object: return "an object";
    default: return "an unsupported value";
  }
}

Json parse_json_object(const std::string& body) {
  if (body.empty()) throw bad_request("The request body is empty; expected a JSON object");
  Json value;
  try {
    value = Json::parse(body);
  } catch (const Json::parse_error& e) {
    throw bad_request("The request body is not valid JSON: error at byte " + std::to_string(e.byte) + " (" +
                      std::string(e.what()) + ")");
  } catch (const Json::exception& e) {  // a number too large for a double, ...
    throw bad_request("The request body cannot be read as JSON: " + std::string(e.what()));
  }
  if (!value.is_object()) throw bad_request("The request body must be a JSON object, found " + json_kind(value));
  return value;
}

std::string Fields::path(const char* name) const { return prefix_.empty() ? std::string(name) : prefix_ + "." + name; }

const Json* Fields::find(const char* name) const {
  auto it = object_.find(name);
  if (it == object_.end() || it->is_null()) return nullptr;
  return &*it;
}

void Fields::fail(const char* name, const std::string& expected, const Json& found) const {
  std::string shown = dump_json(found);
  if (shown.size() > 60) shown = shown.substr(0, 57) + "...";
  throw bad_request("'" + path(name) + "' must be " + expected + ", found " + json_kind(found) + " " + shown,
                    path(name));
}

bool Fields::has(const char* name) const { return find(name) != nullptr; }

std::optional<bool> Fields::boolean(const char* name) const {
  const Json* v = find(name);
  if (!v) return std::nullopt;
  if (!v->is_boolean()) fail(name, "a boolean", *v);
  return v->get<bool>();
}

std::optional<int64_t> Fields::integer(const char* name, int64_t min, int64_t max) const {
  const Json* v = find(name);
  if (!v) return std::nullopt;
  const std::string range = "an integer in [" + std::to_string(min) + ", " + std::to_string(max) + "]";
  int64_t value = 0;
  if (v->is_number_integer()) {
    value = v->get<int64_t>();
    if (v->is_number_unsigned() && v->get<uint64_t>() > static_cast<uint64_t>(INT64_MAX)) fail(name, range, *v);
  } else if (v->is_number_float()) {
    const double d = v->get<double>();
    if (!std::isfinite(d) || d != std::floor(d) || d < -9.2e18 || d > 9.2e18) fail(name, range, *v);
    value = static_cast<int64_t>(d);
  } else {
    fail(name, range, *v);
  }
  if (value < min || value > max) fail(name, range, *v);
  return value;
}

std::optional<double> Fields::number(const char* name, double min, double max) const {
  const Json* v = find(name);
  if (!v) return std::nullopt;
  char range[96];
  std::snprintf(range, sizeof range, "a number in [%g, %g]", min, max);
  if (!v->is_number()) fail(name, range, *v);
  const double d = v->get<double>();
  if (!std::isfinite(d) || d < min || d > max) fail(name, range, *v);
  return d;
}

std::optional<std::string> Fields::string(const char* name) const {
  const Json* v = find(name);
  if (!v) return std::nullopt;
  if (!v->is_string()) fail(name, "a string", *v);
  return v->get<std::string>();
}

std::vector<std::string> Fields::strings(const char* name, size_t max_items) const {
  const Json* v = find(name);
  if (!v) return {};
  const std::string expected = "a string or an array of at most " + std::to_string(max_items) + " strings";
  if (v->is_string()) return {v->get<std::string>()};
  if (!v->is_array() || v->size() > max_items) fail(name, expected, *v);
  std::vector<std::string> out;
  for (const Json& item : *v) {
    if (!item.is_string()) fail(name, expected, *v);
    out.push_back(item.get<std::string>());
  }
  return out;
}

const Json* Fields::object(const char* name) const {
  const Json* v = find(name);
  if (v && !v->is_object()) fail(name, "an object", *v);
  return v;
}

const Json* Fields::array(const char* name) const {
  const Json* v = find(name);
  if (v && !v->is_array()) fail(name, "an array", *v);
  return v;
}

}  // namespace tokenmill::server
