#!/usr/bin/env python3
"""The prefix cache's disk tier (--kv-disk) on a model, in one run:

    python3 bench/kv_disk.py [--model models/gemma-3-270m-q4_k_m.gguf] [--tenants 40]
                             [--prefix-words 2000] [--rounds 2] [--drop-caches] [--out kv_disk.json]

  1. restart: time to first token of a request with a ~4,000-token prompt, cold, then
     after the server restarted on the same --kv-disk folder (the prefix read back from
     disk), and, for reference, warm in memory; the greedy tokens of all three compared.
     --drop-caches (root only) empties the page cache before the restart, so the blocks
     come from the disk itself rather than from memory.
  2. beyond memory: N tenants, each with its own ~2,000-token prefix, asked in turn for
     --rounds rounds through a cache sized for 8 of those prefixes (--ctx-total), with
     and without the disk tier: median TTFT of the rounds after the first, the prefix
     hit rate over them, and the greedy tokens compared between the two servers.
One request at a time, 2 compute threads, loopback only. Figures drift on shared machines:
compare within one run.
"""
import argparse
import json
import os
import pathlib
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from machine import cpu_name  # noqa: E402
from serve_benchmarks import Server, free_port  # noqa: E402

ROOT = pathlib.Path(__file__).resolve().parents[1]
TOKENMILL = ROOT / "build" / "bin" / "tokenmill"
WORDS = ("river mountain lantern copper window garden silver engine harbor meadow violet thunder pocket marble "
         "candle forest ladder orbit canvas falcon pepper glacier saddle timber velvet anchor compass beacon "
         "quartz willow").split()


def prefix(seed, n_words):
    rng = random.Random(seed)
    return f"Document {seed}. " + " ".join(rng.choice(WORDS) for _ in range(n_words))


def stream(port, prompt, max_tokens=16):
    """(seconds to the first token, text, prompt tokens, cached tokens) of one greedy request."""
    body = json.dumps({"model": "default", "prompt": prompt, "max_tokens": max_tokens, "temperature": 0,
                       "stream": True, "stream_options": {"include_usage": True}}).encode()
    req = urllib.request.Request(f"http://127.0.0.1:{port}/v1/completions", data=body,
                                 headers={"Content-Type": "application/json"})
    start = time.perf_counter()
    ttft, text, usage = None, "", {}
    with urllib.request.urlopen(req, timeout=600) as r:
        for raw in r:
            line = raw.decode().strip()
            if not line.startswith("data: ") or line == "data: [DONE]":
                continue
            chunk = json.loads(line[6:])
            if chunk.get("usage"):
                usage = chunk["usage"]
            for choice in chunk.get("choices", []):
                if choice.get("text"):
                    if ttft is None:
                        ttft = time.perf_counter() - start
                    text += choice["text"]
    cached = (usage.get("prompt_tokens_details") or {}).get("cached_tokens", 0)
    return ttft if ttft is not None else time.perf_counter() - start, text, usage.get("prompt_tokens", 0), cached


def metrics(port):
    out = {}
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as r:
        for line in r.read().decode().splitlines():
            if line and not line.startswith("#"):
                key, _, value = line.rpartition(" ")
                out[key] = float(value)
    return out


def server(model, extra=()):
    port = free_port()
    return Server([str(TOKENMILL), "serve", "-m", model, "--port", str(port), "-t", "2", *extra], port)


def drop_page_cache():
    subprocess.run(["sync"], check=True)
    pathlib.Path("/proc/sys/vm/drop_caches").write_text("3\n")


