#!/usr/bin/env python3
"""N tokenmill replicas behind HAProxy on loopback: prefix affinity against round-robin,
a replica killed mid-run, and a rolling restart.

    python3 bench/cluster.py [--scenario compare|kill|rolling|all] [--replicas 3]
                             [--tenants 12] [--questions 8] [--concurrency 6]
                             [--system-tokens 1500] [--ctx-total 8192] [--max-tokens 12]
                             [--binary build/bin/tokenmill] [--model PATH] [--json-out FILE]

Each replica is `tokenmill serve -t 1 --ctx-total N` (one compute thread, a KV cache
that holds a few tenants' system prompts but not all of them); HAProxy runs
deploy/haproxy/haproxy.cfg with the replicas' ports put in, or the same file with
`balance roundrobin` in place of the hash. The workload is multi-tenant: each tenant has
its own long system prompt and asks short questions, all tenants interleaved at random
(seeded), through the official openai client, streamed, so the time to the first token
is measured where the user sees it.

compare   both balancers on fresh replicas, same workload: per replica and in total the
          requests, prefix-cache hit rate (from each replica's /metrics), TTFT p50/p99,
          tok/s; then the affinity/round-robin ratios.
kill      affinity; half the requests stream, half do not; replica 2 gets SIGKILL a
          third of the way in. Every non-streaming request must succeed (HAProxy retries
          it elsewhere); streams cut on the dead replica end with an error the client
          sees; the others' latency before and after is reported.
rolling   affinity; each replica in turn gets SIGTERM (--drain-seconds), exits, is
          started again and waits until HAProxy has it back; the workload runs
          throughout and must see 0 failed requests.

Exits 1 when a scenario's checks fail. Needs haproxy (scripts/setup installs it).
"""
import argparse
import concurrent.futures
import json
import os
import pathlib
import random
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time

import openai
import requests

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from serve_benchmarks import free_port  # noqa: E402
from machine import cpu_name  # noqa: E402

ROOT = pathlib.Path(__file__).resolve().parents[1]
HAPROXY_CONFIG = ROOT / "deploy" / "haproxy" / "haproxy.cfg"
TOPICS = ("billing", "shipping", "returns", "warranty", "accounts", "security", "pricing", "support hours",
          "discounts", "invoices", "deliveries", "repairs", "refunds", "passwords", "orders", "coupons")
QUESTIONS = ("How do I start?", "What does it cost?", "Can I change it later?", "Who do I call?",
             "Is it available today?", "How long does it take?", "What do I need?", "Where can I read more?",
             "Is there a limit?", "Can you summarise that?")


# --- processes -----------------------------------------------------------------------

def wait_until(predicate, timeout, what):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.05)
    raise RuntimeError(f"timed out waiting for {what}")


def answers(url, path="/ready"):
    try:
        return requests.get(url + path, timeout=2).status_code == 200
    except requests.RequestException:
        return False


class Replica:
    """One `tokenmill serve` on a fixed loopback port (HAProxy's config names it)."""

    def __init__(self, binary, model, index, ctx_total, drain_seconds, log_dir):
        self.binary, self.model, self.index = binary, model, index
        self.id = f"r{index + 1}"
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.args = [binary, "serve", "-m", model, "--host", "127.0.0.1", "--port", str(self.port), "-t", "1",
                     "--ctx-total", str(ctx_total), "--replica-id", self.id, "--drain-seconds", str(drain_seconds)]
        self.log_path = pathlib.Path(log_dir) / f"replica-{self.id}.log"
        self.proc = None

    def start(self):
        self.proc = subprocess.Popen(self.args, stdout=open(self.log_path, "ab"), stderr=subprocess.STDOUT)
        wait_until(lambda: answers(self.url) or self.proc.poll() is not None, 120, f"replica {self.id}")
        if self.proc.poll() is not None:
            raise RuntimeError(f"replica {self.id} exited: {self.log_path.read_text()[-2000:]}")

    def metrics(self):
        values = {}
        for line in requests.get(self.url + "/metrics", timeout=10).text.splitlines():
            if line and not line.startswith("#"):
                key, _, number = line.rpartition(" ")
                values[key] = float(number)
        return values

    def stop(self, sig=signal.SIGTERM, timeout=90):
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(sig)
            try:
                self.proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        return self.proc.returncode if self.proc else None


