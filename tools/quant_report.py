#!/usr/bin/env python3
"""Quantization report: for each type, quantize the reference model (plain and with an
importance matrix), then measure file size, bits per weight, perplexity and KL divergence
against the reference on each evaluation text. Prints a Markdown table and writes JSON.

    tools/quant_report.py --reference models/gemma-3-270m-f32.gguf \
        --types Q8_0 Q4_K_M Q3_K_M --imatrix-types Q4_K_M Q3_K_M --out /tmp/report

The calibration text (for the imatrix) and the evaluation texts must differ.
"""
import argparse
import json
import os
import pathlib
import subprocess
import sys
import time

ROOT = pathlib.Path(__file__).resolve().parents[1]


def run(cmd):
    print("+", " ".join(map(str, cmd)), file=sys.stderr, flush=True)
    result = subprocess.run(list(map(str, cmd)), capture_output=True, text=True)
    if result.returncode != 0:
        sys.exit(f"failed: {' '.join(map(str, cmd))}\n{result.stderr[-2000:]}")
    return result


def perplexity(args, model, text, base, save=None):
    cmd = [args.bin, "perplexity", "-m", model, "-f", text, "--ctx", args.ctx, "-t", args.threads, "--json"]
    if args.chunks:
        cmd += ["--chunks", args.chunks]
    if base:
        cmd += ["--kl-base", base]
    if save:
        cmd += ["--save-logits", save]
    return json.loads(run(cmd).stdout)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--bin", default=str(ROOT / "build" / "bin" / "tokenmill"))
    p.add_argument("--reference", default=str(ROOT / "models" / "gemma-3-270m-f32.gguf"))
    p.add_argument("--texts", nargs="+", default=[str(ROOT / "tests/fixtures/text/eval_en.txt"),
                                                  str(ROOT / "tests/fixtures/text/eval_zh.txt")])
    p.add_argument("--calibration", default=str(ROOT / "tests/fixtures/text/calib.txt"))
    p.add_argument("--types", nargs="+", default=["Q8_0", "Q6_K", "Q5_K_M", "Q4_K_M", "Q4_0", "Q3_K_M", "Q2_K"])
    p.add_argument("--imatrix-types", nargs="*", default=["Q4_K_M", "Q4_0", "Q3_K_M", "Q2_K"])
    p.add_argument("--ctx", default="256")
    p.add_argument("--chunks", default="")
    p.add_argument("--threads", default=str(os.cpu_count()))
    p.add_argument("--out", default="/tmp/tokenmill_quant_report")
    args = p.parse_args()
    out = pathlib.Path(args.out)
    out.mkdir(parents=True, exist_ok=True)

    bases = {}
    rows = []
    ref_size = os.path.getsize(args.reference)
    for text in args.texts:
        bases[text] = str(out / (pathlib.Path(text).stem + ".tmlg"))
        r = perplexity(args, args.reference, text, None, save=bases[text])
        rows.append({"type": "reference (F32)", "variant": "", "text": pathlib.Path(text).name,
                     "size": ref_size, "ppl": r["ppl"], "ppl_stderr": r["ppl_stderr"]})

    imatrix = None
    if args.imatrix_types:
        imatrix = str(out / "calib.imatrix")
        run([args.bin, "imatrix", "-m", args.reference, "-f", args.calibration, "-o", imatrix,
             "--ctx", args.ctx, "-t", args.threads])

    variants = [(t, "plain") for t in args.types] + [(t, "imatrix") for t in args.imatrix_types]
    for qtype, variant in variants:
        model = str(out / f"{qtype}-{variant}.gguf")
        cmd = [args.bin, "quantize", args.reference, model, qtype, "-t", args.threads]
        if variant == "imatrix":
            cmd += ["--imatrix", imatrix]
        start = time.time()
        run(cmd)
        seconds = time.time() - start
        size = os.path.getsize(model)
        for text in args.texts:
            r = perplexity(args, model, text, bases[text])
            rows.append({**r, "type": qtype, "variant": variant, "text": pathlib.Path(text).name, "size": size,
                         "quantize_seconds": seconds})
        os.remove(model)

    (out / "report.json").write_text(json.dumps(rows, indent=2))
    print("| type | variant | text | size MiB | PPL | ΔPPL % | mean KLD | median KLD | p99 KLD | top-1 % | mean Δp % |")
    print("|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        if "kld_mean" not in r:
            print(f"| {r['type']} | | {r['text']} | {r['size'] / 2**20:.1f} | {r['ppl']:.3f} ± {r['ppl_stderr']:.3f} "
                  f"| | | | | | |")
            continue
        print(f"| {r['type']} | {r['variant']} | {r['text']} | {r['size'] / 2**20:.1f} | {r['ppl']:.3f} "
              f"| {r['delta_ppl_percent']:+.2f} | {r['kld_mean']:.5f} ± {r['kld_stderr']:.5f} "
              f"| {r['kld_median']:.5f} | {r['kld_p99']:.4f} | {100 * r['top1_agreement']:.2f} "
              f"| {100 * r['delta_p_mean']:+.3f} |")


if __name__ == "__main__":
    main()
