#!/usr/bin/env python3
"""Batch work beside interactive users: does a running batch hurt them, and does light
interactive traffic slow the batch?

    python3 bench/batch_priority.py [--model models/gemma-3-270m-q4_k_m.gguf] [--requests 500]
                                    [--interactive 24] [--isa native|avx2|avxvnni] [--json-out F]

One `tokenmill serve -t 2` with the Batches API (a fresh --data-dir), on loopback:
  1. idle: --interactive streamed chat requests one after another (the official openai
     client, a short think time between them): TTFT and inter-token latency (ITL);
  2. batch alone: a --requests batch through the Files and Batches APIs, timed from
     create to completed, started 11 s after the last interactive request (until then
     the engine still shortens steps with batch work for interactive users): requests/s;
  3. batch beside interactive traffic: a second batch of the same shape (other prompts,
     so neither run gains from the other's cached prefixes) while the same interactive
     client runs; its TTFT and ITL count only while the batch is in progress.
Prints the ratios the Batches API promises (docs/batch.md): interactive TTFT p50 with a
batch running <= 1.5x idle, ITL p99 <= 2x idle, and the batch beside interactive traffic
at >= 70% of its throughput alone.
"""
import argparse
import json
import os
import pathlib
import statistics
import sys
import tempfile
import threading
import time

import openai

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from serve_benchmarks import ROOT, TOKENMILL, Server, free_port  # noqa: E402
from machine import cpu_name  # noqa: E402

TOPICS = ("rivers", "bread", "winter", "trains", "bees", "lanterns", "maps", "violins", "harbors", "orchards",
          "glaciers", "libraries")


def percentile(values, q):
    ordered = sorted(values)
    if not ordered:
        return float("nan")
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def interactive_request(client, i, max_tokens):
    """One streamed chat request: (TTFT, [gaps between tokens]) in seconds."""
    start = time.perf_counter()
    stamps = []
    stream = client.chat.completions.create(
        model="default", stream=True, max_tokens=max_tokens, temperature=0,
        messages=[{"role": "user", "content": f"Tell me three facts about {TOPICS[i % len(TOPICS)]} (question {i})."}])
    for chunk in stream:
        if chunk.choices and chunk.choices[0].delta.content:
            stamps.append(time.perf_counter())
    if not stamps:
        raise RuntimeError("an interactive request produced no tokens")
    return stamps[0] - start, [b - a for a, b in zip(stamps, stamps[1:])]


def interactive_run(client, first, count, max_tokens, think, keep_going=lambda: True):
    ttfts, gaps = [], []
    for i in range(first, first + count):
        if not keep_going():
            break
        ttft, request_gaps = interactive_request(client, i, max_tokens)
        if not keep_going():
            break  # finished after the batch did: not a measurement beside it
        ttfts.append(ttft)
        gaps += request_gaps
        time.sleep(think)
    return ttfts, gaps


def batch_file(path, first, count, max_tokens):
    with open(path, "w") as f:
        for i in range(first, first + count):
            f.write(json.dumps({"custom_id": f"r{i}", "method": "POST", "url": "/v1/chat/completions",
                                "body": {"model": "default", "max_tokens": max_tokens, "temperature": 0,
                                         "messages": [{"role": "user",
                                                       "content": f"Write one sentence about the number {i}."}]}})
                    + "\n")
    return path


def start_batch(client, path):
    uploaded = client.files.create(file=open(path, "rb"), purpose="batch")
    return client.batches.create(input_file_id=uploaded.id, endpoint="/v1/chat/completions", completion_window="24h")


def wait_batch(client, batch_id, started, on_progress=None):
    while True:
        batch = client.batches.retrieve(batch_id)
        if batch.status in ("completed", "failed", "cancelled", "expired"):
            if batch.status != "completed" or batch.request_counts.failed:
                raise RuntimeError(f"batch ended {batch.status}: {batch.request_counts}")
            return time.perf_counter() - started
        time.sleep(0.1)


