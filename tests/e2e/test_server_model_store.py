"""A server over a model store, driven by the official `ollama` client: pull (with
progress), list, show, copy, delete, ps, chat on two models with both loaded, keep_alive
0 unloading one, and the two models under load from two clients at once."""
import concurrent.futures
import hashlib
import re
import subprocess
import time

import ollama
import pytest
import requests

from conftest import ROOT, run, start_server
from model_mirror import Mirror

SMALL_MODEL = ROOT / "models" / "all-minilm-l6-v2-f16.gguf"
PROMPTS = ["Name three colors.", "What is the capital of France?", "Count from one to five."]


@pytest.fixture(scope="module")
def store(tokenmill, default_model, tmp_path_factory):
    root = tmp_path_factory.mktemp("store-server")
    store = root / "store"
    q8 = root / "gemma3-q8_0.gguf"
    quantized = run([tokenmill, "quantize", default_model, str(q8), "Q8_0", "-t", "2"])
    assert quantized.returncode == 0, quantized.stderr
    for source, name in [(default_model, "gemma3:270m"), (str(q8), "gemma3:q8")]:
        result = run([tokenmill, "import", source, name, "--link", "--models-dir", str(store)])
        assert result.returncode == 0, result.stderr
    return store


@pytest.fixture(scope="module")
def mirror():
    m = Mirror()
    m.files["mini.gguf"] = SMALL_MODEL.read_bytes()
    yield m
    m.close()


@pytest.fixture(scope="module")
def store_server(tokenmill, store):
    process = start_server(tokenmill, None, "--models-dir", str(store), "-t", "2", "--keep-alive", "5m")
    yield process
    code = process.stop()
    assert code == 0, f"server exited with {code}:\n{process.log()}"


@pytest.fixture(scope="module")
def client(store_server):
    return ollama.Client(host=store_server.url)


def loaded(client):
    return sorted(m.model for m in client.ps().models)


def wait_for(predicate, seconds=5):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.1)
    return predicate()


def greedy(client, model, prompt):
    response = client.chat(model=model, messages=[{"role": "user", "content": prompt}],
                           options={"temperature": 0, "num_predict": 16, "seed": 1})
    return response.message.content


def test_pull_with_progress_then_list_show_copy_delete(client, mirror):
    size = len(mirror.files["mini.gguf"])
    sha = hashlib.sha256(mirror.files["mini.gguf"]).hexdigest()
    lines = list(client.pull(f"{mirror.url}/files/mini.gguf", stream=True))
    statuses = [line.status for line in lines]
    assert statuses[0] == "pulling manifest" and statuses[-1] == "success"
    assert "verifying sha256 digest" in statuses and "writing manifest" in statuses
    downloads = [line for line in lines if line.status.startswith("downloading")]
    assert downloads and downloads[-1].total == size and downloads[-1].completed == size
    assert all(a.completed <= b.completed for a, b in zip(downloads, downloads[1:]))

    names = [m.model for m in client.list().models]
    assert "mini:latest" in names and "gemma3:270m" in names and "gemma3:q8" in names
    mini = next(m for m in client.list().models if m.model == "mini:latest")
    assert mini.digest == sha and mini.size == size and mini.details.family == "bert"

    shown = client.show("mini")
    assert shown.details.family == "bert" and shown.modelinfo["general.architecture"] == "bert"
    gemma = client.show("gemma3:270m")
    assert gemma.details.quantization_level == "Q4_K_M" and "start_of_turn" in gemma.template
    assert "completion" in gemma.capabilities

    client.copy("mini", "mini-copy:v2")
    assert "mini-copy:v2" in [m.model for m in client.list().models]
    client.delete("mini-copy:v2")
    client.delete("mini")
    names = [m.model for m in client.list().models]
    assert "mini-copy:v2" not in names and "mini:latest" not in names
    with pytest.raises(ollama.ResponseError) as missing:
        client.delete("mini")
    assert missing.value.status_code == 404


def test_pull_errors_are_clear(store_server, mirror):
    bad = requests.post(store_server.url + "/api/pull", json={"model": f"{mirror.url}/files/none.gguf", "stream": False})
    assert bad.status_code == 404 and "404" in bad.json()["error"]
    streamed = requests.post(store_server.url + "/api/pull", json={"model": f"{mirror.url}/files/none.gguf"})
    assert streamed.status_code == 200 and "error" in streamed.text.strip().splitlines()[-1]
    escape = requests.post(store_server.url + "/api/pull", json={"model": "../../etc/passwd", "stream": False})
    assert escape.status_code == 400 and "must be" in escape.json()["error"]
    unknown = requests.post(store_server.url + "/api/chat",
                            json={"model": "no/such:model", "messages": [{"role": "user", "content": "hi"}]})
    assert unknown.status_code == 404


