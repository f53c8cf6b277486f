#!/usr/bin/env python3
"""Speculative decoding benchmarks: tokenmill with drafts against tokenmill without, same run.

    python3 bench/spec_benchmarks.py [--model models/gemma-3-270m-q4_k_m.gguf] [--rounds 3]
                                     [--max-tokens 256] [--out spec_benchmarks.json]
                                     [--isa native|avx512|avx2|avxvnni] [--llama-server PATH]
                                     [--draft-model DRAFT.gguf]

One `tokenmill serve` (2 threads, --spec ngram). Every measurement alternates requests
with "speculative": false (plain decoding) and without it, so both see the same machine
state; the figure is the median over --rounds of the ratio of output tok/s. Greedy
(temperature 0) unless said otherwise, so every pair produces the same tokens (checked).

  copy-heavy, 1 stream:   quoting, extraction, a file repeated, a text corrected
  free text, 1 stream:    stories and answers that do not copy their prompt
  free text, sampled:     the same at temperature 0.8 (seeded: the tokens match too), and at
                          temperature 1 with a repetition penalty (text that does not repeat)
  Predicted Outputs:      a code edit whose unchanged file is sent as the prediction,
                          against the same request without prediction and without drafts
  16 streams:             copy-heavy and free, aggregate tok/s

With --llama-server (or $LLAMA_SERVER), llama.cpp's llama-server runs the copy-heavy and free
prompts too, plain and with its n-gram self-speculation (--spec-type ngram-simple and
ngram-mod), one server per setting: its speed-ups set beside tokenmill's. Build one with
`bench/compare_llamacpp --isa avx2 --build-only server` and compare with --isa avx2.

With --draft-model, a second tokenmill server drafts with that model (--draft-model) and
runs the copy-heavy and free prompts at 1 and 16 streams the same way; with
--llama-server too, llama-server runs them plain and with the same draft (-md, its
draft-model speculation).

Prints the CPU and kernel set the server reported. Figures drift on shared machines:
compare within one run.
"""
import argparse
import concurrent.futures
import json
import os
import pathlib
import re
import signal
import statistics
import subprocess
import time
import urllib.request

import serve_benchmarks
from serve_benchmarks import free_port, wait_healthy

ROOT = pathlib.Path(__file__).resolve().parents[1]
TOKENMILL = ROOT / "build" / "bin" / "tokenmill"

SOURCE = (ROOT / "src" / "engine" / "scheduler.cc").read_text()[:2400]
ARTICLE = (
    "The river town of Alder Bend was founded in 1843 by ferrymen who carried grain across the Wide "
    "Water. In 1871 a stone bridge replaced the ferries, and the town grew around its market square. "
    "The great flood of 1902 destroyed the mill and half of the houses on the east bank; they were "
    "rebuilt in brick by 1910. Today Alder Bend has 12,400 inhabitants, a grain museum in the old "
    "customs house, and a festival every September that celebrates the first crossing.")
COPY_PROMPTS = [
    "Here is a C++ file:\n\n" + SOURCE + "\n\nRepeat the file above exactly, from its first line:\n\n",
    "Article:\n" + ARTICLE + "\n\nQuote the sentence of the article that mentions the flood, word for word.",
    "Article:\n" + ARTICLE + "\n\nRewrite the article as a bullet list, keeping every sentence as it is.",
    "Fix the spelling in this text and return the whole corrected text:\n\n" +
    ARTICLE.replace("destroyed", "destroyd").replace("festival", "festivl"),
]
FREE_PROMPTS = [
    "Write a short story about a lighthouse keeper who finds a message in a bottle.",
    "Explain to a ten-year-old why the sky is blue.",
    "Give me five ideas for a rainy Sunday afternoon, with a sentence on each.",
    "What should I think about before adopting a dog?",
]
EDIT_PROMPT = ("Here is a C++ file:\n\n" + SOURCE + "\n\nRepeat the file above exactly, changing nothing, "
               "from its first line:\n\n")


class Server(serve_benchmarks.Server):
    """tokenmill serve with its log kept (for the kernels line); stop() as serve_benchmarks'."""

    def __init__(self, model, extra=()):
        self.port = free_port()
        self.log_path = pathlib.Path("/tmp") / f"tokenmill-spec-bench-{self.port}.log"
        self.proc = subprocess.Popen([str(TOKENMILL), "serve", "-m", model, "--port", str(self.port), "-t", "2",
                                      *extra], stdout=subprocess.DEVNULL, stderr=open(self.log_path, "w"))
        wait_healthy(self.port, self.proc)

    def kernels(self):
        m = re.search(r"^kernels: (.*)$", self.log_path.read_text(), re.M)
        return m.group(1) if m else "unknown"



