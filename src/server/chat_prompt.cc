#include "server/chat_prompt.h"

#include "server/harmony_chat.h"

namespace tokenmill::server {

ChatPrompt render_chat_prompt(const ServedModel& model, const Json& messages, const Json& tools,
                              const std::string& forced_opener, const ReasoningOptions& options,
                              const char* messages_param, AnswerGrammar answer) {
  if (model.speaks_harmony()) {
    ChatPrompt prompt;
    prompt.harmony = true;
    prompt.include_reasoning = options.include;
    std::string text = harmony_chat_text(messages, tools, options.effort, messages_param) + forced_opener;
    if (options.budget >= 0 || answer != AnswerGrammar::kNone) {
      // The prompt opens the analysis message; the engine's reasoning grammar leaves it
      // free until its end and the next message's header (the final one's, or for a call
      // <|start|>assistant alone), which it writes itself once a budget is spent, and
      // constrains what follows.
      auto spec =
          std::make_shared<engine::ReasoningSpec>(harmony_reasoning_span(answer == AnswerGrammar::kToolCall));
      spec->opened_by_prompt = true;
      spec->budget = options.budget;
      prompt.harmony_prefix = spec->open;
      text += spec->open;
      prompt.reasoning = std::move(spec);
    }
    prompt.tokens = model.chat_tokens(text);
    return prompt;
  }
  auto text = model.chat_text(messages, tools, reasoning_template_variables(options));
  if (!text.ok()) throw bad_request("Cannot apply the chat template: " + text.status().message(), messages_param);
  ChatPrompt prompt;
  prompt.include_reasoning = options.include;
  std::shared_ptr<engine::ReasoningSpec> spec = reasoning_for_template(model.chat_template_source());
  if (spec) {
    spec->opened_by_prompt = prompt_opens_reasoning(*text, *spec);
    spec->budget = options.budget;
  }
  if (!forced_opener.empty()) {
    if (spec && spec->opened_by_prompt) *text += spec->close + "\n\n";
    spec = nullptr;
    *text += forced_opener;
  }
  prompt.reasoning = std::move(spec);
  prompt.tokens = model.chat_tokens(*text);
  return prompt;
}

}  // namespace tokenmill::server
