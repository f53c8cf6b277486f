#include "tokenizer/chat_template_builtins.h"

namespace tokenmill::tokenizer {

// Whitespace between tags is removed by the "-" markers, so every byte of output comes
// from an explicit {{ ... }}.
const std::string_view kGemmaChatTemplate = R"JINJA({{- bos_token -}}
{%- if messages and messages[0]['role'] == 'system' -%}
  {%- set first_user_prefix = messages[0]['content'] | trim ~ '\n\n' -%}
  {%- set turns = messages[1:] -%}
{%- else -%}
  {%- set first_user_prefix = '' -%}
  {%- set turns = messages -%}
{%- endif -%}
{%- for message in turns -%}
  {%- set role = 'model' if message['role'] == 'assistant' else message['role'] -%}
  {%- if role not in ['user', 'model'] -%}
    {{- raise_exception("Gemma chat template: unsupported role '" ~ message['role'] ~ "' (expected system, user or assistant)") -}}
  {%- endif -%}
  {%- if (role == 'user') != loop.index0 is even -%}
    {{- raise_exception('Conversation roles must alternate user/model/user/model/...') -}}
  {%- endif -%}
  {{- '<start_of_turn>' ~ role ~ '\n' -}}
  {{- (first_user_prefix if loop.first else '') ~ message['content'] | trim -}}
  {{- '<end_of_turn>\n' -}}
{%- endfor -%}
{%- if add_generation_prompt -%}
  {{- '<start_of_turn>model\n' -}}
{%- endif -%}
)JINJA";

const std::string_view kChatMlChatTemplate = R"JINJA(
{%- for message in messages -%}
  {{- '<|im_start|>' ~ message['role'] ~ '\n' ~ message['content'] ~ '<|im_end|>\n' -}}
{%- endfor -%}
{%- if add_generation_prompt -%}
  {{- '<|im_start|>assistant\n' -}}
{%- endif -%}
)JINJA";

const std::string_view kLlama3ChatTemplate = R"JINJA({{- bos_token -}}
{%- for message in messages -%}
  {{- '<|start_header_id|>' ~ message['role'] ~ '<|end_header_id|>\n\n' -}}
  {{- message['content'] | trim ~ '<|eot_id|>' -}}
{%- endfor -%}
{%- if add_generation_prompt -%}
  {{- '<|start_header_id|>assistant<|end_header_id|>\n\n' -}}
{%- endif -%}
)JINJA";

std::string_view builtin_chat_template(std::string_view name) {
  if (name == "gemma") return kGemmaChatTemplate;
  if (name == "chatml") return kChatMlChatTemplate;
  if (name == "llama3") return kLlama3ChatTemplate;
  return {};
}

}  // namespace tokenmill::tokenizer
