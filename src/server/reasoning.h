// Thinking models' reasoning kept apart from their answer, as the clients expect it:
// OpenAI chat's message.reasoning_content / delta.reasoning_content (vLLM's and
// DeepSeek's extension), Ollama's message.thinking / thinking. Never mixed into content.
//
// The span is found by the chat template: a template that writes <think> marks reasoning
// with <think>...</think>. Whether the model opens it itself (Qwen3) or the prompt
// already did (DeepSeek-R1's "<think>\n") is read off the rendered prompt.
//
// Request fields (docs/serving.md):
//   OpenAI  reasoning_effort ("none" turns thinking off; the others go to the template as
//           reasoning_effort), include_reasoning (vLLM: false drops it from the answer),
//           thinking_token_budget (vLLM: tokens of reasoning before the close is forced),
//           chat_template_kwargs (more template variables, e.g. {"enable_thinking": false})
//   Ollama  think: true | false | "low" | "medium" | "high" (false turns thinking off and
//           drops what reasoning comes anyway)
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "engine/reasoning_grammar.h"
#include "server/json_fields.h"

namespace tokenmill::server {

struct ReasoningOptions {
  bool think = true;    // false: the template is asked not to think (enable_thinking false)
  bool include = true;  // the reasoning is returned (false: dropped)
  std::string effort;   // "": the template's default
  int32_t budget = -1;  // thinking_token_budget; < 0: none
  Json template_kwargs = Json::object();
};

// Throw ApiError (400) naming the field.
ReasoningOptions read_openai_reasoning(const Fields& f);
ReasoningOptions read_ollama_reasoning(const Fields& f);

// The variables these options give the chat template: chat_template_kwargs, then
// enable_thinking (false when thinking is off) and reasoning_effort.
Json reasoning_template_variables(const ReasoningOptions& options);

// The span a template's model writes (open and close tags, opened_by_prompt false,
// no budget); null when the template marks no reasoning.
std::shared_ptr<engine::ReasoningSpec> reasoning_for_template(std::string_view template_source);

// Whether a rendered prompt ends inside the span: it ends with the open tag, then only
// whitespace.
bool prompt_opens_reasoning(std::string_view prompt, const engine::ReasoningSpec& spec);

// Splits a choice's text, as it streams, into reasoning and answer.
class OutputSplitter {
 public:
  struct Parts {
    std::string reasoning;
    std::string content;
  };
  virtual ~OutputSplitter() = default;
  virtual Parts feed(std::string_view text) = 0;
  // The end of the text: what was held back.
  virtual Parts finish() = 0;
};

// The splitter of a template's reasoning span. The reasoning is trimmed of the whitespace
// around it, and the answer of the whitespace before it. Text that may be the start of a
// tag is held back until the next piece tells.
class ReasoningSplitter final : public OutputSplitter {
 public:
  explicit ReasoningSplitter(const engine::ReasoningSpec& spec);

  Parts feed(std::string_view text) override;
  Parts finish() override;

 private:
  enum class Phase { kLead, kReasoning, kGap, kContent };

  void feed_reasoning(Parts& out);

  std::string open_;
  std::string close_;
  Phase phase_;
  std::string pending_;         // kLead: whitespace and part of the open tag; kReasoning: held back
  bool reasoning_begun_ = false;  // kReasoning: some reasoning was released
};

// The whole text at once.
ReasoningSplitter::Parts split_reasoning(std::string_view text, const engine::ReasoningSpec& spec);

}  // namespace tokenmill::server
