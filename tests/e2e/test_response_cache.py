"""The exact-match response cache (--response-cache-mib): a deterministic request asked
again gets the identical body (and stream), marked x-tokenmill-cache: hit; sampled
requests are never cached; Cache-Control and "cache": false opt out; entries expire
after the TTL; the memory bound evicts the least recently used."""
import re
import time

import openai
import pytest
import requests

from conftest import start_server


@pytest.fixture(scope="module")
def cached(tokenmill, default_model):
    process = start_server(tokenmill, default_model, "-t", "2", "--response-cache-mib", "4", "--no-batch-api")
    yield process
    assert process.stop() == 0, process.log()


def chat(server, content, headers=None, **fields):
    body = {"model": "default", "messages": [{"role": "user", "content": content}], "max_tokens": 12, **fields}
    return requests.post(server.url + "/v1/chat/completions", json=body, headers=headers or {})


def metric(server, name):
    text = requests.get(server.url + "/metrics").text
    return float(re.search(rf"^{name} (\S+)$", text, re.M).group(1))


def test_a_greedy_request_asked_again_is_the_identical_answer(cached):
    first = chat(cached, "Name a fruit.", temperature=0)
    second = chat(cached, "Name a fruit.", temperature=0)
    assert first.headers["x-tokenmill-cache"] == "miss" and second.headers["x-tokenmill-cache"] == "hit"
    assert second.content == first.content
    client = openai.OpenAI(base_url=cached.url + "/v1", api_key="unused")
    third = client.chat.completions.create(model="default", messages=[{"role": "user", "content": "Name a fruit."}],
                                           max_tokens=12, temperature=0)
    assert third.id == first.json()["id"]


def test_a_stream_is_replayed_as_the_same_stream(cached):
    kwargs = dict(temperature=0, stream=True, stream_options={"include_usage": True})
    first = chat(cached, "Name a color.", **kwargs)
    second = chat(cached, "Name a color.", **kwargs)
    assert second.headers["x-tokenmill-cache"] == "hit" and second.headers["content-type"].startswith("text/event-stream")
    assert second.content == first.content and first.content.endswith(b"data: [DONE]\n\n")
    # The streamed and the whole answer are cached apart.
    assert chat(cached, "Name a color.", temperature=0).headers["x-tokenmill-cache"] == "miss"


def test_seeded_requests_are_cached_and_sampled_ones_never(cached):
    hits = metric(cached, "tokenmill_response_cache_hits_total")
    sampled = [chat(cached, "Tell me a word.", temperature=0.9) for _ in range(2)]
    assert all("x-tokenmill-cache" not in r.headers for r in sampled)
    assert sampled[0].json()["id"] != sampled[1].json()["id"]
    seeded = [chat(cached, "Tell me a word.", temperature=0.9, seed=7) for _ in range(2)]
    assert [r.headers["x-tokenmill-cache"] for r in seeded] == ["miss", "hit"]
    assert metric(cached, "tokenmill_response_cache_hits_total") == hits + 1


def test_opting_out(cached):
    no_store = chat(cached, "Opt out one.", headers={"Cache-Control": "no-store"}, temperature=0)
    assert "x-tokenmill-cache" not in no_store.headers
    assert chat(cached, "Opt out one.", temperature=0).headers["x-tokenmill-cache"] == "miss"  # nothing was stored
    assert chat(cached, "Opt out one.", temperature=0).headers["x-tokenmill-cache"] == "hit"
    # no-cache: not read, but the fresh answer replaces the entry.
    assert chat(cached, "Opt out one.", headers={"Cache-Control": "no-cache"}, temperature=0).headers[
        "x-tokenmill-cache"] == "miss"
    off = chat(cached, "Opt out one.", temperature=0, cache=False)
    assert off.status_code == 200 and "x-tokenmill-cache" not in off.headers


def test_entries_expire_and_the_bound_evicts_the_least_recently_used(tokenmill, default_model):
    # About 3 answers with logprobs fit in 0.03 MiB.
    process = start_server(tokenmill, default_model, "-t", "2", "--response-cache-mib", "0.03",
                           "--response-cache-ttl", "1.5", "--no-batch-api")
    try:
        big = dict(temperature=0, logprobs=True, top_logprobs=5, max_tokens=16)
        sizes = [len(chat(process, f"Prompt {i}.", **big).content) for i in range(6)]
        bound = 0.03 * (1 << 20)
        assert metric(process, "tokenmill_response_cache_bytes") <= bound
        assert 2 * max(sizes) < bound < sum(sizes)
        assert chat(process, "Prompt 5.", **big).headers["x-tokenmill-cache"] == "hit"   # the newest stayed
        assert chat(process, "Prompt 0.", **big).headers["x-tokenmill-cache"] == "miss"  # the oldest went
        time.sleep(1.6)
        assert chat(process, "Prompt 5.", **big).headers["x-tokenmill-cache"] == "miss"  # expired
    finally:
        assert process.stop() == 0
