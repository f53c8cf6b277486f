"""`tokenmill serve` through the official openai client: chat and completions, streaming
and not, usage with cached tokens, stop strings, logprobs, n > 1. Greedy and short, so
the whole file runs in seconds on the default model."""
import json
import math
import re

import openai
import pytest

MODEL = "gemma-3-270m-q4_k_m"
QUESTION = [{"role": "user", "content": "Name three colors."}]


@pytest.fixture(scope="module")
def client(server):
    return openai.OpenAI(base_url=server.url + "/v1", api_key="unused", max_retries=0, timeout=120)


def test_models_lists_the_served_model(client):
    models = client.models.list()
    assert [m.id for m in models.data] == [MODEL]
    assert client.models.retrieve(MODEL).id == MODEL


def test_chat_completion(client):
    response = client.chat.completions.create(model=MODEL, messages=QUESTION, max_tokens=8, temperature=0)
    assert response.object == "chat.completion"
    assert response.model == MODEL
    assert response.id.startswith("chatcmpl-")
    choice = response.choices[0]
    assert choice.index == 0
    assert choice.message.role == "assistant"
    assert choice.message.content
    assert choice.finish_reason in ("stop", "length")
    usage = response.usage
    assert usage.prompt_tokens > 5
    assert 1 <= usage.completion_tokens <= 8
    assert usage.total_tokens == usage.prompt_tokens + usage.completion_tokens
    assert usage.prompt_tokens_details.cached_tokens >= 0


def test_chat_accepts_default_names_and_max_completion_tokens(client):
    for name in ("default", "tokenmill"):
        response = client.chat.completions.create(model=name, messages=QUESTION, max_completion_tokens=2,
                                                  temperature=0)
        assert response.usage.completion_tokens <= 2
        assert response.model == MODEL


def test_chat_stream_matches_non_stream(client):
    full = client.chat.completions.create(model=MODEL, messages=QUESTION, max_tokens=10, temperature=0)
    chunks = list(client.chat.completions.create(model=MODEL, messages=QUESTION, max_tokens=10, temperature=0,
                                                 stream=True, stream_options={"include_usage": True}))
    assert all(c.object == "chat.completion.chunk" for c in chunks)
    assert chunks[0].choices[0].delta.role == "assistant"
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert text == full.choices[0].message.content
    finishes = [c.choices[0].finish_reason for c in chunks if c.choices and c.choices[0].finish_reason]
    assert finishes == [full.choices[0].finish_reason]
    # The usage chunk comes last and has no choices; the others carry usage null.
    assert chunks[-1].choices == [] and chunks[-1].usage is not None
    assert chunks[-1].usage.completion_tokens == full.usage.completion_tokens
    assert all(c.usage is None for c in chunks[:-1])


def test_completion_and_stream(client):
    prompt = "The capital of France is"
    full = client.completions.create(model=MODEL, prompt=prompt, max_tokens=8, temperature=0)
    assert full.object == "text_completion"
    assert full.choices[0].text
    assert full.usage.completion_tokens <= 8
    chunks = list(client.completions.create(model=MODEL, prompt=prompt, max_tokens=8, temperature=0, stream=True))
    assert "".join(c.choices[0].text for c in chunks if c.choices) == full.choices[0].text
    assert chunks[-1].choices[0].finish_reason == full.choices[0].finish_reason


def test_completion_echo(client):
    response = client.completions.create(model=MODEL, prompt="Once upon a time", max_tokens=4, temperature=0,
                                         echo=True)
    assert response.choices[0].text.startswith("Once upon a time")
    # Echo puts the prompt before the same continuation.
    plain = client.completions.create(model=MODEL, prompt="Once upon a time", max_tokens=4, temperature=0)
    assert response.choices[0].text == "Once upon a time" + plain.choices[0].text


def test_cached_tokens_on_repeated_prompt(client):
    # Long enough for several full 16-token KV blocks.
    system = "You are a meticulous assistant for a library. " * 30
    messages = [{"role": "system", "content": system}, {"role": "user", "content": "Recommend a book."}]
    first = client.chat.completions.create(model=MODEL, messages=messages, max_tokens=2, temperature=0)
    second = client.chat.completions.create(model=MODEL, messages=messages, max_tokens=2, temperature=0)
    assert first.usage.prompt_tokens > 200
    assert second.usage.prompt_tokens == first.usage.prompt_tokens
    cached = second.usage.prompt_tokens_details.cached_tokens
    assert cached > 0, "the second identical prompt should be served from the prefix cache"
    assert cached >= first.usage.prompt_tokens - 32
    assert cached < second.usage.prompt_tokens


