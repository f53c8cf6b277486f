"""Reasoning output through the official openai and ollama clients. The default model
(Gemma 3 270M) is served with a thinking template (--chat-template-file) in the style of
DeepSeek-R1's: the prompt ends inside a <think> span, which the model must close before
it answers. This small model never closes it by itself, so the tests that need an answer
give a thinking_token_budget, after which the engine forces the close; the ones without
show that reasoning never leaks into content."""
import json

import jsonschema
import ollama
import openai
import pytest
import requests
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import Select, WebDriverWait

from conftest import start_server
from test_chat_page import browser, send, wait_done  # noqa: F401 (browser is a fixture)

THINKING_TEMPLATE = """{{ bos_token }}{% for m in messages %}<start_of_turn>{{ 'model' if m['role'] == 'assistant' else 'user' }}
{{ m['content'] }}<end_of_turn>
{% endfor %}{% if add_generation_prompt %}<start_of_turn>model
{% if enable_thinking is defined and enable_thinking is false %}<think>

</think>

{% else %}<think>
{% endif %}{% endif %}"""

QUESTION = [{"role": "user", "content": "What is the capital of France? Answer in one word."}]
GREEDY = {"temperature": 0, "seed": 1}


@pytest.fixture(scope="module")
def thinking_server(tokenmill, default_model, tmp_path_factory):
    template = tmp_path_factory.mktemp("template") / "thinking.jinja"
    template.write_text(THINKING_TEMPLATE)
    data_dir = tmp_path_factory.mktemp("data")
    process = start_server(tokenmill, default_model, "-t", "2", "--chat-template-file", str(template),
                           "--data-dir", str(data_dir))
    yield process
    assert process.stop() == 0, process.log()


@pytest.fixture(scope="module")
def client(thinking_server):
    return openai.OpenAI(base_url=thinking_server.url + "/v1", api_key="none", max_retries=0, timeout=120)


def reasoning_of(message):
    return (message.model_extra or {}).get("reasoning_content")


def test_budget_ends_the_reasoning_and_the_answer_follows(client):
    r = client.chat.completions.create(model="default", messages=QUESTION, max_tokens=40,
                                       extra_body={"thinking_token_budget": 8}, **GREEDY)
    message = r.choices[0].message
    reasoning = reasoning_of(message)
    assert reasoning, message
    assert message.content, message
    # The tags are the span's, in neither part (what the model writes after the close is
    # its answer, whatever it says: this small one goes on to echo the question).
    assert "<think>" not in reasoning and "</think>" not in reasoning
    assert not message.content.startswith(("<think>", "</think>", "\n"))
    # The budget's 8 tokens of reasoning are the first 8 the model writes without one.
    cut = client.chat.completions.create(model="default", messages=QUESTION, max_tokens=8, **GREEDY)
    assert reasoning_of(cut.choices[0].message) == reasoning


def test_streamed_reasoning_comes_first_and_matches_the_whole_answer(client):
    body = dict(model="default", messages=QUESTION, max_tokens=40, extra_body={"thinking_token_budget": 8}, **GREEDY)
    whole = client.chat.completions.create(**body).choices[0].message
    reasoning, content, order = "", "", []
    for chunk in client.chat.completions.create(stream=True, **body):
        if not chunk.choices:
            continue
        delta = chunk.choices[0].delta
        piece = (delta.model_extra or {}).get("reasoning_content")
        if piece:
            reasoning += piece
            order.append("reasoning")
        if delta.content:
            content += delta.content
            order.append("content")
    assert reasoning == reasoning_of(whole)
    assert content == whole.content
    assert order and order[0] == "reasoning" and order.index("content") > order.index("reasoning")
    assert order[order.index("content"):].count("reasoning") == 0


def test_a_stored_stream_keeps_its_reasoning(client):
    reasoning, completion_id = "", None
    for chunk in client.chat.completions.create(model="default", messages=QUESTION, max_tokens=20, stream=True,
                                                store=True, extra_body={"thinking_token_budget": 4}, **GREEDY):
        completion_id = chunk.id
        if chunk.choices:
            reasoning += (chunk.choices[0].delta.model_extra or {}).get("reasoning_content") or ""
    assert reasoning
    stored = client.chat.completions.retrieve(completion_id)
    assert reasoning_of(stored.choices[0].message) == reasoning


def test_without_a_close_everything_is_reasoning(client):
    r = client.chat.completions.create(model="default", messages=QUESTION, max_tokens=12, **GREEDY)
    message = r.choices[0].message
    assert r.choices[0].finish_reason == "length"
    assert reasoning_of(message)
    assert not message.content


def test_structured_output_applies_to_the_answer_only(client):
    schema = {"type": "object", "properties": {"city": {"enum": ["Paris", "Lyon", "Nice"]}},
              "required": ["city"], "additionalProperties": False}
    r = client.chat.completions.create(
        model="default", messages=QUESTION, max_tokens=200, **GREEDY,
        response_format={"type": "json_schema", "json_schema": {"name": "answer", "schema": schema, "strict": True}},
        extra_body={"thinking_token_budget": 6})
    message = r.choices[0].message
    assert r.choices[0].finish_reason == "stop"
    assert reasoning_of(message)
    jsonschema.validate(json.loads(message.content), schema)


