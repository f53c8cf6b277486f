#include "server/schema_notes.h"

#include "base/log.h"
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

}  // namespace tokenmill::server
