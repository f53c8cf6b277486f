#!/usr/bin/env python3
"""Renders chat templates with Python's jinja2, the way HF transformers does, and writes
the expected outputs to tests/fixtures/chat_templates/<name>.json for
tests/tokenizer/chat_template_test.cc to compare byte for byte.

Templates: our built-in ones (read from src/tokenizer/chat_template_builtins.cc, so the
C++ file stays the single source) plus realistic templates in the style of published
tokenizer_config.json files, written here for tokenmill.

Rerun after changing a template or a conversation:
    python3 tools/make_template_fixtures.py
"""

import json
import re
from pathlib import Path

import jinja2
from jinja2.ext import loopcontrols
from jinja2.sandbox import ImmutableSandboxedEnvironment

ROOT = Path(__file__).resolve().parent.parent
OUT_DIR = ROOT / "tests" / "fixtures" / "chat_templates"
BUILTINS_CC = ROOT / "src" / "tokenizer" / "chat_template_builtins.cc"


class TemplateRaised(Exception):
    pass


def make_environment():
    """The environment HF's apply_chat_template builds (minus {% generation %})."""

    def raise_exception(message):
        raise TemplateRaised(message)

    def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
        return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)

    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True, extensions=[loopcontrols])
    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    return env


def builtin_templates():
    source = BUILTINS_CC.read_text()
    found = dict(re.findall(r'const std::string_view k(\w+)ChatTemplate = R"JINJA\((.*?)\)JINJA";', source, re.S))
    return {"builtin_gemma": found["Gemma"], "builtin_chatml": found["ChatMl"], "builtin_llama3": found["Llama3"]}


# ---- realistic templates in the style of published ones ----

# Zephyr style: no "-" markers at all; relies on trim_blocks / lstrip_blocks.
ZEPHYR_STYLE = """{% for message in messages %}
    {% if message['role'] == 'user' %}
        {{ '<|user|>\n' + message['content'] + eos_token }}
    {% elif message['role'] == 'system' %}
        {{ '<|system|>\n' + message['content'] + eos_token }}
    {% elif message['role'] == 'assistant' %}
        {{ '<|assistant|>\n'  + message['content'] + eos_token }}
    {% endif %}
    {% if loop.last and add_generation_prompt %}
        {{ '<|assistant|>' }}
    {% endif %}
{% endfor %}"""

# Mistral style: system folded into the last user turn, strict alternation.
MISTRAL_STYLE = """{%- if messages[0]['role'] == 'system' %}
    {%- set system_message = messages[0]['content'] %}
    {%- set loop_messages = messages[1:] %}
{%- else %}
    {%- set loop_messages = messages %}
{%- endif %}

{{- bos_token }}
{%- for message in loop_messages %}
    {%- if (message['role'] == 'user') != (loop.index0 % 2 == 0) %}
        {{- raise_exception('After the optional system message, conversation roles must alternate user/assistant/user/assistant/...') }}
    {%- endif %}
    {%- if message['role'] == 'user' %}
        {%- if loop.last and system_message is defined %}
            {{- '[INST] ' + system_message + '\\n\\n' + message['content'] + '[/INST]' }}
        {%- else %}
            {{- '[INST] ' + message['content'] + '[/INST]' }}
        {%- endif %}
    {%- elif message['role'] == 'assistant' %}
        {{- ' ' + message['content']|trim + eos_token}}
    {%- else %}
        {{- raise_exception('Only user and assistant roles are supported, with the exception of an initial optional system message!') }}
    {%- endif %}
{%- endfor %}
"""

