#!/usr/bin/env python3
"""Do GGUF files written by `tokenmill convert` load in llama.cpp and compute what Hugging
Face transformers computes? Uses the llama-cpp-python package (pip install llama-cpp-python).

    tools/check_convert_llamacpp.py [--bin build/bin/tokenmill] [--outtype F32|F16|BF16|Q8_0|...]
        [--models llama3 qwen3] [--kv-type f32|f16] [--strict] [--keep DIR]

For each model directory under tests/fixtures/hf_models/ that has a reference.json (written
by tools/make_hf_models.py: transformers' logits in logits.f32, greedy tokens and margins in
reference.json), it

  1. converts the directory with `tokenmill convert DIR OUT.gguf --outtype TYPE -t 1`;
  2. loads OUT.gguf with llama_cpp.Llama (n_ctx 256, logits_all, one thread, an F32 KV cache
     unless --kv-type f16, llama.cpp's default, which alone moves logits by ~3e-3). If
     llama.cpp refuses the file, the error lines it logged while loading are printed verbatim;
  3. per prompt, evaluates exactly the reference prompt ids (no BOS added, no tokenizing) and
     compares llama.cpp's logits at every prompt position with transformers':
     max |diff| / max |logit| per position, the worst over all positions reported. Above
     --logits-tol (default 1e-4 for F32, report only for other types) is a failure;
  4. greedy-decodes 24 tokens by argmax (no EOS stop) and counts the leading tokens equal to
     transformers' greedy tokens. A difference is a failure only where transformers' top1 -
     top2 margin at that step is above --margin (0.05); at such a near-tie the reference token
     is fed instead, so that the steps after it are still compared. For --outtype other than
     F32 and F16 greedy differences are reported only (unless --strict): quantized weights
     move these small random models' logits by 5-15%, and the file is instead compared with
     llama.cpp's own quantization (llama_model_quantize) of the F32 conversion: their logits
     must agree within --logits-tol (1e-4);
  5. tokenizes reference.json's prompt_texts with llama.cpp's tokenizer
     (llm.tokenize(text, add_bos=False, special=True)) and compares with the reference ids.
     transformers added the BOS token to the plain-text prompts of models whose tokenizer adds
     it (llama3, mistral), so that leading BOS is not expected from tokenize(add_bos=False);
     whether llama.cpp would add it itself (tokenizer.ggml.add_bos_token) is checked too. The
     same for the lines of tests/fixtures/tokenizer/corpus.txt against the model's
     tokenizer_ids.json (transformers' ids, add_special_tokens=False).

Prints one line per model (and detail lines for llama.cpp's load warnings and anything that
failed); exits 1 if any model fails to convert, to load, or fails a check, and 0 with a note
if llama_cpp is not installed.
"""
import argparse
import ctypes
import json
import pathlib
import subprocess
import sys
import tempfile

ROOT = pathlib.Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "tests" / "fixtures" / "hf_models"
CORPUS = ROOT / "tests" / "fixtures" / "tokenizer" / "corpus.txt"
MODELS = sorted(d.name for d in FIXTURES.glob("*") if (d / "reference.json").exists())
N_GREEDY = 24
KV_TYPES = {"f32": 0, "f16": 1}  # ggml_type
# Types whose greedy tokens must follow transformers' (beyond near-ties); see 4. above.
STRICT_TYPES = {"F32", "F16"}


class LlamaLog:
    """Collects what llama.cpp logs (Llama(verbose=False) sends its own stderr to /dev/null)."""

    LEVELS = {0: "NONE", 1: "DEBUG", 2: "INFO", 3: "WARN", 4: "ERROR"}  # ggml.h enum ggml_log_level

    def __init__(self, llama_cpp):
        self.lines = []  # [level, text]
        self._callback = llama_cpp.llama_log_callback(self._on_log)  # kept alive here
        llama_cpp.llama_log_set(self._callback, ctypes.c_void_p(0))

    def _on_log(self, level, text, _user_data):
        text = text.decode("utf-8", errors="replace")
        if level == 5 and self.lines:  # GGML_LOG_LEVEL_CONT: continues the previous line
            self.lines[-1][1] += text
        else:
            self.lines.append([self.LEVELS.get(level, str(level)), text])

    def clear(self):
        self.lines = []

    def at(self, *levels):
        return [f"{lvl}: {text.rstrip()}" for lvl, text in self.lines if lvl in levels and text.strip()]


