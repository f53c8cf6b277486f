#!/usr/bin/env python3
"""`tokenmill batch` against the same requests one at a time.

    python3 bench/batch_throughput.py [--model models/gemma-3-270m-q4_k_m.gguf] [--requests 256]
                                      [--max-tokens 64] [--isa native|avx512|avx2|avxvnni] [--json-out F]

Writes --requests chat requests in OpenAI's batch format (different prompts, greedy,
--max-tokens each) and runs them twice through `tokenmill batch -t 2`: with its default
number of requests in flight, and with --max-in-flight 1 (each request alone, as a client
sending them one after another would). Prints requests/s and output tokens/s of both and
their ratio (the Batches API promises >= 5x, docs/batch.md), and checks that both runs
gave every request the same answer.
"""
import argparse
import json
import os
import pathlib
import re
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from machine import cpu_name  # noqa: E402

ROOT = pathlib.Path(__file__).resolve().parents[1]
TOKENMILL = pathlib.Path(os.environ.get("TOKENMILL_BIN", ROOT / "build" / "bin" / "tokenmill"))
SUBJECTS = ("the sea", "a city at night", "learning to cook", "old maps", "a quiet library", "winter birds",
            "the first bicycle", "a mountain road", "tea", "clocks", "a lost key", "summer rain", "bridges",
            "a violin maker", "the moon landing", "a small garden")
ASKS = ("Write a short paragraph about {}.", "Give three facts about {}.", "Describe {} to a child.",
        "Write a four-line poem about {}.")


def write_requests(path, n, max_tokens):
    with open(path, "w") as f:
        for i in range(n):
            prompt = ASKS[i % len(ASKS)].format(SUBJECTS[(i // len(ASKS)) % len(SUBJECTS)]) + f" (#{i})"
            f.write(json.dumps({"custom_id": f"r{i}", "method": "POST", "url": "/v1/chat/completions",
                                "body": {"model": "default", "max_tokens": max_tokens, "temperature": 0,
                                         "messages": [{"role": "user", "content": prompt}]}}) + "\n")


def run_batch(model, requests, out, extra):
    start = time.perf_counter()
    done = subprocess.run([str(TOKENMILL), "batch", "-m", model, "-t", "2", "-i", str(requests), "-o", str(out),
                           *extra], capture_output=True, text=True, timeout=7200)
    seconds = time.perf_counter() - start
    if done.returncode != 0:
        raise RuntimeError(done.stderr)
    rows = {}
    for line in out.read_text().splitlines():
        row = json.loads(line)
        if row["response"]["status_code"] != 200:
            raise RuntimeError(f"request {row['custom_id']} failed: {row['response']['body']}")
        rows[row["custom_id"]] = row["response"]["body"]
    tokens = sum(body["usage"]["completion_tokens"] for body in rows.values())
    kernels = re.search(r"^kernels: (.*)$", done.stderr, re.M)
    # The run's own time (after the model loaded), from its last line.
    took = re.search(r"left in ([0-9.]+) s", done.stderr)
    return {"rows": rows, "seconds": float(took.group(1)) if took else seconds, "wall_seconds": seconds,
            "tokens": tokens, "kernels": kernels.group(1) if kernels else "unknown"}


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", default=str(ROOT / "models" / "gemma-3-270m-q4_k_m.gguf"))
    parser.add_argument("--requests", type=int, default=256)
    parser.add_argument("--max-tokens", type=int, default=64)
    parser.add_argument("--isa", default="native", choices=["native", "avx512", "avx2", "avxvnni"])
    parser.add_argument("--engine-args", default="", help="more flags for both runs, e.g. '--spec off'")
    parser.add_argument("--json-out")
    args = parser.parse_args()
    if args.isa != "native":
        os.environ["TOKENMILL_ISA"] = args.isa

    with tempfile.TemporaryDirectory() as tmp:
        tmp = pathlib.Path(tmp)
        requests = tmp / "in.jsonl"
        write_requests(requests, args.requests, args.max_tokens)
        extra = args.engine_args.split()
        batched = run_batch(args.model, requests, tmp / "batched.jsonl", extra)
        alone = run_batch(args.model, requests, tmp / "alone.jsonl", ["--max-in-flight", "1", *extra])

    print(f"{cpu_name()}, kernels {batched['kernels']}, 2 threads, {pathlib.Path(args.model).name}: "
          f"{args.requests} chat requests, {args.max_tokens} tokens each at most"
          + (f", {args.engine_args}" if args.engine_args else ""))
    for name, run in (("tokenmill batch", batched), ("one at a time", alone)):
        print(f"  {name:16s} {run['seconds']:7.1f} s  {args.requests / run['seconds']:7.2f} requests/s  "
              f"{run['tokens'] / run['seconds']:8.1f} output tok/s")
    ratio = alone["seconds"] / batched["seconds"]
    same = all(batched["rows"][k]["choices"][0]["message"]["content"] == alone["rows"][k]["choices"][0]["message"]
               ["content"] for k in batched["rows"])
    print(f"speed-up: {ratio:.2f}x (target >= 5x); answers {'identical' if same else 'DIFFER'} between the runs")
    ok = ratio >= 5 and same and len(batched["rows"]) == len(alone["rows"]) == args.requests
    print("PASS" if ok else "FAILED")
    if args.json_out:
        pathlib.Path(args.json_out).write_text(json.dumps(
            {"cpu": cpu_name(), "kernels": batched["kernels"], "model": args.model, "requests": args.requests,
             "max_tokens": args.max_tokens, "batched_seconds": batched["seconds"], "alone_seconds": alone["seconds"],
             "batched_tokens": batched["tokens"], "ratio": ratio, "identical": same}, indent=2))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
