// The harmony renderer and parser against OpenAI's openai-harmony library: the fixtures
// (tests/fixtures/harmony/, written by tools/make_harmony_fixtures.py) hold what it
// renders for 30 chat requests and what it parses from model outputs.
#include "tokenizer/harmony_format.h"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

namespace tokenmill::tokenizer::harmony {
namespace {

using json = nlohmann::ordered_json;

json read_fixture(const std::string& name) {
  std::ifstream in(std::string(TOKENMILL_FIXTURES_DIR) + "/harmony/" + name);
  EXPECT_TRUE(in.good()) << name << " is missing (tools/make_harmony_fixtures.py writes it)";
  std::stringstream text;
  text << in.rdbuf();
  return json::parse(text.str());
}

// An OpenAI chat request's messages and tools as harmony's.
std::vector<Message> messages_of(const json& request) {
  std::vector<Message> out;
  for (const json& m : request["messages"]) {
    Message message;
    message.role = m["role"].get<std::string>();
    if (m.contains("content") && m["content"].is_string()) message.content = m["content"].get<std::string>();
    message.reasoning = m.value("reasoning_content", "");
    for (const json& call : m.value("tool_calls", json::array())) {
      message.tool_calls.push_back({call["function"]["name"].get<std::string>(),
                                    call["function"]["arguments"].get<std::string>()});
    }
    message.tool_name = m.value("name", "");
    out.push_back(std::move(message));
  }
  return out;
}

std::vector<Tool> tools_of(const json& request) {
  std::vector<Tool> out;
  for (const json& t : request.value("tools", json::array())) {
    const json& f = t["function"];
    out.push_back({f["name"].get<std::string>(), f.value("description", ""), f.value("parameters", json())});
  }
  return out;
}

TEST(Harmony, RendersEveryConversationAsOpenAiHarmonyDoes) {
  const json cases = read_fixture("render.json");
  ASSERT_GE(cases.size(), 30u);
  int n_same = 0;
  for (const json& c : cases) {
    RenderOptions options;
    options.reasoning_effort = c["request"].value("reasoning_effort", "medium");
    auto prompt = render_for_completion(messages_of(c["request"]), tools_of(c["request"]), options);
    ASSERT_TRUE(prompt.ok()) << c["name"] << ": " << prompt.status().message();
    EXPECT_EQ(*prompt, c["prompt"].get<std::string>()) << c["name"];
    n_same += *prompt == c["prompt"].get<std::string>();
  }
  std::printf("[ harmony  ] %d of %zu conversations rendered as openai-harmony renders them\n", n_same, cases.size());
}

void expect_messages(const std::vector<ParsedMessage>& got, const json& expected, const std::string& where) {
  ASSERT_EQ(got.size(), expected.size()) << where;
  for (size_t i = 0; i < got.size(); ++i) {
    const json& e = expected[i];
    EXPECT_EQ(got[i].channel, e["channel"].is_null() ? "" : e["channel"].get<std::string>()) << where << " #" << i;
    EXPECT_EQ(got[i].recipient, e["recipient"].is_null() ? "" : e["recipient"].get<std::string>()) << where << " #" << i;
    EXPECT_EQ(got[i].content_type, e["content_type"].is_null() ? "" : e["content_type"].get<std::string>())
        << where << " #" << i;
    EXPECT_EQ(got[i].text, e["text"].get<std::string>()) << where << " #" << i;
  }
}

TEST(Harmony, ParsesEveryCompletionAsOpenAiHarmonyDoes) {
  const json cases = read_fixture("parse.json");
  ASSERT_GE(cases.size(), 30u);
  for (const json& c : cases) {
    const std::string completion = c["completion"].get<std::string>();
    auto whole = parse_completion(completion);
    ASSERT_TRUE(whole.ok()) << c["name"] << ": " << whole.status().message();
    expect_messages(*whole, c["messages"], c["name"].get<std::string>() + " (whole)");
    // Streamed in pieces of every size from 1 byte: the same messages, and the text
    // deltas add up to each message's text.
    for (size_t size : {1, 2, 3, 5, 8, 13}) {
      StreamParser parser;
      std::vector<ParsedMessage> messages;
      std::string streamed;
      for (size_t at = 0; at < completion.size(); at += size) {
        auto update = parser.feed(std::string_view(completion).substr(at, size));
        ASSERT_TRUE(update.ok()) << c["name"] << ": " << update.status().message();
        for (const auto& piece : update->pieces) streamed += piece.text;
        for (ParsedMessage& m : update->ended) messages.push_back(std::move(m));
      }
      auto rest = parser.finish();
      ASSERT_TRUE(rest.ok());
      for (const auto& piece : rest->pieces) streamed += piece.text;
      for (ParsedMessage& m : rest->ended) messages.push_back(std::move(m));
      expect_messages(messages, c["messages"], c["name"].get<std::string>() + " (pieces of " + std::to_string(size) + ")");
      std::string joined;
      for (const json& e : c["messages"]) joined += e["text"].get<std::string>();
      EXPECT_EQ(streamed, joined) << c["name"] << " (pieces of " << size << ")";
    }
  }
}

TEST(Harmony, TextThatIsNotHarmonyIsAClearError) {
  const std::pair<const char*, const char*> cases[] = {
      {"<|channel|>thoughts<|message|>hmm<|end|>", "unknown channel 'thoughts'"},
      {"<|channel|>final<|message|>ok<|end|>stray text", "text after the end of a message"},
      {"<|channel|>final<|message|>ok<|end|><|start|>user<|channel|>final<|message|>x<|end|>",
       "a message from 'user' where only the assistant writes"},
      {"<|message|>no channel<|end|>", "a message without a channel"},
      {"<|channel|>final", "the output ended inside a message header"},
  };
  for (const auto& [text, message] : cases) {
    auto parsed = parse_completion(text);
    ASSERT_FALSE(parsed.ok()) << text;
    EXPECT_NE(parsed.status().message().find(message), std::string::npos) << parsed.status().message();
  }
  // A failed parser stays failed.
  StreamParser parser;
  EXPECT_FALSE(parser.feed("<|channel|>nope<|message|>").ok());
  EXPECT_FALSE(parser.feed("<|end|>").ok());
  EXPECT_FALSE(parser.finish().ok());
}

// Generation stopped by the length limit: the open message comes back unterminated.
TEST(Harmony, AnUnfinishedMessageIsReturnedUnterminated) {
  auto parsed = parse_completion("<|channel|>analysis<|message|>a<|end|><|start|>assistant<|channel|>final<|message|>par");
  ASSERT_TRUE(parsed.ok()) << parsed.status().message();
  ASSERT_EQ(parsed->size(), 2u);
  EXPECT_EQ((*parsed)[0].terminator, kEnd);
  EXPECT_EQ((*parsed)[1].channel, "final");
  EXPECT_EQ((*parsed)[1].text, "par");
  EXPECT_TRUE((*parsed)[1].terminator.empty());
  // Held back as a possible terminator while streaming, released at the end.
  StreamParser parser;
  auto update = parser.feed("<|channel|>final<|message|>x <|en");
  ASSERT_TRUE(update.ok());
  ASSERT_EQ(update->pieces.size(), 1u);
  EXPECT_EQ(update->pieces[0].text, "x ");
  EXPECT_EQ(update->pieces[0].message.channel, "final");
  auto rest = parser.finish();
  ASSERT_TRUE(rest.ok());
  ASSERT_EQ(rest->ended.size(), 1u);
  EXPECT_EQ(rest->ended[0].text, "x <|en");
  ASSERT_EQ(rest->pieces.size(), 1u);
  EXPECT_EQ(rest->pieces[0].text, "<|en");
}

Message said(std::string role) {
  Message m;
  m.role = std::move(role);
  m.content = "x";
  return m;
}

TEST(Harmony, UnknownRolesAndEffortsAreRefused) {
  EXPECT_FALSE(render_for_completion({said("narrator")}, {}, {}).ok());
  RenderOptions options;
  options.reasoning_effort = "extreme";
  EXPECT_FALSE(render_for_completion({said("user")}, {}, options).ok());
  EXPECT_FALSE(render_for_completion({said("tool")}, {}, {}).ok());
}

}  // namespace
}  // namespace tokenmill::tokenizer::harmony
