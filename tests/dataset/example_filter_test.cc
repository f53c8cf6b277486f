// Each filter of dataset/example_filter.h on examples made to pass or fail it, and the
// order in which they apply.
#include "dataset/example_filter.h"

#include <gtest/gtest.h>

namespace tokenmill::dataset {
namespace {

Example answer(const std::string& text, const std::string& prompt = "q", const std::string& finish = "stop") {
  Example e;
  e.messages = Json::array({{{"role", "user"}, {"content", prompt}}});
  e.answer = text;
  e.finish_reason = finish;
  return e;
}

std::string check(const FilterConfig& config, const Example& e) {
  auto filter = ExampleFilter::create(config);
  EXPECT_TRUE(filter.ok()) << filter.status().message();
  return (*filter)->check(e);
}

TEST(ExampleFilter, TruncatedAnswersAreDroppedUnlessKept) {
  FilterConfig config;
  EXPECT_EQ(check(config, answer("cut", "q", "length")), "truncated");
  EXPECT_EQ(check(config, answer("whole")), "");
  config.keep_truncated = true;
  EXPECT_EQ(check(config, answer("cut", "q", "length")), "");
}

TEST(ExampleFilter, LengthCountsCharactersNotBytes) {
  FilterConfig config;
  config.min_chars = 3;
  config.max_chars = 4;
  EXPECT_EQ(check(config, answer("ab")), "min_length");
  EXPECT_EQ(check(config, answer("äöü")), "");  // 3 characters, 6 bytes
  EXPECT_EQ(check(config, answer("abcde")), "max_length");
}

TEST(ExampleFilter, RequireAndRejectPatterns) {
  FilterConfig config;
  config.require = {"\\d+"};
  config.reject = {"(?i)lorem"};
  EXPECT_EQ(check(config, answer("no digits here")), "require");
  EXPECT_EQ(check(config, answer("42 LOREM ipsum")), "reject");
  EXPECT_EQ(check(config, answer("the answer is 42")), "");
  config.require = {"(unclosed"};
  EXPECT_FALSE(ExampleFilter::create(config).ok());
}

TEST(ExampleFilter, RefusalsAreFoundWhateverTheCaseAndSpacing) {
  FilterConfig config;
  config.refusals = true;
  config.refusal_phrases = {"Not My Department"};
  EXPECT_EQ(check(config, answer("I'm SORRY,   but I can't do that.")), "refusal");
  EXPECT_EQ(check(config, answer("As an AI language model, I think...")), "refusal");
  EXPECT_EQ(check(config, answer("That is not my department.")), "refusal");
  EXPECT_EQ(check(config, answer("Sorry for the wait: here it is.")), "");
  config.refusals = false;
  EXPECT_EQ(check(config, answer("I'm sorry, but no.")), "");
}

TEST(ExampleFilter, RepeatedNgramsAboveTheRatioAreDropped) {
  EXPECT_DOUBLE_EQ(ExampleFilter::repeat_ratio("a b c a b c", 3), 1.0 / 4);  // abc bca cab abc
  EXPECT_DOUBLE_EQ(ExampleFilter::repeat_ratio("one two", 3), 0);
  FilterConfig config;
  config.max_repeat_ratio = 0.3;
  EXPECT_EQ(check(config, answer("go go go go go go go go go go")), "repetition");
  EXPECT_EQ(check(config, answer("every word in this sentence is different from the others")), "");
}

TEST(ExampleFilter, JsonAndSchema) {
  FilterConfig config;
  config.json = true;
  EXPECT_EQ(check(config, answer("not json")), "json");
  EXPECT_EQ(check(config, answer("{\"a\": 1}")), "");
  EXPECT_EQ(check(config, answer("Here:\n```json\n{\"a\": 1}\n```\n")), "");
  EXPECT_EQ(check(config, answer("```json\n{}\n```\n```json\n{}\n```")), "json");  // two blocks: which?
  config.json_schema = Json::parse(R"({"type": "object", "required": ["a"], "properties": {"a": {"type": "integer"}}})");
  EXPECT_EQ(check(config, answer("{\"a\": 1}")), "");
  EXPECT_EQ(check(config, answer("{\"a\": \"1\"}")), "json");
  EXPECT_EQ(check(config, answer("{\"b\": 1}")), "json");
}

TEST(ExampleFilter, ExactDuplicatesOfPromptAndAnswer) {
  FilterConfig config;
  config.dedup = true;
  auto filter = std::move(ExampleFilter::create(config)).value();
  EXPECT_EQ(filter->check(answer("Paris.", "capital?")), "");
  EXPECT_EQ(filter->check(answer("  Paris. ", "capital?")), "duplicate");  // whitespace aside
  EXPECT_EQ(filter->check(answer("Paris.", "another question")), "");
}

TEST(ExampleFilter, NearDuplicatesAcrossTheWholeSet) {
  FilterConfig config;
  config.near_duplicate = 0.6;
  auto filter = std::move(ExampleFilter::create(config)).value();
  const std::string base = "the quick brown fox jumps over the lazy dog near the river bank today";
  EXPECT_EQ(filter->check(answer(base, "a")), "");
  EXPECT_EQ(filter->check(answer(base + " again", "b")), "near_duplicate");
  EXPECT_EQ(filter->check(answer("a completely different answer about baking bread at home", "c")), "");
}

TEST(ExampleFilter, TheFirstFailingFilterIsTheOneCounted) {
  FilterConfig config;
  config.min_chars = 100;
  config.refusals = true;
  EXPECT_EQ(check(config, answer("I'm sorry, but no", "q", "length")), "truncated");
  EXPECT_EQ(check(config, answer("I'm sorry, but no")), "min_length");
}

TEST(ExampleFilter, BadBoundsAreRefused) {
  FilterConfig config;
  config.min_chars = 10;
  config.max_chars = 5;
  EXPECT_FALSE(ExampleFilter::create(config).ok());
  config = {};
  config.near_duplicate = 1.5;
  EXPECT_FALSE(ExampleFilter::create(config).ok());
}

}  // namespace
}  // namespace tokenmill::dataset
