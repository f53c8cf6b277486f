// ToolCallGrammar: a forced call accepts exactly the calls of the given tools with valid
// arguments; in auto mode text is free (and may end) until the trigger, then a call must
// follow, and text is free again after it.
#include "engine/tool_call_grammar.h"

#include <gtest/gtest.h>

#include <string>
#include <utility>

namespace tokenmill::engine {
namespace {

using json = nlohmann::ordered_json;

std::shared_ptr<const ToolCallSpec> spec(bool forced, std::string key = "arguments") {
  auto s = std::make_shared<ToolCallSpec>();
  auto weather = JsonSchema::compile(json::parse(
      R"({"type": "object", "properties": {"city": {"type": "string"}, "unit": {"enum": ["c", "f"]}},
          "required": ["city", "unit"], "additionalProperties": false})"));
  EXPECT_TRUE(weather.ok());
  s->tools = {{"get_weather", *weather}, {"get_time", nullptr}};
  s->arguments_key = std::move(key);
  s->forced = forced;
  s->trigger = "<tool_call>";
  return s;
}

// The bytes of text accepted one at a time, each checked with allows() first.
size_t accepted_prefix(const std::string& text, ToolCallGrammar& g) {
  for (size_t i = 0; i < text.size(); ++i) {
    if (!g.allows(text.substr(i, 1))) return i;
    g.advance(text.substr(i, 1));
  }
  return text.size();
}

TEST(ToolCallGrammar, ForcedAcceptsOneValidCallAndCompletes) {
  ToolCallGrammar g(spec(true));
  EXPECT_FALSE(g.accepts_end());
  const std::string call = R"({"name": "get_weather", "arguments": {"city": "Oslo", "unit": "c"}})";
  EXPECT_EQ(accepted_prefix(call, g), call.size());
  EXPECT_TRUE(g.complete());
  EXPECT_FALSE(g.allows("\n"));  // nothing may follow a forced call
}

TEST(ToolCallGrammar, ForcedRefusesUnknownToolsAndInvalidArguments) {
  const std::string unknown = R"({"name": "get_wea)" "x";
  ToolCallGrammar a(spec(true));
  EXPECT_EQ(accepted_prefix(unknown, a), unknown.size() - 1);  // no tool name goes on with 'x'
  const std::string bad_unit = R"({"name": "get_weather", "arguments": {"city": "Oslo", "unit": "k)";
  ToolCallGrammar b(spec(true));
  EXPECT_EQ(accepted_prefix(bad_unit, b), bad_unit.size() - 1);
  const std::string prefix_name = R"({"name": "get")";  // a prefix of two names is not a name
  ToolCallGrammar c(spec(true));
  EXPECT_EQ(accepted_prefix(prefix_name, c), prefix_name.size() - 1);
  // Text before the call is not allowed when the call is forced.
  ToolCallGrammar d(spec(true));
  EXPECT_FALSE(d.allows("Sure"));
}

// Harmony's form: a message header that names the function, the arguments after it, and
// nothing else (the model's call token ends the generation).
TEST(ToolCallGrammar, AHeaderFormCallEndsWithItsArguments) {
  auto harmony = std::make_shared<ToolCallSpec>(*spec(true));
  harmony->header = ToolCallSpec::Header{"<|channel|>commentary to=functions.", ' ', "<|constrain|>json<|message|>"};
  ToolCallGrammar g(harmony);
  const std::string call =
      R"(<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>{"city":"Oslo","unit":"f"})";
  EXPECT_EQ(accepted_prefix(call, g), call.size());
  EXPECT_TRUE(g.complete());
  EXPECT_FALSE(g.allows(" "));
  // With the header's special tokens named, each must come whole.
  auto whole = std::make_shared<ToolCallSpec>(*harmony);
  whole->header->whole_tokens = {"<|channel|>", "<|constrain|>", "<|message|>"};
  ToolCallGrammar w(whole);
  EXPECT_FALSE(w.allows("<"));
  EXPECT_TRUE(w.allows("<|channel|>comm"));
  const std::string tokens[] = {"<|channel|>", "commentary to=functions.get_time", " ", "<|constrain|>", "json"};
  for (const std::string& t : tokens) {
    ASSERT_TRUE(w.allows(t)) << t;
    w.advance(t);
  }
  EXPECT_FALSE(w.allows("<|mess"));
  EXPECT_TRUE(w.allows("<|message|>{"));
  // The final channel, an unknown function, a JSON-object call and bad arguments are refused.
  const std::pair<std::string, size_t> refused[] = {
      {"<|channel|>final", 11},
      {"<|channel|>commentary to=functions.get_x", 39},
      {R"({"name")", 0},
      {R"(<|channel|>commentary to=functions.get_time <|constrain|>json<|message|>[)", 72}};
  for (const auto& [bad, accepted] : refused) {
    ToolCallGrammar h(harmony);
    EXPECT_EQ(accepted_prefix(bad, h), accepted) << bad;
  }
  // A tool without a schema takes any object; "get_time" ends at the space, not "get_t".
  ToolCallGrammar t(harmony);
  const std::string any = R"(<|channel|>commentary to=functions.get_time <|constrain|>json<|message|>{"zone": [1, {}]})";
  EXPECT_EQ(accepted_prefix(any, t), any.size());
  EXPECT_TRUE(t.complete());
}

