#!/usr/bin/env python3
"""Quantization report: for each type, quantize the reference model (plain and with an
importance matrix), then measure file size, bits per weight, resident memory and speed
(`tokenmill bench`, pp512/tg128), perplexity and KL divergence against the reference on
each evaluation text. Prints a Markdown table, writes JSON and a PNG chart (size vs KLD,
speed vs KLD; needs matplotlib, installed with pip if missing).

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


def bits_per_weight(model):
    """Bits per weight over the weight matrices (tensor data bytes * 8 / elements)."""
    from gguf import GGUFReader
    nbytes = nelem = 0
    for t in GGUFReader(model).tensors:
        if len(t.shape) >= 2:
            nbytes += int(t.n_bytes)
            nelem += int(t.n_elements)
    return 8.0 * nbytes / nelem


def peak_rss_bench(args, model):
    cmd = [args.bin, "bench", "-m", model, "-p", args.bench_p, "-n", args.bench_n, "-r", args.bench_r,
           "-t", args.threads, "--json"]
    print("+", " ".join(map(str, cmd)), file=sys.stderr, flush=True)
    import tempfile
    with tempfile.TemporaryFile("w+") as err:
        proc = subprocess.Popen(list(map(str, cmd)), stdout=subprocess.PIPE, stderr=err, text=True)
        stdout = proc.stdout.read()
        # wait4 on this child alone gives its own peak RSS (ru_maxrss, KiB on Linux)
        _, status, usage = os.wait4(proc.pid, 0)
        err.seek(0)
        stderr = err.read()
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        sys.exit(f"failed: {' '.join(map(str, cmd))}\n{stderr[-2000:]}")
    speeds = {r["test"]: r["avg_ts"] for r in json.loads(stdout)}
    return {"pp_ts": speeds.get(f"pp{args.bench_p}"), "tg_ts": speeds.get(f"tg{args.bench_n}"),
            "rss_mib": usage.ru_maxrss / 1024.0}


def chart(rows, path):
    try:
        import matplotlib
    except ImportError:
        subprocess.run([sys.executable, "-m", "pip", "install", "-q", "matplotlib"], check=True)
        import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.2))
    texts = sorted({r["text"] for r in rows if "kld_mean" in r})
    markers = {"plain": "o", "imatrix": "s"}
    colors = dict(zip(texts, ["tab:blue", "tab:red", "tab:green"]))
    for ax, key, label in ((axes[0], "size", "file size (MiB)"), (axes[1], "tg_ts", "tg128 tok/s (noisy, shared machine)")):
        for r in rows:
            if "kld_mean" not in r or r.get(key) is None:
                continue
            x = r[key] / 2**20 if key == "size" else r[key]
            ax.scatter(x, r["kld_mean"], marker=markers.get(r["variant"], "^"), color=colors[r["text"]])
            ax.annotate(r["type"], (x, r["kld_mean"]), fontsize=7, xytext=(3, 2), textcoords="offset points")
        ax.set_yscale("log")
        ax.set_xlabel(label)
        ax.set_ylabel("mean KLD vs F32 reference")
        ax.grid(alpha=0.3)
    handles = [plt.Line2D([], [], marker=m, linestyle="", color="gray", label=v) for v, m in markers.items()]
    handles += [plt.Line2D([], [], marker="o", linestyle="", color=c, label=t) for t, c in colors.items()]
    axes[1].legend(handles=handles, fontsize=8)
    fig.suptitle("gemma-3-270m: tokenmill quantize, KLD against the F32 reference (ctx 256)")
    fig.tight_layout()
    fig.savefig(path, dpi=90)


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
    p.add_argument("--no-bench", action="store_true", help="skip the speed and memory columns")
    p.add_argument("--bench-p", default="512")
    p.add_argument("--bench-n", default="128")
    p.add_argument("--bench-r", default="2")
    p.add_argument("--chart", default=str(ROOT / "docs" / "quantization_chart.png"))
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
                     "size": ref_size, "ppl": r["ppl"], "ppl_stderr": r["ppl_stderr"], "bpw": 32.0})
    if not args.no_bench:
        ref_speed = peak_rss_bench(args, args.reference)
        for r in rows:
            r.update(ref_speed)

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
        extra = {"bpw": bits_per_weight(model)}
        if not args.no_bench:
            extra.update(peak_rss_bench(args, model))
        for text in args.texts:
            r = perplexity(args, model, text, bases[text])
            rows.append({**r, **extra, "type": qtype, "variant": variant, "text": pathlib.Path(text).name,
                         "size": size, "quantize_seconds": seconds})
        (out / "report.json").write_text(json.dumps(rows, indent=2))
        os.remove(model)

    (out / "report.json").write_text(json.dumps(rows, indent=2))
    print_table(rows)
    if args.chart:
        chart(rows, args.chart)


def fmt(v, f):
    return "" if v is None else format(v, f)


def print_table(rows):
    print("| type | variant | text | bpw | size MiB | RSS MiB | pp512 t/s | tg128 t/s | PPL | ΔPPL % | mean KLD | median KLD | p99 KLD | top-1 % | mean Δp % |")
    print("|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        perf = (f"| {fmt(r.get('bpw'), '.2f')} | {r['size'] / 2**20:.1f} | {fmt(r.get('rss_mib'), '.0f')} "
                f"| {fmt(r.get('pp_ts'), '.1f')} | {fmt(r.get('tg_ts'), '.1f')} ")
        if "kld_mean" not in r:
            print(f"| {r['type']} | | {r['text']} {perf}| {r['ppl']:.3f} ± {r['ppl_stderr']:.3f} | | | | | | |")
            continue
        print(f"| {r['type']} | {r['variant']} | {r['text']} {perf}| {r['ppl']:.3f} "
              f"| {r['delta_ppl_percent']:+.2f} | {r['kld_mean']:.5f} ± {r['kld_stderr']:.5f} "
              f"| {r['kld_median']:.5f} | {r['kld_p99']:.4f} | {100 * r['top1_agreement']:.2f} "
              f"| {100 * r['delta_p_mean']:+.3f} |")


if __name__ == "__main__":
    main()
