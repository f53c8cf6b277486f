"""Embeddings through the official openai and ollama clients: all-MiniLM-L6-v2 (converted
by scripts/setup) served beside the chat model, checked against sentence-transformers'
vectors (tests/fixtures/embeddings/minilm.json, from tools/make_embedding_fixtures.py)."""
import base64
import concurrent.futures
import json
import math
import pathlib
import struct
import time

import ollama
import openai
import pytest
import requests

from conftest import ROOT, run, start_server

EMBEDDING_MODEL = ROOT / "models" / "all-minilm-l6-v2-f16.gguf"
NAME = "all-minilm-l6-v2-f16"
FIXTURE = json.loads((ROOT / "tests" / "fixtures" / "embeddings" / "minilm.json").read_text())


def cosine(a, b):
    return sum(x * y for x, y in zip(a, b)) / math.sqrt(sum(x * x for x in a) * sum(y * y for y in b))


@pytest.fixture(scope="module")
def embedding_server(tokenmill, default_model, tmp_path_factory):
    assert EMBEDDING_MODEL.exists(), "scripts/setup converts all-MiniLM-L6-v2 to " + str(EMBEDDING_MODEL)
    process = start_server(tokenmill, default_model, "-t", "2", "--embedding-model", str(EMBEDDING_MODEL),
                           "--data-dir", str(tmp_path_factory.mktemp("data")))
    yield process
    assert process.stop() == 0, process.log()


@pytest.fixture(scope="module")
def client(embedding_server):
    return openai.OpenAI(base_url=embedding_server.url + "/v1", api_key="none", max_retries=0)


def test_matches_sentence_transformers(client):
    texts = [case["text"] for case in FIXTURE["cases"]]
    reply = client.embeddings.create(model=NAME, input=texts, encoding_format="float")
    assert [d.index for d in reply.data] == list(range(len(texts)))
    for case, data in zip(FIXTURE["cases"], reply.data):
        assert len(data.embedding) == 384
        assert cosine(case["embedding"], data.embedding) >= 0.9999, case["text"]
        assert abs(math.sqrt(sum(x * x for x in data.embedding)) - 1) < 1e-5  # normalized
    assert reply.usage.prompt_tokens == reply.usage.total_tokens > len(texts) * 2


def test_base64_and_float_agree_and_batches_are_invariant(client, embedding_server):
    text = FIXTURE["cases"][4]["text"]
    alone = client.embeddings.create(model=NAME, input=text, encoding_format="float").data[0].embedding
    batched = client.embeddings.create(model=NAME, input=["first", text, "last one"],
                                       encoding_format="float").data[1].embedding
    assert alone == batched  # bit for bit: other inputs in the batch change nothing
    raw = requests.post(embedding_server.url + "/v1/embeddings",
                        json={"model": NAME, "input": text, "encoding_format": "base64"}).json()
    packed = base64.b64decode(raw["data"][0]["embedding"])
    assert list(struct.unpack(f"<{len(packed) // 4}f", packed)) == pytest.approx(alone, abs=0)
    # The openai client asks for base64 by default and decodes it itself.
    assert client.embeddings.create(model=NAME, input=text).data[0].embedding == pytest.approx(alone, abs=1e-7)
    # Token ids in, as OpenAI allows.
    ids = requests.post(embedding_server.url + "/v1/embeddings", json={"model": NAME, "input": [[101, 7592, 102]]})
    assert ids.status_code == 200 and len(ids.json()["data"][0]["embedding"]) == 384


def test_ollama_embed_and_legacy_embeddings(embedding_server, client):
    o = ollama.Client(host=embedding_server.url)
    reply = o.embed(model=NAME, input=["The cat sits on the mat.", "A dog is playing in the park."])
    assert len(reply.embeddings) == 2 and len(reply.embeddings[0]) == 384
    assert cosine(reply.embeddings[0], FIXTURE["cases"][0]["embedding"]) >= 0.9999
    legacy = o.embeddings(model=NAME, prompt="The cat sits on the mat.")
    assert cosine(legacy.embedding, FIXTURE["cases"][0]["embedding"]) >= 0.9999
    # Ollama truncates an input over the context by default; OpenAI's API refuses it.
    long_text = "word " * 1000
    assert len(o.embed(model=NAME, input=long_text).embeddings[0]) == 384
    with pytest.raises(openai.BadRequestError) as error:
        client.embeddings.create(model=NAME, input=long_text)
    assert error.value.body["code"] == "context_length_exceeded"


