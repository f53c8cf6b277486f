#include "dataset/training_format.h"

#include <gtest/gtest.h>

#include "dataset/exchanges.h"

namespace tokenmill::dataset {
namespace {

Example conversation() {
  Example e;
  e.messages = Json::parse(R"([{"role": "system", "content": "Be brief."},
                               {"role": "user", "content": [{"type": "text", "text": "Capital of "},
                                                            {"type": "text", "text": "France?"}]}])");
  e.answer = "Paris.";
  e.logprobs = Json::parse(R"([[{"token": "token_id:5", "logprob": -0.1}]])");
  return e;
}

TEST(TrainingFormat, EachLayout) {
  const Example e = conversation();
  EXPECT_EQ(training_record(e, TrainingFormat::kAlpaca, false),
            Json::parse(R"({"instruction": "Capital of France?", "input": "", "output": "Paris.", "system": "Be brief."})"));
  EXPECT_EQ(training_record(e, TrainingFormat::kShareGpt, false),
            Json::parse(R"({"conversations": [{"from": "system", "value": "Be brief."},
                                              {"from": "human", "value": "Capital of France?"},
                                              {"from": "gpt", "value": "Paris."}]})"));
  EXPECT_EQ(training_record(e, TrainingFormat::kMessages, true),
            Json::parse(R"({"messages": [{"role": "system", "content": "Be brief."},
                                         {"role": "user", "content": "Capital of France?"},
                                         {"role": "assistant", "content": "Paris."}],
                            "logprobs": [[{"token": "token_id:5", "logprob": -0.1}]]})"));
  EXPECT_FALSE(parse_training_format("csv").ok());
}

TEST(Exchanges, ChoicesOfChatAndCompletionAnswers) {
  const Json chat_request = Json::parse(R"({"messages": [{"role": "user", "content": "hi"}]})");
  const Json chat_response = Json::parse(R"({"choices": [
      {"index": 0, "message": {"role": "assistant", "content": "hello"}, "finish_reason": "stop",
       "logprobs": {"content": [{"token": "token_id:7", "logprob": -0.5,
                                 "top_logprobs": [{"token": "token_id:7", "logprob": -0.5},
                                                  {"token": "token_id:9", "logprob": -1.5}]}]}},
      {"index": 1, "message": {"role": "assistant", "content": null, "tool_calls": []}, "finish_reason": "tool_calls"}]})");
  const std::vector<Example> chat = examples_from_exchange("req-1", chat_request, chat_response);
  ASSERT_EQ(chat.size(), 1u);  // the tool call is no answer to train on
  EXPECT_EQ(chat[0].source, "req-1#0");
  EXPECT_EQ(chat[0].answer, "hello");
  EXPECT_EQ(chat[0].logprobs, Json::parse(R"([[{"token": "token_id:7", "logprob": -0.5},
                                              {"token": "token_id:9", "logprob": -1.5}]])"));

  const Json completion = Json::parse(R"({"choices": [{"index": 0, "text": " blue", "finish_reason": "length",
      "logprobs": {"tokens": [" blue"], "token_logprobs": [-0.2], "top_logprobs": [{" blue": -0.2, " red": -2.0}]}}]})");
  const std::vector<Example> text = examples_from_exchange("c", Json::parse(R"({"prompt": "The sky is"})"), completion);
  ASSERT_EQ(text.size(), 1u);
  EXPECT_EQ(text[0].messages, Json::parse(R"([{"role": "user", "content": "The sky is"}])"));
  EXPECT_EQ(text[0].finish_reason, "length");
  EXPECT_EQ(text[0].logprobs[0][1], Json::parse(R"({"token": " red", "logprob": -2.0})"));
  EXPECT_TRUE(examples_from_exchange("e", chat_request, Json::parse(R"({"error": {}})")).empty());
}

TEST(Exchanges, AThinkingTeachersReasoningIsKeptOnlyWhenAsked) {
  const Json request = Json::parse(R"({"messages": [{"role": "user", "content": "2+2?"}]})");
  const Json response = Json::parse(R"({"choices": [{"index": 0, "finish_reason": "stop",
      "message": {"role": "assistant", "content": "4", "reasoning_content": "Two and two."}}]})");
  const std::vector<Example> examples = examples_from_exchange("r", request, response);
  ASSERT_EQ(examples.size(), 1u);
  EXPECT_EQ(examples[0].answer, "4");
  EXPECT_EQ(examples[0].reasoning, "Two and two.");
  EXPECT_EQ(training_record(examples[0], TrainingFormat::kMessages, false)["messages"][1]["content"], "4");
  EXPECT_EQ(training_record(examples[0], TrainingFormat::kMessages, false, /*with_reasoning=*/true)["messages"][1]["content"],
            "<think>\nTwo and two.\n</think>\n\n4");
  EXPECT_EQ(training_record(examples[0], TrainingFormat::kAlpaca, false, true)["output"],
            "<think>\nTwo and two.\n</think>\n\n4");
}

TEST(Exchanges, TeacherRequestsAskForTokenIdsWithLogprobs) {
  Prompt p;
  p.messages = Json::parse(R"([{"role": "user", "content": "hi"}])");
  TeacherParams params;
  params.samples = 3;
  params.top_logprobs = 5;
  const Json line = teacher_request("p1", p, params);
  EXPECT_EQ(line["url"], "/v1/chat/completions");
  EXPECT_EQ(line["body"]["n"], 3);
  EXPECT_EQ(line["body"]["top_logprobs"], 5);
  EXPECT_EQ(line["body"]["return_tokens_as_token_ids"], true);
  EXPECT_FALSE(teacher_request("p1", p, TeacherParams{})["body"].contains("logprobs"));
}

}  // namespace
}  // namespace tokenmill::dataset
