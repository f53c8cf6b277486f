#!/usr/bin/env python3
"""Soak test: mixed hostile and ordinary traffic against `tokenmill serve` on loopback.

    python3 bench/soak.py --minutes N [--binary build/bin/tokenmill] [--model PATH]
                          [--workers 24] [--json-out FILE]

Starts its own server (2 compute threads, --max-seqs 8, --max-queue 32, short HTTP
timeouts) and runs --workers client threads until the time is up, each picking at
random: greedy chat answers checked against the ones recorded at the start, sampled
streams, n > 1, long prompts, JSON mode, Ollama requests, streams abandoned midway,
connections dropped right after the request, malformed and unknown-model requests, and
now and then a burst of 60 requests at once (far beyond --max-seqs). Every answer must be
correct or an expected refusal (400/404 for the bad ones, 429 for the rest).

At the end, once the server is quiet, it asserts: every KV block and window slot back
in the pool, nothing running or waiting, RSS within --rss-growth-mib of its level after
warm-up, and the greedy answers still the same. Prints the figures (requests and errors
by kind, RSS start/peak/end, leaked blocks); exits 1 if any check failed.
"""
import argparse
import collections
import json
import pathlib
import random
import signal
import socket
import subprocess
import sys
import threading
import time

import requests

from serve_benchmarks import free_port

ROOT = pathlib.Path(__file__).resolve().parents[1]
GOLDEN_PROMPTS = ["Name three primary colors.", "What is 12 times 12?", "Write a haiku about rivers.",
                  "Translate 'good morning' into French."]
WORDS = ("time person year way day thing man world life hand part child eye woman place work week case point "
         "government company number group problem fact river stone light music garden window letter story").split()


