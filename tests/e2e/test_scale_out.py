"""tokenmill among replicas: the vllm:* metrics routers read, /ready and the drain on
SIGTERM, the replica id, HAProxy's config (checked and run with prefix affinity, a
replica killed, a rolling restart) and the Kubernetes manifests (kubernetes-validate)."""
import argparse
import pathlib
import re
import shutil
import signal
import subprocess
import sys
import time

import kubernetes_validate
import openai
import pytest
import requests
import yaml
from prometheus_client.parser import text_string_to_metric_families

from conftest import ROOT, start_server

sys.path.insert(0, str(ROOT / "bench"))
import cluster  # noqa: E402

MODEL = "gemma-3-270m-q4_k_m"
K8S = ROOT / "deploy" / "k8s"
HAPROXY_CONFIG = ROOT / "deploy" / "haproxy" / "haproxy.cfg"


def families(url):
    return {f.name: f for f in text_string_to_metric_families(requests.get(url + "/metrics").text)}


def sample(fams, family, name=None, **labels):
    for s in fams[family].samples:
        if s.name == (name or family) and all(s.labels.get(k) == v for k, v in labels.items()):
            return s
    raise KeyError((family, name, labels))


# --- metrics ---------------------------------------------------------------------------

def test_vllm_series_carry_our_values(server):
    client = openai.OpenAI(base_url=server.url + "/v1", api_key="none", max_retries=0)
    for _ in range(2):  # the second one hits the prefix cache
        client.chat.completions.create(model=MODEL, max_tokens=3, temperature=0,
                                       messages=[{"role": "system", "content": "You are terse. " * 20},
                                                 {"role": "user", "content": "Hi"}])
    f = families(server.url)
    pairs = {  # vllm family -> our family (prometheus_client names counters without _total)
        "vllm:num_requests_running": "tokenmill_requests_running",
        "vllm:num_requests_waiting": "tokenmill_requests_waiting",
        "vllm:kv_cache_usage_perc": "tokenmill_kv_cache_usage_ratio",
        "vllm:gpu_cache_usage_perc": "tokenmill_kv_cache_usage_ratio",
        "vllm:prefix_cache_queries": "tokenmill_prefix_cache_queries",
        "vllm:prefix_cache_hits": "tokenmill_prefix_cache_hits",
        "vllm:prompt_tokens": "tokenmill_prompt_tokens",
        "vllm:generation_tokens": "tokenmill_generation_tokens",
        "vllm:num_preemptions": "tokenmill_preemptions",
    }
    for theirs, ours in pairs.items():
        assert f[theirs].type == f[ours].type, theirs
        mine = f[theirs].samples[0]
        assert mine.labels == {"model_name": MODEL}, theirs
        assert mine.value == f[ours].samples[0].value, theirs
    assert sample(f, "vllm:prefix_cache_hits", "vllm:prefix_cache_hits_total").value > 0
    for name in ("time_to_first_token_seconds", "e2e_request_latency_seconds", "inter_token_latency_seconds"):
        theirs, ours = f["vllm:" + name], f["tokenmill_" + name]
        assert theirs.type == "histogram"
        assert [s.value for s in theirs.samples] == [s.value for s in ours.samples], name
        assert all(s.labels.get("model_name") == MODEL for s in theirs.samples)
    success = {s.labels["finished_reason"]: s.value for s in f["vllm:request_success"].samples
               if s.name == "vllm:request_success_total"}
    assert success["stop"] + success["length"] >= 2
    assert success["length"] == sample(f, "tokenmill_requests", "tokenmill_requests_total",
                                       finish_reason="length").value
    info = sample(f, "vllm:cache_config_info").labels
    assert info["block_size"] == "16"
    assert int(info["num_gpu_blocks"]) == sample(f, "tokenmill_kv_blocks_total").value > 0
    assert 0 <= sample(f, "vllm:kv_cache_usage_perc").value <= 1


def test_metrics_compat_none_and_replica_id(tokenmill, default_model):
    process = start_server(tokenmill, default_model, "-t", "1", "--metrics-compat", "none", "--replica-id", "east-7")
    try:
        f = families(process.url)
        assert not [name for name in f if name.startswith("vllm:")]
        assert sample(f, "tokenmill_replica_info").labels == {"replica_id": "east-7", "model_name": MODEL}
        response = requests.get(process.url + "/v1/models")
        assert response.headers["X-Tokenmill-Replica"] == "east-7"
        assert response.json()["data"][0]["replica_id"] == "east-7"
        assert openai.OpenAI(base_url=process.url + "/v1", api_key="none").models.list().data[0].id == MODEL
    finally:
        assert process.stop() == 0


