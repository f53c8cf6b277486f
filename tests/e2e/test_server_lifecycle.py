"""The server under stress and at its edges: a client that leaves mid-stream, many streams
at once, keep-alive, API keys, and a graceful SIGTERM."""
import concurrent.futures
import json
import signal
import time

import openai
import pytest
import requests

from conftest import start_server

MODEL = "gemma-3-270m-q4_k_m"


def metric(server, name, **labels):
    text = requests.get(server.url + "/metrics").text
    for line in text.splitlines():
        if line.startswith("#"):
            continue
        key, _, number = line.rpartition(" ")
        wanted = name + ("{" + ",".join(f'{k}="{v}"' for k, v in labels.items()) + "}" if labels else "")
        if key == wanted:
            return float(number)
    raise KeyError(name)


def test_client_disconnect_mid_stream_cancels_request(server):
    generated_before = metric(server, "tokenmill_generation_tokens_total")
    cancelled_before = metric(server, "tokenmill_requests_total", finish_reason="cancelled")
    body = {"model": MODEL, "prompt": "Tell me a very long story.", "max_tokens": 2000, "temperature": 0,
            "stream": True, "ignore_eos": True}
    with requests.Session() as session:
        response = session.post(server.url + "/v1/completions", json=body, stream=True)
        assert response.status_code == 200
        lines = response.iter_lines()
        n_data = 0
        for line in lines:
            if line.startswith(b"data: "):
                n_data += 1
                if n_data == 3:
                    break
        response.close()  # the client goes away with the stream half read
    # The engine notices, stops the request and frees it.
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        if (metric(server, "tokenmill_requests_total", finish_reason="cancelled") > cancelled_before
                and metric(server, "tokenmill_requests_running") == 0):
            break
        time.sleep(0.1)
    assert metric(server, "tokenmill_requests_total", finish_reason="cancelled") > cancelled_before
    assert metric(server, "tokenmill_generation_tokens_total") - generated_before < 1000
    # And the server carries on.
    client = openai.OpenAI(base_url=server.url + "/v1", api_key="unused", max_retries=0)
    assert client.completions.create(model=MODEL, prompt="Hi", max_tokens=2, temperature=0).choices[0].text


def test_many_concurrent_streams(server):
    client = openai.OpenAI(base_url=server.url + "/v1", api_key="unused", max_retries=0, timeout=120)

    def one(i):
        chunks = client.chat.completions.create(model=MODEL, max_tokens=6, temperature=0, stream=True,
                                                messages=[{"role": "user", "content": f"Say the number {i}."}])
        return "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)

    with concurrent.futures.ThreadPoolExecutor(16) as pool:
        texts = list(pool.map(one, range(16)))
    assert all(texts)
    # Greedy answers do not depend on what else ran in the batch.
    assert one(3) == texts[3]


def test_keep_alive_reuses_the_connection(server):
    with requests.Session() as session:
        for _ in range(3):
            response = session.post(server.url + "/v1/completions",
                                    json={"model": MODEL, "prompt": "Hi", "max_tokens": 1, "temperature": 0})
            assert response.status_code == 200
            assert response.headers["Connection"] == "keep-alive"
        assert session.get(server.url + "/health").status_code == 200


@pytest.fixture(scope="module")
def keyed_server(tokenmill, default_model):
    process = start_server(tokenmill, default_model, "-t", "1", "--api-key", "s3cret-key")
    yield process
    assert process.stop() == 0


def test_api_key_required(keyed_server):
    url = keyed_server.url
    assert requests.get(url + "/health").status_code == 200  # health needs no key
    for path in ("/v1/models", "/api/tags", "/metrics"):
        response = requests.get(url + path)
        assert response.status_code == 401, path
        assert response.json()["error"]["code"] == "invalid_api_key" if path.startswith("/v1") else True
    wrong = requests.get(url + "/v1/models", headers={"Authorization": "Bearer s3cret-kex"})
    assert wrong.status_code == 401
    assert wrong.json()["error"]["type"] == "invalid_request_error"
    assert requests.get(url + "/v1/models", headers={"Authorization": "Bearer s3cret-key"}).status_code == 200

    with pytest.raises(openai.AuthenticationError):
        openai.OpenAI(base_url=url + "/v1", api_key="wrong", max_retries=0).models.list()
    client = openai.OpenAI(base_url=url + "/v1", api_key="s3cret-key", max_retries=0)
    assert client.completions.create(model=MODEL, prompt="Hi", max_tokens=1, temperature=0).choices


def test_sigterm_finishes_in_flight_requests_and_exits_zero(tokenmill, default_model):
    process = start_server(tokenmill, default_model, "-t", "1", env={"TOKENMILL_API_KEY": "env-key"})
    headers = {"Authorization": "Bearer env-key"}
    assert requests.get(process.url + "/v1/models").status_code == 401
    body = {"model": MODEL, "prompt": "Once upon a time", "max_tokens": 24, "temperature": 0, "stream": True,
            "ignore_eos": True}
    response = requests.post(process.url + "/v1/completions", json=body, headers=headers, stream=True)
    assert response.status_code == 200
    lines = response.iter_lines()
    first = next(line for line in lines if line.startswith(b"data: "))
    process.proc.send_signal(signal.SIGTERM)
    rest = [line for line in lines if line.startswith(b"data: ")]
    assert rest[-1] == b"data: [DONE]"
    chunks = [json.loads(line[6:]) for line in [first] + rest[:-1]]
    assert chunks[-1]["choices"][0]["finish_reason"] == "length"
    process.proc.wait(timeout=60)
    assert process.proc.returncode == 0, process.log()
    with pytest.raises(requests.ConnectionError):
        requests.get(process.url + "/health", timeout=5)