def test_concurrent_requests_share_encoder_passes(client):
    texts = [f"sentence number {i} about topic {i % 7}" for i in range(32)]
    with concurrent.futures.ThreadPoolExecutor(8) as pool:
        vectors = list(pool.map(lambda t: client.embeddings.create(model=NAME, input=t, encoding_format="float")
                                .data[0].embedding, texts))
    alone = client.embeddings.create(model=NAME, input=texts[5], encoding_format="float").data[0].embedding
    assert vectors[5] == alone


def test_models_lists_both(client):
    ids = {m.id for m in client.models.list().data}
    assert {NAME, "gemma-3-270m-q4_k_m"} <= ids
    assert client.models.retrieve(NAME).id == NAME


@pytest.mark.parametrize("body, status, param", [
    ({"model": NAME}, 400, "input"),
    ({"model": NAME, "input": ""}, 400, "input"),
    ({"model": NAME, "input": []}, 400, "input"),
    ({"model": NAME, "input": [1.5]}, 400, "input"),
    ({"model": NAME, "input": [[999999]]}, 400, "input[0]"),
    ({"model": NAME, "input": "x", "encoding_format": "int8"}, 400, "encoding_format"),
    ({"model": NAME, "input": "x", "dimensions": 128}, 400, "dimensions"),
    ({"model": "text-embedding-3-small", "input": "x"}, 404, "model"),
    ({"input": "x"}, 400, "model"),
])
def test_bad_embedding_requests(embedding_server, body, status, param):
    response = requests.post(embedding_server.url + "/v1/embeddings", json=body)
    assert response.status_code == status, response.text
    assert response.json()["error"]["param"] == param


def test_a_server_without_an_embedding_model_says_how_to_get_one(server):
    response = requests.post(server.url + "/v1/embeddings", json={"model": "x", "input": "hi"})
    assert response.status_code == 400
    assert "--embedding-model" in response.json()["error"]["message"]


def test_a_batch_of_embeddings_gives_the_vectors_of_single_requests(client, tmp_path):
    texts = [case["text"] for case in FIXTURE["cases"]]
    lines = [json.dumps({"custom_id": f"e{i}", "method": "POST", "url": "/v1/embeddings",
                         "body": {"model": NAME, "input": text}}) for i, text in enumerate(texts)]
    lines.append(json.dumps({"custom_id": "empty", "method": "POST", "url": "/v1/embeddings",
                             "body": {"model": NAME, "input": []}}))
    path = tmp_path / "embed.jsonl"
    path.write_text("\n".join(lines) + "\n")
    uploaded = client.files.create(file=open(path, "rb"), purpose="batch")
    batch = client.batches.create(input_file_id=uploaded.id, endpoint="/v1/embeddings", completion_window="24h")
    for _ in range(600):
        batch = client.batches.retrieve(batch.id)
        if batch.status in ("completed", "failed"):
            break
        time.sleep(0.1)
    assert batch.status == "completed", batch
    assert (batch.request_counts.completed, batch.request_counts.failed) == (len(texts), 1)
    rows = {json.loads(line)["custom_id"]: json.loads(line) for line in client.files.content(batch.output_file_id).text.splitlines()}
    for i, text in enumerate(texts):
        alone = client.embeddings.create(model=NAME, input=text, encoding_format="float").data[0].embedding
        assert rows[f"e{i}"]["response"]["body"]["data"][0]["embedding"] == alone
    (failed,) = [json.loads(line) for line in client.files.content(batch.error_file_id).text.splitlines()]
    assert failed["custom_id"] == "empty" and failed["response"]["status_code"] == 400
    wrong = tmp_path / "wrong.jsonl"
    wrong.write_text(lines[0].replace(NAME, "no-such-model") + "\n")
    refused = client.batches.create(input_file_id=client.files.create(file=open(wrong, "rb"), purpose="batch").id,
                                    endpoint="/v1/embeddings", completion_window="24h")
    for _ in range(100):
        refused = client.batches.retrieve(refused.id)
        if refused.status != "validating":
            break
        time.sleep(0.1)
    assert refused.status == "failed" and refused.errors.data[0].code == "model_not_found"