# Qwen 2.5 style: default system prompt, tools rendered as JSON, tool calls, tool
# responses grouped into one user turn, a namespace scanning the messages backwards.
QWEN_TOOLS_STYLE = """{%- if tools %}
    {{- '<|im_start|>system\\n' }}
    {%- if messages[0]['role'] == 'system' %}
        {{- messages[0]['content'] }}
    {%- else %}
        {{- 'You are a helpful assistant.' }}
    {%- endif %}
    {{- "\\n\\n# Tools\\n\\nYou may call one or more functions to assist with the user query.\\n\\n<tools>" }}
    {%- for tool in tools %}
        {{- "\\n" }}
        {{- tool | tojson }}
    {%- endfor %}
    {{- "\\n</tools>\\n\\nReturn a JSON object with the function name and arguments within <tool_call></tool_call> tags.<|im_end|>\\n" }}
{%- else %}
    {%- if messages[0]['role'] == 'system' %}
        {{- '<|im_start|>system\\n' + messages[0]['content'] + '<|im_end|>\\n' }}
    {%- else %}
        {{- '<|im_start|>system\\nYou are a helpful assistant.<|im_end|>\\n' }}
    {%- endif %}
{%- endif %}
{%- set ns = namespace(last_user_index=-1) %}
{%- for message in messages[::-1] %}
    {%- set index = (messages|length - 1) - loop.index0 %}
    {%- if ns.last_user_index == -1 and message.role == "user" %}
        {%- set ns.last_user_index = index %}
    {%- endif %}
{%- endfor %}
{%- for message in messages %}
    {%- if (message.role == "user") or (message.role == "system" and not loop.first) or (message.role == "assistant" and not message.tool_calls) %}
        {{- '<|im_start|>' + message.role + '\\n' + message.content + '<|im_end|>' + '\\n' }}
    {%- elif message.role == "assistant" %}
        {{- '<|im_start|>' + message.role }}
        {%- if message.content %}
            {{- '\\n' + message.content }}
        {%- endif %}
        {%- for tool_call in message.tool_calls %}
            {%- if tool_call.function is defined %}
                {%- set tool_call = tool_call.function %}
            {%- endif %}
            {{- '\\n<tool_call>\\n{"name": "' }}
            {{- tool_call.name }}
            {{- '", "arguments": ' }}
            {{- tool_call.arguments | tojson }}
            {{- '}\\n</tool_call>' }}
        {%- endfor %}
        {{- '<|im_end|>\\n' }}
    {%- elif message.role == "tool" %}
        {%- if (loop.index0 == 0) or (messages[loop.index0 - 1].role != "tool") %}
            {{- '<|im_start|>user' }}
        {%- endif %}
        {{- '\\n<tool_response>\\n' }}
        {{- message.content }}
        {{- '\\n</tool_response>' }}
        {%- if loop.last or (messages[loop.index0 + 1].role != "tool") %}
            {{- '<|im_end|>\\n' }}
        {%- endif %}
    {%- endif %}
{%- endfor %}
{%- if add_generation_prompt %}
    {{- '<|im_start|>assistant\\n' }}
{%- endif %}
{{- '<!-- last user turn: ' ~ ns.last_user_index ~ ' -->' }}
"""

# Llama 3.1 style: a header block built with set-blocks, strip(), tests and filters.
LLAMA31_STYLE = """{{- bos_token }}
{%- if not date_string is defined %}
    {%- set date_string = "26 Jul 2024" %}
{%- endif %}
{%- if messages[0]['role'] == 'system' %}
    {%- set system_message = messages[0]['content']|trim %}
    {%- set messages = messages[1:] %}
{%- else %}
    {%- set system_message = "" %}
{%- endif %}
{{- "<|start_header_id|>system<|end_header_id|>\\n\\n" }}
{{- "Cutting Knowledge Date: December 2023\\n" }}
{{- "Today Date: " + date_string + "\\n\\n" }}
{{- system_message }}
{{- "<|eot_id|>" }}
{%- for message in messages %}
    {%- if not (message.role == 'ipython' or message.role == 'tool' or 'tool_calls' in message) %}
        {{- '<|start_header_id|>' + message['role'] + '<|end_header_id|>\\n\\n'+ message['content'] | trim + '<|eot_id|>' }}
    {%- elif message.role == "tool" or message.role == "ipython" %}
        {{- "<|start_header_id|>ipython<|end_header_id|>\\n\\n" }}
        {%- if message.content is mapping or message.content is iterable and message.content is not string %}
            {{- message.content | tojson }}
        {%- else %}
            {{- message.content }}
        {%- endif %}
        {{- "<|eot_id|>" }}
    {%- endif %}
{%- endfor %}
{%- if add_generation_prompt %}
    {{- '<|start_header_id|>assistant<|end_header_id|>\\n\\n' }}
{%- endif %}
"""

