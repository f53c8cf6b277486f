// The Jinja chat-template engine against hostile templates and messages: a template
// comes from a GGUF file (untrusted), messages from clients. Input: template source,
// NUL, then either a JSON object of variables (messages, tools, ...) or plain text that
// becomes the messages' contents, one per NUL-separated part.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "fuzz_input.h"
#include "tokenizer/chat_template.h"

using namespace tokenmill;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  fuzz::InputParts parts(data, size);
  Result<tokenizer::ChatTemplate> parsed = tokenizer::ChatTemplate::parse(std::string(parts.next()));
  if (!parsed.ok()) return 0;
  const tokenizer::ChatTemplate& chat_template = parsed.value();

  const auto variables = nlohmann::ordered_json::parse(parts.rest(), nullptr, /*allow_exceptions=*/false);
  if (variables.is_object()) {
    const tokenizer::jinja::Value value = tokenizer::jinja::Value::from_json(variables);
    (void)chat_template.render_variables(value.as_dict());
    return 0;
  }
  std::vector<tokenizer::ChatMessage> messages;
  const char* roles[] = {"system", "user", "assistant", "tool"};
  size_t i = 0;
  while (!parts.empty()) messages.push_back({roles[i++ % 4], std::string(parts.next())});
  if (messages.empty()) messages.push_back({"user", "hello"});
  (void)chat_template.render(messages, /*add_generation_prompt=*/true, "<bos>", "<eos>");
  return 0;
}
