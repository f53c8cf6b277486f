"""Function calling and logit_bias through the official openai and ollama clients, on the
default model (Gemma 3 270M, whose template knows no tools: tokenmill's built-in tool
prompt and syntax). Forced calls always parse and validate against the tool's schema;
auto calls are constrained once the model opens one. The schemas bound their strings
(maxLength): sampled at temperature 0.7, this small model sometimes repeats itself inside
an unbounded string until max_tokens, leaving no call at all."""
import concurrent.futures
import json

import jsonschema
import ollama
import openai
import pytest
import requests

MODEL = "gemma-3-270m-q4_k_m"

WEATHER = {"type": "function", "function": {
    "name": "get_weather", "description": "Current weather in a city",
    "parameters": {"type": "object", "properties": {
        "city": {"type": "string", "maxLength": 40}, "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]}},
        "required": ["city", "unit"], "additionalProperties": False}}}
TIME = {"type": "function", "function": {
    "name": "get_time", "description": "Current time in a time zone",
    "parameters": {"type": "object", "properties": {"zone": {"type": "string", "maxLength": 40}},
                   "required": ["zone"]}}}
BOOKING = {"type": "function", "function": {
    "name": "book_table", "description": "Book a restaurant table", "strict": True,
    "parameters": {"type": "object", "properties": {
        "restaurant": {"type": "string", "maxLength": 40}, "people": {"type": "integer"},
        "time": {"type": "object", "properties": {"hour": {"type": "integer"}, "minute": {"type": "integer"}},
                 "required": ["hour", "minute"]},
        "notes": {"anyOf": [{"type": "string", "maxLength": 80}, {"type": "null"}]},
        "dishes": {"type": "array", "items": {"type": "string", "maxLength": 30}, "maxItems": 3}},
        "required": ["restaurant", "people", "time", "notes", "dishes"]}}}
CONVERT = {"type": "function", "function": {
    "name": "convert_currency",
    "parameters": {"type": "object", "properties": {
        "amount": {"type": "number"}, "from": {"enum": ["EUR", "USD", "JPY"]}, "to": {"enum": ["EUR", "USD", "JPY"]},
        "round": {"type": "boolean"}},
        "required": ["amount", "from", "to", "round"]}}}
ALL_TOOLS = [WEATHER, TIME, BOOKING, CONVERT]
QUESTIONS = ["What is the weather in Paris?", "Book a table for four at Luigi's at 7:30 pm.",
             "How much is 250 euros in dollars?", "What time is it in Tokyo?", "Is it cold in Oslo today?",
             "Reserve dinner for two tonight at Chez Anne, we want soup.", "Convert 99.5 USD to yen, rounded.",
             "Will it rain in Lima?", "What's the time in New York?", "Table for 6 at Sakura tomorrow at noon."]
SCHEMAS = {t["function"]["name"]: t["function"]["parameters"] for t in ALL_TOOLS}


@pytest.fixture(scope="module")
def client(server):
    return openai.OpenAI(base_url=server.url + "/v1", api_key="none", max_retries=0, timeout=120)


def streamed_calls(stream):
    """Accumulates streamed tool-call deltas as OpenAI's clients do."""
    calls, content, finish = {}, "", None
    for chunk in stream:
        if not chunk.choices:
            continue
        delta = chunk.choices[0].delta
        content += delta.content or ""
        for tc in delta.tool_calls or []:
            call = calls.setdefault(tc.index, {"id": None, "name": "", "arguments": ""})
            call["id"] = tc.id or call["id"]
            call["name"] += (tc.function.name or "") if tc.function else ""
            call["arguments"] += (tc.function.arguments or "") if tc.function else ""
        finish = chunk.choices[0].finish_reason or finish
    return [calls[i] for i in sorted(calls)], content, finish


def test_required_calls_always_parse_and_validate(client):
    def one(i):
        tools = ALL_TOOLS[i % 4:] + ALL_TOOLS[:i % 4]  # vary the order and so the prompt
        if i % 5 == 0:
            tools = tools[:2]
        kwargs = dict(model=MODEL, messages=[{"role": "user", "content": QUESTIONS[i % len(QUESTIONS)]}],
                      tools=tools, tool_choice="required", max_tokens=200, temperature=0.7 if i % 2 else 0,
                      seed=i)
        if i % 3 == 0:
            calls, _, finish = streamed_calls(client.chat.completions.create(stream=True, **kwargs))
        else:
            reply = client.chat.completions.create(**kwargs)
            finish = reply.choices[0].finish_reason
            calls = [{"id": c.id, "name": c.function.name, "arguments": c.function.arguments}
                     for c in reply.choices[0].message.tool_calls or []]
        return finish, calls, {t["function"]["name"] for t in tools}

    with concurrent.futures.ThreadPoolExecutor(8) as pool:
        results = list(pool.map(one, range(60)))
    for finish, calls, names in results:
        assert finish == "tool_calls", (finish, calls)
        assert len(calls) == 1
        call = calls[0]
        assert call["id"].startswith("call_")
        assert call["name"] in names
        jsonschema.validate(json.loads(call["arguments"]), SCHEMAS[call["name"]])
    assert len({c[1][0]["name"] for c in results}) >= 3  # the model chose among the tools


def test_named_function_is_the_one_called_streamed_or_not(client):
    kwargs = dict(model=MODEL, messages=[{"role": "user", "content": "What is the weather in Paris?"}],
                  tools=ALL_TOOLS, tool_choice={"type": "function", "function": {"name": "get_time"}},
                  max_tokens=100, temperature=0)
    reply = client.chat.completions.create(**kwargs)
    message = reply.choices[0].message
    assert reply.choices[0].finish_reason == "tool_calls"
    assert message.content is None
    assert [c.function.name for c in message.tool_calls] == ["get_time"]
    jsonschema.validate(json.loads(message.tool_calls[0].function.arguments), SCHEMAS["get_time"])
    calls, content, finish = streamed_calls(client.chat.completions.create(stream=True, **kwargs))
    assert finish == "tool_calls" and content == ""
    assert [(c["name"], c["arguments"]) for c in calls] == [("get_time", message.tool_calls[0].function.arguments)]


def test_auto_calls_are_constrained_once_opened(client):
    # The small model copies the tool prompt until it writes "<tool_call>"; from there the
    # grammar makes it a valid call, and with parallel_tool_calls false the turn ends.
    for question, city in (("What is the weather in Paris?", "Paris"), ("Is it raining in Berlin?", "Berlin")):
        reply = client.chat.completions.create(
            model=MODEL, messages=[{"role": "user", "content": question}], tools=[WEATHER], tool_choice="auto",
            parallel_tool_calls=False, max_tokens=400, temperature=0)
        choice = reply.choices[0]
        assert choice.finish_reason == "tool_calls", choice
        assert len(choice.message.tool_calls) == 1
        arguments = json.loads(choice.message.tool_calls[0].function.arguments)
        jsonschema.validate(arguments, SCHEMAS["get_weather"])
        assert arguments["city"] == city
    # Streamed, the call arrives as deltas and the copied prompt as content before it.
    calls, content, finish = streamed_calls(client.chat.completions.create(
        model=MODEL, messages=[{"role": "user", "content": "What is the weather in Paris?"}], tools=[WEATHER],
        parallel_tool_calls=False, max_tokens=400, temperature=0, stream=True))
    assert finish == "tool_calls" and len(calls) == 1 and "<tool_call>" not in content
    assert json.loads(calls[0]["arguments"])["city"] == "Paris"
    # parallel_tool_calls (the default): this model writes the call more than once.
    several = client.chat.completions.create(
        model=MODEL, messages=[{"role": "user", "content": "What is the weather in Paris?"}], tools=[WEATHER],
        max_tokens=400, temperature=0)
    assert len(several.choices[0].message.tool_calls or []) >= 2


def test_none_describes_no_tools_and_calls_none(client):
    plain = client.chat.completions.create(model=MODEL, messages=[{"role": "user", "content": "Say hello."}],
                                           max_tokens=8, temperature=0)
    none = client.chat.completions.create(model=MODEL, messages=[{"role": "user", "content": "Say hello."}],
                                          tools=ALL_TOOLS, tool_choice="none", max_tokens=8, temperature=0)
    assert none.choices[0].message.tool_calls is None
    assert none.usage.prompt_tokens == plain.usage.prompt_tokens
    assert none.choices[0].message.content == plain.choices[0].message.content


def test_two_turns_with_a_tool_result(client):
    messages = [{"role": "user", "content": "What is the weather in Paris?"}]
    first = client.chat.completions.create(model=MODEL, messages=messages, tools=[WEATHER], tool_choice="required",
                                           max_tokens=100, temperature=0)
    call = first.choices[0].message.tool_calls[0]
    messages.append(first.choices[0].message.model_dump(exclude_none=True))
    messages.append({"role": "tool", "tool_call_id": call.id, "content": json.dumps({"temperature": 18, "sky": "clear"})})
    second = client.chat.completions.create(model=MODEL, messages=messages, tools=[WEATHER], max_tokens=24,
                                            temperature=0, parallel_tool_calls=False)
    assert second.choices[0].message.content or second.choices[0].message.tool_calls
    assert second.usage.prompt_tokens > first.usage.prompt_tokens + 20  # the call and its result were read


def test_ollama_chat_with_tools(server):
    client = ollama.Client(host=server.url)
    reply = client.chat(model=MODEL, messages=[{"role": "user", "content": "What is the weather in Paris?"}],
                        tools=[WEATHER], options={"temperature": 0, "num_predict": 400})
    assert reply.message.tool_calls, reply
    call = reply.message.tool_calls[0]
    assert call.function.name == "get_weather"
    jsonschema.validate(dict(call.function.arguments), SCHEMAS["get_weather"])
    # A tool result goes back as Ollama sends it (no tool_call_id).
    follow = client.chat(model=MODEL, messages=[
        {"role": "user", "content": "What is the weather in Paris?"},
        {"role": "assistant", "content": "", "tool_calls": [{"function": {"name": "get_weather",
                                                                          "arguments": {"city": "Paris"}}}]},
        {"role": "tool", "content": "18 degrees, clear"}], tools=[WEATHER], options={"num_predict": 8})
    assert follow.done


@pytest.mark.parametrize("body, param, words", [
    ({"tools": [{"type": "function", "function": {"name": "f", "strict": True, "parameters": {
        "type": "object", "properties": {"x": {"type": "array", "uniqueItems": True}}}}}]},
     "tools[0].function.parameters", "uniqueItems"),
    ({"tools": [WEATHER], "tool_choice": {"type": "function", "function": {"name": "launch"}}},
     "tool_choice", "launch"),
    ({"tools": [WEATHER], "messages": [{"role": "user", "content": "Hi"}, {"role": "tool", "content": "x"}]},
     "messages[1].tool_call_id", "tool_call_id"),
    ({"tools": [WEATHER, WEATHER]}, "tools[1].function.name", "get_weather"),
    ({"tools": [WEATHER], "response_format": {"type": "json_object"}}, "response_format", "tools"),
    ({"logit_bias": {"abc": 5}}, "logit_bias", "token ids"),
    ({"logit_bias": {"10": 150}}, "logit_bias", "[-100, 100]"),
])
def test_bad_tool_requests_are_400_naming_the_field(server, body, param, words):
    request = {"model": MODEL, "messages": [{"role": "user", "content": "Hi"}], "max_tokens": 4, **body}
    response = requests.post(server.url + "/v1/chat/completions", json=request)
    assert response.status_code == 400, response.text
    error = response.json()["error"]
    assert error["param"] == param and words in error["message"], error


def test_logit_bias_bans_a_token(server):
    prompt = "The sea is"
    # The likeliest next token's id: Ollama's generate returns the tokens as "context".
    raw = requests.post(server.url + "/api/generate", json={"model": MODEL, "prompt": prompt, "raw": True,
                                                            "stream": False,
                                                            "options": {"temperature": 0, "num_predict": 1}}).json()
    favourite = raw["context"][-1]
    favourite_text = raw["response"]

    def first_tokens(bias):
        texts = []
        for seed in range(25):
            body = {"model": MODEL, "prompt": prompt, "max_tokens": 1, "temperature": 1, "n": 8, "seed": seed,
                    "logit_bias": bias}
            reply = requests.post(server.url + "/v1/completions", json=body)
            assert reply.status_code == 200, reply.text
            texts += [c["text"] for c in reply.json()["choices"]]
        return texts

    unbiased = first_tokens({})
    assert unbiased.count(favourite_text) >= 20  # the control: common without the bias
    banned = first_tokens({str(favourite): -100})
    assert len(banned) == 200 and favourite_text not in banned
    forced = requests.post(server.url + "/v1/completions", json={
        "model": MODEL, "prompt": prompt, "max_tokens": 1, "temperature": 1, "logit_bias": {"1000": 100}}).json()
    alone = requests.post(server.url + "/v1/completions", json={
        "model": MODEL, "prompt": [1000], "max_tokens": 1, "echo": True, "temperature": 0}).json()
    assert alone["choices"][0]["text"].startswith(forced["choices"][0]["text"])


def test_documented_fields_are_honoured_or_refused_by_name(client, server):
    messages = [{"role": "user", "content": "Hi"}]
    reply = client.chat.completions.create(model=MODEL, messages=messages, max_completion_tokens=3, user="u-1",
                                           service_tier="auto", store=False, metadata={"team": "a"},
                                           extra_body={"prompt_cache_key": "k", "safety_identifier": "s"})
    assert reply.usage.completion_tokens <= 3
    for field, value in (("audio", {"voice": "alloy", "format": "mp3"}), ("modalities", ["audio"]),
                         ("reasoning_effort", "max"), ("web_search_options", {}), ("service_tier", "gold"),
                         ("verbosity", "low")):
        body = {"model": MODEL, "messages": messages, "max_tokens": 2, field: value}
        response = requests.post(server.url + "/v1/chat/completions", json=body)
        assert response.status_code == 400, (field, response.text)
        assert response.json()["error"]["param"] == field


def test_top_logprobs_on_a_streamed_chat(client):
    stream = client.chat.completions.create(model=MODEL, messages=[{"role": "user", "content": "Count to three."}],
                                            max_tokens=5, temperature=0, logprobs=True, top_logprobs=3, stream=True)
    entries = [e for chunk in stream if chunk.choices and chunk.choices[0].logprobs
               for e in chunk.choices[0].logprobs.content]
    assert len(entries) == 5
    assert all(len(e.top_logprobs) == 3 and e.top_logprobs[0].logprob >= e.logprob - 1e-6 for e in entries)
