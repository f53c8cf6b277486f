// Where examples come from: a teacher's request and its answer (a batch input line and
// its output line, or a stored completion), and the prompt files whose lines become
// teacher requests.
//
// A prompts file has one JSON object per line: {"messages": [...]}, {"prompt": "..."}, or
// {"instruction": "...", "input": "..."}, each optionally with "system".
#pragma once

#include <string>
#include <vector>

#include "base/status.h"
#include "dataset/example.h"

namespace tokenmill::dataset {

struct Prompt {
  Json messages;  // what the teacher is sent
  std::string instruction, input;  // when the line gave them
};

// InvalidArgument naming each bad line (the first 20).
Result<std::vector<Prompt>> read_prompts(const std::string& path);

struct TeacherParams {
  int samples = 1;  // answers per prompt (the request's n)
  int max_tokens = 512;
  double temperature = 0;
  double top_p = 1;
  int top_logprobs = 0;  // > 0: each answer token's top alternatives, named by token id
  int64_t seed = -1;     // < 0: none
};

// The batch line ({custom_id, method, url, body}) that asks the teacher for prompt's answers.
Json teacher_request(const std::string& custom_id, const Prompt& prompt, const TeacherParams& params);

// The examples of one answered request: one per choice of response (a chat.completion
// or a text_completion) to request (its body), numbered source#choice. None when the
// response is not a success.
std::vector<Example> examples_from_exchange(const std::string& source, const Json& request, const Json& response);

}  // namespace tokenmill::dataset
