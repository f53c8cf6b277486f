"""Bad requests get OpenAI-shaped errors with the right status codes, and never hurt the
server: bad JSON, unknown models, limits on max_tokens, n, top_logprobs, the prompt and
the body size, unknown routes and methods."""
import socket

import openai
import pytest
import requests

MODEL = "gemma-3-270m-q4_k_m"
MESSAGES = [{"role": "user", "content": "Hi"}]


@pytest.fixture(scope="module")
def client(server):
    return openai.OpenAI(base_url=server.url + "/v1", api_key="unused", max_retries=0, timeout=60)


def assert_openai_error(response, status, param=None, code=None):
    assert response.status_code == status, response.text
    error = response.json()["error"]
    assert set(error) == {"message", "type", "param", "code"}
    assert isinstance(error["message"], str) and error["message"]
    assert error["type"]
    if param is not None:
        assert error["param"] == param, error
    if code is not None:
        assert error["code"] == code, error
    return error


def test_bad_json(server):
    response = requests.post(server.url + "/v1/chat/completions", data=b'{"model": "x", "messages": [',
                             headers={"Content-Type": "application/json"})
    error = assert_openai_error(response, 400)
    assert error["type"] == "invalid_request_error"
    assert "JSON" in error["message"]


def test_body_not_an_object(server):
    assert_openai_error(requests.post(server.url + "/v1/completions", json=[1, 2]), 400)


def test_unknown_model(client):
    with pytest.raises(openai.NotFoundError) as info:
        client.chat.completions.create(model="no-such-model", messages=MESSAGES, max_tokens=1)
    assert info.value.status_code == 404
    assert info.value.body["code"] == "model_not_found"
    with pytest.raises(openai.NotFoundError):
        client.models.retrieve("no-such-model")


def test_max_tokens_too_large(server, client):
    with pytest.raises(openai.BadRequestError) as info:
        client.chat.completions.create(model=MODEL, messages=MESSAGES, max_tokens=10_000_000)
    assert info.value.body["param"] == "max_tokens"
    assert "context length" in info.value.body["message"]
    response = requests.post(server.url + "/v1/completions",
                             json={"model": MODEL, "prompt": "x", "max_tokens": 0})
    assert_openai_error(response, 400, param="max_tokens")


def test_prompt_longer_than_context(server):
    long_prompt = "word " * 20000  # beyond the server's 8192-token context
    response = requests.post(server.url + "/v1/completions", json={"model": MODEL, "prompt": long_prompt})
    error = assert_openai_error(response, 400, code="context_length_exceeded")
    assert "maximum context length" in error["message"]


@pytest.mark.parametrize("field,value,param", [
    ("n", 9, "n"),
    ("n", 0, "n"),
    ("temperature", -1, "temperature"),
    ("temperature", "hot", "temperature"),
    ("top_p", 1.5, "top_p"),
    ("stop", 5, "stop"),
    ("stop", ["a"] * 17, "stop"),
    ("messages", [], "messages"),
    ("messages", [{"content": "no role"}], "messages[0].role"),
    ("logprobs", "yes", "logprobs"),
    ("top_logprobs", 21, "top_logprobs"),
])
def test_invalid_parameters(server, field, value, param):
    body = {"model": MODEL, "messages": MESSAGES, "max_tokens": 1, "logprobs": True, field: value}
    error = assert_openai_error(requests.post(server.url + "/v1/chat/completions", json=body), 400, param=param)
    assert param.split(".")[-1].split("[")[0] in error["message"]


def test_top_logprobs_needs_logprobs(server):
    body = {"model": MODEL, "messages": MESSAGES, "max_tokens": 1, "top_logprobs": 2}
    assert_openai_error(requests.post(server.url + "/v1/chat/completions", json=body), 400, param="top_logprobs")


def test_body_too_large(server):
    body = b'{"prompt": "' + b"a" * (5 << 20) + b'"}'  # over the 4 MiB default
    response = requests.post(server.url + "/v1/completions", data=body, headers={"Content-Type": "application/json"})
    assert_openai_error(response, 413)
    assert requests.get(server.url + "/health").status_code == 200


def test_unknown_route_and_method(server):
    assert_openai_error(requests.get(server.url + "/v1/nothing"), 404)
    response = requests.get(server.url + "/v1/completions")
    assert_openai_error(response, 405)
    assert response.headers["Allow"] == "POST"


def test_malformed_http_is_answered_400(server):
    host, port = server.url.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=10) as s:
        s.sendall(b"THIS IS NOT HTTP\r\n\r\n")
        reply = s.recv(4096)
    assert reply.startswith(b"HTTP/1.1 400")
    assert requests.get(server.url + "/health").status_code == 200


def test_ollama_errors_use_ollama_shape(server):
    response = requests.post(server.url + "/api/chat", json={"model": "no-such-model", "messages": MESSAGES})
    assert response.status_code == 404
    assert "no-such-model" in response.json()["error"]
    response = requests.post(server.url + "/api/generate", data=b"{oops")
    assert response.status_code == 400
    assert isinstance(response.json()["error"], str)


def test_numbers_beyond_a_double_are_400(server):
    """Once answered 500 (the JSON parser's overflow was not a parse error)."""
    body = b'{"model": "default", "prompt": "Hi", "max_tokens": 1e999}'
    response = requests.post(server.url + "/v1/completions", data=body, headers={"Content-Type": "application/json"})
    assert_openai_error(response, 400)
    response = requests.post(server.url + "/api/generate", data=b'{"model": "default", "prompt": "x", "options": '
                                                                 b'{"seed": 123456789012345678901234567890e999}}')
    assert response.status_code == 400 and isinstance(response.json()["error"], str)


def test_ollama_num_predict_zero_is_400(server):
    response = requests.post(server.url + "/api/generate",
                             json={"model": "default", "prompt": "x", "options": {"num_predict": 0}})
    assert response.status_code == 400
    assert "num_predict" in response.json()["error"]
