#!/usr/bin/env python3
"""What structured outputs cost: constrained (response_format json_schema) against
unconstrained decoding on the same server in the same run.

    python3 bench/structured_outputs.py [--model models/gemma-3-270m-q4_k_m.gguf]
        [--requests 8] [--streams 16] [--max-tokens 160] [--temperature 1.0] [--out FILE]

Measures, on loopback:
  1. decode tok/s of one stream and the aggregate of --streams concurrent streams, for a
     realistic schema (nested objects, an array of objects, a pattern, numeric bounds,
     enums, a date) and for the same prompts without a schema; the ratio is the cost;
  2. the first token's extra latency for the largest schema of the corpus
     (tests/fixtures/schema_corpus.jsonl): TTFT of a one-token request with the schema
     minus TTFT without, the prompt cached, median of --ttft-reps (the grammar compile and
     the first mask);
and prints the CPU and the instruction set the server's start line names.
"""
import argparse
import concurrent.futures
import json
import pathlib
import re
import socket
import statistics
import subprocess
import sys
import time
import urllib.request

ROOT = pathlib.Path(__file__).resolve().parents[1]

SCHEMA = {
    "type": "object",
    "properties": {
        "order_id": {"type": "string", "pattern": "^ORD-[0-9]{6}$"},
        "customer": {"type": "object", "properties": {
            "name": {"type": "string", "maxLength": 40},
            "email": {"type": "string", "format": "email"},
            "tier": {"enum": ["basic", "plus", "pro"]}},
            "required": ["name", "email", "tier"], "additionalProperties": False},
        "items": {"type": "array", "minItems": 1, "maxItems": 4, "items": {
            "type": "object", "properties": {
                "sku": {"type": "string", "pattern": "^[A-Z]{3}-[0-9]{4}$"},
                "quantity": {"type": "integer", "minimum": 1, "maximum": 50},
                "unit_price": {"type": "number", "exclusiveMinimum": 0, "maximum": 10000}},
            "required": ["sku", "quantity", "unit_price"], "additionalProperties": False}},
        "ship_by": {"type": "string", "format": "date"},
        "notes": {"anyOf": [{"type": "string", "maxLength": 80}, {"type": "null"}]},
    },
    "required": ["order_id", "customer", "items", "ship_by", "notes"],
    "additionalProperties": False,
}
PROMPTS = [f"Write order number {i} for a customer who bought {i % 3 + 1} kinds of office supplies, as JSON." for i in range(64)]


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def post(url, body, timeout=600):
    request = urllib.request.Request(url, data=json.dumps(body).encode(), headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=timeout) as r:
        return r


def streamed(url, body):
    """(ttft seconds, decode seconds, completion tokens) of one streamed chat request."""
    body = {**body, "stream": True, "stream_options": {"include_usage": True}}
    request = urllib.request.Request(url + "/v1/chat/completions", data=json.dumps(body).encode(),
                                     headers={"Content-Type": "application/json"})
    start = time.perf_counter()
    first = None
    tokens = 0
    with urllib.request.urlopen(request, timeout=600) as r:
        for line in r:
            line = line.strip()
            if not line.startswith(b"data: ") or line == b"data: [DONE]":
                continue
            chunk = json.loads(line[6:])
            if chunk.get("usage"):
                tokens = chunk["usage"]["completion_tokens"]
            if first is None and any(c.get("delta", {}).get("content") for c in chunk.get("choices", [])):
                first = time.perf_counter()
    end = time.perf_counter()
    first = first or end
    return first - start, end - first, tokens


def request_body(prompt, schema, args, seed):
    body = {"model": "default", "messages": [{"role": "user", "content": prompt}], "max_tokens": args.max_tokens,
            "temperature": args.temperature, "seed": seed}
    if schema is not None:
        body["response_format"] = {"type": "json_schema", "json_schema": {"name": "s", "schema": schema}}
    return body


