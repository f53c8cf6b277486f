// Tool calls read back out of model output, per syntax: valid calls become tool_calls;
// a malformed call, or one naming a tool the request did not give, stays text. The
// request's tools and tool_choice are checked with errors that name the field.
#include "server/tool_calls.h"

#include <gtest/gtest.h>

namespace tokenmill::server {
namespace {

ToolRequest weather_and_time(bool parallel = true) {
  Json body = Json::parse(R"({"tools": [
      {"type": "function", "function": {"name": "get_weather", "description": "Weather in a city",
       "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}},
      {"type": "function", "function": {"name": "get_time"}}]})");
  body["parallel_tool_calls"] = parallel;
  return *read_tool_request(Fields(body));
}

TEST(ToolCalls, SyntaxFromTheTemplate) {
  EXPECT_EQ(tool_syntax_for_template("{{ bos_token }}{% for m in messages %}<start_of_turn>"), ToolSyntax::kBuiltin);
  EXPECT_EQ(tool_syntax_for_template("{% if tools %}<tool_call>{% endif %}"), ToolSyntax::kHermes);
  EXPECT_EQ(tool_syntax_for_template("{% if tools %}<|python_tag|>ipython{% endif %}"), ToolSyntax::kLlama3);
  EXPECT_EQ(tool_syntax_for_template("{% if tools %}[AVAILABLE_TOOLS][TOOL_CALLS]{% endif %}"), ToolSyntax::kMistral);
}

TEST(ToolCalls, HermesAndBuiltinCalls) {
  const ToolRequest tools = weather_and_time();
  for (ToolSyntax syntax : {ToolSyntax::kHermes, ToolSyntax::kBuiltin}) {
    ParsedOutput out = parse_tool_calls(
        "Checking.\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Oslo\"}}\n</tool_call>\n"
        "<tool_call>{\"name\": \"get_time\", \"arguments\": \"{}\"}</tool_call>",
        syntax, tools, false);
    ASSERT_EQ(out.calls.size(), 2u);
    EXPECT_EQ(out.calls[0].name, "get_weather");
    EXPECT_EQ(out.calls[0].arguments, R"({"city":"Oslo"})");
    EXPECT_EQ(out.calls[1].arguments, "{}");  // arguments written as a string are parsed
    EXPECT_EQ(out.content, "Checking.");
  }
  // The model stopped before its closing tag.
  ParsedOutput open = parse_tool_calls("<tool_call>{\"name\": \"get_time\", \"arguments\": {}}", ToolSyntax::kHermes,
                                       tools, false);
  ASSERT_EQ(open.calls.size(), 1u);
}

TEST(ToolCalls, Llama3AndMistralCalls) {
  const ToolRequest tools = weather_and_time();
  ParsedOutput bare = parse_tool_calls(R"({"name": "get_weather", "parameters": {"city": "Rome"}})",
                                       ToolSyntax::kLlama3, tools, false);
  ASSERT_EQ(bare.calls.size(), 1u);
  EXPECT_EQ(bare.calls[0].arguments, R"({"city":"Rome"})");
  ParsedOutput tagged = parse_tool_calls(R"(<|python_tag|>{"name": "get_time", "parameters": {}})",
                                         ToolSyntax::kLlama3, tools, false);
  ASSERT_EQ(tagged.calls.size(), 1u);
  ParsedOutput mistral = parse_tool_calls(
      R"([TOOL_CALLS][{"name": "get_weather", "arguments": {"city": "Lima"}}, {"name": "get_time", "arguments": {}}])",
      ToolSyntax::kMistral, tools, false);
  ASSERT_EQ(mistral.calls.size(), 2u);
  EXPECT_EQ(mistral.calls[1].name, "get_time");
  // Forced: the opener was in the prompt, the output is the rest.
  ParsedOutput forced = parse_tool_calls(R"({"name": "get_weather", "arguments": {"city": "Lima"}}])",
                                         ToolSyntax::kMistral, tools, true);
  ASSERT_EQ(forced.calls.size(), 1u);
}

TEST(ToolCalls, MalformedCallsAndUnknownToolsStayText) {
  const ToolRequest tools = weather_and_time();
  for (const char* text : {"<tool_call>{\"name\": \"get_weather\", \"arguments\": {\"city\": </tool_call>",
                           "<tool_call>{\"name\": \"launch_rockets\", \"arguments\": {}}</tool_call>",
                           "<tool_call>[1, 2]</tool_call>", "Just an answer."}) {
    ParsedOutput out = parse_tool_calls(text, ToolSyntax::kHermes, tools, false);
    EXPECT_TRUE(out.calls.empty()) << text;
    EXPECT_EQ(out.content, text);
  }
  EXPECT_TRUE(parse_tool_calls(R"({"name": "nope", "parameters": {}})", ToolSyntax::kLlama3, tools, false).calls.empty());
}

TEST(ToolCalls, ParallelFalseKeepsTheFirstCall) {
  ParsedOutput out = parse_tool_calls(
      "<tool_call>{\"name\": \"get_time\", \"arguments\": {}}</tool_call><tool_call>{\"name\": \"get_time\", "
      "\"arguments\": {}}</tool_call>",
      ToolSyntax::kHermes, weather_and_time(false), false);
  EXPECT_EQ(out.calls.size(), 1u);
}

void expect_refused(const std::string& body, const std::string& param) {
  try {
    const Json json = Json::parse(body);
    read_tool_request(Fields(json));
    ADD_FAILURE() << "accepted: " << body;
  } catch (const ApiError& e) {
    EXPECT_EQ(e.status, 400) << body;
    EXPECT_EQ(e.param, param) << body << ": " << e.message;
  }
}

TEST(ToolCalls, BadToolRequestsNameTheField) {
  const std::string tool = R"({"type": "function", "function": {"name": "f"}})";
  expect_refused(R"({"tools": [{"type": "retrieval"}]})", "tools[0].type");
  expect_refused(R"({"tools": [{"type": "function", "function": {"name": "has space"}}]})", "tools[0].function.name");
  expect_refused(R"({"tools": [)" + tool + "," + tool + "]}", "tools[1].function.name");
  expect_refused(R"({"tools": [)" + tool + R"(], "tool_choice": {"type": "function", "function": {"name": "g"}}})",
                 "tool_choice");
  expect_refused(R"({"tools": [)" + tool + R"(], "tool_choice": "sometimes"})", "tool_choice");
  expect_refused(R"({"tool_choice": "required"})", "tool_choice");
  expect_refused(R"({"functions": [{"name": "f"}]})", "functions");
}

TEST(ToolCalls, AStrictSchemaWithAnUnenforceableKeywordIsA400NamingIt) {
  const Json body = Json::parse(R"({"tools": [{"type": "function", "function": {"name": "f", "strict": true,
      "parameters": {"type": "object", "properties": {"x": {"type": "array", "uniqueItems": true}}}}}]})");
  const ToolRequest tools = *read_tool_request(Fields(body));
  try {
    tool_call_spec(tools, ToolSyntax::kBuiltin);
    ADD_FAILURE() << "accepted";
  } catch (const ApiError& e) {
    EXPECT_EQ(e.param, "tools[0].function.parameters");
    EXPECT_NE(e.message.find("'uniqueItems' at $.properties.x"), std::string::npos) << e.message;
  }
  // Not strict: the rest is enforced and the keyword is listed.
  Json lenient = body;
  lenient["tools"][0]["function"]["strict"] = false;
  lenient["tools"][0]["function"]["parameters"]["properties"]["y"] = Json::parse(R"({"type": "string", "pattern": "^a+$"})");
  const auto spec = tool_call_spec(*read_tool_request(Fields(lenient)), ToolSyntax::kBuiltin);
  ASSERT_EQ(spec->tools.size(), 1u);
  ASSERT_EQ(spec->tools[0].arguments->unenforced().size(), 1u);
  EXPECT_EQ(spec->tools[0].arguments->unenforced()[0].keyword, "uniqueItems");
  // Tool arguments are objects.
  const Json scalar = Json::parse(R"({"tools": [{"type": "function", "function": {"name": "f",
      "parameters": {"type": "string"}}}]})");
  EXPECT_THROW(tool_call_spec(*read_tool_request(Fields(scalar)), ToolSyntax::kBuiltin), ApiError);
}