def convert(args, model_dir, out):
    # general.name is set to a neutral one: llama.cpp gives models whose name contains "phi3"
    # tokens of Phi-3's own vocabulary (</s>, <unk>, ...) special attributes and fails to load
    # a vocabulary without them, as the fixtures' small trained ones are.
    cmd = [args.bin, "convert", str(model_dir), str(out), "--outtype", args.outtype, "-t", "1",
           "--name", "random-weight fixture"]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        return f"`{' '.join(cmd)}` exited {r.returncode}: {(r.stderr or r.stdout).strip()}"
    return None


def read_corpus():
    """tests/fixtures/tokenizer/corpus.txt, one text a line, with \\n \\r \\t \\\\ escapes."""
    escapes = {"n": "\n", "r": "\r", "t": "\t", "\\": "\\"}
    texts = []
    for line in CORPUS.read_text(encoding="utf-8").split("\n")[:-1]:
        out, i = [], 0
        while i < len(line):
            if line[i] == "\\" and i + 1 < len(line) and line[i + 1] in escapes:
                out.append(escapes[line[i + 1]])
                i += 2
            else:
                out.append(line[i])
                i += 1
        texts.append("".join(out))
    return texts


def corpus_check(llm, ref):
    """Corpus lines through llama.cpp's tokenizer against transformers' ids (tokenizer_ids.json:
    add_special_tokens=False; "ids_specials_as_text" for special-token text read as plain text).
    Returns (matches, checked, the first difference or None)."""
    texts = read_corpus()
    cases = [(i, ids, True) for i, ids in enumerate(ref["ids"])]
    if "ids_sentencepiece" in ref:
        # SentencePiece models: user-defined pieces are matched even as plain text, as in
        # SentencePiece itself; llama.cpp makes <end_of_turn> a control token, matched only
        # as special, so lines holding it are left out of this comparison.
        cases += [(int(i), ids, False) for i, ids in ref["ids_sentencepiece"].items()
                  if "<end_of_turn>" not in texts[int(i)]]
    else:
        cases += [(int(i), ids, False) for i, ids in ref.get("ids_specials_as_text", {}).items()]
    cases += [(c["text"], c["ids"], True) for c in ref.get("special_texts", [])]
    ok, first = 0, None
    for where, want, special in cases:
        text = texts[where] if isinstance(where, int) else where
        got = llm.tokenize(text.encode(), add_bos=False, special=special)
        if got == want:
            ok += 1
        elif first is None:
            k = next((j for j, (a, b) in enumerate(zip(got, want)) if a != b), min(len(got), len(want)))
            label = f"line {where + 1}" if isinstance(where, int) else "special text"
            first = (f"{label}{'' if special else ' (specials as text)'} {text!r}: first difference at {k}: "
                     f"llama.cpp {got[k:k + 6]} vs transformers {want[k:k + 6]} ({len(got)} vs {len(want)} ids)")
    return ok, len(cases), first


def load(args, path, llama_cpp, log):
    """(Llama, None), or (None, the reason llama.cpp gave) if it refuses the file."""
    log.clear()
    kv = KV_TYPES[args.kv_type]
    try:
        return llama_cpp.Llama(model_path=str(path), n_ctx=256, logits_all=True, verbose=False, n_threads=1,
                               n_threads_batch=1, type_k=kv, type_v=kv), None
    except Exception as e:  # llama-cpp-python raises ValueError("Failed to load model from file: ...")
        details = [f"{type(e).__name__}: {e}"] + [f"llama.cpp {line}" for line in log.at("ERROR", "WARN")]
        if len(details) == 1:  # nothing at warning level: the last lines of the load log
            details += [f"llama.cpp {line}" for line in log.at("INFO", "DEBUG")[-15:]]
        return None, details