TEST(ToolCallGrammar, ToolsWithoutSchemaTakeAnyObjectUnderTheirKey) {
  ToolCallGrammar g(spec(true, "parameters"));
  const std::string call = R"({"name": "get_time", "parameters": {"zone": ["UTC", 1, null]}})";
  EXPECT_EQ(accepted_prefix(call, g), call.size());
  EXPECT_TRUE(g.complete());
  ToolCallGrammar h(spec(true, "parameters"));
  EXPECT_FALSE(h.allows(R"({"name": "get_time", "arguments")"));
  ToolCallGrammar i(spec(true));
  EXPECT_FALSE(i.allows(R"({"name": "get_time", "arguments": [)"));  // arguments are an object
}

TEST(ToolCallGrammar, AutoIsFreeUntilTheTriggerThenConstrainedThenFreeAgain) {
  ToolCallGrammar g(spec(false));
  EXPECT_TRUE(g.accepts_end());
  EXPECT_TRUE(g.allows("Let me check. {not a call} <tool"));
  g.advance("Let me check. <tool");
  EXPECT_TRUE(g.accepts_end());
  g.advance("_call>");  // the trigger, split over two tokens
  EXPECT_FALSE(g.accepts_end());
  EXPECT_FALSE(g.allows("hello"));
  EXPECT_TRUE(g.allows("\n{\"name\": \"get_time\""));  // a little whitespace, then the call
  const std::string call = "\n{\"name\": \"get_time\", \"arguments\": {}}";
  EXPECT_EQ(accepted_prefix(call, g), call.size());
  EXPECT_FALSE(g.complete());
  EXPECT_TRUE(g.accepts_end());
  EXPECT_TRUE(g.allows("\n</tool_call>\n<tool_call>{\"name\": \"get_weather\""));
  EXPECT_FALSE(g.allows("\n</tool_call>\n<tool_call>{\"name\": \"nope\""));
}

TEST(ToolCallGrammar, AutoWithASingleCallEndsAfterIt) {
  auto single = std::make_shared<ToolCallSpec>(*spec(false));
  single->single_call = true;
  ToolCallGrammar g(single);
  g.advance("Sure. <tool_call>");
  g.advance("{\"name\": \"get_time\", \"arguments\": {}}");
  EXPECT_TRUE(g.complete());
  EXPECT_FALSE(g.accepts_end());  // complete: the engine ends the choice itself
  EXPECT_FALSE(g.allows("\n"));
}

TEST(ToolCallGrammar, ACopyKeepsItsOwnState) {
  ToolCallGrammar g(spec(true));
  g.advance(R"({"name": "get_weather", "arguments": {"city": ")");
  ToolCallGrammar copy = g;
  copy.advance(R"(Bergen", "unit": "f"}})");
  EXPECT_TRUE(copy.complete());
  EXPECT_FALSE(g.complete());
  EXPECT_TRUE(g.allows(R"(Oslo")"));
}

}  // namespace
}  // namespace tokenmill::engine
