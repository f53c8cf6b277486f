#!/usr/bin/env python3
"""tokenmill bench against llama.cpp (through llama-cpp-python) on one GGUF file, same run.

Made for the mixture-of-experts shapes (tools/make_shaped_model.py --shape
qwen3moe-30b-a3b-8l), but any model both engines load works. Both engines run on the same
file, one after the other, with the same thread count:

  tokenmill  `tokenmill bench -m FILE -p P -n N -t T -r R --spec off --json`: pp is one
             forward pass over P random prompt tokens, tg is N single-token decode steps
             (random tokens) after a one-token prompt, plain decoding (no speculation);
             one untimed warm-up of each first.
  llama.cpp  the llama-cpp-python package in this Python (its own llama.cpp build, used as
             installed): pp = one `llm.eval()` of P random tokens (n_batch = n_ubatch =
             max(512, P), so one decode of the whole prompt; n_ctx max(1024, ...); the cache
             emptied and `llm.reset()` before each), tg = N single-token `llm.eval([tok])`
             calls of random tokens after a one-token prompt (the cache emptied first), tok/s =
             N / their time; one untimed warm-up of each, then R repetitions, pp and tg
             alternating as tokenmill does. Flash attention on by default (what llama.cpp's
             "auto" picks on the CPU; llama-cpp-python's own default is off): --flash-attn off.
             Weights memory-mapped unless --no-mmap.

Each engine's figure is the median of its R repetitions (tokenmill's samples_ts). The
table shows pp and tg tok/s for both engines and the ratios tokenmill / llama.cpp, then the
CPU model and flags (/proc/cpuinfo), the kernels tokenmill chose (kernel_set and its cpu
features; TOKENMILL_ISA in the environment is passed on and shown) and llama.cpp's
llama_print_system_info(). --json PATH writes the same, with every sample.

The machine is shared and noisy: only ratios from the same quiet run mean much.

Usage: python3 bench/moe_compare.py --model FILE [--threads 2] [--reps 3]
                                    [--prompt-tokens 512] [--gen-tokens 128]
                                    [--tokenmill-bin build/bin/tokenmill]
                                    [--flash-attn on|off] [--no-mmap] [--json PATH]
e.g.
  python3 tools/make_shaped_model.py --shape qwen3moe-30b-a3b-8l --type q4_k_m
  python3 bench/moe_compare.py --model models/qwen3moe-30b-a3b-8l-shaped-q4_k_m.gguf
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def cpu_info() -> dict:
    """The CPU's model name and its vector flags, from /proc/cpuinfo."""
    model, flags = "unknown", []
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            key, _, value = line.partition(":")
            if key.strip() == "model name" and model == "unknown":
                model = value.strip()
            elif key.strip() == "flags":
                flags = value.split()
                break
    except OSError:
        pass
    vector = [f for f in flags if f in ("avx", "avx2", "fma", "f16c", "bmi2", "avx_vnni")
              or f.startswith(("avx512", "amx"))]
    return {"model": model, "logical_cores": os.cpu_count(), "vector_flags": vector}


def run_tokenmill(args: argparse.Namespace) -> dict:
    cmd = [str(args.tokenmill_bin), "bench", "-m", str(args.model), "-p", str(args.prompt_tokens),
           "-n", str(args.gen_tokens), "-t", str(args.threads), "-r", str(args.reps), "--spec", "off", "--json"]
    isa = os.environ.get("TOKENMILL_ISA")
    log("$ " + (f"TOKENMILL_ISA={isa} " if isa else "") + " ".join(cmd))
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        log(proc.stderr[-2000:])
        raise RuntimeError(f"tokenmill bench failed with exit code {proc.returncode}")
    text = proc.stdout
    results = json.loads(text[text.index("["):])
    out: dict = {"binary": str(args.tokenmill_bin), "command": cmd, "TOKENMILL_ISA": isa}
    for r in results:
        test = "pp" if r["n_prompt"] > 0 else "tg"
        out[test] = {"test": r["test"], "median_ts": statistics.median(r["samples_ts"]),
                     "mean_ts": r["avg_ts"], "stddev_ts": r["stddev_ts"], "samples_ts": r["samples_ts"]}
        for key in ("cpu_brand", "kernel_set", "cpu_features", "n_threads", "model_type"):
            out[key] = r.get(key)
    return out


def clear_cache(llama_cpp, llm) -> None:
    """Empties the model's KV cache (llama_memory_clear; llama_kv_self_clear in older versions)."""
    if hasattr(llama_cpp, "llama_memory_clear"):
        llama_cpp.llama_memory_clear(llama_cpp.llama_get_memory(llm.ctx), True)
    else:
        llama_cpp.llama_kv_self_clear(llm.ctx)
    llm.reset()