# A template that exercises most of the expression language at once.
FEATURE_SOUP = """{#- A comment that must vanish -#}
{%- macro turn(role, text, suffix='') -%}
[{{ role | upper }}{{ suffix }}] {{ text }}
{% endmacro -%}
{%- set roles = messages | map(attribute='role') | list -%}
{%- set ns = namespace(n_user=0, chars=0, seen=[]) -%}
{%- for m in messages if m.role != 'system' -%}
  {%- if m.role == 'user' %}{% set ns.n_user = ns.n_user + 1 %}{% endif -%}
  {%- set ns.chars = ns.chars + m.content | length -%}
  {%- if m.role not in ns.seen %}{% set ns.seen = ns.seen + [m.role] %}{% endif -%}
{%- endfor -%}
roles={{ roles | join(',') }} unique={{ ns.seen }} users={{ ns.n_user }} chars={{ ns.chars }}
{% set header %}{{ 'conversation' | title }} of {{ messages | length }}{% endset -%}
{{ header }} / first={{ (messages | first).role }} last={{ (messages | last).role }}
{% for m in messages -%}
{{ loop.index }}/{{ loop.length }} rev={{ loop.revindex }}{% if loop.first %} first{% endif %}{% if loop.last %} last{% endif %}: {{ turn(m.role, m.content | trim, suffix='*' if loop.last else '') -}}
{% else -%}
(no messages)
{% endfor -%}
{%- set users = messages | selectattr('role', 'equalto', 'user') | list -%}
{%- set others = messages | rejectattr('role', 'equalto', 'user') | list -%}
users={{ users | length }} others={{ others | length }}
{% set d = {'b': 2, 'a': [1, 2.5, none, true], 'c': {'x': 'y'}} -%}
dict={{ d | tojson }} keys={{ d.keys() | list }} get={{ d.get('zz', 'fallback') }}/{{ d.get('b') }}
{% for k, v in d.items() %}{{ k }}={{ v }}{{ ';' if not loop.last }}{% endfor %}

{% for k, v in d | items %}{{ loop.index0 }}:{{ k }} {% endfor %}

math={{ 7 // 2 }} {{ -7 // 2 }} {{ 7 % 3 }} {{ -7 % 3 }} {{ 2 ** 8 }} {{ 7 / 2 }} {{ 1 + 2 * 3 }} {{ (1 + 2) * 3 }} {{ 10 - 2 - 3 }}
strings={{ 'ab' * 3 }} {{ 'a' ~ 1 ~ none ~ true }} {{ 'Hello'[1:4] }} {{ 'Hello'[::-1] }} {{ 'Hello'[-1] }} {{ [1, 2, 3, 4][1::2] }}
methods={{ '  pad  '.strip() }}|{{ 'xxhixx'.strip('x') }}|{{ '  l'.lstrip() }}|{{ 'r  '.rstrip() }}|{{ 'a,b,,c'.split(',') }}|{{ ' a  b '.split() }}|{{ 'hello world'.title() }}|{{ 'ABC'.lower() }}|{{ 'abc'.upper() }}|{{ 'aaa'.replace('a', 'b', 2) }}
tests={{ 'abc'.startswith('ab') }} {{ 'abc'.endswith(('x', 'bc')) }} {{ 3 is odd }} {{ 4 is even }} {{ none is none }} {{ undefined_thing is defined }} {{ 'x' is string }} {{ 3 is number }} {{ 9 is divisibleby 3 }} {{ {} is mapping }}
compare={{ 1 < 2 < 3 }} {{ 'a' in 'cat' }} {{ 2 not in [1, 3] }} {{ 1 == 1.0 }} {{ 'b' > 'a' }} {{ not true or false and true }}
filters={{ '  trim me  ' | trim }}|{{ 'hello' | capitalize }}|{{ undefined_thing | default('dflt') }}|{{ '' | default('empty', true) }}|{{ '42' | int + 1 }}|{{ 3 | string ~ 'x' }}|{{ 'a-b' | replace('-', '+') }}|{{ [3, 1, 2] | sort }}|{{ [1, 2, 3] | reverse | list }}|{{ 'x' if false }}|{{ [1, 2] | sum }}|{{ ['b', 'a'] | max }}
ternary={{ 'yes' if messages else 'no' }} {{ 'big' if messages | length > 100 else 'small' }}
{%- for i in range(10) %}{% if i == 2 %}{% continue %}{% endif %}{% if i == 5 %}{% break %}{% endif %} {{ i }}{% endfor %}

{% if add_generation_prompt %}[ASSISTANT]{% endif %}"""

