// ToolCallGrammar: a forced call accepts exactly the calls of the given tools with valid
// arguments; in auto mode text is free (and may end) until the trigger, then a call must
// follow, and text is free again after it.
#include "engine/tool_call_grammar.h"

#include <gtest/gtest.h>

#include <string>

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