def run_llama_cpp(args: argparse.Namespace) -> dict:
    import llama_cpp

    n_batch = max(512, args.prompt_tokens)
    n_ctx = max(1024, args.prompt_tokens, args.gen_tokens + 1)
    log(f"llama-cpp-python {llama_cpp.__version__}: loading {args.model} (n_ctx {n_ctx}, n_batch = n_ubatch "
        f"{n_batch}, {args.threads} threads, flash attention {args.flash_attn}, mmap {not args.no_mmap})")
    llm = llama_cpp.Llama(model_path=str(args.model), n_ctx=n_ctx, n_batch=n_batch, n_ubatch=n_batch,
                          n_threads=args.threads, n_threads_batch=args.threads, flash_attn=args.flash_attn == "on",
                          use_mmap=not args.no_mmap, logits_all=False, verbose=False)
    n_vocab = llm.n_vocab()
    rng = random.Random(1234)

    def tokens(n: int) -> list[int]:
        return [rng.randrange(n_vocab) for _ in range(n)]

    def time_pp() -> float:
        prompt = tokens(args.prompt_tokens)
        clear_cache(llama_cpp, llm)
        start = time.perf_counter()
        llm.eval(prompt)
        return args.prompt_tokens / (time.perf_counter() - start)

    def time_tg() -> float:
        clear_cache(llama_cpp, llm)
        llm.eval(tokens(1))
        steps = tokens(args.gen_tokens)
        start = time.perf_counter()
        for tok in steps:
            llm.eval([tok])
        return args.gen_tokens / (time.perf_counter() - start)

    pp: list[float] = []
    tg: list[float] = []
    if args.prompt_tokens > 0:
        time_pp()
    if args.gen_tokens > 0:
        time_tg()
    for r in range(args.reps):
        if args.prompt_tokens > 0:
            pp.append(time_pp())
        if args.gen_tokens > 0:
            tg.append(time_tg())
        done = ([f"pp {pp[-1]:.2f}"] if pp else []) + ([f"tg {tg[-1]:.2f}"] if tg else [])
        log(f"llama.cpp repetition {r + 1}/{args.reps}: {', '.join(done)} tok/s")
    out: dict = {"package": f"llama-cpp-python {llama_cpp.__version__}",
                 "system_info": llama_cpp.llama_print_system_info().decode(errors="replace").strip(),
                 "n_ctx": llm.n_ctx(), "n_batch": n_batch, "n_ubatch": n_batch, "n_threads": args.threads,
                 "flash_attn": args.flash_attn, "mmap": not args.no_mmap}
    if pp:
        out["pp"] = {"test": f"pp{args.prompt_tokens}", "median_ts": statistics.median(pp), "samples_ts": pp}
    if tg:
        out["tg"] = {"test": f"tg{args.gen_tokens}", "median_ts": statistics.median(tg), "samples_ts": tg}
    if hasattr(llm, "close"):
        llm.close()
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", type=Path, required=True, help="GGUF file both engines run")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--reps", type=int, default=3, help="timed repetitions of each test (median reported)")
    parser.add_argument("--prompt-tokens", type=int, default=512, help="pp test size (0 skips)")
    parser.add_argument("--gen-tokens", type=int, default=128, help="tg test size (0 skips)")
    parser.add_argument("--tokenmill-bin", type=Path, default=ROOT / "build" / "bin" / "tokenmill")
    parser.add_argument("--flash-attn", choices=["on", "off"], default="on", help="llama.cpp's flash attention")
    parser.add_argument("--no-mmap", action="store_true", help="llama.cpp reads the weights into memory")
    parser.add_argument("--json", type=Path, help="write the results here as JSON")
    args = parser.parse_args()
    if not args.model.exists():
        sys.exit(f"no model at {args.model}")
    if not args.tokenmill_bin.exists():
        sys.exit(f"no tokenmill binary at {args.tokenmill_bin}: build it or pass --tokenmill-bin")
    if args.reps < 1 or args.threads < 1 or args.prompt_tokens < 0 or args.gen_tokens < 0:
        sys.exit("--reps and --threads must be positive, the token counts not negative")

    cpu = cpu_info()
    # tokenmill first, as a child process that has exited before llama.cpp is even imported:
    # llama.cpp's OpenMP workers keep spinning between calls and would take its CPUs.
    tm = run_tokenmill(args)
    lc = run_llama_cpp(args)

    rows = []
    for test in ("pp", "tg"):
        if test in tm and test in lc:
            a, b = tm[test]["median_ts"], lc[test]["median_ts"]
            rows.append({"test": tm[test]["test"], "tokenmill_ts": a, "llama_cpp_ts": b, "ratio": a / b})

    size_mib = args.model.stat().st_size / 2**20
    print(f"model: {args.model} ({size_mib:.0f} MiB), {args.threads} threads, median of {args.reps} repetitions")
    print(f"{'test':<8} {'tokenmill tok/s':>16} {'llama.cpp tok/s':>16} {'tokenmill/llama.cpp':>20}")
    for row in rows:
        print(f"{row['test']:<8} {row['tokenmill_ts']:>16.2f} {row['llama_cpp_ts']:>16.2f} {row['ratio']:>19.2f}x")
    print(f"CPU: {cpu['model']}, {cpu['logical_cores']} logical cores; flags: {' '.join(cpu['vector_flags']) or 'none'}")
    print(f"tokenmill: kernels {tm.get('kernel_set')} (cpu features: {tm.get('cpu_features')})"
          + (f", TOKENMILL_ISA={tm['TOKENMILL_ISA']}" if tm.get("TOKENMILL_ISA") else ""))
    print(f"llama.cpp ({lc['package']}, flash attention {lc['flash_attn']}, mmap {lc['mmap']}): {lc['system_info']}")
    for name, res in (("tokenmill", tm), ("llama.cpp", lc)):
        for test in ("pp", "tg"):
            if test in res:
                print(f"  {name} {res[test]['test']} samples: " + ", ".join(f"{x:.2f}" for x in res[test]["samples_ts"]))

    if args.json:
        report = {"model": str(args.model), "model_bytes": args.model.stat().st_size, "threads": args.threads,
                  "reps": args.reps, "prompt_tokens": args.prompt_tokens, "gen_tokens": args.gen_tokens,
                  "statistic": "median", "cpu": cpu, "results": rows, "tokenmill": tm, "llama_cpp": lc}
        args.json.write_text(json.dumps(report, indent=2) + "\n")
        log(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
