#!/usr/bin/env python3
"""Embeddings: 64 inputs in one request against 64 separate requests (one after another,
and 8 at a time), on the same server in the same run, through the official openai client.

    python3 bench/embeddings_bench.py [--inputs 64] [--rounds 3] [--json-out FILE]

Starts `tokenmill serve -t 2 --embedding-model models/all-minilm-l6-v2-q8_0.gguf` (written
by tools/convert_bert_gguf.py when missing; the chat model beside it stays idle) and
reports the median wall time of each way and the ratios; exits 1 unless one request is
faster than both.
"""
import argparse
import concurrent.futures
import json
import pathlib
import statistics
import subprocess
import sys
import time

import openai

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from serve_benchmarks import ROOT, TOKENMILL, WORDS, Server, free_port  # noqa: E402
from machine import cpu_name  # noqa: E402

NAME = "all-minilm-l6-v2-q8_0"


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--inputs", type=int, default=64)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--model", default=str(ROOT / "models" / "gemma-3-270m-q4_k_m.gguf"))
    p.add_argument("--embedding-model", default=str(ROOT / "models" / f"{NAME}.gguf"))
    p.add_argument("--json-out")
    args = p.parse_args()

    if not pathlib.Path(args.embedding_model).exists():
        subprocess.run([sys.executable, str(ROOT / "tools" / "convert_bert_gguf.py"), "--minilm", args.embedding_model,
                        "--outtype", "q8_0"], check=True)
    texts = [" ".join(WORDS[(i * 7 + k) % len(WORDS)] for k in range(12 + i % 20)) for i in range(args.inputs)]
    port = free_port()
    server = Server([str(TOKENMILL), "serve", "-m", args.model, "--port", str(port), "-t", "2",
                     "--embedding-model", args.embedding_model], port)
    try:
        client = openai.OpenAI(base_url=f"http://127.0.0.1:{port}/v1", api_key="none", max_retries=0)
        name = pathlib.Path(args.embedding_model).stem  # the server names the model after its file
        embed = lambda batch: client.embeddings.create(model=name, input=batch, encoding_format="float")  # noqa: E731
        embed(texts[:4])  # warm-up
        times = {"one request": [], "separate, sequential": [], "separate, 8 concurrent": []}
        for _ in range(args.rounds):
            t = time.perf_counter()
            embed(texts)
            times["one request"].append(time.perf_counter() - t)
            t = time.perf_counter()
            for text in texts:
                embed(text)
            times["separate, sequential"].append(time.perf_counter() - t)
            t = time.perf_counter()
            with concurrent.futures.ThreadPoolExecutor(8) as pool:
                list(pool.map(embed, texts))
            times["separate, 8 concurrent"].append(time.perf_counter() - t)
    finally:
        server.stop()

    kernels = "avx512" if "avx512f" in pathlib.Path("/proc/cpuinfo").read_text() else "avx2"
    print(f"{args.inputs} inputs, {pathlib.Path(args.embedding_model).stem}, 2 threads, {cpu_name()} ({kernels} kernels)")
    medians = {k: statistics.median(v) for k, v in times.items()}
    for name, seconds in medians.items():
        print(f"  {name:24} {seconds * 1000:8.1f} ms   {args.inputs / seconds:8.1f} inputs/s")
    base = medians["one request"]
    ratios = {k: v / base for k, v in medians.items()}
    print("  one request is " + ", ".join(f"{r:.2f}x faster than {k}" for k, r in ratios.items() if k != "one request"))
    if args.json_out:
        pathlib.Path(args.json_out).write_text(json.dumps({"medians_s": medians, "ratios": ratios, "cpu": cpu_name()}))
    return 0 if all(r > 1 for k, r in ratios.items() if k != "one request") else 1


if __name__ == "__main__":
    sys.exit(main())
