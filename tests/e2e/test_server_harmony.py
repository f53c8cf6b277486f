"""gpt-oss's harmony format through the server and the official clients, on a tiny gpt-oss
model with gpt-oss's real vocabulary (tools/make_tiny_gpt_oss.py: o200k_harmony, random
weights, every logit 0 so that greedy decoding writes "!" forever). The model never writes
a harmony header by itself; with thinking_token_budget the prompt opens its analysis
message and the engine forces its end and the final header once the budget is spent, so
what is reasoning and what is answer is known exactly."""
import json
import subprocess
import sys

import bpe_openai
import jsonschema
import ollama
import openai
import pytest
import requests

from conftest import ROOT, read_corpus, start_server

QUESTION = [{"role": "user", "content": "What is 2 + 2?"}]
WEATHER = [{"type": "function", "function": {
    "name": "get_weather", "description": "Weather in a city.",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}]


@pytest.fixture(scope="module")
def harmony_server(tokenmill, tmp_path_factory):
    model = tmp_path_factory.mktemp("model") / "tiny-gpt-oss.gguf"
    subprocess.run([sys.executable, str(ROOT / "tools" / "make_tiny_gpt_oss.py"), str(model)], check=True,
                   capture_output=True, timeout=300)
    process = start_server(tokenmill, str(model), "-t", "2", "--spec", "off")
    yield process
    assert process.stop() == 0, process.log()


@pytest.fixture(scope="module")
def client(harmony_server):
    return openai.OpenAI(base_url=harmony_server.url + "/v1", api_key="none", max_retries=0, timeout=120)


def reasoning_of(message):
    return (message.model_extra or {}).get("reasoning_content")


def test_the_vocabulary_tokenizes_as_openais_o200k(harmony_server):
    """Corpus lines as prompts (echoed with their token ids) against bpe-openai's o200k_base."""
    enc = bpe_openai.get_encoding("o200k_base")
    lines = [t for t in read_corpus() if t and "<|" not in t][:400]
    same = 0
    for start in range(0, len(lines), 50):
        batch = lines[start:start + 50]
        r = requests.post(harmony_server.url + "/v1/completions", json={
            "model": "default", "prompt": batch, "max_tokens": 1, "echo": True, "logprobs": 0,
            "return_tokens_as_token_ids": True, "temperature": 0}, timeout=120)
        assert r.status_code == 200, r.text
        for line, choice in zip(batch, sorted(r.json()["choices"], key=lambda c: c["index"])):
            ours = [int(t.split(":")[1]) for t in choice["logprobs"]["tokens"]][:-1]  # the last is generated
            theirs = enc.encode_ordinary(line)
            assert ours == theirs, (line, ours[:20], theirs[:20])
            same += 1
    assert same == len(lines)


def test_reasoning_and_answer_come_apart(client):
    r = client.chat.completions.create(model="default", messages=QUESTION, max_tokens=80, temperature=0,
                                       extra_body={"thinking_token_budget": 5})
    message = r.choices[0].message
    assert reasoning_of(message) == "!!!!!", message
    # After the budget the engine wrote the analysis message's end and the final header;
    # the model's next tokens are the answer, and no harmony text is in either part.
    assert message.content and set(message.content) == {"!"}, message
    assert r.choices[0].finish_reason == "length"


def test_streamed_reasoning_comes_first_and_matches_the_whole_answer(client):
    whole = client.chat.completions.create(model="default", messages=QUESTION, max_tokens=80, temperature=0,
                                           extra_body={"thinking_token_budget": 7}).choices[0].message
    reasoning, content, order = "", "", []
    for chunk in client.chat.completions.create(model="default", messages=QUESTION, max_tokens=80, temperature=0,
                                                extra_body={"thinking_token_budget": 7}, stream=True):
        if not chunk.choices:
            continue
        delta = chunk.choices[0].delta
        piece = (delta.model_extra or {}).get("reasoning_content")
        if piece:
            reasoning += piece
            order.append("r")
        if delta.content:
            content += delta.content
            order.append("c")
    assert reasoning == reasoning_of(whole) == "!!!!!!!"
    assert content == whole.content
    assert order.index("c") > max(i for i, o in enumerate(order) if o == "r")


def test_reasoning_can_be_dropped(client):
    r = client.chat.completions.create(model="default", messages=QUESTION, max_tokens=80, temperature=0,
                                       extra_body={"thinking_token_budget": 3, "include_reasoning": False})
    assert reasoning_of(r.choices[0].message) is None
    assert set(r.choices[0].message.content) == {"!"}


def test_output_that_is_not_harmony_is_the_answer(client, harmony_server):
    """Without a budget this model writes "!" where a header belongs: nothing is lost."""
    r = client.chat.completions.create(model="default", messages=QUESTION, max_tokens=6, temperature=0)
    assert r.choices[0].message.content == "!!!!!!"
    assert reasoning_of(r.choices[0].message) is None
    assert "harmony: the model's output left the format" in harmony_server.log()
    # Ollama's client on the same model and conversation, with tools and a tool result.
    o = ollama.Client(host=harmony_server.url)
    reply = o.chat(model="default", think=True, tools=WEATHER, options={"temperature": 0, "num_predict": 6},
                   messages=QUESTION + [
                       {"role": "assistant", "content": "", "tool_calls": [
                           {"function": {"name": "get_weather", "arguments": {"city": "Oslo"}}}]},
                       {"role": "tool", "content": "cold"}])
    assert reply.message.content == "!!!!!!"
    assert not reply.message.thinking


def test_a_json_schema_constrains_the_final_message_not_the_analysis(client):
    schema = {"type": "object", "properties": {"answer": {"type": "integer"}, "sure": {"type": "boolean"}},
              "required": ["answer", "sure"], "additionalProperties": False}
    r = client.chat.completions.create(
        model="default", messages=QUESTION, max_tokens=200, temperature=0,
        response_format={"type": "json_schema", "json_schema": {"name": "a", "schema": schema, "strict": True}},
        extra_body={"thinking_token_budget": 4})
    message = r.choices[0].message
    assert reasoning_of(message) == "!!!!"
    jsonschema.validate(json.loads(message.content), schema)
    assert r.choices[0].finish_reason == "stop"


def test_ollama_think_gives_the_analysis_as_thinking(harmony_server):
    """Ollama's client with think=True and a format: the prompt opens the analysis message,
    which this model never closes, so all it writes is thinking and none of it content."""
    o = ollama.Client(host=harmony_server.url)
    schema = {"type": "object", "properties": {"answer": {"type": "integer"}}, "required": ["answer"]}
    reply = o.chat(model="default", messages=QUESTION, think=True, format=schema,
                   options={"temperature": 0, "num_predict": 5})
    assert reply.message.thinking == "!!!!!"
    assert not reply.message.content
    streamed = list(o.chat(model="default", messages=QUESTION, think=True, format=schema, stream=True,
                           options={"temperature": 0, "num_predict": 5}))
    assert "".join(c.message.thinking or "" for c in streamed) == "!!!!!"
    assert not "".join(c.message.content or "" for c in streamed)


# Arguments this model can only finish: every logit is 0, so within a string it would
# write "!" forever; an enum and a bounded integer end.
FORECAST = [{"type": "function", "function": {
    "name": "get_forecast", "description": "Forecast for a city.",
    "parameters": {"type": "object", "properties": {
        "city": {"enum": ["Oslo", "Paris"]}, "days": {"type": "integer", "minimum": 1, "maximum": 7}},
        "required": ["city", "days"], "additionalProperties": False}}},
    {"type": "function", "function": {
        "name": "get_time", "parameters": {"type": "object", "properties": {"zone": {"enum": ["UTC", "CET"]}},
                                           "required": ["zone"]}}}]


def schema_of(name):
    return next(t["function"]["parameters"] for t in FORECAST if t["function"]["name"] == name)


@pytest.mark.parametrize("choice, name", [
    ("required", None),
    ({"type": "function", "function": {"name": "get_time"}}, "get_time"),
])
def test_a_forced_call_follows_the_analysis(client, choice, name):
    """tool_choice required or named: the analysis stays free (here cut by the budget), then
    the next message is constrained to a commentary call with valid arguments."""
    r = client.chat.completions.create(model="default", messages=QUESTION, max_tokens=120, temperature=0,
                                       tools=FORECAST, tool_choice=choice,
                                       extra_body={"thinking_token_budget": 4})
    message = r.choices[0].message
    assert reasoning_of(message) == "!!!!", message
    assert message.content is None, message
    assert len(message.tool_calls) == 1, message
    call = message.tool_calls[0].function
    if name:
        assert call.name == name
    jsonschema.validate(json.loads(call.arguments), schema_of(call.name))
    assert r.choices[0].finish_reason == "tool_calls"


def test_a_streamed_forced_call_comes_after_its_reasoning(client):
    whole = client.chat.completions.create(model="default", messages=QUESTION, max_tokens=120, temperature=0,
                                           tools=FORECAST, tool_choice="required",
                                           extra_body={"thinking_token_budget": 3}).choices[0].message
    reasoning, content, name, arguments, finish = "", "", "", "", None
    for chunk in client.chat.completions.create(model="default", messages=QUESTION, max_tokens=120, temperature=0,
                                                tools=FORECAST, tool_choice="required", stream=True,
                                                extra_body={"thinking_token_budget": 3}):
        if not chunk.choices:
            continue
        delta = chunk.choices[0].delta
        reasoning += (delta.model_extra or {}).get("reasoning_content") or ""
        assert not (delta.content or "") or not name
        content += delta.content or ""
        for call in delta.tool_calls or []:
            assert reasoning == "!!!", "the call came before its reasoning"
            name += call.function.name or ""
            arguments += call.function.arguments or ""
        finish = chunk.choices[0].finish_reason or finish
    assert reasoning == reasoning_of(whole) == "!!!"
    assert content == ""
    assert (name, json.loads(arguments)) == (whole.tool_calls[0].function.name,
                                             json.loads(whole.tool_calls[0].function.arguments))
    assert finish == "tool_calls"


def test_bad_tool_requests_are_a_400_naming_the_field(harmony_server):
    url = harmony_server.url + "/v1/chat/completions"
    r = requests.post(url, json={"model": "default", "messages": QUESTION, "max_tokens": 4, "tools": FORECAST,
                                 "tool_choice": {"type": "function", "function": {"name": "nope"}}}, timeout=60)
    assert r.status_code == 400, r.text
    assert r.json()["error"]["param"] == "tool_choice"
    # A tool result that names no call.
    r = requests.post(url, json={"model": "default", "max_tokens": 4, "messages": QUESTION + [
        {"role": "tool", "tool_call_id": "nope", "content": "x"}]}, timeout=60)
    assert r.status_code == 400, r.text
    # The server is fine afterwards.
    assert requests.get(harmony_server.url + "/health", timeout=10).status_code == 200