def test_tokenmill_batch_runs_embedding_lines_beside_chat_lines(tokenmill, default_model, client, tmp_path):
    """`tokenmill batch --embedding-model`: /v1/embeddings lines (whatever model they name,
    like the chat lines) give the server's vectors, mixed in one file with chat lines; a
    file with embedding lines and no --embedding-model is refused naming the line."""
    texts = [case["text"] for case in FIXTURE["cases"]]
    lines = [{"custom_id": f"e{i}", "method": "POST", "url": "/v1/embeddings",
              "body": {"model": "text-embedding-3-small", "input": text}} for i, text in enumerate(texts)]
    lines.append({"custom_id": "chat", "method": "POST", "url": "/v1/chat/completions",
                  "body": {"model": "x", "max_tokens": 4, "messages": [{"role": "user", "content": "Hi"}]}})
    path = tmp_path / "mixed.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    out = tmp_path / "out.jsonl"
    done = run([tokenmill, "batch", "-m", default_model, "-t", "2", "-q", "--embedding-model", str(EMBEDDING_MODEL),
                "-i", str(path), "-o", str(out)])
    assert done.returncode == 0, done.stderr
    rows = {json.loads(line)["custom_id"]: json.loads(line) for line in out.read_text().splitlines()}
    assert sorted(rows) == sorted(line["custom_id"] for line in lines)
    for i, text in enumerate(texts):
        alone = client.embeddings.create(model=NAME, input=text, encoding_format="float").data[0].embedding
        body = rows[f"e{i}"]["response"]["body"]
        assert body["model"] == NAME and body["data"][0]["embedding"] == alone
    assert rows["chat"]["response"]["status_code"] == 200
    refused = run([tokenmill, "batch", "-m", default_model, "-t", "2", "-q", "-i", str(path),
                   "-o", str(tmp_path / "refused.jsonl")])
    assert refused.returncode != 0 and "line 1" in refused.stderr.lower(), refused.stderr


@pytest.fixture(scope="module")
def embedding_only_server(tokenmill, tmp_path_factory):
    """`tokenmill serve -m` given the embedding model itself, as Ollama and vLLM take one."""
    # An empty data home: no model store to serve beside it.
    process = start_server(tokenmill, str(EMBEDDING_MODEL), "-t", "2",
                           env={"XDG_DATA_HOME": str(tmp_path_factory.mktemp("data-home"))})
    yield process
    assert process.stop() == 0, process.log()


def test_an_embedding_model_given_to_m_is_served_as_itself(embedding_only_server, client):
    only = openai.OpenAI(base_url=embedding_only_server.url + "/v1", api_key="none", max_retries=0)
    texts = [case["text"] for case in FIXTURE["cases"]]
    reply = only.embeddings.create(model=NAME, input=texts, encoding_format="float")
    beside = client.embeddings.create(model=NAME, input=texts, encoding_format="float")
    assert [d.embedding for d in reply.data] == [d.embedding for d in beside.data]  # the same encoder, bit for bit
    assert cosine(reply.data[0].embedding, FIXTURE["cases"][0]["embedding"]) >= 0.9999
    assert [m.id for m in only.models.list().data] == [NAME]
    o = ollama.Client(host=embedding_only_server.url)
    assert cosine(o.embed(model=NAME, input=texts[0]).embeddings[0], FIXTURE["cases"][0]["embedding"]) >= 0.9999
    assert [m.model for m in o.list().models] == [NAME]
    assert requests.get(embedding_only_server.url + "/health").json()["model"] == NAME


