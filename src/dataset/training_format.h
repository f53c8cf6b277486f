// Training records in the layouts fine-tuning tools read (one JSON object per line):
//   alpaca    {"instruction", "input", "output"} (+ "system" when the prompt had one)
//   sharegpt  {"conversations": [{"from": "system" | "human" | "gpt", "value"}, ...]}
//   messages  {"messages": [{"role", "content"}, ...]} (OpenAI's fine-tuning format)
// With logprobs, each record also carries "logprobs": one list per answer token of
// {"token": "token_id:N", "logprob"} - the layout axolotl's knowledge-distillation
// datasets read (logprobs_field: logprobs). With reasoning, a thinking teacher's
// reasoning goes before the answer as "<think>\nREASONING\n</think>\n\n", the layout
// thinking models are trained on; without, the answer alone.
#pragma once

#include <string>

#include "base/status.h"
#include "dataset/example.h"

namespace tokenmill::dataset {

enum class TrainingFormat { kAlpaca, kShareGpt, kMessages };

Result<TrainingFormat> parse_training_format(const std::string& name);

Json training_record(const Example& example, TrainingFormat format, bool with_logprobs, bool with_reasoning = false);

}  // namespace tokenmill::dataset
