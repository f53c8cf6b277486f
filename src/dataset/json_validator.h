// Checks a JSON value against a JSON schema: the keywords that describe data (type, enum,
// const, properties, required, additionalProperties, items, prefixItems, min/maxItems,
// uniqueItems, min/maxLength, pattern, minimum, maximum, exclusiveMinimum/Maximum,
// multipleOf, min/maxProperties, anyOf, oneOf, allOf, not, if/then/else, contains with
// min/maxContains, dependentRequired, dependentSchemas, $ref to "#/..." paths).
// Keywords it does not know are ignored, as JSON Schema says of unknown keywords.
//
// Thread-safety: a JsonValidator is immutable once made; validate() may run on many
// threads at once.
#pragma once

#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "base/status.h"

namespace tokenmill::dataset {

class JsonValidator {
 public:
  // InvalidArgument when the schema is not an object or boolean, or a pattern does not compile.
  static Result<JsonValidator> create(nlohmann::json schema);

  // "" when value is valid; else what is wrong and where ("$.items[2]: expected a string").
  std::string validate(const nlohmann::json& value) const;

 private:
  explicit JsonValidator(nlohmann::json schema) : schema_(std::make_shared<const nlohmann::json>(std::move(schema))) {}
  std::string check(const nlohmann::json& value, const nlohmann::json& schema, const std::string& path,
                    int depth) const;
  const nlohmann::json* resolve(const std::string& ref) const;

  std::shared_ptr<const nlohmann::json> schema_;
};

}  // namespace tokenmill::dataset
