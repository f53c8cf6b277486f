"""GET /metrics parses with prometheus_client's text parser and carries every metric the
server promises, with the right types; GET /health answers."""
import openai
import pytest
import requests
from prometheus_client.parser import text_string_to_metric_families

HISTOGRAMS = ["tokenmill_time_to_first_token_seconds", "tokenmill_inter_token_latency_seconds",
              "tokenmill_e2e_request_latency_seconds"]
GAUGES = ["tokenmill_requests_running", "tokenmill_requests_waiting", "tokenmill_kv_cache_usage_ratio"]
# prometheus_client names a counter family without its _total suffix.
COUNTERS = ["tokenmill_prompt_tokens", "tokenmill_generation_tokens", "tokenmill_prefix_cache_queries",
            "tokenmill_prefix_cache_hits", "tokenmill_preemptions", "tokenmill_requests"]


def scrape(server):
    response = requests.get(server.url + "/metrics")
    assert response.status_code == 200
    assert response.headers["Content-Type"].startswith("text/plain")
    return {family.name: family for family in text_string_to_metric_families(response.text)}


def value(families, family, sample_name, **labels):
    for sample in families[family].samples:
        if sample.name == sample_name and all(sample.labels.get(k) == v for k, v in labels.items()):
            return sample.value
    raise KeyError(sample_name)


def test_health(server):
    response = requests.get(server.url + "/health")
    assert response.status_code == 200
    assert response.json()["status"] == "ok"


@pytest.fixture(scope="module")
def after_a_request(server):
    before = scrape(server)
    client = openai.OpenAI(base_url=server.url + "/v1", api_key="unused", max_retries=0)
    client.completions.create(model="default", prompt="Metrics are", max_tokens=4, temperature=0,
                              extra_body={"ignore_eos": True})
    return before, scrape(server)


def test_metric_names_and_types(after_a_request):
    _, families = after_a_request
    for name in HISTOGRAMS:
        assert families[name].type == "histogram", name
        names = {s.name for s in families[name].samples}
        assert {name + "_bucket", name + "_sum", name + "_count"} <= names
        buckets = [s for s in families[name].samples if s.name == name + "_bucket"]
        assert buckets[-1].labels["le"] == "+Inf"
        counts = [s.value for s in buckets]
        assert counts == sorted(counts), "bucket counts are cumulative"
    for name in GAUGES:
        assert families[name].type == "gauge", name
    for name in COUNTERS:
        assert families[name].type == "counter", name
        assert all(s.name in (name + "_total", name + "_created") for s in families[name].samples)
    reasons = {s.labels["finish_reason"] for s in families["tokenmill_requests"].samples}
    assert {"stop", "length"} <= reasons


def test_metrics_count_a_request(after_a_request):
    before, after = after_a_request
    grew = lambda family, sample: value(after, family, sample) - value(before, family, sample)  # noqa: E731
    assert grew("tokenmill_generation_tokens", "tokenmill_generation_tokens_total") >= 4
    assert grew("tokenmill_prompt_tokens", "tokenmill_prompt_tokens_total") >= 3
    assert grew("tokenmill_e2e_request_latency_seconds", "tokenmill_e2e_request_latency_seconds_count") >= 1
    assert grew("tokenmill_time_to_first_token_seconds", "tokenmill_time_to_first_token_seconds_count") >= 1
    assert value(after, "tokenmill_requests", "tokenmill_requests_total", finish_reason="length") >= 1
    assert 0 <= value(after, "tokenmill_kv_cache_usage_ratio", "tokenmill_kv_cache_usage_ratio") <= 1
