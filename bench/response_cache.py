#!/usr/bin/env python3
"""The response cache's hit against the answer it replays.

    python3 bench/response_cache.py [--model models/gemma-3-270m-q4_k_m.gguf] [--requests 20]
                                    [--max-tokens 128] [--isa native|avx2|avxvnni]

One `tokenmill serve -t 2 --response-cache-mib 64` on loopback. For --requests different
greedy chat requests (--max-tokens each), whole and streamed: the first answer (a miss,
through the engine) and the same request again (a hit), timed from sending to the last
byte with one kept-alive connection. Prints the median hit / miss latency ratio (the
Batches API issue's target: under 5%) and checks that every hit is byte for byte the miss.
"""
import argparse
import os
import pathlib
import statistics
import sys
import time

import requests

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from serve_benchmarks import ROOT, TOKENMILL, Server, free_port  # noqa: E402
from machine import cpu_name  # noqa: E402


def timed(session, url, body):
    start = time.perf_counter()
    response = session.post(url, json=body, stream=body.get("stream", False))
    content = b"".join(response.iter_content(chunk_size=None))
    return time.perf_counter() - start, response.headers.get("x-tokenmill-cache"), content


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", default=str(ROOT / "models" / "gemma-3-270m-q4_k_m.gguf"))
    parser.add_argument("--requests", type=int, default=20)
    parser.add_argument("--max-tokens", type=int, default=128)
    parser.add_argument("--isa", default="native", choices=["native", "avx2", "avxvnni"])
    args = parser.parse_args()
    if args.isa != "native":
        os.environ["TOKENMILL_ISA"] = args.isa
    port = free_port()
    server = Server([str(TOKENMILL), "serve", "-m", args.model, "--port", str(port), "-t", "2", "--no-batch-api",
                     "--response-cache-mib", "64"], port)
    url = f"http://127.0.0.1:{port}/v1/chat/completions"
    ratios = {False: [], True: []}
    misses = {False: [], True: []}
    hits = {False: [], True: []}
    try:
        session = requests.Session()
        for stream in (False, True):
            for i in range(args.requests):
                body = {"model": "default", "temperature": 0, "max_tokens": args.max_tokens, "stream": stream,
                        "messages": [{"role": "user", "content": f"Write a story about lighthouse number {i}."}]}
                miss_s, miss_mark, miss_body = timed(session, url, body)
                hit_s, hit_mark, hit_body = timed(session, url, body)
                if (miss_mark, hit_mark) != ("miss", "hit") or hit_body != miss_body:
                    raise RuntimeError(f"request {i} (stream={stream}): {miss_mark}/{hit_mark}, bodies "
                                       f"{'equal' if hit_body == miss_body else 'differ'}")
                misses[stream].append(miss_s)
                hits[stream].append(hit_s)
                ratios[stream].append(hit_s / miss_s)
    finally:
        server.stop()
    print(f"{cpu_name()}, kernels {os.environ.get('TOKENMILL_ISA', 'native (best the CPU has)')}, 2 threads, "
          f"{pathlib.Path(args.model).name}; {args.requests} requests x {args.max_tokens} tokens, each asked twice")
    ok = True
    for stream in (False, True):
        median = statistics.median(ratios[stream])
        ok = ok and median < 0.05
        print(f"  {'streamed' if stream else 'whole':8s}  miss {statistics.median(misses[stream]) * 1000:8.1f} ms  "
              f"hit {statistics.median(hits[stream]) * 1000:6.2f} ms  hit/miss {median * 100:5.2f}% (max "
              f"{max(ratios[stream]) * 100:.2f}%), every hit identical")
    print("PASS" if ok else "FAILED: a hit takes 5% of the miss or more")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
