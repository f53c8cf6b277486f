// ReasoningSplitter: a choice's text, in whatever pieces it streams, splits into the same
// reasoning and answer as the whole text; request fields are read or refused by name.
#include "server/reasoning.h"

#include <gtest/gtest.h>

#include <string>

namespace tokenmill::server {
namespace {

engine::ReasoningSpec spec(bool opened_by_prompt) {
  engine::ReasoningSpec s;
  s.opened_by_prompt = opened_by_prompt;
  return s;
}

// The text fed in pieces of `step` bytes.
ReasoningSplitter::Parts in_pieces(const std::string& text, const engine::ReasoningSpec& s, size_t step) {
  ReasoningSplitter splitter(s);
  ReasoningSplitter::Parts all;
  for (size_t at = 0; at < text.size(); at += step) {
    ReasoningSplitter::Parts p = splitter.feed(std::string_view(text).substr(at, step));
    all.reasoning += p.reasoning;
    all.content += p.content;
  }
  ReasoningSplitter::Parts p = splitter.finish();
  all.reasoning += p.reasoning;
  all.content += p.content;
  return all;
}

struct Case {
  bool opened;
  std::string text, reasoning, content;
};

TEST(ReasoningSplitter, EveryPieceSizeGivesTheWholeTextsSplit) {
  const Case cases[] = {
      {true, "\nLet me think.\nTwo steps.\n</think>\n\nThe answer is 4.", "Let me think.\nTwo steps.", "The answer is 4."},
      {false, "<think>\nhmm < no\n</think>\n\nYes.", "hmm < no", "Yes."},
      {false, "  \n<think>a</think>b", "a", "b"},
      {false, "Plain answer, no <think> here.", "", "Plain answer, no <think> here."},
      {false, "<thin air", "", "<thin air"},
      {true, "cut short </thi", "cut short </thi", ""},
      {true, "still thinking when the tokens ran out", "still thinking when the tokens ran out", ""},
      {true, "</think>{\"a\": 1}", "", "{\"a\": 1}"},
      {true, "x</think>   ", "x", ""},
      {false, "", "", ""},
  };
  for (const Case& c : cases) {
    for (size_t step = 1; step <= c.text.size() + 1; ++step) {
      const ReasoningSplitter::Parts parts = in_pieces(c.text, spec(c.opened), step);
      EXPECT_EQ(parts.reasoning, c.reasoning) << c.text << " in pieces of " << step;
      EXPECT_EQ(parts.content, c.content) << c.text << " in pieces of " << step;
    }
  }
}

TEST(ReasoningSplitter, ReleasesTextAsSoonAsItCannotBeATag) {
  ReasoningSplitter splitter(spec(true));
  EXPECT_EQ(splitter.feed("first thought").reasoning, "first thought");
  EXPECT_EQ(splitter.feed(" then </").reasoning, " then");  // "</" may open the close
  const ReasoningSplitter::Parts p = splitter.feed("b> more");
  EXPECT_EQ(p.reasoning, " </b> more");
  EXPECT_EQ(p.content, "");
}

TEST(ReasoningTemplate, TheSpanIsFoundByTheTemplateAndThePrompt) {
  EXPECT_EQ(reasoning_for_template("{{ messages }}"), nullptr);
  auto s = reasoning_for_template("{% if x %}<think>\n{% endif %}");
  ASSERT_NE(s, nullptr);
  EXPECT_TRUE(prompt_opens_reasoning("<|Assistant|><think>\n", *s));
  EXPECT_FALSE(prompt_opens_reasoning("<|im_start|>assistant\n", *s));
  EXPECT_FALSE(prompt_opens_reasoning("<think>\n\n</think>\n\n", *s));
}

TEST(ReasoningFields, OpenAiFieldsAreReadOrRefusedByName) {
  const Json body = Json::parse(
      R"({"reasoning_effort": "low", "thinking_token_budget": 64, "chat_template_kwargs": {"foo": 1}})");
  const ReasoningOptions options = read_openai_reasoning(Fields(body));
  EXPECT_TRUE(options.think);
  EXPECT_TRUE(options.include);
  EXPECT_EQ(options.budget, 64);
  const Json variables = reasoning_template_variables(options);
  EXPECT_EQ(variables["reasoning_effort"], "low");
  EXPECT_EQ(variables["foo"], 1);
  EXPECT_FALSE(variables.contains("enable_thinking"));

  const ReasoningOptions none = read_openai_reasoning(Fields(Json::parse(R"({"reasoning_effort": "none"})")));
  EXPECT_FALSE(none.think);
  EXPECT_EQ(reasoning_template_variables(none)["enable_thinking"], false);
  const ReasoningOptions off =
      read_openai_reasoning(Fields(Json::parse(R"({"chat_template_kwargs": {"enable_thinking": false}})")));
  EXPECT_FALSE(off.include);
  EXPECT_FALSE(read_openai_reasoning(Fields(Json::parse(R"({"include_reasoning": false})"))).include);

  for (const char* bad : {R"({"reasoning_effort": "max"})", R"({"thinking_token_budget": -1})",
                          R"({"chat_template_kwargs": {"messages": []}})", R"({"chat_template_kwargs": 3})"}) {
    EXPECT_THROW(read_openai_reasoning(Fields(Json::parse(bad))), ApiError) << bad;
  }
}

TEST(ReasoningFields, OllamaThinkIsABooleanOrALevel) {
  EXPECT_TRUE(read_ollama_reasoning(Fields(Json::parse("{}"))).include);
  const ReasoningOptions off = read_ollama_reasoning(Fields(Json::parse(R"({"think": false})")));
  EXPECT_FALSE(off.think);
  EXPECT_FALSE(off.include);
  const ReasoningOptions high = read_ollama_reasoning(Fields(Json::parse(R"({"think": "high"})")));
  EXPECT_TRUE(high.think);
  EXPECT_EQ(high.effort, "high");
  EXPECT_THROW(read_ollama_reasoning(Fields(Json::parse(R"({"think": "max"})"))), ApiError);
  EXPECT_THROW(read_ollama_reasoning(Fields(Json::parse(R"({"think": 1})"))), ApiError);
}

}  // namespace
}  // namespace tokenmill::server
