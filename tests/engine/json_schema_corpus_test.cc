// Every schema of the corpus (tests/fixtures/schema_corpus.jsonl, written by
// tools/make_schema_corpus.py) compiles with nothing left unenforced, and its grammar has
// no dead ends: random walks that pick any allowed byte (out of all 256) never reach a
// state where no byte may follow and the value is not whole. A dead end would leave a
// sampler with no token to choose. (The e2e corpus test validates real generations.)
#include <gtest/gtest.h>

#include <fstream>
#include <random>
#include <string>

#include "engine/json_schema.h"
#include "engine/schema_corpus.h"

namespace tokenmill::engine {
namespace {

using json = nlohmann::ordered_json;

std::vector<json> corpus() { return testing::schema_corpus(); }

TEST(JsonSchemaCorpus, EverySchemaCompilesAndNoWalkReachesADeadEnd) {
  const std::vector<json> entries = corpus();
  ASSERT_GE(entries.size(), 150u);
  std::mt19937 rng(11);
  int n_walks = 0, n_whole = 0;
  for (const json& entry : entries) {
    const std::string name = entry["name"];
    auto compiled = JsonSchema::compile(entry["schema"]);
    ASSERT_TRUE(compiled.ok()) << name << ": " << compiled.status().to_string();
    EXPECT_TRUE((*compiled)->unenforced().empty()) << name;
    for (int walk = 0; walk < 6; ++walk, ++n_walks) {
      JsonSchemaGrammar g(*compiled);
      std::string text;
      // Later walks stop at the first chance to end, so they reach the end of the value.
      const size_t patience = walk < 3 ? 600 : 120;
      while (!g.complete() && !(g.accepts_end() && text.size() > patience)) {
        std::string allowed;
        for (int b = 0; b < 256; ++b) {
          if (g.allows(std::string(1, static_cast<char>(b)))) allowed.push_back(static_cast<char>(b));
        }
        if (allowed.empty()) {
          ASSERT_TRUE(g.accepts_end()) << name << ": dead end after " << json(text).dump(-1, ' ', false, json::error_handler_t::replace);
          break;
        }
        // Prefer the bytes that close things, so walks finish: one in three steps.
        char c = allowed[std::uniform_int_distribution<size_t>(0, allowed.size() - 1)(rng)];
        if (text.size() > patience / 2 && std::uniform_int_distribution<int>(0, 2)(rng) == 0) {
          for (char closing : {'"', '}', ']', ',', '0', 'a'}) {
            if (allowed.find(closing) != std::string::npos) {
              c = closing;
              break;
            }
          }
        }
        g.advance(std::string(1, c));
        text.push_back(c);
        if (text.size() > 4000) break;  // long strings: no dead end so far is what counts
      }
      n_whole += g.accepts_end();
    }
  }
  std::printf("corpus walks: %zu schemas, %d walks, %d reached a whole value\n", entries.size(), n_walks, n_whole);
  EXPECT_GT(n_whole, n_walks / 2);
}

}  // namespace
}  // namespace tokenmill::engine