def balancer_config(template, listen_port, replicas, mode):
    """deploy/haproxy/haproxy.cfg with our ports; mode "roundrobin" drops the hashing."""
    text = re.sub(r"bind 127\.0\.0\.1:\d+", f"bind 127.0.0.1:{listen_port}", template)
    text = re.sub(r"(?m)^\s*server replica\d+ .*\n", "", text)
    servers = "".join(f"    server replica{r.index + 1} 127.0.0.1:{r.port}\n" for r in replicas)
    text = text.rstrip("\n") + "\n" + servers
    if mode == "roundrobin":
        text = re.sub(r"(?m)^\s*balance hash .*$", "    balance roundrobin", text)
        text = re.sub(r"(?m)^\s*hash-(type|balance-factor) .*\n", "", text)
    # Health checks a little faster than the shipped ones keep the scenarios short.
    return text.replace("inter 1s fall 2 rise 2", "inter 500ms fall 2 rise 2")


class Balancer:
    def __init__(self, replicas, mode, log_dir):
        if shutil.which("haproxy") is None:
            raise RuntimeError("haproxy is not installed: run scripts/setup")
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.config_path = pathlib.Path(log_dir) / f"haproxy-{mode}.cfg"
        self.config_path.write_text(balancer_config(HAPROXY_CONFIG.read_text(), self.port, replicas, mode))
        self.log_path = pathlib.Path(log_dir) / f"haproxy-{mode}.log"
        check = subprocess.run(["haproxy", "-c", "-f", str(self.config_path)], capture_output=True, text=True)
        if check.returncode != 0:
            raise RuntimeError("haproxy -c refused the config:\n" + check.stdout + check.stderr)
        self.proc = subprocess.Popen(["haproxy", "-db", "-f", str(self.config_path)], stdout=open(self.log_path, "ab"),
                                     stderr=subprocess.STDOUT)
        wait_until(lambda: answers(self.url, "/health"), 30, "haproxy")

    def stop(self):
        self.proc.terminate()
        self.proc.wait(timeout=30)


# --- workload ------------------------------------------------------------------------

