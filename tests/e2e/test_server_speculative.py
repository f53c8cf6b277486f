"""Speculative decoding through the real server and the official openai client: drafts
(n-gram, and OpenAI Predicted Outputs) change no token, the usage and the Prometheus
counters report them, and bad predictions or flags get clear errors."""
import openai
import pytest
import requests
from prometheus_client.parser import text_string_to_metric_families

from conftest import run

PASSAGE = ("The river town of Alder Bend was founded in 1843 by ferrymen who carried grain across the Wide "
           "Water. In 1871 a stone bridge replaced the ferries, and the town grew around its market square.")
COPY = f"Repeat this text exactly:\n\n{PASSAGE}"


@pytest.fixture(scope="module")
def client(server):
    return openai.OpenAI(base_url=server.url + "/v1", api_key="unused", max_retries=0)


def spec_counters(server):
    families = {f.name: f for f in text_string_to_metric_families(requests.get(server.url + "/metrics").text)}
    out = {}
    for name in ("num_drafts", "num_draft_tokens", "num_accepted_tokens"):
        family = families[f"tokenmill_spec_decode_{name}"]
        assert family.type == "counter"
        out[name] = sum(s.value for s in family.samples if s.name.endswith("_total"))
    per_pos = families["tokenmill_spec_decode_num_accepted_tokens_per_pos"]
    out["per_position"] = {s.labels["position"]: s.value for s in per_pos.samples if s.name.endswith("_total")}
    return out


def chat(client, content, **kwargs):
    kwargs.setdefault("temperature", 0)
    return client.chat.completions.create(model="default", messages=[{"role": "user", "content": content}],
                                          max_tokens=96, **kwargs)


def test_ngram_drafts_change_no_token_and_are_counted(server, client):
    before = spec_counters(server)
    plain = chat(client, COPY, extra_body={"speculative": False})
    spec = chat(client, COPY)
    assert spec.choices[0].message.content == plain.choices[0].message.content
    assert spec.usage.completion_tokens == plain.usage.completion_tokens
    after = spec_counters(server)
    assert after["num_drafts"] > before["num_drafts"]
    accepted = after["num_accepted_tokens"] - before["num_accepted_tokens"]
    assert 0 < accepted <= after["num_draft_tokens"] - before["num_draft_tokens"]
    assert after["per_position"]["0"] >= after["per_position"].get("1", 0)


def test_streamed_and_seeded_sampled_outputs_match_plain_decoding(client):
    plain = chat(client, COPY, temperature=0.8, seed=11, extra_body={"speculative": False})
    spec = chat(client, COPY, temperature=0.8, seed=11)
    assert spec.choices[0].message.content == plain.choices[0].message.content
    streamed = client.chat.completions.create(model="default", messages=[{"role": "user", "content": COPY}],
                                              max_tokens=96, temperature=0, stream=True)
    text = "".join(chunk.choices[0].delta.content or "" for chunk in streamed if chunk.choices)
    assert text == chat(client, COPY, extra_body={"speculative": False}).choices[0].message.content


def test_predicted_outputs_are_accepted_and_reported(client):
    plain = chat(client, COPY, extra_body={"speculative": False})
    expected = plain.choices[0].message.content
    predicted = chat(client, COPY, prediction={"type": "content", "content": expected},
                     extra_body={"speculative": True})
    assert predicted.choices[0].message.content == expected
    details = predicted.usage.completion_tokens_details
    assert details.accepted_prediction_tokens > predicted.usage.completion_tokens // 2
    assert details.rejected_prediction_tokens >= 0
    # Text parts work as a string does; a wrong prediction costs nothing but its drafts.
    parts = chat(client, COPY, prediction={"type": "content", "content": [{"type": "text", "text": expected}]})
    assert parts.choices[0].message.content == expected
    wrong = chat(client, COPY, prediction={"type": "content", "content": "Nothing like the output at all. " * 8})
    assert wrong.choices[0].message.content == expected
    assert wrong.usage.completion_tokens_details.accepted_prediction_tokens < details.accepted_prediction_tokens
    # Without a prediction the details are zero.
    assert plain.usage.completion_tokens_details.accepted_prediction_tokens == 0


def test_completions_take_a_prediction_too(client):
    prompt = f"{PASSAGE}\n\nThe same text again:\n\n"
    plain = client.completions.create(model="default", prompt=prompt, max_tokens=48, temperature=0,
                                      extra_body={"speculative": False})
    predicted = client.completions.create(model="default", prompt=prompt, max_tokens=48, temperature=0,
                                          extra_body={"prediction": {"type": "content", "content": PASSAGE}})
    assert predicted.choices[0].text == plain.choices[0].text
    assert predicted.usage.completion_tokens_details.accepted_prediction_tokens > 0


@pytest.mark.parametrize("prediction, param", [
    ({"type": "file", "content": "x"}, "prediction.type"),
    ({"type": "content", "content": 42}, "prediction.content"),
    ({"type": "content", "content": [{"type": "image", "url": "x"}]}, "prediction.content[0]"),
])
def test_bad_predictions_are_refused(client, prediction, param):
    with pytest.raises(openai.BadRequestError) as info:
        chat(client, COPY, prediction=prediction)
    assert info.value.body["param"] == param


def test_empty_prediction_is_no_prediction(client):
    out = chat(client, COPY, prediction={"type": "content", "content": ""})
    assert out.usage.completion_tokens_details.accepted_prediction_tokens == 0
    assert out.usage.completion_tokens_details.rejected_prediction_tokens == 0


@pytest.mark.parametrize("flags, message", [
    (["--spec", "draft"], "--spec"),
    (["--draft-max", "0"], "--draft-max"),
    (["--draft-max", "1000"], "--draft-max"),
    (["--spec-ngram-min", "5", "--spec-ngram-max", "2"], "ngram_min <= ngram_max"),
])
def test_bad_spec_flags_are_refused(tokenmill, default_model, flags, message):
    result = run([tokenmill, "serve", "-m", default_model, "--port", "0", *flags], timeout=120)
    assert result.returncode != 0
    assert message in result.stderr
