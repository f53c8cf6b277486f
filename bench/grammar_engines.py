#!/usr/bin/env python3
"""tokenmill's schema coverage beside XGrammar's (what vLLM, SGLang and TensorRT-LLM use)
and llguidance's (llama.cpp's optional engine), over the schema corpus, on the default
model's 262,144-token vocabulary, in one run.

    python3 bench/grammar_engines.py [--model models/gemma-3-270m-q4_k_m.gguf]
        [--corpus tests/fixtures/schema_corpus.jsonl] [--walk-tokens 48] [--out FILE]

For every schema: whether each engine compiles it (tokenmill: `tokenmill serve` answers a
one-token request with it, 200 or 400; the others: their own compilers), and each
engine's time per token mask along seeded random walks of allowed tokens (the whole
vocabulary's bitmask; tokenmill's by build/bench/grammar_mask_bench, the same walks'
shape over the same schemas). Prints the schemas another engine compiles that tokenmill
refuses (the goal is none). The libraries are not linked into tokenmill;
scripts/setup installs them (xgrammar without its torch dependency: numpy bitmasks are
enough here).
"""
import argparse
import json
import pathlib
import random
import socket
import statistics
import subprocess
import sys
import time
import urllib.error
import urllib.request

ROOT = pathlib.Path(__file__).resolve().parents[1]


def vocabulary(model):
    from gguf import GGUFReader
    field = GGUFReader(model).fields["tokenizer.ggml.tokens"]
    return [bytes(field.parts[i]).decode("utf-8", errors="replace") for i in field.data]


def token_bytes(piece):
    """A SentencePiece token's bytes: <0xXX> is one byte, '\u2581' a space."""
    if len(piece) == 6 and piece.startswith("<0x") and piece.endswith(">"):
        return bytes([int(piece[3:5], 16)])
    return piece.replace("\u2581", " ").encode()


class XGrammarEngine:
    name = "xgrammar"

    def __init__(self, tokens, stop_ids):
        import numpy as np
        import xgrammar as xgr
        self.np, self.xgr = np, xgr
        info = xgr.TokenizerInfo(tokens, vocab_type=xgr.VocabType.BYTE_FALLBACK, vocab_size=len(tokens),
                                 stop_token_ids=stop_ids)
        self.compiler = xgr.GrammarCompiler(info, max_threads=1)
        self.words = (len(tokens) + 31) // 32

    def compile(self, schema):
        return self.compiler.compile_json_schema(json.dumps(schema))

    def walk(self, compiled, n_tokens, rng):
        matcher = self.xgr.GrammarMatcher(compiled)
        mask = self.np.zeros((1, self.words), dtype=self.np.int32)
        times = []
        for _ in range(n_tokens):
            start = time.perf_counter()
            matcher.fill_next_token_bitmask(mask)
            times.append(time.perf_counter() - start)
            allowed = self.np.flatnonzero(self.np.unpackbits(mask.view(self.np.uint8), bitorder="little"))
            if len(allowed) == 0 or matcher.is_terminated():
                break
            if not matcher.accept_token(int(rng.choice(list(allowed)))):
                break
        return times


class LLGuidanceEngine:
    name = "llguidance"

    def __init__(self, tokens, stop_ids):
        import llguidance
        import llguidance.numpy as llg_numpy
        import numpy as np
        self.llg, self.llg_numpy, self.np = llguidance, llg_numpy, np
        pieces = [token_bytes(t) for t in tokens]
        lookup = {p: i for i, p in enumerate(pieces) if p}

        class Vocabulary:  # what llguidance's TokenizerWrapper reads
            eos_token_id = stop_ids[0]
            bos_token_id = 2
            special_token_ids = [i for i, t in enumerate(tokens) if t.startswith("<") and t.endswith(">") and len(t) > 6]

            def __init__(self):
                self.tokens = pieces

            def __call__(self, text):  # greedy longest match: only used for forced strings
                data = text if isinstance(text, bytes) else text.encode()
                out, i = [], 0
                while i < len(data):
                    for j in range(min(len(data), i + 16), i, -1):
                        if data[i:j] in lookup:
                            out.append(lookup[data[i:j]])
                            i = j
                            break
                    else:
                        out.append(lookup[data[i:i + 1]])
                        i += 1
                return out

        self.tokenizer = llguidance.LLTokenizer(llguidance.TokenizerWrapper(Vocabulary()), n_vocab=len(tokens))
        self.n_vocab = len(tokens)

    def compile(self, schema):
        grammar = self.llg.LLMatcher.grammar_from_json_schema(json.dumps(schema))
        is_error, messages = self.llg.LLMatcher.validate_grammar_with_warnings(grammar, self.tokenizer)
        if is_error:
            raise ValueError("; ".join(messages))
        return grammar

    def walk(self, grammar, n_tokens, rng):
        matcher = self.llg.LLMatcher(self.tokenizer, grammar, log_level=0)
        mask = self.llg_numpy.allocate_token_bitmask(1, self.n_vocab)
        times = []
        for _ in range(n_tokens):
            start = time.perf_counter()
            self.llg_numpy.fill_next_token_bitmask(matcher, mask, 0)
            times.append(time.perf_counter() - start)
            allowed = self.np.flatnonzero(self.np.unpackbits(mask.view(self.np.uint8), bitorder="little"))[: self.n_vocab]
            if len(allowed) == 0 or matcher.is_stopped():
                break
            if not matcher.consume_token(int(rng.choice(list(allowed)))):
                break
        return times


