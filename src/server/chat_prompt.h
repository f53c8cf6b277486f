// A chat request's prompt: its messages (and tools) rendered by the model's chat template
// with the request's reasoning options, and what the engine and the answer's writer need
// to know of the reasoning span (server/reasoning.h).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "engine/reasoning_grammar.h"
#include "engine/request.h"
#include "server/json_fields.h"
#include "server/reasoning.h"
#include "server/served_model.h"

namespace tokenmill::server {

struct ChatPrompt {
  std::vector<int32_t> tokens;
  // The span the answer may begin with; null where the model writes none (its template
  // marks none, or a forced tool call closed it in the prompt).
  std::shared_ptr<const engine::ReasoningSpec> reasoning;
  bool include_reasoning = true;  // the reasoning is returned (else dropped)
  // Rendered in the harmony format (ServedModel::speaks_harmony): the answer is read back
  // by a HarmonySplitter (server/harmony_chat.h) started with harmony_prefix, what the
  // prompt wrote of the model's first message (with a thinking budget, the analysis
  // header; `reasoning` is then the span the engine's budget closes, else null).
  bool harmony = false;
  std::string harmony_prefix;
};

// What will constrain the answer: nothing, an output grammar (response_format, Ollama's
// format) or a forced tool call's grammar. A harmony prompt under a grammar opens the
// analysis message, so that the grammar starts at the next message: the final one, or
// the call's.
enum class AnswerGrammar { kNone, kOutput, kToolCall };

// kOutput where the request carries JSON mode or a schema, else kNone.
inline AnswerGrammar output_grammar(const engine::Request& request) {
  return request.json_object || request.json_schema ? AnswerGrammar::kOutput : AnswerGrammar::kNone;
}

// messages / tools as ServedModel::chat_text takes them (for a harmony model, as
// harmony_chat_text does). forced_opener: what the prompt ends with when a tool call is
// forced ("" otherwise, and for harmony); a reasoning span the prompt opened is then
// closed before it, so that the call is the answer. Throws ApiError 400 naming
// messages_param when the template fails.
ChatPrompt render_chat_prompt(const ServedModel& model, const Json& messages, const Json& tools,
                              const std::string& forced_opener, const ReasoningOptions& options,
                              const char* messages_param, AnswerGrammar answer = AnswerGrammar::kNone);

}  // namespace tokenmill::server
