// A harmony model's chat through the routes: requests rendered as openai-harmony renders
// them (tests/fixtures/harmony/render.json), and the model's channels split into
// reasoning, content and tool calls in whatever pieces the text streams.
#include "server/harmony_chat.h"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "server/api_error.h"
#include "server/tool_calls.h"

namespace tokenmill::server {
namespace {

Json read_fixture(const std::string& name) {
  std::ifstream in(std::string(TOKENMILL_FIXTURES_DIR) + "/harmony/" + name);
  std::stringstream text;
  text << in.rdbuf();
  return Json::parse(text.str());
}

TEST(HarmonyChat, RequestsRenderAsOpenAiHarmonyRendersThem) {
  int n = 0;
  for (const Json& c : read_fixture("render.json")) {
    const Json& request = c["request"];
    const std::string text = harmony_chat_text(request["messages"], request.value("tools", Json()),
                                               request.value("reasoning_effort", ""), "messages");
    EXPECT_EQ(text, c["prompt"].get<std::string>()) << c["name"];
    ++n;
  }
  EXPECT_GE(n, 30);
}

// Ollama's shape: tool calls with object arguments and no ids, tool results naming
// nothing, the assistant's thinking.
TEST(HarmonyChat, OllamaMessagesRenderTheSameConversation) {
  const Json openai = Json::parse(R"([
    {"role": "user", "content": "Weather?"},
    {"role": "assistant", "content": "", "reasoning_content": "Need it.",
     "tool_calls": [{"id": "c1", "function": {"name": "get_current_weather", "arguments": "{\"location\":\"Oslo\"}"}}]},
    {"role": "tool", "tool_call_id": "c1", "content": "cold"}])");
  const Json ollama = Json::parse(R"([
    {"role": "user", "content": "Weather?"},
    {"role": "assistant", "content": "", "thinking": "Need it.",
     "tool_calls": [{"function": {"name": "get_current_weather", "arguments": {"location": "Oslo"}}}]},
    {"role": "tool", "content": "cold"}])");
  const std::string a = harmony_chat_text(openai, Json(), "high", "messages");
  EXPECT_EQ(a, harmony_chat_text(ollama, Json(), "high", "messages"));
  EXPECT_NE(a.find("<|start|>functions.get_current_weather to=assistant<|channel|>commentary<|message|>cold"),
            std::string::npos)
      << a;
  EXPECT_NE(a.find("Reasoning: high"), std::string::npos);
  EXPECT_NE(harmony_chat_text(openai, Json(), "none", "messages").find("Reasoning: low"), std::string::npos);
}

TEST(HarmonyChat, AToolResultNamingNoCallIsA400) {
  const Json messages = Json::parse(R"([{"role": "user", "content": "x"}, {"role": "tool", "content": "y"}])");
  try {
    harmony_chat_text(messages, Json(), "", "messages");
    FAIL() << "expected a 400";
  } catch (const ApiError& e) {
    EXPECT_EQ(e.status, 400);
    EXPECT_NE(e.message.find("names no function"), std::string::npos) << e.message;
  }
}

OutputSplitter::Parts split_in_pieces(const std::string& text, size_t step) {
  HarmonySplitter splitter;
  OutputSplitter::Parts all;
  for (size_t at = 0; at < text.size(); at += step) {
    OutputSplitter::Parts p = splitter.feed(std::string_view(text).substr(at, step));
    all.reasoning += p.reasoning;
    all.content += p.content;
  }
  OutputSplitter::Parts p = splitter.finish();
  all.reasoning += p.reasoning;
  all.content += p.content;
  return all;
}

// The engine's text: <|return|> and <|call|> end the generation and are not in it.
TEST(HarmonySplitter, ChannelsBecomeReasoningContentAndToolCallsInAnyPieces) {
  struct Case {
    std::string text, reasoning, content;
  };
  const Case cases[] = {
      {"<|channel|>analysis<|message|>User asks 2+2.<|end|><|start|>assistant<|channel|>final<|message|>4",
       "User asks 2+2.", "4"},
      {"<|channel|>final<|message|>Just the answer.", "", "Just the answer."},
      {"<|channel|>analysis<|message|>One.<|end|><|start|>assistant<|channel|>analysis<|message|> Two.<|end|>"
       "<|start|>assistant<|channel|>final<|message|>Done <b>bold</b> a<|e",
       "One. Two.", "Done <b>bold</b> a<|e"},
      {"<|channel|>analysis<|message|>Need weather.<|end|><|start|>assistant<|channel|>commentary "
       "to=functions.get_current_weather <|constrain|>json<|message|>{\"location\":\"Tokyo\"}",
       "Need weather.", "<tool_call>\n{\"name\":\"get_current_weather\",\"arguments\":{\"location\":\"Tokyo\"}}\n</tool_call>"},
      {"<|channel|>commentary<|message|>Checking.<|end|><|start|>assistant to=functions.get_location"
       "<|channel|>commentary json<|message|>{}",
       "", "Checking.<tool_call>\n{\"name\":\"get_location\",\"arguments\":{}}\n</tool_call>"},
      // Not harmony: nothing is lost, all of it is content.
      {"plain words, no channels", "", "plain words, no channels"},
  };
  for (const Case& c : cases) {
    for (size_t step : {1, 2, 3, 7, 1000}) {
      const OutputSplitter::Parts parts = split_in_pieces(c.text, step);
      EXPECT_EQ(parts.reasoning, c.reasoning) << c.text << " in pieces of " << step;
      EXPECT_EQ(parts.content, c.content) << c.text << " in pieces of " << step;
    }
  }
}

// The calls the splitter hands on are what the routes' tool-call reading takes apart.
TEST(HarmonySplitter, ItsToolCallsParseAsTheRequestsTools) {
  const Json body = Json::parse(R"({"tools": [{"type": "function", "function": {"name": "get_current_weather",
      "parameters": {"type": "object", "properties": {"location": {"type": "string"}}}}}]})");
  const ToolRequest tools = *read_tool_request(Fields(body));
  const OutputSplitter::Parts parts = split_in_pieces(
      "<|channel|>commentary<|message|>One moment.<|end|><|start|>assistant<|channel|>commentary "
      "to=functions.get_current_weather <|constrain|>json<|message|>{\"location\": \"Paris\"}",
      5);
  const ParsedOutput parsed = parse_tool_calls(parts.content, ToolSyntax::kHarmony, tools, /*forced=*/false);
  ASSERT_EQ(parsed.calls.size(), 1u) << parts.content;
  EXPECT_EQ(parsed.calls[0].name, "get_current_weather");
  EXPECT_EQ(parsed.calls[0].arguments, "{\"location\":\"Paris\"}");
  EXPECT_EQ(parsed.content, "One moment.");
}

}  // namespace
}  // namespace tokenmill::server