def test_forced_tool_calls_skip_the_reasoning(client):
    weather = {"type": "function", "function": {"name": "get_weather", "parameters": {
        "type": "object", "properties": {"city": {"type": "string", "maxLength": 30}},
        "required": ["city"], "additionalProperties": False}}}
    r = client.chat.completions.create(model="default", messages=[{"role": "user", "content": "Weather in Paris?"}],
                                       tools=[weather], tool_choice="required", max_tokens=60, **GREEDY)
    message = r.choices[0].message
    assert message.tool_calls and message.tool_calls[0].function.name == "get_weather"
    json.loads(message.tool_calls[0].function.arguments)
    assert not reasoning_of(message)


def test_reasoning_can_be_dropped_or_turned_off(client):
    kept = client.chat.completions.create(model="default", messages=QUESTION, max_tokens=40,
                                          extra_body={"thinking_token_budget": 8}, **GREEDY).choices[0].message
    dropped = client.chat.completions.create(
        model="default", messages=QUESTION, max_tokens=40,
        extra_body={"thinking_token_budget": 8, "include_reasoning": False}, **GREEDY).choices[0].message
    assert "reasoning_content" not in (dropped.model_extra or {})
    assert dropped.content == kept.content
    # Thinking off: the template closes the span in the prompt, and the model answers.
    for extra in ({"reasoning_effort": "none"}, {"chat_template_kwargs": {"enable_thinking": False}}):
        off = client.chat.completions.create(model="default", messages=QUESTION, max_tokens=20,
                                             extra_body=extra, **GREEDY).choices[0].message
        assert off.content and not reasoning_of(off), extra


@pytest.mark.parametrize("body, param", [
    ({"reasoning_effort": "max"}, "reasoning_effort"),
    ({"thinking_token_budget": -3}, "thinking_token_budget"),
    ({"chat_template_kwargs": {"messages": []}}, "chat_template_kwargs"),
])
def test_bad_reasoning_fields_are_400_naming_the_field(thinking_server, body, param):
    r = requests.post(thinking_server.url + "/v1/chat/completions",
                      json={"model": "default", "messages": QUESTION, **body}, timeout=60)
    assert r.status_code == 400
    assert r.json()["error"]["param"] == param


def test_ollama_think_separates_or_drops_the_thinking(thinking_server):
    client = ollama.Client(host=thinking_server.url, timeout=120)
    options = {"temperature": 0, "seed": 1, "num_predict": 12}
    thinking = client.chat(model="default", messages=QUESTION, think=True, options=options).message
    assert thinking.thinking and not thinking.content
    streamed = "".join(part.message.thinking or "" for part in
                       client.chat(model="default", messages=QUESTION, think=True, options=options, stream=True))
    assert streamed == thinking.thinking
    answer = client.chat(model="default", messages=QUESTION, think=False, options=options).message
    assert answer.content and not answer.thinking
    generated = client.generate(model="default", prompt="Name a colour.", think=True, options=options)
    assert generated.thinking and not generated.response
    r = requests.post(thinking_server.url + "/api/chat",
                      json={"model": "default", "messages": QUESTION, "think": "max"}, timeout=60)
    assert r.status_code == 400 and "think" in r.json()["error"]


def test_a_model_without_a_thinking_template_answers_as_before(server):
    r = requests.post(server.url + "/v1/chat/completions",
                      json={"model": "default", "messages": QUESTION, "max_tokens": 8, "temperature": 0}, timeout=60)
    message = r.json()["choices"][0]["message"]
    assert "reasoning_content" not in message and message["content"]


def test_a_template_file_that_does_not_parse_is_refused_at_start(tokenmill, default_model, tmp_path):
    bad = tmp_path / "bad.jinja"
    bad.write_text("{% for m in messages %}{{ m.content }")
    with pytest.raises(RuntimeError, match="bad.jinja"):
        start_server(tokenmill, default_model, "--chat-template-file", str(bad))


def test_the_chat_page_folds_the_reasoning_above_the_answer(thinking_server, browser):
    browser.get(thinking_server.url + "/")
    WebDriverWait(browser, 10).until(lambda d: len(Select(d.find_element(By.ID, "model")).options) == 1)
    for field, value in (("temperature", "0"), ("max_tokens", "12")):
        browser.find_element(By.ID, field).clear()
        browser.find_element(By.ID, field).send_keys(value)
    send(browser, "What is the capital of France?")
    answer = wait_done(browser)
    assert not answer["error"], answer
    reasoning = browser.execute_script(
        "const r = document.querySelectorAll('.message.assistant details.reasoning .reasoning-text');"
        "return r.length ? r[r.length - 1].textContent : null;")
    assert reasoning and not answer["text"], (reasoning, answer)