def test_replica_id_defaults_to_the_host_name_and_is_checked(tokenmill, default_model, server):
    import socket
    assert requests.get(server.url + "/ready").json()["replica_id"] == socket.gethostname()
    bad = subprocess.run([tokenmill, "serve", "-m", default_model, "--replica-id", "a b\r\nX-Evil: 1"],
                         capture_output=True, text=True, timeout=60)
    assert bad.returncode != 0 and "--replica-id" in bad.stderr, bad.stderr


# --- lifecycle -------------------------------------------------------------------------

def test_sigterm_turns_not_ready_then_drains_then_exits(tokenmill, default_model):
    process = start_server(tokenmill, default_model, "-t", "1", "--drain-seconds", "4", "--api-key", "k")
    url = process.url
    try:
        ready = requests.get(url + "/ready")  # probes need no key
        assert ready.status_code == 200 and ready.json()["status"] == "ready"
        body = {"model": MODEL, "prompt": "Once upon a time", "max_tokens": 40, "temperature": 0, "stream": True,
                "ignore_eos": True}
        stream = requests.post(url + "/v1/completions", json=body, stream=True, headers={"Authorization": "Bearer k"})
        lines = stream.iter_lines()
        next(line for line in lines if line.startswith(b"data: "))
        process.proc.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + 3
        while requests.get(url + "/ready").status_code == 200 and time.monotonic() < deadline:
            time.sleep(0.05)
        not_ready = requests.get(url + "/ready")
        assert not_ready.status_code == 503 and not_ready.json()["status"] == "draining"
        health = requests.get(url + "/health")  # alive: an orchestrator must not restart it
        assert health.status_code == 200 and health.json()["status"] == "draining"
        # While draining it still serves, and closes each connection after its answer.
        with requests.Session() as session:
            answer = session.post(url + "/v1/completions", headers={"Authorization": "Bearer k"},
                                  json={"model": MODEL, "prompt": "Hi", "max_tokens": 2, "temperature": 0})
            assert answer.status_code == 200, answer.text
            assert answer.headers["Connection"] == "close"
        rest = [line for line in lines if line.startswith(b"data: ")]
        assert rest[-1] == b"data: [DONE]"  # the stream begun before SIGTERM ran to its end
        process.proc.wait(timeout=60)
        assert process.proc.returncode == 0, process.log()
        assert "not ready; serving 4 s more" in process.log()
    finally:
        process.stop()


# --- HAProxy ---------------------------------------------------------------------------

needs_haproxy = pytest.mark.skipif(shutil.which("haproxy") is None, reason="haproxy missing: run scripts/setup")


