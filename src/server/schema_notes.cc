#include "server/schema_notes.h"

#include "base/log.h"
#include "dataset/json_validator.h"
#include "engine/tool_call_grammar.h"

namespace tokenmill::server {

void log_unenforced(const std::vector<engine::JsonSchema::Unenforced>& unenforced, const std::string& where) {
  if (unenforced.empty()) return;
  std::string line = "schema of " + where + ": not enforced while generating:";
  for (const auto& u : unenforced) line += " '" + u.keyword + "' at " + u.path;
  log_info(line);
}

nlohmann::ordered_json unenforced_json(const engine::Request& request) {
  nlohmann::ordered_json out = nlohmann::ordered_json::array();
  if (request.json_schema) {
    for (const auto& u : request.json_schema->unenforced()) out.push_back({{"keyword", u.keyword}, {"path", u.path}});
  }
  if (request.tool_calls) {
    for (const engine::ToolSchema& tool : request.tool_calls->tools) {
      if (!tool.arguments) continue;
      for (const auto& u : tool.arguments->unenforced()) {
        out.push_back({{"keyword", u.keyword}, {"path", u.path}, {"tool", tool.name}});
      }
    }
  }
  return out;
}

nlohmann::ordered_json check_output(const engine::JsonSchema& schema, std::string_view text) {
  const auto value = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (value.is_discarded()) return {{"valid", false}, {"error", "the output is not one whole JSON value"}};
  auto validator = dataset::JsonValidator::create(nlohmann::json::parse(schema.source().dump()));
  if (!validator.ok()) return {{"valid", false}, {"error", validator.status().message()}};
  const std::string error = validator->validate(value);
  if (error.empty()) return {{"valid", true}};
  log_info("a structured output breaks its schema where the grammar could not enforce it: " + error);
  return {{"valid", false}, {"error", error}};
}

}  // namespace tokenmill::server
