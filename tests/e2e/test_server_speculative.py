"""Speculative decoding through the real server and the official openai client: drafts
(n-gram, OpenAI Predicted Outputs, a draft model) change no token, the usage and the
Prometheus counters report them, and bad predictions, flags or draft models get clear
errors."""
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
    (["--draft-max", "0"], "--draft-max"),
    (["--draft-max", "1000"], "--draft-max"),
    (["--spec-ngram-min", "5", "--spec-ngram-max", "2"], "ngram_min <= ngram_max"),
])
def test_bad_spec_flags_are_refused(tokenmill, default_model, flags, message):
    result = run([tokenmill, "serve", "-m", default_model, "--port", "0", *flags], timeout=120)
    assert result.returncode != 0
    assert message in result.stderr


@pytest.fixture(scope="module")
def draft_model(tokenmill, default_model, tmp_path_factory):
    """The default model requantized to Q4_0: the same vocabulary, other weights."""
    path = tmp_path_factory.mktemp("draft") / "draft-q4_0.gguf"
    done = run([tokenmill, "quantize", default_model, str(path), "Q4_0"], timeout=300)
    assert done.returncode == 0, done.stderr
    return path


def test_a_draft_model_server_answers_as_plain_decoding(tokenmill, default_model, draft_model):
    """`serve --draft-model`: the start line names draft speculation, greedy and seeded
    answers equal those without drafts, and the draft's cache is counted in /api/ps."""
    from conftest import start_server
    server = start_server(tokenmill, default_model, "-t", "2", "--draft-model", str(draft_model))
    try:
        assert "speculation draft" in server.log()
        client = openai.OpenAI(base_url=server.url + "/v1", api_key="unused", max_retries=0)
        for kwargs in ({}, {"temperature": 0.8, "seed": 11}):
            spec = chat(client, COPY, **kwargs).choices[0].message.content
            plain = chat(client, COPY, extra_body={"speculative": False}, **kwargs).choices[0].message.content
            assert spec == plain
        counters = spec_counters(server)
        assert counters["num_accepted_tokens"] <= counters["num_draft_tokens"]
    finally:
        assert server.stop() == 0, server.log()


def test_run_and_bench_take_a_draft_model(tokenmill, default_model, draft_model):
    args = ["-m", default_model, "-t", "2", "-p", "The river town of Alder Bend", "-n", "24", "--temp", "0"]
    with_draft = run([tokenmill, "run", *args, "--draft-model", str(draft_model)], timeout=300)
    plain = run([tokenmill, "run", *args, "--spec", "off"], timeout=300)
    assert with_draft.returncode == 0, with_draft.stderr
    assert with_draft.stdout == plain.stdout
    bench = run([tokenmill, "bench", "-m", default_model, "-t", "2", "-r", "1", "-n", "16",
                 "--draft-model", str(draft_model)], timeout=300)
    assert bench.returncode == 0, bench.stderr
    assert "acceptance" in bench.stdout


@pytest.mark.parametrize("flags, message", [
    (["--spec", "draft"], "--draft-model"),
    (["--spec", "bogus"], "--spec"),
    (["--draft-model", "/nonexistent/draft.gguf"], "--draft-model"),
    (["--draft-model", "EMBEDDING_MODEL"], "--draft-model"),
])
def test_bad_draft_models_are_refused(tokenmill, default_model, flags, message):
    from conftest import ROOT
    flags = [str(ROOT / "models" / "all-minilm-l6-v2-f16.gguf") if f == "EMBEDDING_MODEL" else f for f in flags]
    result = run([tokenmill, "serve", "-m", default_model, "--port", "0", *flags], timeout=120)
    assert result.returncode != 0
    assert message in result.stderr, result.stderr
    assert len(result.stderr.strip().splitlines()) <= 3, result.stderr