REAL_STYLE = {
    "zephyr_style": (ZEPHYR_STYLE, "<s>", "</s>"),
    "mistral_style": (MISTRAL_STYLE, "<s>", "</s>"),
    "qwen_tools_style": (QWEN_TOOLS_STYLE, "", "<|im_end|>"),
    "llama31_style": (LLAMA31_STYLE, "<|begin_of_text|>", "<|eot_id|>"),
    "feature_soup": (FEATURE_SOUP, "<s>", "</s>"),
}

BUILTIN_TOKENS = {
    "builtin_gemma": ("<bos>", "<eos>"),
    "builtin_chatml": ("", "<|im_end|>"),
    "builtin_llama3": ("<|begin_of_text|>", "<|eot_id|>"),
}


def msg(role, content):
    return {"role": role, "content": content}


CONVERSATIONS = {
    "user_only": [msg("user", "Hello!")],
    "system_user": [msg("system", "You are a terse assistant.  "), msg("user", "  What is 2+2?\n")],
    "multi_turn": [
        msg("system", "Be brief."),
        msg("user", "Hi"),
        msg("assistant", "Hello! How can I help?"),
        msg("user", "Tell me a joke."),
        msg("assistant", " Why did the chicken cross the road? "),
        msg("user", "Why?"),
    ],
    "unicode": [
        msg("user", "Héllo wörld — 日本語のテキスト 😀 \"quotes\" and 'apostrophes' \\ backslash"),
        msg("assistant", "Ça va? Привет, мир! 🎉\n\tindented"),
        msg("user", "{{ not a template }} {% neither %}"),
    ],
    "bad_alternation": [msg("user", "one"), msg("user", "two")],
    "assistant_first": [msg("assistant", "I speak first"), msg("user", "ok")],
}

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": "Weather for a city",
            "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
        },
    }
]

TOOL_CONVERSATION = [
    msg("user", "Weather in Paris and Oslo?"),
    {
        "role": "assistant",
        "content": "",
        "tool_calls": [
            {"type": "function", "function": {"name": "get_weather", "arguments": {"city": "Paris"}}},
            {"type": "function", "function": {"name": "get_weather", "arguments": {"city": "Oslo"}}},
        ],
    },
    msg("tool", '{"temp_c": 18}'),
    msg("tool", '{"temp_c": 9}'),
    msg("assistant", "Paris 18°C, Oslo 9°C."),
    msg("user", "Thanks"),
]


def render(env, source, variables):
    try:
        return {"expected": env.from_string(source).render(**variables)}
    except TemplateRaised as e:
        return {"error": str(e)}


def build_fixture(env, name, source, bos, eos):
    cases = []
    for conv_name, messages in CONVERSATIONS.items():
        for add_generation_prompt in (False, True):
            variables = {"messages": messages, "add_generation_prompt": add_generation_prompt,
                         "bos_token": bos, "eos_token": eos}
            case = {"name": f"{conv_name}/{'gen' if add_generation_prompt else 'nogen'}",
                    "messages": messages, "add_generation_prompt": add_generation_prompt}
            case.update(render(env, source, variables))
            cases.append(case)
    if name == "qwen_tools_style":
        for with_tools in (False, True):
            extra = {"tools": TOOLS} if with_tools else {}
            variables = {"messages": TOOL_CONVERSATION, "add_generation_prompt": True,
                         "bos_token": bos, "eos_token": eos, **extra}
            case = {"name": f"tool_calls/{'tools' if with_tools else 'no_tools'}", "messages": TOOL_CONVERSATION,
                    "add_generation_prompt": True, "extra_variables": extra}
            case.update(render(env, source, variables))
            cases.append(case)
    return {"name": name, "template": source, "bos_token": bos, "eos_token": eos, "cases": cases}


def main():
    env = make_environment()
    OUT_DIR.mkdir(parents=True, exist_ok=True)
    templates = {name: (source, *BUILTIN_TOKENS[name]) for name, source in builtin_templates().items()}
    templates.update(REAL_STYLE)
    for name, (source, bos, eos) in templates.items():
        fixture = build_fixture(env, name, source, bos, eos)
        path = OUT_DIR / f"{name}.json"
        path.write_text(json.dumps(fixture, ensure_ascii=False, indent=1) + "\n")
        n_errors = sum("error" in c for c in fixture["cases"])
        print(f"{path.relative_to(ROOT)}: {len(fixture['cases'])} cases ({n_errors} raise)")
    print(f"jinja2 {jinja2.__version__}")


if __name__ == "__main__":
    main()
