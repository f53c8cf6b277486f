"""OpenAI's stored completions with the official client: "store": true keeps the request
and answer; list (by model and metadata), retrieve, messages, update, delete."""
import openai
import pytest
import requests

from conftest import start_server


@pytest.fixture(scope="module")
def stored_server(tokenmill, default_model, tmp_path_factory):
    process = start_server(tokenmill, default_model, "-t", "2", "--data-dir", str(tmp_path_factory.mktemp("data")))
    yield process
    assert process.stop() == 0, process.log()


@pytest.fixture(scope="module")
def client(stored_server):
    return openai.OpenAI(base_url=stored_server.url + "/v1", api_key="unused", max_retries=0)


def ask(client, content, **kwargs):
    return client.chat.completions.create(model="default", max_tokens=8, temperature=0,
                                          messages=[{"role": "system", "content": "Be brief."},
                                                    {"role": "user", "content": content}], **kwargs)


def test_store_list_retrieve_messages_update_delete(client):
    first = ask(client, "Name a tree.", store=True, metadata={"team": "search", "run": "1"})
    second = ask(client, "Name a bird.", store=True, metadata={"team": "ads"})
    ask(client, "Not stored.")
    listed = [c.id for c in client.chat.completions.list(limit=100)]
    assert first.id in listed and second.id in listed and len(listed) == 2
    assert [c.id for c in client.chat.completions.list(metadata={"team": "search"})] == [first.id]
    assert [c.id for c in client.chat.completions.list(model="nothing-like-it")] == []
    assert [c.id for c in client.chat.completions.list(order="asc")] == [first.id, second.id]

    got = client.chat.completions.retrieve(first.id)
    assert got.choices[0].message.content == first.choices[0].message.content
    assert got.metadata == {"team": "search", "run": "1"}
    messages = list(client.chat.completions.messages.list(first.id))
    assert [(m.role, m.content) for m in messages] == [("system", "Be brief."), ("user", "Name a tree.")]

    updated = client.chat.completions.update(first.id, metadata={"team": "archive"})
    assert updated.metadata == {"team": "archive"}
    assert [c.id for c in client.chat.completions.list(metadata={"team": "archive"})] == [first.id]

    deleted = client.chat.completions.delete(second.id)
    assert deleted.deleted and deleted.id == second.id
    with pytest.raises(openai.NotFoundError):
        client.chat.completions.retrieve(second.id)
    with pytest.raises(openai.NotFoundError):
        client.chat.completions.delete(second.id)


def test_a_streamed_answer_is_stored_whole(client):
    stream = client.chat.completions.create(model="default", max_tokens=8, temperature=0, stream=True, store=True,
                                            messages=[{"role": "user", "content": "Count to three."}])
    chunks = list(stream)
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    got = client.chat.completions.retrieve(chunks[0].id)
    assert got.choices[0].message.content == text and got.choices[0].finish_reason is not None


def test_store_without_a_data_directory_is_refused(tokenmill, default_model):
    process = start_server(tokenmill, default_model, "-t", "2", "--no-batch-api")
    try:
        body = {"model": "default", "messages": [{"role": "user", "content": "Hi"}], "max_tokens": 2, "store": True}
        answer = requests.post(process.url + "/v1/chat/completions", json=body)
        assert answer.status_code == 400 and answer.json()["error"]["param"] == "store"
        assert requests.get(process.url + "/v1/chat/completions").status_code == 404
    finally:
        assert process.stop() == 0
