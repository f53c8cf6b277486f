// Parsing and validating the bodies of OpenAI's /v1/chat/completions and /v1/completions
// into an engine Request. Every rejection is an ApiError (400, or 404 for an unknown
// model) that names the field, the allowed values and what was sent.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "engine/request.h"
#include "server/json_fields.h"
#include "server/served_model.h"
#include "server/tool_calls.h"

namespace tokenmill::server {

inline constexpr int32_t kMaxChoices = 8;
inline constexpr size_t kMaxStopStrings = 16;
inline constexpr size_t kMaxLogitBias = 1024;  // tokens in one logit_bias
// /v1/completions: prompts in one request (a list), and their choices in all.
inline constexpr size_t kMaxPrompts = 64;
inline constexpr int64_t kMaxChoicesPerRequest = 128;

struct OpenAiRequest {
  // One engine request per prompt (chat: one), the same but for the prompt and its
  // max_tokens. Choice j of prompt i answers as index i * n + j.
  std::vector<engine::Request> requests;
  bool stream = false;
  bool include_usage = false;  // stream_options.include_usage
  // vLLM's return_tokens_as_token_ids: logprobs name each token "token_id:N", so that
  // tokens whose text is not valid UTF-8 on its own keep their identity.
  bool tokens_as_ids = false;
  // /v1/completions only:
  bool echo = false;                      // put the prompt text before each choice's text
  std::vector<std::string> prompt_texts;  // each prompt as text, for echo
  // /v1/chat/completions with tools (tool_choice not "none"): how to read the calls back
  // out of each choice's text.
  std::optional<ToolRequest> tools;
  ToolSyntax tool_syntax = ToolSyntax::kBuiltin;
  // Chat: whether a reasoning span (requests.front().reasoning) is returned as
  // reasoning_content, or dropped.
  bool include_reasoning = true;
  // Chat with a harmony model (server/harmony_chat.h): its channels become reasoning,
  // content and tool calls; harmony_prefix is ChatPrompt's.
  bool harmony = false;
  std::string harmony_prefix;
};

// Throws ApiError.
OpenAiRequest parse_chat_request(const Json& body, const ServedModel& model);
OpenAiRequest parse_completion_request(const Json& body, const ServedModel& model);

// Shared with the Ollama routes: the generation budget for a prompt of n_prompt tokens.
// requested < 0: as much as the context leaves. Throws ApiError (code
// context_length_exceeded) when the prompt does not fit, or prompt + requested exceeds
// the context. prompt_param / max_param name the fields in the message.
int32_t resolve_max_tokens(int64_t requested, size_t n_prompt, int32_t max_context, const char* prompt_param,
                           const char* max_param);

// Throws ApiError unless the model answers to name.
void check_model_name(const std::string& name, const ServedModel& model);

}  // namespace tokenmill::server
