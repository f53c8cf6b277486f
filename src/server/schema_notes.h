// What a request's output grammars leave unenforced (engine/json_schema.h: keywords of a
// schema that is not strict): a log line when the schema is compiled, and the list that
// the response carries as {"tokenmill": {"unenforced": [...]}}.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/json_schema.h"
#include "engine/request.h"

namespace tokenmill::server {

// where: what the schema came from ("response_format", "tool 'NAME'").
void log_unenforced(const std::vector<engine::JsonSchema::Unenforced>& unenforced, const std::string& where);

// [{"keyword", "path"[, "tool"]}, ...] over the request's schema and its tools' schemas;
// empty when everything is enforced.
nlohmann::ordered_json unenforced_json(const engine::Request& request);

// A finished output checked against the whole schema (what the grammar enforced and what
// it could not): {"valid": true} or {"valid": false, "error": "$.tags: items are not unique"}.
nlohmann::ordered_json check_output(const engine::JsonSchema& schema, std::string_view text);

}  // namespace tokenmill::server