def prompt_logits(llm, ids, np):
    llm.reset()
    llm.eval(ids)
    return np.array(llm.scores[: len(ids)], dtype=np.float64)


def worst_relative(ours, theirs, np):
    """max |diff| / max |logit| of each position: (worst, its position)."""
    rel = np.abs(ours - theirs).max(axis=1) / np.abs(theirs).max(axis=1)
    i = int(np.argmax(rel))
    return float(rel[i]), i


def llamacpp_twin(args, name, model_dir, workdir, llm, llama_cpp, np, log):
    """For a quantized --outtype: the F32 conversion quantized by llama.cpp itself
    (llama_model_quantize, the code of llama-quantize), and its prompt logits against those of
    tokenmill's file. Returns (note, detail lines, failed)."""
    ftype = getattr(llama_cpp, "LLAMA_FTYPE_MOSTLY_" + args.outtype.upper(), None)
    if ftype is None:
        return f"  vs llama-quantize: no llama.cpp type {args.outtype}", [], False
    f32 = pathlib.Path(workdir) / f"{name}-F32-for-twin.gguf"
    twin = pathlib.Path(workdir) / f"{name}-{args.outtype}-llama-quantize.gguf"
    saved = args.outtype
    args.outtype = "F32"
    error = convert(args, model_dir, f32)
    args.outtype = saved
    if error:
        return "  vs llama-quantize: F32 convert failed", [error], True
    params = llama_cpp.llama_model_quantize_default_params()
    params.ftype = ftype
    params.nthread = 1
    log.clear()
    if llama_cpp.llama_model_quantize(str(f32).encode(), str(twin).encode(), ctypes.byref(params)) != 0:
        return "  vs llama-quantize: quantize failed", [f"llama.cpp {x}" for x in log.at("ERROR", "WARN")], True
    other, load_error = load(args, twin, llama_cpp, log)
    if load_error:
        return "  vs llama-quantize: load failed", load_error, True
    worst = 0.0
    for ids in json.loads((model_dir / "reference.json").read_text())["prompts"]:
        theirs = prompt_logits(other, ids, np)
        worst = max(worst, worst_relative(prompt_logits(llm, ids, np), theirs, np)[0])
    other.close()
    tol = 1e-4 if args.logits_tol is None else args.logits_tol
    note = f"  vs llama-quantize {args.outtype}: logits worst rel {worst:.2e}{' (identical)' if worst == 0 else ''}"
    if worst > tol:
        return note, [f"logits differ from llama.cpp's own {args.outtype} of the same F32 file: {worst:.3g} > {tol:g}"], True
    return note, [], False