@pytest.mark.parametrize("model", [NAME, NAME + ":latest", "default"])
def test_chat_with_an_embedding_model_is_a_400_saying_what_it_is(embedding_only_server, model):
    only = openai.OpenAI(base_url=embedding_only_server.url + "/v1", api_key="none", max_retries=0)
    with pytest.raises(openai.BadRequestError) as error:
        only.chat.completions.create(model=model, messages=[{"role": "user", "content": "Hi"}], max_tokens=4)
    assert "embedding model" in error.value.body["message"] and error.value.body["param"] == "model"
    with pytest.raises(openai.BadRequestError):
        only.completions.create(model=model, prompt="Hi", max_tokens=4)
    with pytest.raises(ollama.ResponseError) as refused:
        ollama.Client(host=embedding_only_server.url).chat(model=model, messages=[{"role": "user", "content": "Hi"}])
    assert refused.value.status_code == 400 and "embedding model" in refused.value.error
    # The server goes on answering.
    assert len(only.embeddings.create(model=NAME, input="still here").data[0].embedding) == 384


def test_run_names_an_embedding_model_as_one(tokenmill):
    done = run([tokenmill, "run", "-m", str(EMBEDDING_MODEL), "-p", "Hi", "-n", "4"])
    assert done.returncode != 0 and "embedding model" in done.stderr, done.stderr


@pytest.fixture(scope="module")
def store_server(tokenmill, default_model, tmp_path_factory):
    """A server over a model store holding a chat model and an embedding model, as
    `ollama pull all-minilm` leaves one."""
    store = tmp_path_factory.mktemp("store") / "models"
    for source, name in [(str(EMBEDDING_MODEL), "all-minilm"), (default_model, "gemma3")]:
        done = run([tokenmill, "import", source, name, "--link", "--models-dir", str(store)])
        assert done.returncode == 0, done.stderr
    process = start_server(tokenmill, None, "--models-dir", str(store), "-t", "2")
    yield process
    assert process.stop() == 0, process.log()


def test_an_embedding_model_of_the_store_is_served_by_name(store_server, client):
    texts = [case["text"] for case in FIXTURE["cases"]]
    beside = [d.embedding for d in client.embeddings.create(model=NAME, input=texts, encoding_format="float").data]
    o = ollama.Client(host=store_server.url)
    # Loaded on the first request that names it; the same encoder as --embedding-model's, bit for bit.
    assert o.embed(model="all-minilm", input=texts).embeddings == beside
    assert o.embeddings(model="all-minilm:latest", prompt=texts[0]).embedding == beside[0]
    store_client = openai.OpenAI(base_url=store_server.url + "/v1", api_key="none", max_retries=0)
    reply = store_client.embeddings.create(model="all-minilm", input=texts[1], encoding_format="float")
    assert reply.data[0].embedding == beside[1] and reply.model == "all-minilm:latest"
    assert {"all-minilm:latest", "gemma3:latest"} <= {m.id for m in store_client.models.list().data}
    # Each kind of model refuses the other kind's routes, saying what it is.
    with pytest.raises(ollama.ResponseError) as refused:
        o.chat(model="all-minilm", messages=[{"role": "user", "content": "Hi"}])
    assert refused.value.status_code == 400 and "embedding model" in refused.value.error
    with pytest.raises(openai.BadRequestError) as error:
        store_client.embeddings.create(model="gemma3", input="Hi")
    assert "chat model" in error.value.body["message"] and error.value.body["param"] == "model"
    with pytest.raises(openai.NotFoundError):
        store_client.embeddings.create(model="no-such-model", input="Hi")
    # The chat model answers beside it.
    answer = o.chat(model="gemma3", messages=[{"role": "user", "content": "Hi"}], options={"num_predict": 4})
    assert answer.message.content
    assert o.embed(model="all-minilm", input=texts[0]).embeddings[0] == beside[0]
    assert {"all-minilm:latest", "gemma3:latest"} == {m.model for m in o.ps().models}
    # keep_alive 0 unloads it once answered, as for a chat model.
    o.embed(model="all-minilm", input="bye", keep_alive=0)
    deadline = time.monotonic() + 5
    while "all-minilm:latest" in {m.model for m in o.ps().models} and time.monotonic() < deadline:
        time.sleep(0.1)
    assert [m.model for m in o.ps().models] == ["gemma3:latest"]
