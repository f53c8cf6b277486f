// What a client asks the engine for, and what comes back, in token space. The engine
// never sees JSON or chat messages: the server turns those into a Request.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/status.h"
#include "engine/sampler.h"
#include "engine/sampling_params.h"

namespace tokenmill::engine {

class JsonSchema;     // engine/json_schema.h
struct ToolCallSpec;  // engine/tool_call_grammar.h
struct ReasoningSpec;  // engine/reasoning_grammar.h

// Interactive requests are scheduled first; batch requests (the Batches API) fill what
// capacity they leave, and are preempted first (engine/scheduler.h).
enum class Priority { kInteractive, kBatch };

struct Request {
  std::string id;                      // for logs and metrics
  Priority priority = Priority::kInteractive;
  std::vector<int32_t> prompt;         // token ids, BOS included if wanted
  SamplingParams sampling;
  int32_t max_tokens = 256;            // per choice
  int32_t n = 1;                       // independent choices; they share the prompt's KV blocks
  std::vector<std::string> stop;       // stop strings; never part of the output
  std::vector<int32_t> stop_token_ids; // extra tokens that end a choice
  bool ignore_eos = false;             // keep going past end-of-generation tokens
  // Also the log-probabilities of prompt tokens 1 .. n - 1 (each given the ones before it),
  // with sampling.top_logprobs alternatives: OpenAI's echo + logprobs, what evaluation
  // harnesses score texts with. Such a prompt is computed whole (no cached prefix).
  bool prompt_logprobs = false;
  // JSON mode: every choice is one JSON object (engine/json_grammar.h); it ends, with
  // finish reason stop, when the object closes.
  bool json_object = false;
  // Structured output: every choice is one JSON text valid against this schema
  // (engine/json_schema.h); it ends, with finish reason stop, when the value closes.
  // Takes the place of json_object when set.
  std::shared_ptr<const JsonSchema> json_schema;
  // Function calling: every call the model writes is a valid call of one of these tools
  // (engine/tool_call_grammar.h). Takes the place of the two above when set.
  std::shared_ptr<const ToolCallSpec> tool_calls;
  // A thinking model's reasoning span (engine/reasoning_grammar.h): the grammars above
  // apply to the answer after it, and its budget, if any, ends it. Null: no span.
  std::shared_ptr<const ReasoningSpec> reasoning;
  // Whether the engine may speculate on this request's tokens (when it is configured
  // to): the output is the same either way; false only changes its speed.
  bool speculative = true;
  // OpenAI Predicted Outputs: the tokens the output is expected to be (a file being
  // edited, say). Greedy choices take them as drafts (engine/speculation.h), whatever the
  // engine's --spec; the output is the same with or without them.
  std::vector<int32_t> prediction;
};

enum class FinishReason { kStop, kLength, kCancelled, kError };
const char* finish_reason_name(FinishReason reason);  // "stop", "length", "cancelled", "error"

// One step's output for one choice. Text is whole UTF-8 characters, with any text that
// might be the start of a stop string held back until it is known not to be.
struct StreamEvent {
  int32_t choice = 0;
  std::string text;
  std::vector<int32_t> token_ids;            // the tokens behind this text (may be empty)
  std::vector<TokenLogprobs> logprobs;       // one per token, when requested
  // With Request::prompt_logprobs, on each choice's first event: prompt tokens 1 .. n - 1.
  std::vector<TokenLogprobs> prompt_logprobs;
  std::optional<FinishReason> finish;        // set on the choice's last event
  std::string error;                         // with FinishReason::kError
};

// Choices one request may ask for.
inline constexpr int32_t kMaxChoices = 8;

// What Engine::submit refuses, with the reason: bad sampling parameters, an empty prompt,
// n outside [1, kMaxChoices], max_tokens < 1, token ids outside the vocabulary, a prompt
// plus max_tokens longer than max_context, or a prompt that does not fit the cache
// (kv_positions) with the one token it must generate.
Status check_request(const Request& request, int32_t n_vocab, int32_t max_context, int64_t kv_positions);

struct Usage {
  int32_t prompt_tokens = 0;
  int32_t completion_tokens = 0;  // all choices
  int32_t cached_tokens = 0;      // prompt tokens served from the prefix cache
  // With Request::prediction: its tokens that the choices' outputs took as accepted
  // drafts, and the rest (n x its length minus those), as OpenAI counts them.
  int32_t accepted_prediction_tokens = 0;
  int32_t rejected_prediction_tokens = 0;
  double time_to_first_token_s = 0;
  double total_s = 0;
};

}  // namespace tokenmill::engine
