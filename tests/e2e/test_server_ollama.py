"""`tokenmill serve` through the official ollama client: chat and generate (streamed as
newline-delimited JSON by default, or whole), tags, show, ps and version."""
import json

import ollama
import pytest
import requests

MODEL = "gemma-3-270m-q4_k_m"
GREEDY = {"temperature": 0, "num_predict": 8}


@pytest.fixture(scope="module")
def client(server):
    return ollama.Client(host=server.url, timeout=120)


def assert_timings(response):
    assert response.done is True
    assert response.done_reason in ("stop", "length")
    assert response.prompt_eval_count > 0
    assert 1 <= response.eval_count <= 8
    assert response.total_duration > 0
    assert response.prompt_eval_duration > 0
    assert response.eval_duration >= 0
    assert response.total_duration >= response.prompt_eval_duration
    assert response.load_duration is not None


def test_chat(client):
    response = client.chat(model=MODEL, messages=[{"role": "user", "content": "Name a color."}], options=GREEDY)
    assert response.model == MODEL
    assert response.message.role == "assistant"
    assert response.message.content
    assert_timings(response)


def test_chat_stream_matches_whole(client):
    messages = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Say something."}]
    whole = client.chat(model=MODEL, messages=messages, options=GREEDY)
    parts = list(client.chat(model=MODEL, messages=messages, options=GREEDY, stream=True))
    assert all(not p.done for p in parts[:-1]) and parts[-1].done
    assert "".join(p.message.content for p in parts) == whole.message.content
    assert parts[-1].eval_count == whole.eval_count


def test_generate(client):
    response = client.generate(model=MODEL, prompt="Why is the sky blue?", options=GREEDY)
    assert response.response
    assert_timings(response)
    assert response.context and len(response.context) >= response.prompt_eval_count


def test_generate_stream_and_raw(client):
    parts = list(client.generate(model=MODEL, prompt="The capital of France is", raw=True, options=GREEDY,
                                 stream=True))
    assert parts[-1].done
    text = "".join(p.response for p in parts)
    whole = client.generate(model=MODEL, prompt="The capital of France is", raw=True, options=GREEDY)
    assert text == whole.response


def test_generate_stop_and_num_predict(client):
    prompt = "Count: one, two, three, four, five,"
    free = client.generate(model=MODEL, prompt=prompt, raw=True, options={"temperature": 0, "num_predict": 16,
                                                                          "repeat_penalty": 1.0}).response
    stop = free[len(free) // 2:len(free) // 2 + 3]
    stopped = client.generate(model=MODEL, prompt=prompt, raw=True,
                              options={"temperature": 0, "num_predict": 16, "repeat_penalty": 1.0, "stop": [stop]})
    assert stop not in stopped.response
    assert stopped.response == free[:free.index(stop)]
    assert stopped.done_reason == "stop"


def test_ndjson_wire_format(server):
    response = requests.post(server.url + "/api/generate",
                             json={"model": MODEL, "prompt": "Hello", "options": GREEDY}, stream=True)
    assert response.headers["Content-Type"] == "application/x-ndjson"
    lines = [json.loads(line) for line in response.iter_lines() if line]
    assert lines[-1]["done"] is True
    assert all(line["done"] is False for line in lines[:-1])
    assert all(isinstance(line[key], int) for key in ("total_duration", "eval_duration", "prompt_eval_duration")
               for line in lines[-1:])


def test_empty_prompt_loads(client):
    response = client.generate(model=MODEL, prompt="")
    assert response.done and response.done_reason == "load"


def test_tags_show_ps_version(server, client):
    models = client.list().models
    assert [m.model for m in models] == [MODEL]
    assert models[0].size > 100_000_000
    assert models[0].details.format == "gguf"
    assert models[0].details.family == "gemma3"
    assert models[0].details.quantization_level == "Q4_K_M"

    show = client.show(MODEL)
    assert "start_of_turn" in show.template
    assert show.modelinfo["general.architecture"] == "gemma3"
    assert show.modelinfo["general.parameter_count"] > 100_000_000
    assert show.details.parameter_size.endswith("M")

    running = client.ps().models
    assert [m.model for m in running] == [MODEL]
    assert running[0].context_length > 0

    version = requests.get(server.url + "/api/version").json()
    assert isinstance(version["version"], str)


def test_latest_tag_is_accepted(client):
    response = client.generate(model=MODEL + ":latest", prompt="Hi", options={"num_predict": 1})
    assert response.done


def test_unknown_model_raises(client):
    with pytest.raises(ollama.ResponseError) as info:
        client.chat(model="nope", messages=[{"role": "user", "content": "x"}])
    assert info.value.status_code == 404


def test_generate_context_continues(client):
    first = client.generate(model=MODEL, prompt="My name is Ada.", options=GREEDY)
    second = client.generate(model=MODEL, prompt="What is my name?", context=first.context, options=GREEDY)
    assert second.done
    assert second.prompt_eval_count > len(first.context)


def test_root_heartbeat(server):
    assert requests.get(server.url + "/").text == "tokenmill is running"
    head = requests.head(server.url + "/")  # the ollama CLI's heartbeat
    assert head.status_code == 200 and head.content == b""
    assert int(head.headers["Content-Length"]) > 0


def test_format_json(client):
    # Ollama's format "json": the reply is one JSON object (or valid JSON up to the limit).
    closed = 0
    for seed in (1, 2, 3):
        response = client.chat(model=MODEL, messages=[{"role": "user", "content": "Give a JSON object with a name."}],
                               format="json", options={"temperature": 1.0, "seed": seed, "num_predict": 200})
        assert response.message.content.lstrip().startswith("{")
        if response.done_reason == "stop":
            assert isinstance(json.loads(response.message.content), dict)
            closed += 1
    assert closed >= 1



def test_format_schema(client):
    # Ollama's format as a JSON schema: the reply validates against it.
    schema = {"type": "object", "properties": {"city": {"type": "string"}, "population": {"type": "integer"},
                                               "capital": {"type": "boolean"}},
              "required": ["city", "population", "capital"]}
    response = client.chat(model=MODEL, messages=[{"role": "user", "content": "Tell me about Paris as JSON."}],
                           format=schema, options={"temperature": 0, "num_predict": 200})
    assert response.done_reason == "stop"
    reply = json.loads(response.message.content)
    assert list(reply) == ["city", "population", "capital"]
    assert isinstance(reply["city"], str) and isinstance(reply["population"], int)
    assert isinstance(reply["capital"], bool)
    with pytest.raises(ollama.ResponseError) as error:
        client.generate(model=MODEL, prompt="x", format={"type": "object", "properties": {"a": {"allOf": []}}},
                        options={"num_predict": 2})
    assert "'allOf' at $.properties.a must be a non-empty array" in str(error.value)
