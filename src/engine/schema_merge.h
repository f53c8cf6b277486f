// JSON-level steps before a schema becomes a grammar: `$ref` resolution (JSON pointers
// into the root document) and `allOf`, merged into one schema where its parts are
// compatible (types intersected, bounds tightened, properties united, enums
// intersected), refused naming both paths where they are not (two different patterns or
// formats, types with nothing in common, disjoint enums).
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "base/status.h"

namespace tokenmill::engine {

using SchemaJson = nlohmann::ordered_json;

// The schema a "$ref" names: "#", "#/$defs/NAME", "#/definitions/NAME" or any other JSON
// pointer into root ("~0" / "~1" unescaped, "%25"-style escapes refused).
Result<const SchemaJson*> resolve_ref(const SchemaJson& root, const std::string& ref, const std::string& path);

// One schema equivalent to both a and b (REQUIRES: both objects, neither with allOf or a
// $ref still in it). Errors name path_a and path_b.
Result<SchemaJson> merge_schemas(const SchemaJson& a, const SchemaJson& b, const std::string& path_a,
                                 const std::string& path_b);

}  // namespace tokenmill::engine