def check_model(args, name, workdir, llama_cpp, np, log):
    """Returns (line, detail lines, failed)."""
    model_dir = FIXTURES / name
    ref = json.loads((model_dir / "reference.json").read_text())
    config = json.loads((model_dir / "config.json").read_text())
    # Where llama.cpp computes a detail otherwise than transformers by design (gpt-oss's YaRN
    # ramp ends), the fixture has transformers' outputs with llama.cpp's choice too.
    variant = ref.get("llamacpp_reference")
    if variant:
        ref = {**ref, **{k: variant[k] for k in ("logits_file", "greedy", "greedy_margin")}}
    n_vocab = ref["n_vocab"]
    prompts = ref["prompts"]
    ref_logits = np.fromfile(model_dir / ref["logits_file"], dtype="<f4").reshape(-1, n_vocab)
    assert ref_logits.shape[0] == sum(len(p) for p in prompts), f"{name}: logits file does not match prompts"

    out = pathlib.Path(workdir) / f"{name}-{args.outtype}.gguf"
    error = convert(args, model_dir, out)
    if error:
        return f"{name:8s} FAIL convert", [error], True

    llm, load_error = load(args, out, llama_cpp, log)
    if load_error:
        return f"{name:8s} FAIL load", load_error, True
    load_warnings = [f"llama.cpp {line}" for line in log.at("ERROR", "WARN")]

    details, failed = [], False
    if variant:
        details.append(f"compared with transformers' {variant['logits_file']}: {variant['why']}")
    if llm.n_vocab() != n_vocab:
        details.append(f"llama.cpp n_vocab {llm.n_vocab()} != {n_vocab}")
        failed = True

    # Logits at every prompt position, and greedy decoding.
    worst_rel, worst_at = 0.0, None
    greedy_counts, n_ties = [], 0
    row = 0
    strict = args.outtype.upper() in STRICT_TYPES or args.strict
    # llama.cpp runs Mistral and Mixtral as llama and ignores their sliding window: such a
    # model is compared only at the positions the window does not reach, and not greedily.
    window = config.get("sliding_window") if config.get("model_type") in ("mistral", "mixtral") else None
    if window:
        details.append(f"sliding window {window}, which llama.cpp ignores: logits compared at positions "
                       f"0..{window - 1} only, greedy tokens not compared")
    for p, ids in enumerate(prompts):
        ours = prompt_logits(llm, ids, np)
        theirs = ref_logits[row : row + len(ids)].astype(np.float64)
        row += len(ids)
        rel, i = worst_relative(ours[:window], theirs[:window], np)
        if rel > worst_rel or worst_at is None:
            worst_rel, worst_at = rel, (p, i)
        if window:
            greedy_counts.append("-")
            continue

        want, margins = ref["greedy"][p], ref["greedy_margin"][p]
        leading, hard = None, None
        for step in range(N_GREEDY):
            logits = np.array(llm.scores[llm.n_tokens - 1])
            token = int(np.argmax(logits))
            if token != want[step]:
                if leading is None:
                    leading = step
                top2 = np.sort(logits)[-2:]
                note = (f"prompt {p} step {step}: llama.cpp {token}, transformers {want[step]} "
                        f"(transformers margin {margins[step]:.4f}, llama.cpp margin {top2[1] - top2[0]:.4f}, "
                        f"llama.cpp logit of transformers' token {logits[want[step]]:.4f} vs {logits[token]:.4f})")
                if margins[step] > args.margin:
                    hard = note
                    break
                n_ties += 1
                details.append("near-tie, tolerated: " + note)
                token = want[step]  # keep comparing on transformers' path
            if step + 1 < N_GREEDY:
                llm.eval([token])
        greedy_counts.append(N_GREEDY if leading is None else leading)
        if hard:
            details.append(("greedy differs: " if strict else "greedy differs (report only): ") + hard)
            failed = failed or strict

    logits_tol = args.logits_tol
    if logits_tol is None and args.outtype.upper() == "F32":
        # ggml computes GELU from an F16 table: on the Gemma fixtures (GELU FFNs, post-norms
        # scaling by ~5) that alone moves llama.cpp's logits by ~5e-3.
        logits_tol = 1e-2 if name.startswith("gemma") else 1e-4
    if logits_tol is not None and worst_rel > logits_tol:
        details.append(f"logits differ: worst max|diff|/max|logit| {worst_rel:.3g} > {logits_tol:g} "
                       f"(prompt {worst_at[0]} position {worst_at[1]})")
        failed = True

    # Tokenizer: llama.cpp's ids for the prompt texts.
    bos_id = config.get("bos_token_id")
    added = {a["id"]: a["content"] for a in json.loads((model_dir / "tokenizer.json").read_text())["added_tokens"]}
    bos_text = added.get(bos_id)
    n_tok_ok = 0
    hf_adds_bos = None
    for p, (text, ids) in enumerate(zip(ref["prompt_texts"], prompts)):
        expect = list(ids)
        hf_added = bool(expect) and bos_text is not None and expect[0] == bos_id and not text.startswith(bos_text)
        if hf_added:
            expect = expect[1:]
        if p < 3:  # plain texts: HF's default special-token handling applied
            hf_adds_bos = hf_added if hf_adds_bos is None else (hf_adds_bos and hf_added)
        got = llm.tokenize(text.encode(), add_bos=False, special=True)
        if got == expect:
            n_tok_ok += 1
        else:
            k = next((j for j, (a, b) in enumerate(zip(got, expect)) if a != b), min(len(got), len(expect)))
            details.append(f"tokenize differs: prompt {p} {text!r}: first difference at {k}: "
                           f"llama.cpp {got[k:k + 6]} vs transformers {expect[k:k + 6]} "
                           f"({len(got)} vs {len(expect)} ids)")
            failed = True
    corpus_note = ""
    if (model_dir / "tokenizer_ids.json").exists() and CORPUS.exists():
        ok, total, first = corpus_check(llm, json.loads((model_dir / "tokenizer_ids.json").read_text()))
        corpus_note = f"  corpus {ok}/{total}"
        if first:
            details.append("corpus tokenize differs: " + first)
            failed = True
    meta = llm.metadata
    add_bos_meta = meta.get("tokenizer.ggml.add_bos_token")
    llama_adds_bos = llm.tokenize(b"a", add_bos=True, special=False)[:1] == [llm.token_bos()] and llm.token_bos() >= 0
    bos_note = f"add_bos llama.cpp {'yes' if llama_adds_bos else 'no'}/transformers {'yes' if hf_adds_bos else 'no'}"
    if bool(llama_adds_bos) != bool(hf_adds_bos):
        details.append(f"BOS handling differs: {bos_note} (tokenizer.ggml.add_bos_token = {add_bos_meta}, "
                       f"token_bos {llm.token_bos()})")
        failed = True

    twin_note = ""
    if not strict:
        twin_note, twin_details, twin_failed = llamacpp_twin(args, name, model_dir, workdir, llm, llama_cpp, np, log)
        details += twin_details
        failed = failed or twin_failed

    line = (f"{name:8s} {'FAIL' if failed else 'OK  '} arch={meta.get('general.architecture')} "
            f"pre={meta.get('tokenizer.ggml.pre')}  logits worst rel {worst_rel:.2e} "
            f"(prompt {worst_at[0]} pos {worst_at[1]})  greedy leading "
            f"{'/'.join(str(c) for c in greedy_counts)} of {N_GREEDY} (near-ties {n_ties})  "
            f"tokenize {n_tok_ok}/{len(prompts)}{corpus_note}  {bos_note}{twin_note}")
    llm.close()
    return line, load_warnings + details, failed


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--bin", default=str(ROOT / "build" / "bin" / "tokenmill"), help="tokenmill binary")
    p.add_argument("--outtype", default="F32", help="passed to `tokenmill convert --outtype` (F32, F16, Q8_0, ...)")
    p.add_argument("--models", nargs="*", default=MODELS, help="fixture directories to check")
    p.add_argument("--margin", type=float, default=0.05,
                   help="a greedy difference fails only above this transformers top1-top2 margin")
    p.add_argument("--logits-tol", type=float, default=None,
                   help="largest max|diff|/max|logit| allowed against transformers (default 1e-4 for F32, report only "
                        "for other types) and against llama-quantize's file (default 1e-4)")
    p.add_argument("--kv-type", choices=sorted(KV_TYPES), default="f32",
                   help="llama.cpp's KV cache type (its own default is f16, which alone moves logits by ~3e-3)")
    p.add_argument("--strict", action="store_true",
                   help="greedy differences from transformers fail for every --outtype, not only F32 and F16")
    p.add_argument("--keep", help="write the GGUF files here instead of a temporary directory")
    args = p.parse_args()
    try:
        import llama_cpp
        import numpy as np
    except ImportError:
        print("llama-cpp-python is not installed (scripts/setup installs it)", file=sys.stderr)
        return 1
    log = LlamaLog(llama_cpp)
    print(f"llama-cpp-python {llama_cpp.__version__}, outtype {args.outtype}, KV cache {args.kv_type}")
    failures = 0
    with tempfile.TemporaryDirectory() as tmp:
        workdir = args.keep or tmp
        pathlib.Path(workdir).mkdir(parents=True, exist_ok=True)
        for name in args.models:
            line, details, failed = check_model(args, name, workdir, llama_cpp, np, log)
            print(line)
            for d in details:
                print("    " + d)
            sys.stdout.flush()
            failures += failed
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