def system_prompt(tenant, n_tokens):
    """A tenant's own instructions, about n_tokens long (~15 tokens a rule on Gemma 3)."""
    rng = random.Random(tenant)
    topic = TOPICS[tenant % len(TOPICS)]
    rules = [f"You are the assistant of tenant {tenant}, a shop that helps with {topic}."]
    for i in range(max(1, n_tokens // 15)):
        rules.append(f"Rule {i}: for {rng.choice(TOPICS)} answer in at most {rng.randint(2, 40)} words.")
    return " ".join(rules)


def workload(n_tenants, n_questions, system_tokens, seed=7):
    prompts = [system_prompt(t, system_tokens) for t in range(n_tenants)]
    items = [(t, QUESTIONS[(q + t) % len(QUESTIONS)]) for t in range(n_tenants) for q in range(n_questions)]
    random.Random(seed).shuffle(items)
    return [{"tenant": t, "messages": [{"role": "system", "content": prompts[t]}, {"role": "user", "content": q}]}
            for t, q in items]


class LiveStreams:
    """Streams past their first token, by replica (for the kill scenario's timing)."""

    def __init__(self):
        self.lock = threading.Lock()
        self.by_replica = {}

    def add(self, replica, n):
        with self.lock:
            self.by_replica[replica] = self.by_replica.get(replica, 0) + n

    def on(self, replica):
        with self.lock:
            return self.by_replica.get(replica, 0)


def one_request(base_url, item, max_tokens, stream, live=None):
    """Sends one chat request; returns what it measured, never raises."""
    client = openai.OpenAI(base_url=base_url + "/v1", api_key="none", max_retries=0, timeout=300)
    start = time.monotonic()
    record = {"tenant": item["tenant"], "stream": stream, "start": start, "ok": False}
    try:
        raw = client.chat.completions.with_raw_response.create(
            model="default", messages=item["messages"], max_tokens=max_tokens, temperature=0, stream=stream,
            extra_body={"ignore_eos": True})
        record["replica"] = raw.headers.get("x-tokenmill-replica")
        if stream:
            n_tokens = 0
            finish = None
            try:
                for chunk in raw.parse():
                    if chunk.choices and chunk.choices[0].delta.content:
                        if "ttft" not in record:
                            record["ttft"] = time.monotonic() - start
                            if live:
                                live.add(record["replica"], 1)
                        n_tokens += 1
                    if chunk.choices and chunk.choices[0].finish_reason:
                        finish = chunk.choices[0].finish_reason
            finally:
                if live and "ttft" in record:
                    live.add(record["replica"], -1)
            record["tokens"] = n_tokens
            # A stream cut short ends without a finish reason: the client saw it fail.
            record["ok"] = finish is not None
            if not record["ok"]:
                record["error"] = "stream ended without a finish_reason"
        else:
            reply = raw.parse()
            record["ttft"] = time.monotonic() - start
            record["tokens"] = reply.usage.completion_tokens
            record["ok"] = bool(reply.choices)
    except Exception as e:  # noqa: BLE001 - every failure is a figure here
        record["error"] = f"{type(e).__name__}: {e}"[:300]
    record["e2e"] = time.monotonic() - start
    return record


def run_workload(base_url, items, concurrency, max_tokens, stream_every=1, live=None, done=None):
    """Runs items through concurrency client threads; item i streams if i % stream_every == 0.
    done, a list of one int, counts the finished requests as they finish."""
    records = [None] * len(items)
    done = done if done is not None else [0]
    lock = threading.Lock()

    def work(i):
        records[i] = one_request(base_url, items[i], max_tokens, stream=i % stream_every == 0, live=live)
        with lock:
            done[0] += 1

    with concurrent.futures.ThreadPoolExecutor(concurrency) as pool:
        list(pool.map(work, range(len(items))))
    return records


# --- figures -------------------------------------------------------------------------

def percentile(values, p):
    if not values:
        return float("nan")
    values = sorted(values)
    return values[min(len(values) - 1, int(round(p / 100 * (len(values) - 1))))]


def cache_delta(before, after):
    queries = after["tokenmill_prefix_cache_queries_total"] - before["tokenmill_prefix_cache_queries_total"]
    hits = after["tokenmill_prefix_cache_hits_total"] - before["tokenmill_prefix_cache_hits_total"]
    return queries, hits


def summarize(records, wall, cache):
    ok = [r for r in records if r["ok"]]
    ttfts = [r["ttft"] for r in ok if "ttft" in r]
    tokens = sum(r.get("tokens", 0) for r in ok)
    queries = sum(q for q, _ in cache.values())
    hits = sum(h for _, h in cache.values())
    total = {"requests": len(records), "ok": len(ok), "failed": len(records) - len(ok),
             "prefix_hit_rate": hits / queries if queries else 0.0,
             "ttft_p50": percentile(ttfts, 50), "ttft_p99": percentile(ttfts, 99), "tok_per_s": tokens / wall,
             "wall_s": wall}
    per_replica = {}
    for rid, (q, h) in sorted(cache.items()):
        mine = [r for r in ok if r.get("replica") == rid]
        t = [r["ttft"] for r in mine if "ttft" in r]
        per_replica[rid] = {"requests": len(mine), "tenants": len({r["tenant"] for r in mine}),
                            "prefix_hit_rate": h / q if q else 0.0, "ttft_p50": percentile(t, 50),
                            "ttft_p99": percentile(t, 99), "tok_per_s": sum(r.get("tokens", 0) for r in mine) / wall}
    return {"total": total, "per_replica": per_replica}


def print_summary(title, summary):
    print(f"\n{title}")
    print(f"  {'':10} {'requests':>8} {'tenants':>7} {'hit rate':>8} {'TTFT p50':>9} {'TTFT p99':>9} {'tok/s':>7}")
    for rid, s in summary["per_replica"].items():
        print(f"  {rid:10} {s['requests']:8d} {s['tenants']:7d} {s['prefix_hit_rate']:8.1%} "
              f"{s['ttft_p50']:8.3f}s {s['ttft_p99']:8.3f}s {s['tok_per_s']:7.1f}")
    t = summary["total"]
    print(f"  {'total':10} {t['requests']:8d} {'':7} {t['prefix_hit_rate']:8.1%} {t['ttft_p50']:8.3f}s "
          f"{t['ttft_p99']:8.3f}s {t['tok_per_s']:7.1f}   ({t['failed']} failed, {t['wall_s']:.0f} s)")


class Cluster:
    """Replicas and a balancer, started together and stopped together."""

    def __init__(self, args, mode, log_dir):
        self.replicas = [Replica(args.binary, args.model, i, args.ctx_total, args.drain_seconds, log_dir)
                         for i in range(args.replicas)]
        self.balancer = None
        try:
            for r in self.replicas:
                r.start()
            self.balancer = Balancer(self.replicas, mode, log_dir)
        except BaseException:
            self.stop()
            raise

    def metrics(self):
        return {r.id: r.metrics() for r in self.replicas if r.proc.poll() is None}

    def stop(self):
        if self.balancer:
            self.balancer.stop()
        for r in self.replicas:
            r.stop()


def compare(args, log_dir):
    items = workload(args.tenants, args.questions, args.system_tokens)
    results = {}
    for mode in ("affinity", "roundrobin"):
        cluster = Cluster(args, "affinity" if mode == "affinity" else "roundrobin", log_dir)
        try:
            before = cluster.metrics()
            start = time.monotonic()
            records = run_workload(cluster.balancer.url, items, args.concurrency, args.max_tokens)
            wall = time.monotonic() - start
            after = cluster.metrics()
        finally:
            cluster.stop()
        cache = {rid: cache_delta(before[rid], after[rid]) for rid in before}
        results[mode] = summarize(records, wall, cache)
        print_summary(f"{mode}: {len(items)} requests, {args.tenants} tenants, concurrency {args.concurrency}",
                      results[mode])
    a, r = results["affinity"]["total"], results["roundrobin"]["total"]
    ratios = {"hit_rate": a["prefix_hit_rate"] / r["prefix_hit_rate"] if r["prefix_hit_rate"] else float("inf"),
              "ttft_p50": a["ttft_p50"] / r["ttft_p50"], "ttft_p99": a["ttft_p99"] / r["ttft_p99"],
              "tok_per_s": a["tok_per_s"] / r["tok_per_s"]}
    print(f"\naffinity / round-robin: hit rate {ratios['hit_rate']:.2f}x, TTFT p50 {ratios['ttft_p50']:.2f}x, "
          f"p99 {ratios['ttft_p99']:.2f}x, tok/s {ratios['tok_per_s']:.2f}x")
    results["ratios"] = ratios
    failures = []
    if a["failed"] or r["failed"]:
        failures.append(f"failed requests: affinity {a['failed']}, round-robin {r['failed']}")
    if ratios["hit_rate"] < 2:
        failures.append(f"hit-rate ratio {ratios['hit_rate']:.2f} < 2")
    if ratios["ttft_p50"] > 0.5:
        failures.append(f"TTFT p50 ratio {ratios['ttft_p50']:.2f} > 0.5")
    return results, failures


def kill(args, log_dir):
    items = workload(args.tenants, args.questions, args.system_tokens, seed=11)
    cluster = Cluster(args, "affinity", log_dir)
    victim = cluster.replicas[1]
    killed_at = {}
    live, done = LiveStreams(), [0]
    finished = threading.Event()

    def kill_mid_stream():
        # A third of the way in, as soon as a stream on the victim is producing tokens.
        while not finished.is_set():
            if done[0] >= len(items) // 3 and live.on(victim.id) > 0:
                killed_at["t"], killed_at["after"] = time.monotonic(), done[0]
                victim.proc.send_signal(signal.SIGKILL)
                return
            time.sleep(0.005)

    killer = threading.Thread(target=kill_mid_stream)
    killer.start()
    try:
        records = run_workload(cluster.balancer.url, items, args.concurrency, args.max_tokens, stream_every=2,
                               live=live, done=done)
    finally:
        finished.set()
        killer.join()
        cluster.stop()
    t_kill = killed_at.get("t", float("inf"))
    plain_failed = [r for r in records if not r["stream"] and not r["ok"]]
    streams_cut = [r for r in records if r["stream"] and not r["ok"]]
    survivors = [c.id for c in cluster.replicas if c is not victim]
    before = [r["e2e"] for r in records if r["ok"] and r.get("replica") in survivors and r["start"] + r["e2e"] < t_kill]
    after = [r["e2e"] for r in records if r["ok"] and r.get("replica") in survivors and r["start"] > t_kill]
    moved = sorted({r["tenant"] for r in records if r["ok"] and r["start"] > t_kill and r.get("replica") in survivors
                    and any(o["tenant"] == r["tenant"] and o.get("replica") == victim.id for o in records)})
    result = {"requests": len(records), "non_streaming_failed": len(plain_failed), "streams_cut": len(streams_cut),
              "stream_errors": sorted({r.get("error", "") for r in streams_cut}),
              "survivor_e2e_p50_before": percentile(before, 50), "survivor_e2e_p50_after": percentile(after, 50),
              "tenants_moved": moved}
    print(f"\nkill: {len(records)} requests (half streamed), SIGKILL to {victim.id} mid-stream after "
          f"{killed_at.get('after')} had finished")
    print(f"  non-streaming requests failed: {len(plain_failed)}")
    print(f"  streams cut on {victim.id} (client saw an error): {len(streams_cut)} {result['stream_errors'][:2]}")
    print(f"  tenants of {victim.id} served elsewhere afterwards: {moved}")
    print(f"  survivors' e2e p50 before the kill {result['survivor_e2e_p50_before']:.3f}s, "
          f"after {result['survivor_e2e_p50_after']:.3f}s")
    failures = [f"non-streaming request failed: {r.get('error')}" for r in plain_failed[:3]]
    if not killed_at:
        failures.append("the replica was never killed")
    elif not streams_cut:
        failures.append("no stream was cut, though one was running on the killed replica")
    if any(r.get("replica") not in (victim.id, None) for r in streams_cut):
        failures.append("a stream on a surviving replica failed")
    return result, failures


def rolling(args, log_dir):
    items = workload(args.tenants, max(args.questions, 12), args.system_tokens, seed=13)
    cluster = Cluster(args, "affinity", log_dir)
    stop_restarting = threading.Event()
    restarts = []

    def restart_each():
        time.sleep(2)
        for replica in cluster.replicas:
            if stop_restarting.is_set():
                return
            t0 = time.monotonic()
            code = replica.stop(signal.SIGTERM)
            replica.start()
            time.sleep(1.5)  # HAProxy needs rise=2 passing checks to send it work again
            restarts.append({"replica": replica.id, "exit_code": code, "seconds": time.monotonic() - t0})

    restarter = threading.Thread(target=restart_each)
    try:
        restarter.start()
        # The workload repeats until every replica has been restarted once.
        records = []
        while restarter.is_alive() or not records:
            records += run_workload(cluster.balancer.url, items, args.concurrency, args.max_tokens, stream_every=2)
    finally:
        stop_restarting.set()
        restarter.join()
        cluster.stop()
    failed = [r for r in records if not r["ok"]]
    print(f"\nrolling restart: {len(records)} requests (half streamed) while {len(restarts)} replicas restarted "
          f"in turn: {len(failed)} failed")
    for r in restarts:
        print(f"  {r['replica']}: exit code {r['exit_code']}, back in {r['seconds']:.1f} s")
    failures = [f"failed: {r.get('error')}" for r in failed[:3]]
    if len(restarts) != len(cluster.replicas) or any(r["exit_code"] != 0 for r in restarts):
        failures.append(f"restarts: {restarts}")
    return {"requests": len(records), "failed": len(failed), "restarts": restarts}, failures


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--scenario", choices=["compare", "kill", "rolling", "all"], default="all")
    p.add_argument("--binary", default=os.environ.get("TOKENMILL_BIN", str(ROOT / "build" / "bin" / "tokenmill")))
    p.add_argument("--model", default=os.environ.get("TOKENMILL_MODEL", str(ROOT / "models" / "gemma-3-270m-q4_k_m.gguf")))
    p.add_argument("--replicas", type=int, default=3)
    p.add_argument("--tenants", type=int, default=12)
    p.add_argument("--questions", type=int, default=8, help="questions per tenant")
    p.add_argument("--concurrency", type=int, default=6)
    p.add_argument("--system-tokens", type=int, default=1500)
    p.add_argument("--ctx-total", type=int, default=8192, help="KV positions per replica")
    p.add_argument("--max-tokens", type=int, default=12)
    p.add_argument("--drain-seconds", type=float, default=3)
    p.add_argument("--json-out")
    args = p.parse_args()

    log_dir = tempfile.mkdtemp(prefix="tokenmill-cluster-")
    print(f"cluster: {args.replicas} replicas (1 compute thread each) behind HAProxy; logs in {log_dir}")
    print(f"CPU: {cpu_name()}")
    scenarios = ["compare", "kill", "rolling"] if args.scenario == "all" else [args.scenario]
    report, failures = {}, []
    for name in scenarios:
        result, failed = {"compare": compare, "kill": kill, "rolling": rolling}[name](args, log_dir)
        report[name] = result
        failures += [f"{name}: {f}" for f in failed]
    if args.json_out:
        pathlib.Path(args.json_out).write_text(json.dumps(report, indent=2))
    for f in failures:
        print("FAIL", f)
    print("PASS" if not failures else "FAILED")
    return 0 if not failures else 1


if __name__ == "__main__":
    sys.exit(main())