def test_two_models_loaded_then_keep_alive_zero_unloads_one(client, store_server):
    first = client.chat(model="gemma3:270m", messages=[{"role": "user", "content": "Hello"}],
                        options={"num_predict": 4})
    second = client.chat(model="gemma3:q8", messages=[{"role": "user", "content": "Hello"}],
                         options={"num_predict": 4})
    assert first.model == "gemma3:270m" and second.model == "gemma3:q8"
    assert loaded(client) == ["gemma3:270m", "gemma3:q8"]
    ps = {m.model: m for m in client.ps().models}
    assert ps["gemma3:q8"].details.quantization_level == "Q8_0" and ps["gemma3:q8"].size > 0
    assert ps["gemma3:q8"].digest == next(m.digest for m in client.list().models if m.model == "gemma3:q8")
    client.chat(model="gemma3:q8", messages=[{"role": "user", "content": "Bye"}], options={"num_predict": 2},
                keep_alive=0)
    assert wait_for(lambda: loaded(client) == ["gemma3:270m"]), loaded(client)
    # An empty request with keep_alive 0 unloads too, and an empty one loads again.
    client.generate(model="gemma3:270m", prompt="", keep_alive=0)
    assert wait_for(lambda: loaded(client) == []), loaded(client)
    client.generate(model="gemma3:q8", prompt="")
    assert loaded(client) == ["gemma3:q8"]
    metrics = requests.get(store_server.url + "/metrics").text
    assert 'tokenmill_requests_running{model="gemma3:q8"}' in metrics
    assert 'vllm:num_requests_running{model_name="gemma3:q8"}' in metrics


def test_two_models_under_load_answer_as_each_does_alone(client):
    alone = {(model, p): greedy(client, model, p) for model in ("gemma3:270m", "gemma3:q8") for p in PROMPTS}

    def hammer(model):
        return [(p, greedy(client, model, p)) for _ in range(2) for p in PROMPTS]

    with concurrent.futures.ThreadPoolExecutor(max_workers=2) as pool:
        results = dict(zip(("gemma3:270m", "gemma3:q8"), pool.map(hammer, ("gemma3:270m", "gemma3:q8"))))
    for model, answers in results.items():
        for prompt, text in answers:
            assert text == alone[(model, prompt)], (model, prompt)
    assert loaded(client) == ["gemma3:270m", "gemma3:q8"]


def test_max_loaded_evicts_the_least_recently_used_and_loads_happen_once(tokenmill, store):
    process = start_server(tokenmill, None, "--models-dir", str(store), "-t", "2", "--max-loaded", "1")
    try:
        client = ollama.Client(host=process.url)
        # Four requests at once for a model not loaded: one load serves them all.
        with concurrent.futures.ThreadPoolExecutor(max_workers=4) as pool:
            answers = list(pool.map(lambda p: greedy(client, "gemma3:270m", p), PROMPTS + PROMPTS[:1]))
        assert answers[0] == answers[3]
        assert len(re.findall(r"^loaded gemma3:270m ", process.log(), re.M)) == 1
        greedy(client, "gemma3:q8", PROMPTS[0])
        assert loaded(client) == ["gemma3:q8"]
        assert "unloaded gemma3:270m (the least recently used, to make room)" in process.log()
    finally:
        assert process.stop() == 0


def test_a_memory_budget_keeps_one_model_when_two_do_not_fit(tokenmill, store):
    # Each model takes its file plus a KV cache of 16384 positions: about 550-600 MiB.
    process = start_server(tokenmill, None, "--models-dir", str(store), "-t", "2", "--max-memory", "900")
    try:
        client = ollama.Client(host=process.url)
        greedy(client, "gemma3:270m", PROMPTS[0])
        greedy(client, "gemma3:q8", PROMPTS[0])
        assert loaded(client) == ["gemma3:q8"]
        assert "unloaded gemma3:270m (the least recently used, to make room)" in process.log()
    finally:
        assert process.stop() == 0
