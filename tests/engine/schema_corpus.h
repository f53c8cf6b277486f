// The schema corpus (tests/fixtures/schema_corpus.jsonl, written by
// tools/make_schema_corpus.py), one JSON object per line: {"name", "schema", ...}.
#pragma once

#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace tokenmill::engine::testing {

inline std::vector<nlohmann::ordered_json> schema_corpus() {
  std::ifstream in(std::string(TOKENMILL_FIXTURES_DIR) + "/schema_corpus.jsonl");
  std::vector<nlohmann::ordered_json> out;
  for (std::string line; std::getline(in, line);) {
    if (!line.empty()) out.push_back(nlohmann::ordered_json::parse(line));
  }
  return out;
}

}  // namespace tokenmill::engine::testing