def summary(name, ttfts, gaps):
    row = {"requests": len(ttfts), "ttft_p50_s": statistics.median(ttfts), "ttft_p99_s": percentile(ttfts, 0.99),
           "itl_p50_s": statistics.median(gaps), "itl_p99_s": percentile(gaps, 0.99)}
    print(f"  {name:28s} {len(ttfts):3d} requests  TTFT p50 {row['ttft_p50_s'] * 1000:7.1f} ms  p99 "
          f"{row['ttft_p99_s'] * 1000:7.1f} ms   ITL p50 {row['itl_p50_s'] * 1000:6.1f} ms  p99 "
          f"{row['itl_p99_s'] * 1000:6.1f} ms", flush=True)
    return row


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", default=str(ROOT / "models" / "gemma-3-270m-q4_k_m.gguf"))
    parser.add_argument("--requests", type=int, default=500, help="requests per batch")
    parser.add_argument("--batch-max-tokens", type=int, default=48)
    parser.add_argument("--interactive", type=int, default=24, help="interactive requests when idle")
    parser.add_argument("--interactive-max-tokens", type=int, default=48)
    parser.add_argument("--think", type=float, default=0.5, help="seconds between interactive requests")
    parser.add_argument("--isa", default="native", choices=["native", "avx2", "avxvnni"])
    parser.add_argument("--server-args", default="", help="more tokenmill serve flags, e.g. '--batch-latency-factor 2'")
    parser.add_argument("--json-out")
    args = parser.parse_args()
    if args.isa != "native":
        os.environ["TOKENMILL_ISA"] = args.isa

    with tempfile.TemporaryDirectory() as data:
        port = free_port()
        log = pathlib.Path(data) / "server.log"
        server = Server([str(TOKENMILL), "serve", "-m", args.model, "--port", str(port), "-t", "2", "--data-dir",
                         str(pathlib.Path(data) / "state"), *args.server_args.split()], port)
        try:
            client = openai.OpenAI(base_url=f"http://127.0.0.1:{port}/v1", api_key="unused", max_retries=0,
                                   timeout=600)
            print(f"{cpu_name()}, kernels {os.environ.get('TOKENMILL_ISA', 'native (best the CPU has)')}, 2 threads, "
                  f"{pathlib.Path(args.model).name}; batches of {args.requests} x {args.batch_max_tokens} tokens, "
                  f"interactive {args.interactive_max_tokens} tokens every {args.think} s", flush=True)
            interactive_run(client, 10_000, 3, args.interactive_max_tokens, 0)  # warm-up
            idle = summary("interactive, idle", *interactive_run(client, 0, args.interactive,
                                                               args.interactive_max_tokens, args.think))

            # Interactive traffic counts as present for 10 s after it (kInteractiveRecentSeconds,
            # engine/engine.h): only then does the batch run alone.
            time.sleep(11)
            started = time.perf_counter()
            alone_batch = start_batch(client, batch_file(pathlib.Path(data) / "a.jsonl", 0, args.requests,
                                                         args.batch_max_tokens))
            alone_s = wait_batch(client, alone_batch.id, started)
            alone_rate = args.requests / alone_s
            print(f"  {'batch alone':28s} {alone_s:6.1f} s  {alone_rate:6.2f} requests/s", flush=True)

            started = time.perf_counter()
            beside_batch = start_batch(client, batch_file(pathlib.Path(data) / "b.jsonl", 100_000, args.requests,
                                                          args.batch_max_tokens))
            result = {}
            waiter = threading.Thread(target=lambda: result.update(s=wait_batch(client, beside_batch.id, started)))
            waiter.start()
            time.sleep(2)  # the batch fills the engine first
            busy = interactive_run(client, 1000, 10_000, args.interactive_max_tokens, args.think,
                                   keep_going=waiter.is_alive)
            waiter.join()
            beside_rate = args.requests / result["s"]
            loaded = summary("interactive, batch running", *busy)
            print(f"  {'batch beside interactive':28s} {result['s']:6.1f} s  {beside_rate:6.2f} requests/s", flush=True)
        finally:
            server.stop()

    ratios = {"ttft_p50": loaded["ttft_p50_s"] / idle["ttft_p50_s"], "itl_p99": loaded["itl_p99_s"] / idle["itl_p99_s"],
              "batch_throughput": beside_rate / alone_rate}
    checks = {"ttft_p50": ratios["ttft_p50"] <= 1.5, "itl_p99": ratios["itl_p99"] <= 2.0,
              "batch_throughput": ratios["batch_throughput"] >= 0.7}
    print(f"interactive TTFT p50 with a batch / idle: {ratios['ttft_p50']:.2f}x (target <= 1.5x)\n"
          f"interactive ITL p99 with a batch / idle:  {ratios['itl_p99']:.2f}x (target <= 2x)\n"
          f"batch beside interactive / alone:         {ratios['batch_throughput']:.2f}x (target >= 0.7x)")
    print("PASS" if all(checks.values()) else "FAILED: " + ", ".join(k for k, ok in checks.items() if not ok))
    if args.json_out:
        pathlib.Path(args.json_out).write_text(json.dumps(
            {"cpu": cpu_name(), "isa": os.environ.get("TOKENMILL_ISA", "native"), "model": args.model,
             "idle": idle, "beside_batch": loaded, "batch_alone_rps": alone_rate, "batch_beside_rps": beside_rate,
             "ratios": ratios, "pass": all(checks.values())}, indent=2))
    return 0 if all(checks.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