def decode_rate(url, schema, args, concurrency):
    """Aggregate decode tok/s: completion tokens after each first token over the wall time."""
    n = args.requests * concurrency
    bodies = [request_body(PROMPTS[i % len(PROMPTS)], schema, args, seed=i) for i in range(n)]
    start = time.perf_counter()
    with concurrent.futures.ThreadPoolExecutor(concurrency) as pool:
        results = list(pool.map(lambda b: streamed(url, b), bodies))
    wall = time.perf_counter() - start
    tokens = sum(t for _, _, t in results)
    if concurrency == 1:
        return tokens / sum(d for _, d, _ in results), tokens
    return tokens / wall, tokens


def largest_corpus_schema():
    entries = [json.loads(line) for line in (ROOT / "tests/fixtures/schema_corpus.jsonl").read_text().splitlines() if line]
    entry = max(entries, key=lambda e: len(json.dumps(e["schema"])))
    return entry["name"], entry["schema"]


def first_token_extra(url, schema, reps):
    prompt = "Return a JSON value."
    def ttft(with_schema):
        body = request_body(prompt, schema if with_schema else None, argparse.Namespace(max_tokens=1, temperature=0.0), 0)
        t, _, _ = streamed(url, body)
        return t
    ttft(False), ttft(True)  # the prompt into the prefix cache
    without = [ttft(False) for _ in range(reps)]
    with_schema = [ttft(True) for _ in range(reps)]
    return statistics.median(with_schema) - statistics.median(without), statistics.median(without)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--model", default=str(ROOT / "models/gemma-3-270m-q4_k_m.gguf"))
    p.add_argument("--binary", default=str(ROOT / "build/bin/tokenmill"))
    p.add_argument("--requests", type=int, default=6, help="requests per stream")
    p.add_argument("--streams", type=int, default=16)
    p.add_argument("--max-tokens", type=int, default=160)
    p.add_argument("--temperature", type=float, default=1.0)
    p.add_argument("--ttft-reps", type=int, default=15)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--server-arg", action="append", default=[], help="an extra `tokenmill serve` argument (repeatable)")
    p.add_argument("--out")
    args = p.parse_args()

    port = free_port()
    log = open("/tmp/tokenmill-structured-bench.log", "w")
    server = subprocess.Popen([args.binary, "serve", "-m", args.model, "--host", "127.0.0.1", "--port", str(port),
                               "-t", str(args.threads), *args.server_arg], stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        for _ in range(600):
            try:
                urllib.request.urlopen(url + "/health", timeout=1)
                break
            except Exception:
                time.sleep(0.1)
        start_line = pathlib.Path(log.name).read_text()
        cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), "?")
        kernels = re.search(r"kernels?[ :=]+(\S+)", start_line)
        results = {"cpu": cpu, "kernels": kernels.group(1) if kernels else "?", "temperature": args.temperature}
        for streams in (1, args.streams):
            plain, plain_tokens = decode_rate(url, None, args, streams)
            constrained, constrained_tokens = decode_rate(url, SCHEMA, args, streams)
            results[f"streams_{streams}"] = {"unconstrained_tok_s": round(plain, 1), "constrained_tok_s": round(constrained, 1),
                                             "ratio": round(constrained / plain, 3),
                                             "tokens": [plain_tokens, constrained_tokens]}
            print(f"{streams:>2} stream(s): unconstrained {plain:7.1f} tok/s, constrained {constrained:7.1f} tok/s, "
                  f"ratio {constrained / plain:.3f}")
        name, schema = largest_corpus_schema()
        extra, base = first_token_extra(url, schema, args.ttft_reps)
        results["first_token_extra_ms"] = round(extra * 1000, 2)
        results["largest_schema"] = {"name": name, "bytes": len(json.dumps(schema))}
        print(f"first token, largest corpus schema ({name}, {len(json.dumps(schema))} bytes): "
              f"+{extra * 1000:.1f} ms over {base * 1000:.1f} ms")
        print(f"CPU: {cpu}; kernels: {results['kernels']}")
        if args.out:
            pathlib.Path(args.out).write_text(json.dumps(results, indent=1) + "\n")
    finally:
        server.terminate()
        server.wait(timeout=60)


if __name__ == "__main__":
    sys.exit(main())
