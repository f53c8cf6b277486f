#!/usr/bin/env python3
"""Same run, same judge: tokenmill's `quantize` against llama.cpp's `llama-quantize`.

From the same reference GGUF, each type is made four ways (ours / llama-quantize, plain /
with the same importance matrix, written by `tokenmill imatrix`), and every file is judged
by `tokenmill perplexity --kl-base` against the same reference logits on the same texts.
The plain files are also compared tensor by tensor (type, shape and bytes, with the gguf
Python package) to see whether ours are byte-identical to llama-quantize's.

    tools/compare_llamacpp_quantize.py --bin build/bin/tokenmill --threads 2 \
        --types Q4_K_M Q3_K_M Q4_0 Q2_K --out /tmp/tm_vs_llamacpp
    tools/compare_llamacpp_quantize.py --only-imatrix --gptq --types IQ4_XS IQ3_S IQ2_XS

llama-quantize is looked for in $LLAMA_CPP_BIN, then ~/.cache/tokenmill/llama.cpp-build/bin.
Prints a Markdown table and writes compare.json to --out.
"""
import argparse
import json
import os
import pathlib
import shutil
import subprocess
import sys
import time

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))
import quant_report  # noqa: E402  (run, perplexity helpers)


def find_llama_quantize():
    candidates = []
    if os.environ.get("LLAMA_CPP_BIN"):
        candidates.append(pathlib.Path(os.environ["LLAMA_CPP_BIN"]))
    candidates.append(pathlib.Path.home() / ".cache/tokenmill/llama.cpp-build/bin")
    for d in candidates:
        exe = d / "llama-quantize"
        if exe.is_file() and os.access(exe, os.X_OK):
            return exe
    which = shutil.which("llama-quantize")
    if which:
        return pathlib.Path(which)
    sys.exit("llama-quantize not found: set LLAMA_CPP_BIN to the directory holding llama.cpp's binaries "
             f"(looked in {', '.join(map(str, candidates))} and $PATH). Nothing was compared.")


def llama_env(exe):
    env = dict(os.environ)
    env["LD_LIBRARY_PATH"] = str(exe.parent) + (":" + env["LD_LIBRARY_PATH"] if env.get("LD_LIBRARY_PATH") else "")
    return env


