// One teacher answer to one prompt: what `tokenmill distill` reads from batch results or
// stored completions, filters, and writes as a training record.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace tokenmill::dataset {

using Json = nlohmann::json;

struct Example {
  std::string source;   // where it came from (a custom_id or completion id, and the choice)
  Json messages;        // the conversation before the answer: [{"role", "content"}, ...]
  // Set when the prompt came as an instruction (and input), as Alpaca records keep them.
  std::string instruction;
  std::string input;
  std::string answer;
  std::string reasoning;  // a thinking teacher's reasoning (reasoning_content); "" when none
  std::string finish_reason;  // "stop", "length", ...
  // Per answer token, the teacher's top alternatives: [[{"token", "logprob"}, ...], ...];
  // null when the answer came without logprobs.
  Json logprobs;
};

}  // namespace tokenmill::dataset
