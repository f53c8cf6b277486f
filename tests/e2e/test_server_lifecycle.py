"""The server under stress and at its edges: a client that leaves mid-stream, many streams
at once, keep-alive, API keys, and a graceful SIGTERM."""
import concurrent.futures
import json
import re
import signal
import subprocess
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


def test_q8_0_kv_cache_serves_streams_in_more_positions(tokenmill, default_model):
    f16 = start_server(tokenmill, default_model, "-t", "1", "--kv-memory", "64", "--no-window-kv")
    f16_log = f16.log()
    assert f16.stop() == 0
    process = start_server(tokenmill, default_model, "-t", "2", "--kv-memory", "64", "--no-window-kv",
                           "--kv-type", "q8_0")
    try:
        log = process.log()
        assert "(q8_0)" in log and "(f16)" in f16_log, log
        positions = lambda text: int(re.search(r"(\d+) positions over all sequences", text).group(1))
        # 34 bytes per 32 values instead of 64: 1.88x the positions in the same memory.
        assert positions(log) * 100 >= positions(f16_log) * 187, (log, f16_log)

        client = openai.OpenAI(base_url=process.url + "/v1", api_key="none", max_retries=0)

        def ask(i):
            return client.chat.completions.create(
                model=MODEL, messages=[{"role": "user", "content": f"Count from {i} to {i + 5}."}],
                max_tokens=16, temperature=0)

        with concurrent.futures.ThreadPoolExecutor(4) as pool:
            replies = list(pool.map(ask, range(4)))
        for reply in replies:
            assert reply.choices[0].message.content.strip()
            assert reply.usage.completion_tokens == 16 or reply.choices[0].finish_reason == "stop"
        # Alone, a request gives the tokens it gave in the batch (greedy, batch-invariant).
        assert ask(2).choices[0].message.content == replies[2].choices[0].message.content
    finally:
        assert process.stop() == 0


def test_unknown_kv_type_is_refused(tokenmill, default_model):
    result = subprocess.run([tokenmill, "serve", "-m", default_model, "--kv-type", "q4_0"], capture_output=True,
                            text=True, timeout=60)
    assert result.returncode != 0
    assert "kv-type" in result.stderr and "q8_0" in result.stderr, result.stderr


def test_kv_cache_larger_than_memory_is_refused_at_start(tokenmill, default_model):
    # The cache is committed at start: 16 TiB cannot be, and the error names the flags.
    result = subprocess.run([tokenmill, "serve", "-m", default_model, "--port", "0", "--kv-memory", str(1 << 24)],
                            capture_output=True, text=True, timeout=60)
    assert result.returncode != 0
    assert "KV cache needs" in result.stderr and "--kv-memory" in result.stderr, result.stderr