def chat(port, prompt, max_tokens, speculative=True, prediction=None, temperature=0.0, seed=None, extra=None):
    body = {"model": "default", "messages": [{"role": "user", "content": prompt}], "max_tokens": max_tokens,
            "temperature": temperature, **(extra or {})}
    if not speculative:
        body["speculative"] = False
    if prediction is not None:
        body["prediction"] = {"type": "content", "content": prediction}
    if seed is not None:
        body["seed"] = seed
    req = urllib.request.Request(f"http://127.0.0.1:{port}/v1/chat/completions", data=json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=600) as r:
        out = json.load(r)
    return out["choices"][0]["message"]["content"], out["usage"]


def throughput(port, prompts, max_tokens, streams, **kwargs):
    """Output tok/s of requests cycling through prompts, `streams` at a time, and their texts:
    each prompt once for one stream; three requests per stream for several (a steady load,
    as a server sees, rather than the tail of one burst)."""
    n_jobs = len(prompts) if streams == 1 else 3 * streams
    jobs = [prompts[i % len(prompts)] for i in range(n_jobs)]
    start = time.perf_counter()
    with concurrent.futures.ThreadPoolExecutor(streams) as pool:
        results = list(pool.map(lambda p: chat(port, p, max_tokens, **kwargs), jobs))
    elapsed = time.perf_counter() - start
    tokens = sum(usage["completion_tokens"] for _, usage in results)
    return tokens / elapsed, [text for text, _ in results]


def compare(name, port, rounds, plain_kwargs, spec_kwargs, prompts, max_tokens, streams, results):
    ratios, plain_rates, spec_rates = [], [], []
    for _ in range(rounds):
        plain, plain_texts = throughput(port, prompts, max_tokens, streams, **plain_kwargs)
        spec, spec_texts = throughput(port, prompts, max_tokens, streams, **spec_kwargs)
        if plain_texts != spec_texts:
            raise RuntimeError(f"{name}: the outputs differ with speculation")
        ratios.append(spec / plain)
        plain_rates.append(plain)
        spec_rates.append(spec)
    results[name] = {"plain_tok_s": statistics.median(plain_rates), "spec_tok_s": statistics.median(spec_rates),
                     "ratio": statistics.median(ratios), "ratios": ratios}
    print(f"{name:34s} plain {statistics.median(plain_rates):7.1f} tok/s  spec {statistics.median(spec_rates):7.1f}"
          f" tok/s  {statistics.median(ratios):.2f}x  (all: {', '.join(f'{r:.2f}' for r in ratios)})", flush=True)


NGRAM_SETTINGS = {"plain": [], "ngram-simple": ["--spec-type", "ngram-simple"],
                  "ngram-mod": ["--spec-type", "ngram-mod"]}


def llama_server_comparison(args, results, settings=NGRAM_SETTINGS):
    """llama.cpp's llama-server on the same prompts: plain, then with each other setting (its
    n-gram self-speculation, or a draft model); a server per setting, --rounds rounds."""
    cases = {"copy-heavy": COPY_PROMPTS, "free text": FREE_PROMPTS}
    rates = {(s, c): [] for s in settings for c in cases}
    for _ in range(args.rounds):
        for setting, flags in settings.items():
            port = free_port()
            proc = subprocess.Popen([args.llama_server, "-m", args.model, "--port", str(port), "-t", "2", "-c", "8192",
                                     "-np", "1", "--no-webui", *flags], stdout=subprocess.DEVNULL,
                                    stderr=subprocess.DEVNULL)
            try:
                wait_healthy(port, proc)
                chat(port, FREE_PROMPTS[0], 8, speculative=True)
                for case, prompts in cases.items():
                    rates[(setting, case)].append(throughput(port, prompts, args.max_tokens, 1)[0])
            finally:
                proc.send_signal(signal.SIGTERM)
                proc.wait(timeout=60)
    for case in cases:
        plain = statistics.median(rates[("plain", case)])
        for setting in (s for s in settings if s != "plain"):
            spec = statistics.median(rates[(setting, case)])
            results[f"llama.cpp {setting}, {case}, 1 stream"] = {"plain_tok_s": plain, "spec_tok_s": spec,
                                                                  "ratio": spec / plain}
            print(f"llama.cpp {setting:13s} {case:10s} 1 stream  plain {plain:7.1f} tok/s  spec {spec:7.1f} tok/s  "
                  f"{spec / plain:.2f}x", flush=True)


