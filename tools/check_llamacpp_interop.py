#!/usr/bin/env python3
"""Does a GGUF written by `tokenmill quantize` load in llama.cpp and give the same greedy
tokens as tokenmill? Uses the llama-cpp-python package.

    tools/check_llamacpp_interop.py MODEL.gguf [--bin build/bin/tokenmill] [-n 24]

Prints, per prompt, the greedy continuation of both engines and how many leading tokens
agree; exits non-zero if llama.cpp cannot load the file or a continuation differs before
a near-tie (top-2 logit margin below --near-tie, 0.35 by default, in llama.cpp's logits).
On 2- and 3-bit files llama.cpp's own logits move by more than 0.1 between its batched
and its one-token paths, so a wider margin is the fair judge there.
"""
import argparse
import pathlib
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[1]
PROMPTS = ["The three largest planets of the solar system are", "Once upon a time, in a small village",
           "To bake bread you need flour, water,"]


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("model")
    p.add_argument("--bin", default=str(ROOT / "build" / "bin" / "tokenmill"))
    p.add_argument("-n", type=int, default=24)
    p.add_argument("--near-tie", type=float, default=0.35, help="top-2 logit margin below which tokens may part")
    args = p.parse_args()
    try:
        import llama_cpp
        import numpy as np
    except ImportError:
        print("llama-cpp-python is not installed (scripts/setup installs it)", file=sys.stderr)
        return 1
    llm = llama_cpp.Llama(model_path=args.model, n_ctx=512, logits_all=True, verbose=False, seed=0)
    failures = 0
    for prompt in PROMPTS:
        tokens = llm.tokenize(prompt.encode(), add_bos=True)
        llm.reset()
        llm.eval(tokens)
        generated, margins = [], []
        for _ in range(args.n):
            logits = np.array(llm.scores[llm.n_tokens - 1])
            top2 = np.sort(logits)[-2:]
            margins.append(float(top2[1] - top2[0]))
            token = int(np.argmax(logits))
            generated.append(token)
            llm.eval([token])
        ours = subprocess.run([args.bin, "run", "-m", args.model, "-p", prompt, "-n", str(args.n), "--temp", "0"],
                              capture_output=True, text=True, check=True).stdout
        theirs = llm.detokenize(generated).decode(errors="replace")
        ours_ids = llm.tokenize(ours.encode(), add_bos=False)
        n_same = next((i for i, (a, b) in enumerate(zip(ours_ids, generated)) if a != b), min(len(ours_ids), len(generated)))
        first_near_tie = next((i for i, m in enumerate(margins) if m < args.near_tie), len(margins))
        ok = n_same >= min(first_near_tie, len(generated)) or theirs.startswith(ours.rstrip("\n"))
        failures += 0 if ok else 1
        print(f"{'OK ' if ok else 'DIFF'} {prompt!r}\n  llama.cpp: {theirs!r}\n  tokenmill: {ours!r}\n"
              f"  {n_same} leading tokens agree; first near-tie at step {first_near_tie}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
