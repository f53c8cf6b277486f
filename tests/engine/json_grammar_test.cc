// JsonGrammar: valid JSON objects are accepted byte by byte and in any split, complete
// exactly when the top-level object closes; anything else is refused at the first byte
// that makes it invalid.
#include "engine/json_grammar.h"

#include <gtest/gtest.h>

#include <random>
#include <string>

#include <nlohmann/json.hpp>

namespace tokenmill::engine {
namespace {

// Feeds text one byte at a time; returns the number of bytes accepted.
size_t accepted_prefix(const std::string& text, JsonGrammar& g) {
  for (size_t i = 0; i < text.size(); ++i) {
    if (!g.allows(text.substr(i, 1))) return i;
    g.advance(text.substr(i, 1));
  }
  return text.size();
}

TEST(JsonGrammar, AcceptsObjectsAndCompletesAtTheClosingBrace) {
  const char* valid[] = {
      "{}",
      "{\"a\": 1}",
      "{ \"name\" : \"Ada\", \"age\": 36, \"tags\": [\"x\", \"y\"], \"ok\": true, \"none\": null }",
      "{\"n\": [-0, 0.5, -12.25e+3, 7E-2, 1e9], \"nested\": {\"deep\": [[{}], []]}}",
      "{\"esc\": \"quote \\\" backslash \\\\ slash \\/ \\b\\f\\n\\r\\t \\u00e9\\u4E2D\"}",
      "{\"utf8\": \"caf\xc3\xa9 \xe4\xb8\xad\"}",
      "{\"pair\": \"\\ud83d\\uDE00 \\u00e9\"}",
      "{\n  \"a\": false\n}",
  };
  for (const char* text : valid) {
    JsonGrammar g;
    const std::string s(text);
    EXPECT_EQ(accepted_prefix(s, g), s.size()) << s;
    EXPECT_TRUE(g.complete()) << s;
    EXPECT_FALSE(g.allows(" ")) << "nothing may follow the object: " << s;
  }
}

TEST(JsonGrammar, RefusesInvalidTextAtTheFirstBadByte) {
  struct Case {
    const char* text;
    size_t accepted;  // bytes accepted before the bad one
  };
  const Case cases[] = {
      {"[1, 2]", 0},              // the top level must be an object
      {" {}", 0},                 // starting with whitespace
      {"{a: 1}", 1},              // unquoted key
      {"{\"a\" 1}", 5},           // missing colon
      {"{\"a\": 01}", 7},         // leading zero
      {"{\"a\": 1.}", 8},         // fraction without digits
      {"{\"a\": tru}", 9},        // broken literal
      {"{\"a\": 1,}", 8},         // trailing comma
      {"{\"a\": [1 2]}", 9},      // missing comma
      {"{\"a\": \"x\ny\"}", 8},   // raw newline in a string
      {"{\"a\": \"\\q\"}", 8},    // bad escape
      {"{\"a\": \"\\u12G4\"}", 11},  // bad hex digit
      {"{\"a\": 1]", 7},          // mismatched close
      {"{\"a\": \"\\udE00\"}", 10},   // a lone low surrogate: refused at its second digit
      {"{\"a\": \"\\ud83dx\"}", 13},  // a high surrogate not followed by \u
      {"{\"a\": \"\\ud83d\\u0041\"}", 15},  // ... nor by a low one
      // Numbers stay finite doubles: at most 20 integer, 40 fraction, 2 exponent digits.
      {"{\"a\": -123456789012345678901}", 27},
      {"{\"a\": 1.12345678901234567890123456789012345678901}", 48},
      {"{\"a\": 1e+100}", 11},
  };
  for (const Case& c : cases) {
    JsonGrammar g;
    EXPECT_EQ(accepted_prefix(c.text, g), c.accepted) << c.text;
    EXPECT_FALSE(g.complete()) << c.text;
  }
  JsonGrammar widest;
  EXPECT_EQ(accepted_prefix("{\"a\": -12345678901234567890.5e-99}", widest), 34u);
  EXPECT_TRUE(widest.complete());
  JsonGrammar done;
  EXPECT_EQ(accepted_prefix("{}}", done), 2u);  // nothing after the completed object
  EXPECT_TRUE(done.complete());
}

TEST(JsonGrammar, MultiByteStepsEqualByteSteps) {
  const std::string text = "{\"key\": [1.5e3, \"v\\u0041l\", {\"x\": null}], \"b\": true}";
  for (size_t cut = 1; cut < text.size(); ++cut) {
    JsonGrammar g;
    ASSERT_TRUE(g.allows(text.substr(0, cut))) << cut;
    g.advance(text.substr(0, cut));
    ASSERT_TRUE(g.allows(text.substr(cut))) << cut;
    g.advance(text.substr(cut));
    EXPECT_TRUE(g.complete()) << cut;
  }
  JsonGrammar g;
  EXPECT_FALSE(g.allows("{\"a\": 1} "));  // a piece running past the end is refused whole
}

TEST(JsonGrammar, LimitsWhitespaceRunsAndDepth) {
  JsonGrammar g;
  g.advance("{");
  EXPECT_TRUE(g.allows(std::string(JsonGrammar::kMaxWhitespaceRun, '\n')));
  EXPECT_FALSE(g.allows(std::string(JsonGrammar::kMaxWhitespaceRun + 1, '\n')));
  JsonGrammar deep;
  deep.advance("{\"a\":");
  std::string nest(JsonGrammar::kMaxDepth - 1, '[');
  EXPECT_TRUE(deep.allows(nest));
  EXPECT_FALSE(deep.allows(nest + "["));
}

// Random walks: at every step a random byte among those the grammar allows. Every walk
// that completes parses as one JSON object.
TEST(JsonGrammar, RandomWalksGiveJsonObjects) {
  const std::string alphabet = "{}[]\":,-+.eE0123456789 \n\tabcdefnlrstu\\/#";
  std::mt19937 rng(23);
  int n_complete = 0;
  for (int walk = 0; walk < 300; ++walk) {
    JsonGrammar g;
    std::string text;
    while (!g.complete() && text.size() < 300) {
      std::string allowed;
      for (char c : alphabet) {
        if (g.allows(std::string(1, c))) allowed.push_back(c);
      }
      ASSERT_FALSE(allowed.empty()) << "stuck after: " << nlohmann::json(text).dump();
      const char c = allowed[std::uniform_int_distribution<size_t>(0, allowed.size() - 1)(rng)];
      g.advance(std::string(1, c));
      text.push_back(c);
    }
    if (!g.complete()) continue;
    ++n_complete;
    try {
      EXPECT_TRUE(nlohmann::json::parse(text).is_object()) << nlohmann::json(text).dump();
    } catch (const nlohmann::json::out_of_range&) {
      // valid JSON with a number beyond double's range: nlohmann refuses it
    } catch (const nlohmann::json::exception& e) {
      ADD_FAILURE() << e.what() << ": " << nlohmann::json(text).dump();
    }
  }
  std::printf("random walks: %d of 300 completed\n", n_complete);
  EXPECT_GE(n_complete, 50);
}

}  // namespace
}  // namespace tokenmill::engine
