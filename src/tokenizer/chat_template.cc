#include "tokenizer/chat_template.h"

#include <utility>

#include "tokenizer/chat_template_builtins.h"

namespace tokenmill::tokenizer {

Result<ChatTemplate> ChatTemplate::parse(std::string source) {
  ChatTemplate t;
  try {
    t.template_ = jinja::Template::parse(source);
  } catch (const jinja::Error& e) {
    return invalid_argument(std::string("chat template: ") + e.what());
  }
  t.source_ = std::move(source);
  return t;
}

Result<std::string> ChatTemplate::render(const std::vector<ChatMessage>& messages, bool add_generation_prompt,
                                         const std::string& bos_token, const std::string& eos_token) const {
  jinja::List list;
  list.reserve(messages.size());
  for (const ChatMessage& m : messages) {
    list.push_back(jinja::Value(jinja::Dict{{"role", jinja::Value(m.role)}, {"content", jinja::Value(m.content)}}));
  }
  return render_variables(jinja::Dict{
      {"messages", jinja::Value(std::move(list))},
      {"add_generation_prompt", jinja::Value(add_generation_prompt)},
      {"bos_token", jinja::Value(bos_token)},
      {"eos_token", jinja::Value(eos_token)},
  });
}

Result<std::string> ChatTemplate::render_variables(const jinja::Dict& variables) const {
  try {
    return template_.render(variables);
  } catch (const jinja::Error& e) {
    return invalid_argument(std::string("chat template: ") + e.what());
  } catch (const std::exception& e) {  // out of memory, ...: the template is refused, nothing else breaks
    return invalid_argument(std::string("chat template failed: ") + e.what());
  }
}

namespace {

bool vocabulary_has(const gguf::Array& tokens, std::string_view text) {
  for (const gguf::Value& token : tokens.items) {
    const std::string* s = token.as_string();
    if (s != nullptr && *s == text) return true;
  }
  return false;
}

}  // namespace

Result<ChatTemplate> chat_template_for_model(const gguf::File& file) {
  std::string embedded = file.get_string_or("tokenizer.chat_template", "");
  if (!embedded.empty()) return ChatTemplate::parse(std::move(embedded));

  const gguf::Array* tokens = file.get_array("tokenizer.ggml.tokens");
  if (tokens != nullptr) {
    static const std::pair<std::string_view, std::string_view> kByTurnToken[] = {
        {"<start_of_turn>", "gemma"},
        {"<|im_start|>", "chatml"},
        {"<|start_header_id|>", "llama3"},
    };
    for (const auto& [turn_token, name] : kByTurnToken) {
      if (vocabulary_has(*tokens, turn_token)) return ChatTemplate::parse(std::string(builtin_chat_template(name)));
    }
  }
  return not_found(
      "model has no tokenizer.chat_template and its vocabulary has none of the turn tokens of the built-in "
      "templates (<start_of_turn>, <|im_start|>, <|start_header_id|>)");
}

}  // namespace tokenmill::tokenizer