@needs_haproxy
def test_haproxy_config_is_valid():
    result = subprocess.run(["haproxy", "-c", "-f", str(HAPROXY_CONFIG)], capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr
    broken = HAPROXY_CONFIG.read_text().replace("balance hash", "balance hashh")
    path = pathlib.Path("/tmp") / "tokenmill-broken-haproxy.cfg"
    path.write_text(broken)
    assert subprocess.run(["haproxy", "-c", "-f", str(path)], capture_output=True).returncode != 0


def small_cluster_args(tokenmill, default_model, **overrides):
    values = dict(binary=tokenmill, model=default_model, replicas=3, ctx_total=4096, drain_seconds=2, tenants=6,
                  questions=3, system_tokens=300, concurrency=4, max_tokens=6)
    values.update(overrides)
    return argparse.Namespace(**values)


@needs_haproxy
def test_affinity_sends_a_prefix_to_one_replica_and_round_robin_does_not(tokenmill, default_model, tmp_path):
    args = small_cluster_args(tokenmill, default_model)
    items = cluster.workload(args.tenants, args.questions, args.system_tokens)
    seen = {}
    for mode in ("affinity", "roundrobin"):
        group = cluster.Cluster(args, mode, tmp_path)
        try:
            records = [cluster.one_request(group.balancer.url, item, 2, stream=False) for item in items]
        finally:
            group.stop()
        assert all(r["ok"] for r in records), [r.get("error") for r in records if not r["ok"]]
        replicas_per_tenant = {}
        for r in records:
            replicas_per_tenant.setdefault(r["tenant"], set()).add(r["replica"])
        seen[mode] = (replicas_per_tenant, [r["replica"] for r in records])
    tenants, _ = seen["affinity"]
    assert all(len(v) == 1 for v in tenants.values()), tenants
    assert len({next(iter(v)) for v in tenants.values()}) >= 2  # tenants are spread out
    tenants, order = seen["roundrobin"]
    assert sum(len(v) for v in tenants.values()) > 2 * len(tenants), tenants  # prefixes scattered
    assert all(order.count(r) == len(order) // 3 for r in ("r1", "r2", "r3")), order
    # The X-Session-Id header overrides the body: one session, one replica, whatever it sends.
    group = cluster.Cluster(args, "affinity", tmp_path)
    try:
        where = {requests.post(group.balancer.url + "/v1/completions", headers={"X-Session-Id": "user-42"},
                               json={"model": MODEL, "prompt": f"Question {i}", "max_tokens": 1}
                               ).headers["X-Tokenmill-Replica"] for i in range(6)}
    finally:
        group.stop()
    assert len(where) == 1


@needs_haproxy
def test_a_killed_replica_loses_no_plain_request(tokenmill, default_model, tmp_path):
    args = small_cluster_args(tokenmill, default_model, tenants=6, questions=6, max_tokens=96)  # streams long enough that one is surely mid-way when the kill lands
    result, failures = cluster.kill(args, tmp_path)
    assert not failures, (failures, result)
    assert result["non_streaming_failed"] == 0
    assert result["tenants_moved"], result  # the victim's tenants were served elsewhere


@needs_haproxy
def test_rolling_restart_fails_no_request(tokenmill, default_model, tmp_path):
    args = small_cluster_args(tokenmill, default_model, questions=2, max_tokens=12)
    result, failures = cluster.rolling(args, tmp_path)
    assert not failures, (failures, result)
    assert result["failed"] == 0 and len(result["restarts"]) == 3


# --- Kubernetes ------------------------------------------------------------------------

CUSTOM_KINDS = {"ServiceMonitor", "InferencePool", "InferenceObjective", "Kustomization"}


def manifests():
    for path in sorted(K8S.glob("*.yaml")):
        for doc in yaml.safe_load_all(path.read_text()):
            if doc:
                yield path.name, doc


def test_k8s_manifests_pass_kubernetes_validate():
    kinds = set()
    for name, doc in manifests():
        kinds.add(doc["kind"])
        if doc["kind"] in CUSTOM_KINDS:
            continue  # no schema in kubernetes-validate; checked below
        kubernetes_validate.validate(doc, kubernetes_validate.latest_version(), strict=True)
    assert {"Deployment", "Service", "HorizontalPodAutoscaler", "ConfigMap", "PersistentVolumeClaim"} <= kinds
    assert CUSTOM_KINDS <= kinds
    # The validator does reject a mistake (so the loop above proves something).
    deployment = next(doc for _, doc in manifests() if doc["kind"] == "Deployment")
    deployment["spec"]["template"]["spec"]["containers"][0]["readinessProbe"]["httpGett"] = {"path": "/ready"}
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(deployment, kubernetes_validate.latest_version(), strict=True)


def test_k8s_manifests_agree_with_each_other_and_the_server():
    docs = {doc["kind"]: doc for _, doc in manifests()}
    deployment = docs["Deployment"]
    pod = deployment["spec"]["template"]
    labels = pod["metadata"]["labels"]
    container = pod["spec"]["containers"][0]
    assert container["readinessProbe"]["httpGet"]["path"] == "/ready"
    assert container["livenessProbe"]["httpGet"]["path"] == "/health"
    args = dict(a.split("=", 1) for a in container["args"][1:])
    drain, grace = float(args["--drain-seconds"]), float(args["--grace-seconds"])
    pre_stop = container["lifecycle"]["preStop"]["sleep"]["seconds"]
    assert pod["spec"]["terminationGracePeriodSeconds"] > pre_stop + drain + grace
    assert docs["Service"]["spec"]["selector"] == labels
    assert docs["ServiceMonitor"]["spec"]["selector"]["matchLabels"] == labels
    assert docs["ServiceMonitor"]["spec"]["endpoints"][0]["path"] == "/metrics"
    pool = docs["InferencePool"]
    assert pool["apiVersion"] == "inference.networking.k8s.io/v1"
    assert pool["spec"]["selector"]["matchLabels"] == labels
    assert pool["spec"]["targetPorts"][0]["number"] == int(args["--port"])
    assert docs["InferenceObjective"]["spec"]["poolRef"]["name"] == pool["metadata"]["name"]
    hpa = docs["HorizontalPodAutoscaler"]
    assert hpa["spec"]["scaleTargetRef"]["name"] == deployment["metadata"]["name"]
    metric = hpa["spec"]["metrics"][0]["pods"]["metric"]["name"]
    adapter = yaml.safe_load(docs["ConfigMap"]["data"]["config.yaml"])
    assert any(rule["name"]["as"] == metric and metric in rule["seriesQuery"] for rule in adapter["rules"])
    kustomized = set(docs["Kustomization"]["resources"])
    assert kustomized == {p.name for p in K8S.glob("*.yaml")} - {"kustomization.yaml"}


def test_the_serve_flags_the_manifests_use_exist(tokenmill):
    help_text = subprocess.run([tokenmill, "serve", "--help"], capture_output=True, text=True).stdout
    container = next(doc for _, doc in manifests() if doc["kind"] == "Deployment")["spec"]["template"]["spec"][
        "containers"][0]
    for arg in container["args"][1:]:
        flag = arg.split("=", 1)[0]
        assert re.search(rf"(^|[\s,]){re.escape(flag)}\b", help_text), flag