TEST(ToolCalls, BuiltinMessagesAlternateAndCarryTheCalls) {
  const ToolRequest tools = weather_and_time();
  const Json messages = Json::parse(R"([
      {"role": "user", "content": "Weather in Oslo and the time?"},
      {"role": "assistant", "content": "", "tool_calls": [
        {"id": "call_1", "type": "function", "function": {"name": "get_weather", "arguments": "{\"city\": \"Oslo\"}"}},
        {"id": "call_2", "type": "function", "function": {"name": "get_time", "arguments": "{}"}}]},
      {"role": "tool", "tool_call_id": "call_1", "content": "12 C"},
      {"role": "tool", "tool_call_id": "call_2", "content": "10:00"}])");
  const Json turns = template_messages(messages, &tools, ToolSyntax::kBuiltin);
  ASSERT_EQ(turns.size(), 4u);
  EXPECT_EQ(turns[0]["role"], "system");
  EXPECT_NE(turns[0]["content"].get<std::string>().find("get_weather"), std::string::npos);
  EXPECT_EQ(turns[2]["role"], "assistant");
  EXPECT_NE(turns[2]["content"].get<std::string>().find(R"({"name":"get_weather","arguments":{"city":"Oslo"}})"),
            std::string::npos);
  EXPECT_EQ(turns[3]["role"], "user");  // both results in one turn
  EXPECT_EQ(turns[3]["content"], "<tool_response>\n12 C\n</tool_response>\n<tool_response>\n10:00\n</tool_response>");
  // For templates with tool support the calls stay structured, arguments as objects.
  const Json hermes = template_messages(messages, &tools, ToolSyntax::kHermes);
  EXPECT_EQ(hermes[1]["tool_calls"][0]["function"]["arguments"]["city"], "Oslo");
  // A tool message must say which call it answers.
  try {
    template_messages(Json::parse(R"([{"role": "tool", "content": "12 C"}])"), &tools, ToolSyntax::kHermes);
    ADD_FAILURE() << "accepted";
  } catch (const ApiError& e) {
    EXPECT_EQ(e.param, "messages[0].tool_call_id");
  }
}

}  // namespace
}  // namespace tokenmill::server