def draft_model_comparison(args, results):
    """A tokenmill server with --draft-model: drafts against plain on the same server, as above."""
    server = Server(args.model, ["--draft-model", args.draft_model])
    try:
        port, n, r = server.port, args.max_tokens, args.rounds
        chat(port, FREE_PROMPTS[0], 8)
        for streams in (1, 16):
            compare(f"draft model, copy-heavy, {streams} stream(s)", port, r, {"speculative": False}, {}, COPY_PROMPTS,
                    n, streams, results)
            compare(f"draft model, free text, {streams} stream(s)", port, r, {"speculative": False}, {}, FREE_PROMPTS,
                    n, streams, results)
        counters = spec_counters(port)
    finally:
        server.stop()
    drafts = counters.get("tokenmill_spec_decode_num_draft_tokens_total", 0)
    accepted = counters.get("tokenmill_spec_decode_num_accepted_tokens_total", 0)
    print(f"draft model over the run: {accepted:.0f} of {drafts:.0f} drafts accepted", flush=True)
    results["draft_model"] = {"path": args.draft_model, "draft_tokens": drafts, "accepted_tokens": accepted}


def spec_counters(port):
    text = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics").read().decode()
    return {k: float(v) for k, v in re.findall(r"^(tokenmill_spec_decode_num_\w+_total) (\S+)$", text, re.M)}


def ngram_comparison(args, results):
    """tokenmill's n-gram drafter and Predicted Outputs against plain decoding on one server,
    then (with --llama-server) llama.cpp's n-gram self-speculation on the same prompts."""
    server = Server(args.model)
    results["kernels"] = server.kernels()
    print(f"kernels: {results['kernels']}", flush=True)
    try:
        port, n, r = server.port, args.max_tokens, args.rounds
        chat(port, FREE_PROMPTS[0], 8)  # warm-up
        plain, spec = {"speculative": False}, {}
        for streams in (1, 16):
            compare(f"copy-heavy, {streams} stream(s)", port, r, plain, spec, COPY_PROMPTS, n, streams, results)
            compare(f"free text, {streams} stream(s)", port, r, plain, spec, FREE_PROMPTS, n, streams, results)
        sampled = {"temperature": 0.8, "seed": 5}
        compare("free text sampled, 1 stream", port, r, {**plain, **sampled}, sampled, FREE_PROMPTS, n, 1, results)
        # The default model's greedy and mildly sampled text repeats itself (where n-gram
        # drafts pay); with a repetition penalty it does not: the case where drafts rarely pay.
        varied = {"temperature": 1.0, "seed": 5, "extra": {"repetition_penalty": 1.3}}
        compare("free text, repetition penalty, 1 stream", port, r, {**plain, **varied}, varied, FREE_PROMPTS, n, 1,
                results)
        compare("free text, repetition penalty, 16 streams", port, r, {**plain, **varied}, varied, FREE_PROMPTS, n,
                16, results)
        compare("Predicted Outputs code edit, 1 stream", port, r, plain, {"prediction": SOURCE}, [EDIT_PROMPT], n,
                1, results)
        counters = spec_counters(port)
    finally:
        server.stop()
    drafts = counters.get("tokenmill_spec_decode_num_draft_tokens_total", 0)
    accepted = counters.get("tokenmill_spec_decode_num_accepted_tokens_total", 0)
    verifications = counters.get("tokenmill_spec_decode_num_drafts_total", 0)
    results["acceptance_rate"] = accepted / drafts if drafts else 0.0
    results["mean_accepted_per_verification"] = accepted / verifications if verifications else 0.0
    print(f"over the run: {accepted:.0f} of {drafts:.0f} drafts accepted ({100 * results['acceptance_rate']:.0f}%), "
          f"{results['mean_accepted_per_verification']:.2f} per verification", flush=True)
    if args.llama_server:
        llama_server_comparison(args, results)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--model", default=str(ROOT / "models" / "gemma-3-270m-q4_k_m.gguf"))
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--max-tokens", type=int, default=256)
    parser.add_argument("--out", default="spec_benchmarks.json")
    parser.add_argument("--isa", choices=("native", "avx512", "avx2", "avxvnni"), default="native",
                        help="TOKENMILL_ISA for the server (avx2: to compare with an AVX2 llama.cpp build)")
    parser.add_argument("--llama-server", default=os.environ.get("LLAMA_SERVER"),
                        help="also measure llama.cpp's n-gram speculation on the same prompts (default: $LLAMA_SERVER)")
    parser.add_argument("--draft-model", help="also measure draft-model speculation with this GGUF")
    parser.add_argument("--draft-only", action="store_true",
                        help="with --draft-model: measure only the draft-model speculation (no n-gram cases)")
    args = parser.parse_args()
    if args.draft_only and not args.draft_model:
        parser.error("--draft-only needs --draft-model")
    if args.isa == "native":
        os.environ.pop("TOKENMILL_ISA", None)
    else:
        os.environ["TOKENMILL_ISA"] = args.isa

    results = {"model": args.model}
    if not args.draft_only:
        ngram_comparison(args, results)
    if args.draft_model:
        draft_model_comparison(args, results)
        if args.llama_server:
            llama_server_comparison(args, results, {"plain": [], "draft model": ["-md", args.draft_model,
                                                                                 "--spec-draft-n-max", "16"]})
    pathlib.Path(args.out).write_text(json.dumps(results, indent=2))
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