def test_stop_string_is_not_in_output(client):
    prompt = "Count: one, two, three, four, five, six,"
    free = client.completions.create(model=MODEL, prompt=prompt, max_tokens=24, temperature=0).choices[0].text
    assert len(free) > 8, free
    # A stop string taken from the middle of what the model says anyway.
    stop = free[len(free) // 2:len(free) // 2 + 3]
    assert stop.strip(), free
    stopped = client.completions.create(model=MODEL, prompt=prompt, max_tokens=24, temperature=0, stop=[stop])
    text = stopped.choices[0].text
    assert stop not in text
    assert text == free[:free.index(stop)]
    assert stopped.choices[0].finish_reason == "stop"
    # Streaming gives the same text, with no partial stop string leaking.
    chunks = list(client.completions.create(model=MODEL, prompt=prompt, max_tokens=24, temperature=0,
                                            stop=stop, stream=True))
    assert "".join(c.choices[0].text for c in chunks if c.choices) == text


def test_chat_logprobs(client):
    response = client.chat.completions.create(model=MODEL, messages=QUESTION, max_tokens=5, temperature=0,
                                              logprobs=True, top_logprobs=3)
    content = response.choices[0].logprobs.content
    assert len(content) == response.usage.completion_tokens
    for item in content:
        assert item.logprob <= 0 and math.isfinite(item.logprob)
        assert bytes(item.bytes).decode("utf-8", errors="replace") == item.token or not item.token.isprintable()
        assert len(item.top_logprobs) == 3
        values = [t.logprob for t in item.top_logprobs]
        assert values == sorted(values, reverse=True)
        # Greedy picks the most likely token.
        assert item.top_logprobs[0].token == item.token
        assert abs(item.top_logprobs[0].logprob - item.logprob) < 1e-5


def test_logprobs_name_tokens_by_id_on_request(client, server):
    """vLLM's return_tokens_as_token_ids: the same logprobs, each token named "token_id:N"
    (the ids the KD trainers read), the bytes still the token's own."""
    plain = client.chat.completions.create(model=MODEL, messages=QUESTION, max_tokens=5, temperature=0,
                                           logprobs=True, top_logprobs=3)
    by_id = client.chat.completions.create(model=MODEL, messages=QUESTION, max_tokens=5, temperature=0,
                                           logprobs=True, top_logprobs=3,
                                           extra_body={"return_tokens_as_token_ids": True})
    assert by_id.choices[0].message.content == plain.choices[0].message.content
    for a, b in zip(plain.choices[0].logprobs.content, by_id.choices[0].logprobs.content):
        assert re.fullmatch(r"token_id:\d+", b.token) and b.bytes == a.bytes and b.logprob == a.logprob
        assert [t.logprob for t in a.top_logprobs] == [t.logprob for t in b.top_logprobs]
        assert all(re.fullmatch(r"token_id:\d+", t.token) for t in b.top_logprobs)
    legacy = client.completions.create(model=MODEL, prompt="The sky is", max_tokens=4, temperature=0, logprobs=2,
                                       extra_body={"return_tokens_as_token_ids": True}).choices[0].logprobs
    assert all(re.fullmatch(r"token_id:\d+", t) for t in legacy.tokens)
    assert all(re.fullmatch(r"token_id:\d+", t) for top in legacy.top_logprobs for t in top)


def test_chat_logprobs_stream(client):
    chunks = list(client.chat.completions.create(model=MODEL, messages=QUESTION, max_tokens=4, temperature=0,
                                                 logprobs=True, top_logprobs=2, stream=True))
    items = [item for c in chunks if c.choices and c.choices[0].logprobs for item in c.choices[0].logprobs.content]
    assert 1 <= len(items) <= 4
    assert all(len(item.top_logprobs) == 2 for item in items)


def test_completion_legacy_logprobs(client):
    response = client.completions.create(model=MODEL, prompt="The sky is", max_tokens=5, temperature=0, logprobs=2)
    logprobs = response.choices[0].logprobs
    n = response.usage.completion_tokens
    assert len(logprobs.tokens) == len(logprobs.token_logprobs) == len(logprobs.top_logprobs) == n
    assert all(lp <= 0 for lp in logprobs.token_logprobs)
    assert all(1 <= len(top) <= 2 for top in logprobs.top_logprobs)
    assert logprobs.text_offset == sorted(logprobs.text_offset)
    if response.choices[0].finish_reason == "length":
        assert "".join(logprobs.tokens) == response.choices[0].text


def test_n_choices(client):
    response = client.chat.completions.create(model=MODEL, messages=QUESTION, max_tokens=6, temperature=1.0,
                                              seed=7, n=3)
    assert sorted(c.index for c in response.choices) == [0, 1, 2]
    assert all(c.finish_reason in ("stop", "length") for c in response.choices)
    assert 3 <= response.usage.completion_tokens <= 18


def test_n_choices_stream(client):
    chunks = list(client.completions.create(model=MODEL, prompt="Hello", max_tokens=4, temperature=0, n=2,
                                            stream=True))
    texts = {0: "", 1: ""}
    finished = set()
    for c in chunks:
        for choice in c.choices:
            texts[choice.index] += choice.text
            if choice.finish_reason:
                finished.add(choice.index)
    assert finished == {0, 1}
    # Greedy choices of one prompt are the same text.
    assert texts[0] == texts[1] and texts[0]


def test_seed_makes_sampling_repeatable(client):
    kwargs = dict(model=MODEL, prompt="A story:", max_tokens=8, temperature=1.0, top_p=0.9, seed=1234)
    assert client.completions.create(**kwargs).choices[0].text == client.completions.create(**kwargs).choices[0].text


def test_extension_sampling_parameters(client):
    response = client.completions.create(model=MODEL, prompt="Hello", max_tokens=4, temperature=0.7,
                                         extra_body={"top_k": 20, "min_p": 0.05, "repetition_penalty": 1.1},
                                         presence_penalty=0.5, frequency_penalty=0.5, seed=3)
    assert response.usage.completion_tokens >= 1


def test_completion_prompt_as_token_ids(server, client):
    # Ollama's raw generate returns the prompt's token ids in "context".
    import requests
    prompt = "The capital of France is"
    answer = requests.post(server.url + "/api/generate", json={
        "model": MODEL, "prompt": prompt, "raw": True, "stream": False, "options": {"num_predict": 1}}).json()
    ids = answer["context"][:answer["prompt_eval_count"]]
    by_text = client.completions.create(model=MODEL, prompt=prompt, max_tokens=6, temperature=0)
    by_ids = client.completions.create(model=MODEL, prompt=ids, max_tokens=6, temperature=0)
    assert by_ids.usage.prompt_tokens == by_text.usage.prompt_tokens == len(ids)
    assert by_ids.choices[0].text == by_text.choices[0].text


def test_completion_echo_with_prompt_logprobs(server, client):
    # The scoring request of evaluation harnesses: echo + logprobs gives every prompt token
    # (the first: none) its log-probability given the tokens before it.
    import requests
    prompt = "The capital of France is"
    answer = requests.post(server.url + "/api/generate", json={
        "model": MODEL, "prompt": prompt, "raw": True, "stream": False, "options": {"num_predict": 1}}).json()
    ids = answer["context"][:answer["prompt_eval_count"]]
    generated = client.completions.create(model=MODEL, prompt=ids, max_tokens=1, temperature=0, logprobs=3)
    next_token = generated.choices[0].logprobs.tokens[0]
    next_logprob = generated.choices[0].logprobs.token_logprobs[0]
    next_id = requests.post(server.url + "/api/generate", json={
        "model": MODEL, "prompt": prompt + next_token, "raw": True, "stream": False,
        "options": {"num_predict": 1}}).json()["context"]

    scored = client.completions.create(model=MODEL, prompt=ids, max_tokens=1, temperature=0, logprobs=3, echo=True)
    lp = scored.choices[0].logprobs
    n_prompt = scored.usage.prompt_tokens
    assert len(lp.tokens) == len(lp.token_logprobs) == len(lp.top_logprobs) == len(lp.text_offset) == n_prompt + 1
    assert lp.token_logprobs[0] is None and lp.top_logprobs[0] is None
    assert all(x <= 0 for x in lp.token_logprobs[1:])
    assert all(1 <= len(top) <= 3 for top in lp.top_logprobs[1:])
    assert lp.text_offset == sorted(lp.text_offset)
    assert scored.choices[0].text.startswith(prompt)
    # The prompt's own continuation scores as it was generated.
    assert lp.tokens[-1] == next_token and lp.token_logprobs[-1] == next_logprob

    # The prompt plus that token, scored: its last token has the generated logprob.
    if next_id[:n_prompt] == ids:
        rescored = client.completions.create(model=MODEL, prompt=ids + [next_id[n_prompt]], max_tokens=1,
                                             temperature=0, logprobs=1, echo=True)
        assert rescored.choices[0].logprobs.token_logprobs[n_prompt] == next_logprob

    chunks = list(client.completions.create(model=MODEL, prompt=ids, max_tokens=1, temperature=0, logprobs=3,
                                            echo=True, stream=True))
    first = chunks[0].choices[0]
    assert first.text == scored.choices[0].text[:len(first.text)]
    assert first.logprobs.token_logprobs == lp.token_logprobs[:n_prompt]


def test_completion_with_a_list_of_prompts(client):
    # OpenAI's list form (evaluation harnesses batch their prompts this way): prompt i's
    # choice j answers as index i * n + j, each the same as that prompt alone.
    prompts = ["The capital of France is", "Two plus two equals", "Roses are red,"]
    alone = [client.completions.create(model=MODEL, prompt=p, max_tokens=6, temperature=0) for p in prompts]
    together = client.completions.create(model=MODEL, prompt=prompts, max_tokens=6, temperature=0, n=2)
    assert sorted(c.index for c in together.choices) == list(range(6))
    by_index = {c.index: c for c in together.choices}
    for i, single in enumerate(alone):
        for j in range(2):
            assert by_index[i * 2 + j].text == single.choices[0].text
            assert by_index[i * 2 + j].finish_reason == single.choices[0].finish_reason
    assert together.usage.prompt_tokens == sum(a.usage.prompt_tokens for a in alone)
    assert together.usage.completion_tokens == 2 * sum(a.usage.completion_tokens for a in alone)

    # Streamed, with echo: each choice starts with its own prompt.
    chunks = list(client.completions.create(model=MODEL, prompt=prompts, max_tokens=6, temperature=0, echo=True,
                                            stream=True, stream_options={"include_usage": True}))
    texts = {}
    for chunk in chunks:
        for choice in chunk.choices:
            texts[choice.index] = texts.get(choice.index, "") + choice.text
    assert texts == {i: prompts[i] + alone[i].choices[0].text for i in range(3)}
    assert chunks[-1].usage.prompt_tokens == together.usage.prompt_tokens


def test_completion_list_limits(client):
    with pytest.raises(openai.BadRequestError) as error:
        client.completions.create(model=MODEL, prompt=["a"] * 65, max_tokens=1)
    assert "at most 64" in str(error.value)
    with pytest.raises(openai.BadRequestError) as error:
        client.completions.create(model=MODEL, prompt=["a"] * 20, max_tokens=1, n=8)
    assert "'n' x the number of prompts" in str(error.value)
    with pytest.raises(openai.BadRequestError) as error:
        client.completions.create(model=MODEL, prompt=[[2, 818], [2, -5]], max_tokens=1)
    assert "'prompt[1]' token ids must be integers" in str(error.value)


def test_json_mode(client):
    # response_format json_object: the reply is JSON from its first byte; choices that end
    # with "stop" parse as one object (this small model's greedy answers may run to the
    # token limit instead, still valid JSON as far as they go).
    messages = [{"role": "user", "content": "Describe a cat as JSON with the fields name, age and colors."}]
    response = client.chat.completions.create(model=MODEL, messages=messages, max_tokens=300, temperature=1.0,
                                              seed=42, n=4, response_format={"type": "json_object"})
    closed = 0
    for choice in response.choices:
        assert choice.message.content.lstrip().startswith("{")
        assert choice.finish_reason in ("stop", "length")
        if choice.finish_reason == "stop":
            assert isinstance(json.loads(choice.message.content), dict)
            closed += 1
    assert closed >= 1
    # The same on /v1/completions (an extension there, as in vLLM).
    completion = client.completions.create(model=MODEL, prompt="A JSON object describing a dog:", max_tokens=40,
                                           temperature=0, extra_body={"response_format": {"type": "json_object"}})
    assert completion.choices[0].text.startswith("{")



CAT_SCHEMA = {
    "type": "object",
    "properties": {
        "name": {"type": "string"},
        "age": {"type": "integer"},
        "colors": {"type": "array", "items": {"enum": ["black", "white", "orange", "grey"]}, "minItems": 1,
                   "maxItems": 3},
    },
    "required": ["name", "age", "colors"],
    "additionalProperties": False,
}


def assert_is_cat(text):
    cat = json.loads(text)
    assert list(cat) == ["name", "age", "colors"], text  # every property, in the schema's order
    assert isinstance(cat["name"], str) and isinstance(cat["age"], int) and not isinstance(cat["age"], bool)
    assert 1 <= len(cat["colors"]) <= 3 and set(cat["colors"]) <= {"black", "white", "orange", "grey"}, text


def test_json_schema_structured_output(client):
    # response_format json_schema: every choice that ends with "stop" validates against
    # the schema (sampled and greedy; /v1/completions too, as an extension).
    messages = [{"role": "user", "content": "Describe a cat as JSON with the fields name, age and colors."}]
    response_format = {"type": "json_schema", "json_schema": {"name": "cat", "schema": CAT_SCHEMA, "strict": True}}
    response = client.chat.completions.create(model=MODEL, messages=messages, max_tokens=200, temperature=1.0,
                                              seed=7, n=4, response_format=response_format)
    closed = 0
    for choice in response.choices:
        assert choice.message.content.startswith("{")
        if choice.finish_reason == "stop":
            assert_is_cat(choice.message.content)
            closed += 1
    assert closed >= 2
    greedy = client.chat.completions.create(model=MODEL, messages=messages, max_tokens=200, temperature=0,
                                            response_format=response_format, stream=True)
    text = "".join(chunk.choices[0].delta.content or "" for chunk in greedy if chunk.choices)
    assert_is_cat(text)
    completion = client.completions.create(model=MODEL, prompt="A cat, as JSON:", max_tokens=200, temperature=0,
                                           extra_body={"response_format": response_format})
    assert completion.choices[0].finish_reason == "stop"
    assert_is_cat(completion.choices[0].text)


def test_json_schema_from_a_pydantic_model(client):
    # The openai package's parse(): the schema Pydantic writes (a nested model through
    # $defs / $ref, an optional field as anyOf with null), strict; the reply parses into
    # the model.
    import pydantic
    from typing import Optional

    class Address(pydantic.BaseModel):
        city: str
        country: str

    class Person(pydantic.BaseModel):
        name: str
        age: int
        home: Address
        nickname: Optional[str]

    parse = client.chat.completions.parse if hasattr(client.chat.completions, "parse") else client.beta.chat.completions.parse
    completion = parse(model=MODEL, messages=[{"role": "user", "content": "Invent a person, as JSON."}],
                       response_format=Person, max_tokens=200, temperature=0)
    assert completion.choices[0].finish_reason == "stop"
    person = completion.choices[0].message.parsed
    assert isinstance(person, Person) and isinstance(person.home, Address)


def test_json_schema_errors_name_the_unsupported_part(client):
    messages = [{"role": "user", "content": "x"}]
    bad = {"type": "object", "properties": {"a": {"type": "array", "uniqueItems": True}}}
    with pytest.raises(openai.BadRequestError) as error:
        client.chat.completions.create(model=MODEL, messages=messages, max_tokens=2, response_format={
            "type": "json_schema", "json_schema": {"name": "x", "schema": bad, "strict": True}})
    assert "keyword 'uniqueItems' at $.properties.a cannot be enforced" in str(error.value)
    with pytest.raises(openai.BadRequestError) as error:
        client.chat.completions.create(model=MODEL, messages=messages, max_tokens=2, response_format={
            "type": "json_schema", "json_schema": {"name": "x"}})
    assert "json_schema.schema' is required" in str(error.value)
