#!/usr/bin/env python3
"""Serving benchmarks for tokenmill, with llama.cpp's llama-server in the same run.

    python3 bench/serve_benchmarks.py [--model models/gemma-3-270m-q4_k_m.gguf]
                                      [--isa native|avx2|avxvnni] [--llama-server PATH]
                                      [--out results.json] [--gen-len N] [--pairs N]

llama-server: --llama-server PATH, else $LLAMA_SERVER, else the one bench/compare_llamacpp
builds for --isa (`bench/compare_llamacpp --isa avx2 --build-only server`):
$CACHE/llama.cpp-build/bin/llama-server (native) or $CACHE/llama.cpp-build-avx2/bin/llama-server,
CACHE = $TOKENMILL_CACHE or ~/.cache/tokenmill. --isa avx2 also runs tokenmill with
TOKENMILL_ISA=avx2; --isa avxvnni runs tokenmill with TOKENMILL_ISA=avxvnni (its AVX-VNNI panels)
against the same AVX2 llama-server; --isa native (the default) runs it with TOKENMILL_ISA unset, as
compare_llamacpp does.

Measures, on loopback only:
  1. output tok/s of one stream vs 16 concurrent streams (tokenmill: --pairs pairs measured
     back to back, the median ratio), and 16 streams on llama-server -np 16 with the same
     threads (skipped, and said so, if no llama-server);
  2. TTFT of a request with a 2,000-token system prompt, cold vs warm (prefix cache);
  3. 256 concurrent streaming clients: all complete, server memory before/after;
  4. chunked prefill: inter-token latency p99 of 8 running streams, alone and while a
     4,000-token prompt arrives.
Figures drift on shared machines: compare within one run.
"""
import argparse
import json
import os
import pathlib
import random
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.request

ROOT = pathlib.Path(__file__).resolve().parents[1]
TOKENMILL = ROOT / "build" / "bin" / "tokenmill"
WORDS = ("time person year way day thing man world life hand part child eye woman place work week case point "
         "government company number group problem fact river stone light music garden window letter story").split()


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_healthy(port, proc, timeout=120):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"server exited with {proc.returncode}")
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=2) as r:
                if r.status == 200:
                    return
        except Exception:
            time.sleep(0.3)
    raise RuntimeError("server did not become healthy")


class Server:
    def __init__(self, argv, port):
        self.port = port
        self.proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        wait_healthy(port, self.proc)

    def rss_mib(self, field="VmRSS"):
        for line in open(f"/proc/{self.proc.pid}/status"):
            if line.startswith(field + ":"):
                return int(line.split()[1]) / 1024
        return 0.0

    def stop(self):
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.proc.kill()


def tokenmill_server(model, extra=()):
    port = free_port()
    return Server([str(TOKENMILL), "serve", "-m", model, "--port", str(port), "-t", "2", *extra], port)


def bench_serve(port, concurrency, requests, prompt_len, gen_len, extra=()):
    out = subprocess.run([str(TOKENMILL), "bench-serve", "--url", f"http://127.0.0.1:{port}", "-c", str(concurrency),
                          "-n", str(requests), "--prompt-len", str(prompt_len), "--gen-len", str(gen_len), "--json",
                          *extra], capture_output=True, text=True, timeout=3600)
    if out.returncode not in (0, 1):
        raise RuntimeError(out.stderr)
    return json.loads(out.stdout)


def stream_ttft(port, messages, max_tokens=1):
    body = json.dumps({"model": "default", "messages": messages, "max_tokens": max_tokens, "temperature": 0,
                       "stream": True}).encode()
    req = urllib.request.Request(f"http://127.0.0.1:{port}/v1/chat/completions", data=body,
                                 headers={"Content-Type": "application/json"})
    start = time.perf_counter()
    ttft = None
    with urllib.request.urlopen(req, timeout=600) as r:
        for raw in r:
            line = raw.decode().strip()
            if line.startswith("data: ") and line != "data: [DONE]" and ttft is None:
                chunk = json.loads(line[6:])
                if chunk.get("choices") and chunk["choices"][0].get("delta", {}).get("content"):
                    ttft = time.perf_counter() - start
    return ttft if ttft is not None else time.perf_counter() - start


