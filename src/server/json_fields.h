// Reading request JSON with errors a client can act on: every reader names the field
// (with its path, "options.temperature"), what it expected and what it found, and throws
// ApiError (400) on a mismatch. Absent and null fields read as "not given".
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "server/api_error.h"

namespace tokenmill::server {

// Objects keep their keys in insertion order, so responses read like the APIs' docs.
using Json = nlohmann::ordered_json;

// Serializes compactly; bytes that are not valid UTF-8 (a token holding half a
// character) become U+FFFD instead of failing.
std::string dump_json(const Json& value);

// Parses a request body that must be a JSON object. Throws ApiError 400 naming the byte
// offset of a syntax error, or saying what was found instead of an object.
Json parse_json_object(const std::string& body);

class Fields {
 public:
  // REQUIRES: object.is_object(). prefix: the path of this object inside the request
  // ("options"), used in error messages.
  explicit Fields(const Json& object, std::string prefix = "") : object_(object), prefix_(std::move(prefix)) {}

  bool has(const char* name) const;
  std::optional<bool> boolean(const char* name) const;
  // An integer in [min, max]; integral floats (3.0) are accepted.
  std::optional<int64_t> integer(const char* name, int64_t min, int64_t max) const;
  // A finite number in [min, max].
  std::optional<double> number(const char* name, double min, double max) const;
  std::optional<std::string> string(const char* name) const;
  // A string, or an array of at most max_items strings (OpenAI's and Ollama's "stop").
  std::vector<std::string> strings(const char* name, size_t max_items) const;
  // nullptr when absent or null; throws when present and not an object / array.
  const Json* object(const char* name) const;
  const Json* array(const char* name) const;

  // The field whatever its type; nullptr when absent or null.
  const Json* raw(const char* name) const { return find(name); }

  // "options.temperature" for name "temperature".
  std::string path(const char* name) const;

 private:
  const Json* find(const char* name) const;  // nullptr when absent or null
  [[noreturn]] void fail(const char* name, const std::string& expected, const Json& found) const;

  const Json& object_;
  std::string prefix_;
};

// "a string", "an integer", "null", ... for error messages.
std::string json_kind(const Json& value);

}  // namespace tokenmill::server