class Soak:
    def __init__(self, url, pid, seconds, workers):
        self.url, self.pid, self.seconds, self.workers = url, pid, seconds, workers
        self.counts = collections.Counter()   # outcome by scenario: "chat_greedy ok", "burst 429", ...
        self.failures = []                     # unexpected outcomes, with what was seen
        self.lock = threading.Lock()
        self.golden = {}
        self.rss = []
        self.stop = threading.Event()

    # --- bookkeeping ---
    def record(self, scenario, outcome, failure=None):
        with self.lock:
            self.counts[f"{scenario} {outcome}"] += 1
            if failure:
                self.failures.append(f"{scenario}: {failure}")

    def rss_mib(self):
        for line in open(f"/proc/{self.pid}/status"):
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
        return 0.0

    def metrics(self):
        values = {}
        for line in requests.get(self.url + "/metrics", timeout=30).text.splitlines():
            if line and not line.startswith("#") and "{" not in line:
                name, value = line.split()
                values[name] = float(value)
        return values

    def post(self, path, body, **kwargs):
        return requests.post(self.url + path, json=body, timeout=120, **kwargs)

    def expect(self, scenario, response, check=None, refusals=(429,)):
        if response.status_code in refusals:
            return self.record(scenario, str(response.status_code))
        if response.status_code != 200:
            return self.record(scenario, str(response.status_code), f"status {response.status_code}: {response.text[:200]}")
        problem = check(response) if check else None
        self.record(scenario, "ok" if not problem else "wrong", problem)

    # --- scenarios ---
    def greedy_answer(self, prompt):
        response = self.post("/v1/chat/completions", {"model": "default", "max_tokens": 24, "temperature": 0,
                                                      "messages": [{"role": "user", "content": prompt}]})
        return response, (response.json()["choices"][0]["message"]["content"] if response.status_code == 200 else None)

    def chat_greedy(self, rng):
        prompt = rng.choice(GOLDEN_PROMPTS)
        response, text = self.greedy_answer(prompt)
        self.expect("chat_greedy", response,
                    lambda r: None if text == self.golden[prompt] else f"{prompt!r} answered {text!r}, "
                                                                       f"not {self.golden[prompt]!r}")

    def stream_sampled(self, rng):
        body = {"model": "default", "stream": True, "max_tokens": rng.randint(8, 64), "temperature": 0.9,
                "seed": rng.randint(0, 1 << 30), "messages": [{"role": "user", "content": " ".join(rng.choices(WORDS, k=12))}]}
        with self.post("/v1/chat/completions", body, stream=True) as response:
            if response.status_code != 200:
                return self.expect("stream", response)
            lines = [line for line in response.iter_lines() if line]
        done = lines and lines[-1] == b"data: [DONE]"
        finished = any(b'"finish_reason":"' in line for line in lines)
        self.record("stream", "ok" if done and finished else "wrong", None if done and finished else f"{lines[-3:]}")

    def completion_n(self, rng):
        body = {"model": "default", "prompt": " ".join(rng.choices(WORDS, k=20)), "n": 3, "max_tokens": 12,
                "temperature": 0.8}
        self.expect("completion_n3", self.post("/v1/completions", body),
                    lambda r: None if len(r.json()["choices"]) == 3 else "not 3 choices")

    def long_prompt(self, rng):
        text = " ".join(rng.choices(WORDS, k=1500))
        body = {"model": "default", "prompt": text + "\nSummary:", "max_tokens": 4}
        self.expect("long_prompt", self.post("/v1/completions", body),
                    lambda r: None if r.json()["usage"]["prompt_tokens"] > 1000 else "prompt not counted")

    def json_mode(self, rng):
        body = {"model": "default", "max_tokens": 80, "temperature": 0.7, "seed": rng.randint(0, 1000),
                "response_format": {"type": "json_object"},
                "messages": [{"role": "user", "content": "Describe a cat as JSON with name and age."}]}

        def check(r):
            choice = r.json()["choices"][0]
            if choice["finish_reason"] != "stop":
                return None  # cut by max_tokens: a prefix of an object
            try:
                return None if isinstance(json.loads(choice["message"]["content"]), dict) else "not an object"
            except ValueError as e:
                return f"not JSON: {e}"
        self.expect("json_mode", self.post("/v1/chat/completions", body), check)

    def ollama(self, rng):
        body = {"model": "default", "prompt": rng.choice(GOLDEN_PROMPTS), "stream": rng.random() < 0.5,
                "options": {"num_predict": 16, "temperature": 0.5}}
        response = self.post("/api/generate", body)
        self.expect("ollama", response, lambda r: None if b'"done":true' in r.content.replace(b" ", b"") else "no done")

    def abandoned_stream(self, rng):
        body = {"model": "default", "stream": True, "max_tokens": 200, "prompt": " ".join(rng.choices(WORDS, k=8))}
        with self.post("/v1/completions", body, stream=True) as response:
            if response.status_code != 200:
                return self.expect("abandoned_stream", response)
            for line in response.iter_lines():
                if line.startswith(b"data: {"):
                    break
        self.record("abandoned_stream", "ok")

    def dropped_connection(self, rng):
        body = json.dumps({"model": "default", "prompt": "Tell me a story.", "max_tokens": 100}).encode()
        host, port = self.url.removeprefix("http://").split(":")
        with socket.create_connection((host, int(port)), timeout=10) as s:
            s.sendall(b"POST /v1/completions HTTP/1.1\r\nHost: a\r\nContent-Type: application/json\r\n"
                      b"Content-Length: %d\r\n\r\n" % len(body) + body)
            time.sleep(rng.random() * 0.2)
        self.record("dropped_connection", "ok")

    def malformed(self, rng):
        kind = rng.randrange(4)
        if kind == 0:
            response = requests.post(self.url + "/v1/chat/completions", data=b'{"model": "default", "messages": [',
                                     timeout=30)
            expected = 400
        elif kind == 1:
            response = self.post("/v1/chat/completions", {"model": "no-such-model", "messages": []})
            expected = 404
        elif kind == 2:
            response = self.post("/v1/completions", {"model": "default", "prompt": "x", "max_tokens": -5})
            expected = 400
        else:
            response = requests.post(self.url + "/v1/completions", timeout=30,
                                     data=b'{"model": "default", "prompt": "x", "max_tokens": 1e999}')
            expected = 400
        if response.status_code == 429:  # admission comes before parsing: a full queue refuses it unread
            return self.record("malformed", "429")
        ok = response.status_code == expected and "error" in response.json()
        self.record("malformed", "ok" if ok else "wrong", None if ok else f"{response.status_code} {response.text[:120]}")

    def burst(self, rng):
        results = []

        def one(i):
            try:
                r = self.post("/v1/completions", {"model": "default", "prompt": f"Burst {i}:", "max_tokens": 4})
                results.append(r.status_code)
            except requests.RequestException as e:
                results.append(repr(e))
        threads = [threading.Thread(target=one, args=(i,)) for i in range(60)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        for status in results:
            self.record("burst", str(status), None if status in (200, 429) else f"got {status}")

    SCENARIOS = [(chat_greedy, 4), (stream_sampled, 4), (completion_n, 2), (long_prompt, 1), (json_mode, 2),
                 (ollama, 2), (abandoned_stream, 2), (dropped_connection, 2), (malformed, 2)]

    def worker(self, index):
        rng = random.Random(index)
        functions = [f for f, w in self.SCENARIOS for _ in range(w)]
        while not self.stop.is_set():
            scenario = rng.choice(functions)
            try:
                scenario(self, rng)
            except (requests.RequestException, OSError, ValueError) as e:
                self.record(scenario.__name__, "exception", repr(e)[:200])

    def run(self):
        for prompt in GOLDEN_PROMPTS:
            response, text = self.greedy_answer(prompt)
            assert response.status_code == 200, response.text
            self.golden[prompt] = text
        rss_start = self.rss_mib()
        threads = [threading.Thread(target=self.worker, args=(i,)) for i in range(self.workers)]
        for t in threads:
            t.start()
        deadline = time.monotonic() + self.seconds
        next_burst = time.monotonic() + 20
        while time.monotonic() < deadline:
            self.rss.append(self.rss_mib())
            if time.monotonic() >= next_burst:
                self.burst(random.Random(len(self.rss)))
                next_burst = time.monotonic() + 30
            time.sleep(1)
        self.stop.set()
        for t in threads:
            t.join()
        return rss_start

    def finish(self, rss_start, rss_growth_mib):
        checks = {}
        deadline = time.monotonic() + 60
        while True:
            m = self.metrics()
            quiet = m["tokenmill_requests_running"] == 0 and m["tokenmill_requests_waiting"] == 0
            if quiet and m["tokenmill_kv_blocks_free"] == m["tokenmill_kv_blocks_total"] or time.monotonic() > deadline:
                break
            time.sleep(0.5)
        leaked_blocks = int(m["tokenmill_kv_blocks_total"] - m["tokenmill_kv_blocks_free"])
        leaked_slots = int(m["tokenmill_kv_window_slots_held"])
        checks["nothing running or waiting"] = quiet
        checks["no leaked KV blocks"] = leaked_blocks == 0
        checks["no leaked window slots"] = leaked_slots == 0
        rss_end = self.rss_mib()
        checks[f"RSS within {rss_growth_mib} MiB of the start"] = rss_end - rss_start <= rss_growth_mib
        for prompt in GOLDEN_PROMPTS:
            _, text = self.greedy_answer(prompt)
            if text != self.golden[prompt]:
                self.failures.append(f"golden: {prompt!r} now {text!r}, was {self.golden[prompt]!r}")
        checks["greedy answers unchanged"] = not any(f.startswith("golden") for f in self.failures)
        checks["every answer correct or an expected refusal"] = not self.failures
        figures = {
            "minutes": self.seconds / 60, "workers": self.workers,
            "requests": sum(self.counts.values()),
            "outcomes": dict(sorted(self.counts.items())),
            "rss_mib": {"start": round(rss_start), "peak": round(max(self.rss + [rss_end])), "end": round(rss_end)},
            "leaked_blocks": leaked_blocks, "leaked_window_slots": leaked_slots,
            "refused_429": int(m.get("tokenmill_requests_refused_total", 0)),
            "failures": self.failures[:20], "checks": checks,
        }
        return figures, all(checks.values())


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--minutes", type=float, required=True)
    parser.add_argument("--binary", default=str(ROOT / "build" / "bin" / "tokenmill"))
    parser.add_argument("--model", default=str(ROOT / "models" / "gemma-3-270m-q4_k_m.gguf"))
    parser.add_argument("--workers", type=int, default=24)
    parser.add_argument("--rss-growth-mib", type=float, default=256)
    parser.add_argument("--json-out")
    args = parser.parse_args()

    port = free_port()
    log = open(f"/tmp/tokenmill-soak-{port}.log", "w")
    proc = subprocess.Popen([args.binary, "serve", "-m", args.model, "--host", "127.0.0.1", "--port", str(port),
                             "-t", "2", "--max-seqs", "8", "--max-queue", "32", "--header-timeout", "5",
                             "--keep-alive-timeout", "10"], stdout=log, stderr=log)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                if requests.get(url + "/health", timeout=2).status_code == 200:
                    break
            except requests.RequestException:
                pass
            if proc.poll() is not None or time.monotonic() > deadline:
                sys.exit(f"the server did not start; see {log.name}")
            time.sleep(0.1)
        soak = Soak(url, proc.pid, args.minutes * 60, args.workers)
        rss_start = soak.run()
        figures, ok = soak.finish(rss_start, args.rss_growth_mib)
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            code = proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
            code = "killed"
    figures["server_exit_code"] = code
    ok = ok and code == 0
    print(json.dumps(figures, indent=2))
    if args.json_out:
        pathlib.Path(args.json_out).write_text(json.dumps(figures, indent=2))
    refused = sum(n for k, n in figures["outcomes"].items() if k.endswith((" 429", " 503")))
    print(f"soak: {figures['requests']} requests in {args.minutes:g} min, {refused} refused with 429, "
          f"{len(soak.failures)} wrong or unexpected; RSS MiB {figures['rss_mib']}; leaked blocks "
          f"{figures['leaked_blocks']}, window slots {figures['leaked_window_slots']}: {'PASS' if ok else 'FAIL'}")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
