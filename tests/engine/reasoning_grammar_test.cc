// ReasoningGrammar: the reasoning span is free text, the request's grammar applies to
// the answer after it, and a budget forces the close tag after that many tokens.
#include "engine/reasoning_grammar.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "engine/json_grammar.h"
#include "engine/json_schema.h"

namespace tokenmill::engine {
namespace {

std::shared_ptr<const ReasoningSpec> spec(bool opened_by_prompt, int32_t budget = -1) {
  auto s = std::make_shared<ReasoningSpec>();
  s->opened_by_prompt = opened_by_prompt;
  s->budget = budget;
  return s;
}

std::unique_ptr<OutputGrammar> json_object() { return std::make_unique<JsonGrammar>(); }

// Feeds the pieces as tokens, each checked with allows() first; the count accepted.
size_t accepted(ReasoningGrammar& g, const std::vector<std::string>& pieces) {
  for (size_t i = 0; i < pieces.size(); ++i) {
    if (!g.allows(pieces[i])) return i;
    g.advance(pieces[i]);
  }
  return pieces.size();
}

TEST(ReasoningGrammar, ReasoningIsFreeAndTheAnswerFollowsTheGrammar) {
  ReasoningGrammar g(spec(true), json_object());
  EXPECT_FALSE(g.accepts_end());
  EXPECT_TRUE(g.allows("not json at all {{{"));
  ASSERT_EQ(accepted(g, {"I should", " answer {\"a\"", ": 1}.\n", "</think>", "\n\n", "{\"a\"", ": 1}"}), 7u);
  EXPECT_TRUE(g.in_answer());
  EXPECT_TRUE(g.complete());
}

TEST(ReasoningGrammar, TheAnswerIsCheckedFromTheByteAfterTheClose) {
  ReasoningGrammar g(spec(true), json_object());
  ASSERT_EQ(accepted(g, {"hmm"}), 1u);
  EXPECT_FALSE(g.allows("</think>oops"));
  EXPECT_TRUE(g.allows("</think>{"));
  EXPECT_TRUE(g.allows("</th"));      // the close split over tokens
  g.advance("</th");
  EXPECT_FALSE(g.allows("ink>x"));
  EXPECT_TRUE(g.allows("ink>\n{\"k\": true}"));
  g.advance("ink>\n{\"k\": true}");
  EXPECT_TRUE(g.complete());
}

TEST(ReasoningGrammar, AModelMayOpenTheSpanOrAnswerAtOnce) {
  ReasoningGrammar opens(spec(false), json_object());
  ASSERT_EQ(accepted(opens, {"\n", "<think>", "free text", "</think>", "[1]"}), 4u);  // JSON mode: an object
  ASSERT_EQ(accepted(opens, {"{}"}), 1u);
  EXPECT_TRUE(opens.complete());

  ReasoningGrammar answers(spec(false), json_object());
  EXPECT_FALSE(answers.allows("<tx"));  // neither the open tag nor JSON
  ASSERT_EQ(accepted(answers, {" ", "{\"x\"", ": 2}"}), 3u);
  EXPECT_TRUE(answers.complete());
}

TEST(ReasoningGrammar, TheBudgetForcesTheCloseOnALineOfItsOwn) {
  ReasoningGrammar g(spec(true, 3), nullptr);
  ASSERT_EQ(accepted(g, {"one", " two", " three"}), 3u);
  EXPECT_FALSE(g.allows(" four"));
  EXPECT_FALSE(g.accepts_end());
  EXPECT_FALSE(g.allows("</think>"));  // the newline comes first
  EXPECT_TRUE(g.allows("\n"));
  EXPECT_TRUE(g.allows("\n</thi"));
  ASSERT_EQ(accepted(g, {"\n</", "think>", "\n\nThe answer"}), 3u);
  EXPECT_TRUE(g.in_answer());
  EXPECT_TRUE(g.accepts_end());
  EXPECT_TRUE(g.allows("anything"));
}

TEST(ReasoningGrammar, ABudgetOfZeroClosesAtOnceAndAnEarlyCloseEndsCounting) {
  ReasoningGrammar zero(spec(true, 0), nullptr);
  EXPECT_FALSE(zero.allows("x"));
  ASSERT_EQ(accepted(zero, {"</think>", "answer"}), 2u);

  ReasoningGrammar early(spec(true, 2), nullptr);
  ASSERT_EQ(accepted(early, {"done</think>", "a", "b", "c"}), 4u);
  EXPECT_TRUE(early.in_answer());

  ReasoningGrammar counted_after_open(spec(false, 1), nullptr);
  ASSERT_EQ(accepted(counted_after_open, {"<think>", "x"}), 2u);
  EXPECT_FALSE(counted_after_open.allows("y"));
}

TEST(ReasoningGrammar, ClonesAreIndependent) {
  ReasoningGrammar g(spec(true), json_object());
  g.advance("thinking</think>{\"a\"");
  std::unique_ptr<OutputGrammar> copy = g.clone();
  copy->advance(": 1}");
  EXPECT_TRUE(copy->complete());
  EXPECT_FALSE(g.complete());
  EXPECT_TRUE(g.allows(": [1]}"));
}

// A close made of special tokens (harmony's) is forced as those tokens, never spelled out
// in plain pieces, and with no gap the answer's text follows it at once.
TEST(ReasoningGrammar, AForcedCloseWritesItsSpecialTokensWhole) {
  auto harmony = std::make_shared<ReasoningSpec>();
  harmony->close = "<|end|><|start|>assistant";
  harmony->close_on_own_line = false;
  harmony->whole_tokens = {"<|end|>", "<|start|>", "<|channel|>"};
  harmony->max_gap = 0;
  harmony->opened_by_prompt = true;
  harmony->budget = 0;
  ReasoningGrammar g(harmony, json_object());
  EXPECT_FALSE(g.allows("<"));
  EXPECT_FALSE(g.allows("<|"));
  EXPECT_FALSE(g.allows("<|end|><|st"));
  EXPECT_TRUE(g.allows("<|end|><|start|>"));
  ASSERT_EQ(accepted(g, {"<|end|>", "<|start|>", "assist", "ant"}), 4u);
  EXPECT_FALSE(g.allows(" "));  // no gap
  EXPECT_TRUE(g.allows("{"));
}

TEST(ReasoningGrammar, WhitespaceAfterTheCloseIsBounded) {
  auto schema = JsonSchema::compile(nlohmann::ordered_json::parse(R"({"type": "integer"})"));
  ASSERT_TRUE(schema.ok());
  ReasoningGrammar g(spec(true), std::make_unique<JsonSchemaGrammar>(*schema));
  g.advance("</think>");
  for (int i = 0; i < kMaxReasoningGap; ++i) {
    ASSERT_TRUE(g.allows("\n"));
    g.advance("\n");
  }
  EXPECT_FALSE(g.in_answer());
  EXPECT_TRUE(g.allows("42"));
}

}  // namespace
}  // namespace tokenmill::engine