def tokenmill_compiles(url, schema):
    body = {"model": "default", "messages": [{"role": "user", "content": "JSON"}], "max_tokens": 1,
            "response_format": {"type": "json_schema", "json_schema": {"name": "s", "schema": schema}}}
    request = urllib.request.Request(url + "/v1/chat/completions", data=json.dumps(body).encode(),
                                     headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=120) as r:
            return r.status == 200, ""
    except urllib.error.HTTPError as e:
        return False, json.loads(e.read()).get("error", {}).get("message", "")


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--model", default=str(ROOT / "models/gemma-3-270m-q4_k_m.gguf"))
    p.add_argument("--binary", default=str(ROOT / "build/bin/tokenmill"))
    p.add_argument("--mask-bench", default=str(ROOT / "build/bench/grammar_mask_bench"))
    p.add_argument("--corpus", default=str(ROOT / "tests/fixtures/schema_corpus.jsonl"))
    p.add_argument("--walk-tokens", type=int, default=48)
    p.add_argument("--walks", type=int, default=60, help="schemas whose masks are timed")
    p.add_argument("--out")
    args = p.parse_args()
    corpus = [json.loads(line) for line in pathlib.Path(args.corpus).read_text().splitlines() if line]
    tokens = vocabulary(args.model)
    engines = []
    for make in (XGrammarEngine, LLGuidanceEngine):
        try:
            engines.append(make(tokens, [1, 106]))
        except ImportError as e:
            sys.exit(f"{make.name} is not installed ({e}): run scripts/setup")

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    server = subprocess.Popen([args.binary, "serve", "-m", args.model, "--host", "127.0.0.1", "--port", str(port), "-t", "1"],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    try:
        for _ in range(600):
            try:
                urllib.request.urlopen(url + "/health", timeout=1)
                break
            except Exception:
                time.sleep(0.1)
        rows, mask_times = [], {e.name: [] for e in engines}
        rng = random.Random(3)
        for k, entry in enumerate(corpus):
            ok, error = tokenmill_compiles(url, entry["schema"])
            row = {"name": entry["name"], "tokenmill": ok, "tokenmill_error": error}
            for engine in engines:
                try:
                    compiled = engine.compile(entry["schema"])
                    row[engine.name] = True
                    if k < args.walks:
                        times = engine.walk(compiled, args.walk_tokens, rng)
                        mask_times[engine.name].extend(times[1:])  # the first mask may build caches
                except Exception as e:  # noqa: BLE001 - any failure to compile is what is counted
                    row[engine.name] = False
                    row[engine.name + "_error"] = str(e)[:200]
            rows.append(row)
    finally:
        server.terminate()
        server.wait(timeout=60)

    # tokenmill's masks: the same schemas and walk length, its own seeded walks.
    measured = json.loads(subprocess.run([args.mask_bench, "--model", args.model, "--corpus", args.corpus,
                                          "--walks", str(args.walks), "--walk-tokens", str(args.walk_tokens)],
                                         check=True, capture_output=True, text=True).stdout)
    mask_times["tokenmill"] = [us / 1e6 for us in measured["mask_us"]]

    cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), "?")
    print(f"{len(corpus)} schemas, CPU {cpu}")
    for name in ["tokenmill"] + [e.name for e in engines]:
        line = f"  {name:11} compiles {sum(r[name] for r in rows):4}"
        if name in mask_times and mask_times[name]:
            t = sorted(mask_times[name])
            line += f"; mask per token: median {statistics.median(t) * 1e6:7.1f} us, p90 {t[int(len(t) * 0.9)] * 1e6:8.1f} us"
            line += f" over {len(t)} masks"
        print(line)
    refused = [r for r in rows if not r["tokenmill"] and any(r.get(e.name) for e in engines)]
    print(f"compiled by another engine but refused by tokenmill: {len(refused)}")
    for r in refused:
        print(f"  {r['name']}: {r['tokenmill_error']}")
    if args.out:
        pathlib.Path(args.out).write_text(json.dumps({"cpu": cpu, "rows": rows,
                                                      "mask_us": {k: [round(x * 1e6, 1) for x in v] for k, v in mask_times.items()}},
                                                     indent=1) + "\n")


if __name__ == "__main__":
    sys.exit(main())