def compare_tensors(a_path, b_path):
    """Tensor-by-tensor comparison of two GGUF files: identical bytes, or what differs."""
    from gguf import GGUFReader
    a, b = GGUFReader(a_path), GGUFReader(b_path)
    ta = {t.name: t for t in a.tensors}
    tb = {t.name: t for t in b.tensors}
    out = {"tensors": len(ta), "identical": 0, "differ": [], "only_ours": sorted(set(ta) - set(tb)),
           "only_theirs": sorted(set(tb) - set(ta))}
    for name in sorted(set(ta) & set(tb)):
        x, y = ta[name], tb[name]
        if x.tensor_type != y.tensor_type or list(x.shape) != list(y.shape):
            out["differ"].append({"name": name, "why": f"type/shape {x.tensor_type.name}{[int(d) for d in x.shape]} vs "
                                                       f"{y.tensor_type.name}{[int(d) for d in y.shape]}"})
            continue
        bx, by = x.data.tobytes(), y.data.tobytes()
        if bx == by:
            out["identical"] += 1
            continue
        import numpy as np
        ax, ay = np.frombuffer(bx, np.uint8), np.frombuffer(by, np.uint8)
        out["differ"].append({"name": name, "type": x.tensor_type.name,
                              "bytes_differ_fraction": float(np.mean(ax != ay))})
    return out


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--bin", default=str(ROOT / "build" / "bin" / "tokenmill"))
    p.add_argument("--reference", default=str(ROOT / "models" / "gemma-3-270m-f32.gguf"))
    p.add_argument("--texts", nargs="+", default=[str(ROOT / "tests/fixtures/text/eval_en.txt"),
                                                  str(ROOT / "tests/fixtures/text/eval_zh.txt")])
    p.add_argument("--calibration", default=str(ROOT / "tests/fixtures/text/calib.txt"))
    p.add_argument("--types", nargs="+", default=["Q4_K_M", "Q3_K_M", "Q4_0", "Q2_K"])
    p.add_argument("--no-imatrix", action="store_true", help="only the plain variants")
    p.add_argument("--only-imatrix", action="store_true",
                   help="only the importance-weighted variants (the IQ1/IQ2/IQ3_XXS mixes need one)")
    p.add_argument("--gptq", action="store_true",
                   help="also tokenmill's --method gptq on the calibration text (llama-quantize has no counterpart)")
    p.add_argument("--ctx", default="256")
    p.add_argument("--chunks", default="")
    p.add_argument("--threads", default=str(os.cpu_count()))
    p.add_argument("--out", default="/tmp/tm_vs_llamacpp")
    p.add_argument("--keep", action="store_true", help="keep the quantized files")
    args = p.parse_args()
    exe = find_llama_quantize()
    env = llama_env(exe)
    out = pathlib.Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    if not pathlib.Path(args.reference).exists():
        sys.exit(f"reference {args.reference} missing: make it with tools/make_reference_model.sh")

    bases = {}
    results = {"llama_quantize": str(exe), "reference": args.reference, "ctx": args.ctx, "chunks": args.chunks,
               "references": {}, "rows": [], "byte_compare": {}}
    for text in args.texts:
        bases[text] = str(out / (pathlib.Path(text).stem + ".tmlg"))
        r = quant_report.perplexity(args, args.reference, text, None, save=bases[text])
        results["references"][pathlib.Path(text).name] = {"ppl": r["ppl"], "ppl_stderr": r["ppl_stderr"]}

    imatrix = None
    if not args.no_imatrix:
        imatrix = str(out / "calib.imatrix")
        quant_report.run([args.bin, "imatrix", "-m", args.reference, "-f", args.calibration, "-o", imatrix,
                          "--ctx", args.ctx, "-t", args.threads])

    if args.no_imatrix and args.only_imatrix:
        sys.exit("--no-imatrix and --only-imatrix exclude each other")
    variants = ([] if args.only_imatrix else ["plain"]) + ([] if args.no_imatrix else ["imatrix"]) + \
        (["gptq"] if args.gptq else [])
    for qtype in args.types:
        for variant in variants:
            files = {}
            for tool in ("tokenmill",) if variant == "gptq" else ("tokenmill", "llama-quantize"):
                model = str(out / f"{tool}-{qtype}-{variant}.gguf")
                if tool == "tokenmill":
                    cmd = [args.bin, "quantize", args.reference, model, qtype, "-t", args.threads]
                    if variant == "imatrix":
                        cmd += ["--imatrix", imatrix]
                    if variant == "gptq":
                        cmd += ["--method", "gptq", "--calib", args.calibration, "--calib-ctx", args.ctx]
                else:
                    cmd = [exe] + (["--imatrix", imatrix] if variant == "imatrix" else []) + \
                          [args.reference, model, qtype, args.threads]
                print("+", " ".join(map(str, cmd)), file=sys.stderr, flush=True)
                start = time.time()
                res = subprocess.run(list(map(str, cmd)), capture_output=True, text=True,
                                     env=env if tool != "tokenmill" else None)
                seconds = time.time() - start
                if res.returncode != 0:
                    print(f"{tool} {qtype} {variant} FAILED:\n{res.stderr[-1500:]}", file=sys.stderr)
                    results["rows"].append({"tool": tool, "type": qtype, "variant": variant,
                                            "error": res.stderr[-600:]})
                    continue
                files[tool] = model
                size = os.path.getsize(model)
                for text in args.texts:
                    r = quant_report.perplexity(args, model, text, bases[text])
                    results["rows"].append({**r, "tool": tool, "type": qtype, "variant": variant,
                                            "text": pathlib.Path(text).name, "size": size,
                                            "quantize_seconds": seconds})
            if len(files) == 2:
                cmp = compare_tensors(files["tokenmill"], files["llama-quantize"])
                results["byte_compare"][f"{qtype}-{variant}"] = cmp
                print(f"{qtype} {variant}: {cmp['identical']}/{cmp['tensors']} tensors byte-identical",
                      file=sys.stderr)
            if not args.keep:
                for f in files.values():
                    os.remove(f)
            (out / "compare.json").write_text(json.dumps(results, indent=2))

    print_tables(results)


def print_tables(results):
    print("| type | variant | text | tool | size MiB | PPL | ΔPPL % | mean KLD | p99 KLD | top-1 % |")
    print("|---|---|---|---|---:|---:|---:|---:|---:|---:|")
    for r in results["rows"]:
        if "error" in r:
            print(f"| {r['type']} | {r['variant']} | | {r['tool']} | failed: {r['error'].strip().splitlines()[-1]} "
                  "| | | | | |")
            continue
        print(f"| {r['type']} | {r['variant']} | {r['text']} | {r['tool']} | {r['size'] / 2**20:.1f} "
              f"| {r['ppl']:.3f} | {r['delta_ppl_percent']:+.2f} | {r['kld_mean']:.5f} ± {r['kld_stderr']:.5f} "
              f"| {r['kld_p99']:.4f} | {100 * r['top1_agreement']:.2f} |")
    print()
    print("| file pair | byte-identical tensors | differing tensors |")
    print("|---|---:|---|")
    for key, c in results["byte_compare"].items():
        diff = ", ".join(f"{d['name']} ({d.get('type', '')}: {d.get('why') or '%.1f%% of bytes' % (100 * d['bytes_differ_fraction'])})"
                         for d in c["differ"][:6])
        more = f" … and {len(c['differ']) - 6} more" if len(c["differ"]) > 6 else ""
        print(f"| {key} | {c['identical']} / {c['tensors']} | {diff}{more} |")


if __name__ == "__main__":
    main()