def words(n, seed):
    rng = random.Random(seed)
    return " ".join(rng.choice(WORDS) for _ in range(n))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--model", default=str(ROOT / "models" / "gemma-3-270m-q4_k_m.gguf"))
    parser.add_argument("--isa", choices=("native", "avx2", "avxvnni"), default="native",
                        help="picks the llama-server build (avxvnni: the avx2 one) and sets TOKENMILL_ISA to it")
    parser.add_argument("--llama-server", default=os.environ.get("LLAMA_SERVER"),
                        help="default: $LLAMA_SERVER, else compare_llamacpp's build for --isa")
    parser.add_argument("--out", default="serve_benchmarks.json")
    parser.add_argument("--gen-len", type=int, default=64)
    parser.add_argument("--pairs", type=int, default=3, help="1-stream / 16-stream measurements, back to back")
    args = parser.parse_args()
    if not args.llama_server:
        cache = pathlib.Path(os.environ.get("TOKENMILL_CACHE", pathlib.Path.home() / ".cache" / "tokenmill"))
        build = "llama.cpp-build" if args.isa == "native" else "llama.cpp-build-avx2"
        args.llama_server = str(cache / build / "bin" / "llama-server")
    # Inherited by every tokenmill serve started below.
    if args.isa == "native":
        os.environ.pop("TOKENMILL_ISA", None)
    else:
        os.environ["TOKENMILL_ISA"] = args.isa
    results = {"model": args.model, "isa": args.isa, "tokenmill_isa": os.environ.get("TOKENMILL_ISA", "native"),
               "llama_server": args.llama_server}

    # 1. Throughput: one stream vs 16, and llama-server -np 16. The machine's memory
    # bandwidth drifts by 20-30% within minutes, and one stream (bandwidth-bound) feels it
    # more than 16 (compute-bound): the two are measured back to back, --pairs times, and
    # the median of the pairs' ratios is the figure.
    server = tokenmill_server(args.model)
    pairs = []
    try:
        for i in range(args.pairs):
            # Distinct prompt seeds: no run finds another's prompts in the prefix cache.
            single = bench_serve(server.port, 1, 4, 64, args.gen_len, extra=("--seed", str(100 + 2 * i)))
            sixteen = bench_serve(server.port, 16, 32, 64, args.gen_len, extra=("--seed", str(101 + 2 * i)))
            pairs.append((single["output_throughput"], sixteen["output_throughput"]))
            print(f"tokenmill pair {i + 1}: 1 stream {pairs[-1][0]:.1f} tok/s, 16 streams {pairs[-1][1]:.1f} tok/s "
                  f"({pairs[-1][1] / pairs[-1][0]:.2f}x)", flush=True)
    finally:
        server.stop()
    ratios = sorted(b / a for a, b in pairs)
    median_pair = sorted(pairs, key=lambda p: p[1] / p[0])[len(pairs) // 2]
    results["tokenmill_pairs"] = [{"single_stream_tok_s": a, "16_streams_tok_s": b} for a, b in pairs]
    results["tokenmill_single_stream_tok_s"] = median_pair[0]
    results["tokenmill_16_streams_tok_s"] = median_pair[1]
    results["tokenmill_16_vs_1"] = ratios[len(ratios) // 2]
    print(f"tokenmill: median of {len(pairs)} pairs: 1 stream {median_pair[0]:.1f} tok/s, 16 streams "
          f"{median_pair[1]:.1f} tok/s ({results['tokenmill_16_vs_1']:.2f}x; all: "
          f"{', '.join(f'{r:.2f}' for r in ratios)})", flush=True)

    if pathlib.Path(args.llama_server).exists():
        port = free_port()
        ctx = 16 * (64 + args.gen_len + 64)
        llama = Server([args.llama_server, "-m", args.model, "--port", str(port), "-np", "16", "-t", "2",
                        "-c", str(ctx), "--no-webui"], port)
        try:
            llama16 = bench_serve(port, 16, 32, 64, args.gen_len, extra=("--model", "default", "--seed", "13"))
            llama1 = bench_serve(port, 1, 4, 64, args.gen_len, extra=("--model", "default", "--seed", "14"))
        finally:
            llama.stop()
        results["llama_server_16_streams_tok_s"] = llama16["output_throughput"]
        results["llama_server_single_stream_tok_s"] = llama1["output_throughput"]
        results["tokenmill_vs_llama_server_16"] = median_pair[1] / llama16["output_throughput"]
        print(f"llama-server -np 16: 1 stream {llama1['output_throughput']:.1f} tok/s, 16 streams "
              f"{llama16['output_throughput']:.1f} tok/s; tokenmill/llama.cpp at 16 = "
              f"{results['tokenmill_vs_llama_server_16']:.2f}x", flush=True)
    else:
        print(f"llama-server not found at {args.llama_server}: skipped the llama.cpp comparison", flush=True)

    # 2. Prefix caching: TTFT with a 2,000-token shared system prompt, cold vs warm.
    server = tokenmill_server(args.model)
    try:
        system = words(2000, 1)
        cold = stream_ttft(server.port, [{"role": "system", "content": system}, {"role": "user", "content": "Hi!"}])
        warm = stream_ttft(server.port, [{"role": "system", "content": system},
                                         {"role": "user", "content": "Tell me a joke."}])
    finally:
        server.stop()
    results.update(ttft_cold_s=cold, ttft_warm_s=warm, ttft_warm_over_cold=warm / cold)
    print(f"TTFT with a 2,000-word system prompt: cold {cold*1e3:.0f} ms, warm {warm*1e3:.0f} ms "
          f"({100*warm/cold:.1f}%)", flush=True)

    # 3. 256 concurrent streaming clients.
    server = tokenmill_server(args.model, extra=("--max-seqs", "256", "--ctx-total", "32768"))
    try:
        rss_before = server.rss_mib()
        many = bench_serve(server.port, 256, 256, 16, 16)
        rss_after, rss_peak = server.rss_mib(), server.rss_mib("VmHWM")
    finally:
        server.stop()
    results.update(c256_completed=many["completed"], c256_failed=many["failed"], rss_before_mib=rss_before,
                   rss_after_mib=rss_after, rss_peak_mib=rss_peak, c256_output_tok_s=many["output_throughput"])
    print(f"256 concurrent clients: {many['completed']} completed, {many['failed']} failed, "
          f"{many['output_throughput']:.1f} tok/s; RSS {rss_before:.0f} -> {rss_after:.0f} MiB (peak {rss_peak:.0f})",
          flush=True)

    # 4. Chunked prefill: 8 streams' ITL p99 alone, and while a 4,000-token prompt arrives.
    server = tokenmill_server(args.model)
    try:
        # Streams long enough (400 tokens) to still be running while the long prompt is read.
        alone = bench_serve(server.port, 8, 8, 32, 400)
        box = {}

        def run_streams():
            box["with_long"] = bench_serve(server.port, 8, 8, 32, 400, extra=("--seed", "2"))

        t = threading.Thread(target=run_streams)
        t.start()
        time.sleep(2.0)
        long_ttft = stream_ttft(server.port, [{"role": "user", "content": words(4000, 3)}])
        t.join()
        with_long = box["with_long"]
    finally:
        server.stop()
    results.update(itl_p99_alone_ms=alone["p99_itl_ms"], itl_p99_with_long_prompt_ms=with_long["p99_itl_ms"],
                   itl_mean_alone_ms=alone["mean_itl_ms"], itl_mean_with_long_prompt_ms=with_long["mean_itl_ms"],
                   long_prompt_ttft_s=long_ttft)
    print(f"chunked prefill: 8 streams' ITL p99 {alone['p99_itl_ms']:.0f} ms alone, "
          f"{with_long['p99_itl_ms']:.0f} ms while a 4,000-word prompt arrives (its TTFT {long_ttft:.1f} s)",
          flush=True)

    pathlib.Path(args.out).write_text(json.dumps(results, indent=1))
    print(f"wrote {args.out}")


if __name__ == "__main__":
    sys.exit(main())