def restart_part(model, folder, words, drop_caches):
    prompt = prefix(7, words) + "\nQuestion: what is the first word?"
    first = server(model, ["--kv-disk", folder])
    try:
        cold, cold_text, n_prompt, _ = stream(first.port, prompt)
        warm, warm_text, _, warm_cached = stream(first.port, prompt)
    finally:
        first.stop()
    if drop_caches:
        drop_page_cache()
    second = server(model, ["--kv-disk", folder])
    try:
        after, after_text, _, after_cached = stream(second.port, prompt)
        m = metrics(second.port)
    finally:
        second.stop()
    result = dict(prompt_tokens=n_prompt, ttft_cold_s=cold, ttft_warm_memory_s=warm, ttft_after_restart_s=after,
                  after_restart_over_cold=after / cold, cached_after_restart=after_cached,
                  same_tokens=cold_text == warm_text == after_text, page_cache_dropped=drop_caches,
                  disk_blocks_read=m.get("tokenmill_kv_disk_hits_total", 0),
                  disk_bytes_read=m.get("tokenmill_kv_disk_bytes_read_total", 0))
    print(f"restart: {n_prompt}-token prompt, TTFT cold {cold*1e3:.0f} ms, warm in memory {warm*1e3:.0f} ms, "
          f"after a restart {after*1e3:.0f} ms ({after / cold:.1%} of cold; {after_cached} tokens from disk, "
          f"{result['disk_bytes_read'] / 2**20:.1f} MiB read{', page cache dropped' if drop_caches else ''}); "
          f"same tokens: {result['same_tokens']}")
    return result


def tenants_part(model, folder, n_tenants, words, rounds, ctx_total):
    runs = {}
    for label, extra in (("memory only", []), ("with disk tier", ["--kv-disk", folder])):
        s = server(model, ["--ctx-total", str(ctx_total), *extra])
        try:
            ttfts, texts, before = [], [], None
            for r in range(rounds):
                if r == 1:
                    before = metrics(s.port)
                for t in range(n_tenants):
                    ttft, text, _, _ = stream(s.port, prefix(1000 + t, words) + f"\nQuestion {r}: name a word.")
                    texts.append(text)
                    if r >= 1:
                        ttfts.append(ttft)
            after = metrics(s.port)
        finally:
            s.stop()
        queried = after["tokenmill_prefix_cache_queries_total"] - before["tokenmill_prefix_cache_queries_total"]
        hit = after["tokenmill_prefix_cache_hits_total"] - before["tokenmill_prefix_cache_hits_total"]
        runs[label] = dict(median_ttft_s=statistics.median(ttfts), hit_rate=hit / queried if queried else 0.0,
                           disk_hits=after.get("tokenmill_kv_disk_hits_total", 0), texts=texts)
        print(f"{n_tenants} tenants, {label}: median TTFT {runs[label]['median_ttft_s']*1e3:.0f} ms over rounds 2.., "
              f"prefix hit rate {runs[label]['hit_rate']:.1%}")
    plain, disk = runs["memory only"], runs["with disk tier"]
    ratio = disk["median_ttft_s"] / plain["median_ttft_s"]
    same = plain["texts"] == disk["texts"]
    print(f"median TTFT with the disk tier / without: {ratio:.2f}; same tokens: {same}")
    for r in runs.values():
        del r["texts"]
    return dict(runs=runs, ttft_ratio=ratio, same_tokens=same, ctx_total=ctx_total)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--model", default=str(ROOT / "models" / "gemma-3-270m-q4_k_m.gguf"))
    parser.add_argument("--tenants", type=int, default=40)
    parser.add_argument("--prefix-words", type=int, default=2000, help="~2,000 tokens on the default model (one token a word)")
    parser.add_argument("--restart-words", type=int, default=4000, help="~4,000 tokens on the default model")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--ctx-total", type=int, default=16384, help="the memory cache: 8 prefixes of ~2,000 tokens")
    parser.add_argument("--drop-caches", action="store_true", help="empty the page cache before the restart (root)")
    parser.add_argument("--out", default="kv_disk.json")
    args = parser.parse_args()
    work = pathlib.Path(tempfile.mkdtemp(prefix="tokenmill-kv-disk-bench-"))
    try:
        results = dict(cpu=cpu_name(), isa=os.environ.get("TOKENMILL_ISA", "native"),
                       restart=restart_part(args.model, str(work / "restart"), args.restart_words, args.drop_caches),
                       tenants=tenants_part(args.model, str(work / "tenants"), args.tenants, args.prefix_words,
                                            args.rounds, args.ctx_total))
        size = sum(f.stat().st_size for f in (work / "tenants").rglob("*.kvb"))
        results["tenants"]["disk_bytes"] = size
        print(f"disk tier after the tenants: {size / 2**20:.0f} MiB")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    pathlib.Path(args.out).write_text(json.dumps(results, indent=2))
    print(f"CPU: {results['cpu']} ({results['isa']}); results in {args.out}")


if __name__ == "__main__":
    main()
