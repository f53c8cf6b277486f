#include "dataset/training_format.h"

namespace tokenmill::dataset {

namespace {

std::string text_of(const Json& content) {
  if (content.is_string()) return content.get<std::string>();
  std::string out;  // a list of parts: their text
  if (content.is_array()) {
    for (const Json& part : content) {
      if (part.is_object() && part.value("type", "") == "text") out += part.value("text", "");
    }
  }
  return out;
}

}  // namespace

Result<TrainingFormat> parse_training_format(const std::string& name) {
  if (name == "alpaca") return TrainingFormat::kAlpaca;
  if (name == "sharegpt") return TrainingFormat::kShareGpt;
  if (name == "messages" || name == "openai") return TrainingFormat::kMessages;
  return invalid_argument("unknown format '" + name + "': alpaca, sharegpt or messages");
}

Json training_record(const Example& e, TrainingFormat format, bool with_logprobs, bool with_reasoning) {
  const std::string answer =
      with_reasoning && !e.reasoning.empty() ? "<think>\n" + e.reasoning + "\n</think>\n\n" + e.answer : e.answer;
  Json record;
  switch (format) {
    case TrainingFormat::kAlpaca: {
      std::string system, instruction = e.instruction;
      for (const Json& m : e.messages) {
        const std::string role = m.value("role", "");
        if (role == "system" || role == "developer") system = text_of(m.value("content", Json()));
        if (e.instruction.empty() && role == "user") instruction = text_of(m.value("content", Json()));
      }
      record = {{"instruction", instruction}, {"input", e.input}, {"output", answer}};
      if (!system.empty()) record["system"] = system;
      break;
    }
    case TrainingFormat::kShareGpt: {
      Json turns = Json::array();
      for (const Json& m : e.messages) {
        const std::string role = m.value("role", "");
        const std::string from = role == "assistant" ? "gpt" : role == "user" ? "human" : role == "developer" ? "system" : role;
        turns.push_back({{"from", from}, {"value", text_of(m.value("content", Json()))}});
      }
      turns.push_back({{"from", "gpt"}, {"value", answer}});
      record = {{"conversations", std::move(turns)}};
      break;
    }
    case TrainingFormat::kMessages: {
      Json messages = Json::array();
      for (const Json& m : e.messages) {
        messages.push_back({{"role", m.value("role", "user")}, {"content", text_of(m.value("content", Json()))}});
      }
      messages.push_back({{"role", "assistant"}, {"content", answer}});
      record = {{"messages", std::move(messages)}};
      break;
    }
  }
  if (with_logprobs) record["logprobs"] = e.logprobs.is_array() ? e.logprobs : Json::array();
  return record;
}

}  // namespace tokenmill::dataset
