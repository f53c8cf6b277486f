#!/usr/bin/env python3
"""Writes GGUF models with random weights in the exact shapes of a real model, for benchmarks.

Decode and prefill speed do not depend on the weights' values, only on their shapes and
types, so a benchmark model can be made in seconds without downloading anything. The
files load in both tokenmill and llama.cpp (bench/compare_llamacpp runs both on them).

Shapes:
  llama-1b   Llama-3.2-1B: 2048 hidden, 16 layers, 32/8 heads of 64, 8192 FFN,
             128,256 vocabulary, tied embeddings (no output.weight), Llama 3.2's rope
             scaling (factor 32 over an original 8192 context) in rope_freqs.weight
  qwen3moe-30b-a3b-8l
             Qwen3-30B-A3B's layer with 8 layers instead of 48 (architecture qwen3moe):
             2048 hidden, 32/4 heads of 128 (q_dim 4096) with per-head q/k RMS norms,
             128 experts of FFN width 768, 8 used per token (feed_forward_length 6144),
             151,936 vocabulary, untied output.weight, NeoX rope base 1e6, rms eps 1e-6,
             context 40,960. The router (ffn_gate_inp, F32) is N(0, 1), so that tokens
             spread over all experts as in a real model
  gpt-oss-20b-8l
             gpt-oss-20b with 8 of its 24 layers (architecture gpt-oss): 2880 hidden,
             64/8 heads of 64 with q/k/v/o biases and attention sinks, even layers
             sliding over 128 tokens, 32 experts of FFN width 2880 (with biases), 4 used
             per token, 201,088 vocabulary, untied, YaRN (factor 32 over 4096), NeoX rope
             base 150000, context 131,072; the router (with a bias) F32 N(0, 1)

Types:
  q8_0       every matrix Q8_0 (as `llama-quantize ... Q8_0`); the MoE router stays F32
  q4_k_m     the Q4_K_M mix `llama-quantize` picks for the shape (llama-quant.cpp):
             attn_v and ffn_down (ffn_down_exps for MoE) Q6_K in the "more bits" layers
             (the first and last eighth, and every third between), Q4_K elsewhere, as are
             attn_q/k/output and ffn_gate/up(_exps); a tied embedding Q6_K (it is the
             output projection), else token_embd Q4_K and output.weight Q6_K; the router
             and norms F32. (8-expert models such as Mixtral get other types: not made here.)
  iq4_xs     every matrix IQ4_XS (the shapes' rows are multiples of 256), the output
             projection (a tied embedding) Q6_K, an untied token_embd IQ4_XS
  iq2_xs     every matrix IQ2_XS, iq3_s every matrix IQ3_S (speed shapes for the lattice
             i-quants: llama-quantize's mixes of those names keep a few tensors in larger
             types), the output projection and an untied token_embd as for iq4_xs
  mxfp4      every layer matrix (experts included) MXFP4, as gpt-oss ships its experts;
             the embeddings and output projection Q8_0 (gpt-oss: the experts MXFP4 and
             every other matrix Q8_0, as ggml-org's gpt-oss-20b-mxfp4.gguf)

Quantized blocks are written directly as random bytes with small, fixed F16 scales
rather than by quantizing random floats: every bit pattern of the level and sub-scale
fields is a valid block, and this is ~100x faster than a Python quantizer (gguf-py has
none for K-quants). Q8_0 levels stay in [-127, 127] as a real quantizer's do.

The tokenizer is a SentencePiece ("llama") vocabulary of n_vocab generated pieces:
<unk>, <s>, </s>, the 256 byte tokens <0x00>..<0xFF>, then "▁a".."▁zz..." style pieces
with descending scores, so text round-trips through the byte fallback.

Tensors are generated and written one at a time, so memory stays at the largest tensor
(the 3.3 GB MoE file needs ~0.5 GB).

Usage: python3 tools/make_shaped_model.py [--shape llama-1b|llama-3b|llama-8b|qwen3moe-30b-a3b-8l|gpt-oss-20b-8l]
                                          [--type q4_k_m|q8_0|iq4_xs|iq2_xs|iq3_s|mxfp4|all] [--out-dir models] [--seed 0]
Writes models/<shape>-shaped-<type>.gguf (models/ is ignored by git).
"""

from __future__ import annotations

import argparse
import math
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import numpy as np

try:
    import gguf
except ImportError:
    sys.exit("needs the gguf package: pip install gguf")

ROOT = Path(__file__).resolve().parents[1]
Q = gguf.GGMLQuantizationType


@dataclass(frozen=True)
class Shape:
    name: str
    n_embd: int
    n_layers: int
    n_heads: int
    n_kv_heads: int
    n_ff: int
    n_vocab: int
    context_length: int
    rope_freq_base: float
    rms_eps: float
    # Llama 3.1+'s rope scaling (factor, low_freq_factor, high_freq_factor, original
    # context), written as the rope_freqs.weight tensor as llama.cpp's converter does.
    llama3_rope_scaling: tuple[float, float, float, int] | None = None
    arch: str = "llama"
    head_dim: int = 0            # 0: n_embd // n_heads (else written as key/value_length)
    tied_embeddings: bool = True  # False: a separate output.weight
    qk_norm: bool = False         # per-head attn_q_norm / attn_k_norm (Qwen 3)
    # Mixture of experts (0: a dense FFN of width n_ff).
    n_expert: int = 0
    n_expert_used: int = 0
    n_ff_expert: int = 0
    # gpt-oss: attention biases and sinks, alternating sliding window, router and expert
    # biases, YaRN (factor, original context).
    gpt_oss: bool = False
    sliding_window: int = 0
    yarn: tuple[float, int] | None = None

    @property
    def n_embd_head(self) -> int:
        return self.head_dim or self.n_embd // self.n_heads


SHAPES = {
    "llama-1b": Shape("llama-1b", n_embd=2048, n_layers=16, n_heads=32, n_kv_heads=8, n_ff=8192,
                      n_vocab=128256, context_length=131072, rope_freq_base=500000.0, rms_eps=1e-5,
                      llama3_rope_scaling=(32.0, 1.0, 4.0, 8192)),
    # Llama-3.2-3B (hidden_size 3072, 28 layers, 24/8 heads of 128, intermediate_size 8192,
    # tied embeddings, rope_theta 500000, llama3 rope scaling factor 32).
    "llama-3b": Shape("llama-3b", n_embd=3072, n_layers=28, n_heads=24, n_kv_heads=8, n_ff=8192,
                      n_vocab=128256, context_length=131072, rope_freq_base=500000.0, rms_eps=1e-5,
                      llama3_rope_scaling=(32.0, 1.0, 4.0, 8192), head_dim=128),
    # Llama-3.1-8B (4096, 32 layers, 32/8 heads, intermediate_size 14336, untied 128,256
    # vocabulary, rope_theta 500000, llama3 rope scaling factor 8).
    "llama-8b": Shape("llama-8b", n_embd=4096, n_layers=32, n_heads=32, n_kv_heads=8, n_ff=14336,
                      n_vocab=128256, context_length=131072, rope_freq_base=500000.0, rms_eps=1e-5,
                      llama3_rope_scaling=(8.0, 1.0, 4.0, 8192), tied_embeddings=False),
    # Qwen3-30B-A3B (config.json: hidden_size 2048, intermediate_size 6144, moe_intermediate_size
    # 768, num_experts 128, num_experts_per_tok 8, 32/4 heads, head_dim 128, vocab 151936,
    # max_position_embeddings 40960, rope_theta 1e6, rms_norm_eps 1e-6, untied) with 8 of its 48 layers.
    "qwen3moe-30b-a3b-8l": Shape("qwen3moe-30b-a3b-8l", n_embd=2048, n_layers=8, n_heads=32, n_kv_heads=4,
                                 n_ff=6144, n_vocab=151936, context_length=40960, rope_freq_base=1000000.0,
                                 rms_eps=1e-6, arch="qwen3moe", head_dim=128, tied_embeddings=False,
                                 qk_norm=True, n_expert=128, n_expert_used=8, n_ff_expert=768),
    # gpt-oss-20b (config.json: hidden_size 2880, 24 layers, 64/8 heads of head_dim 64, intermediate_size
    # 2880, num_local_experts 32, num_experts_per_tok 4, vocab 201088, sliding_window 128, rope_theta
    # 150000, yarn factor 32 over 4096, rms_norm_eps 1e-5) with 8 of its 24 layers.
    "gpt-oss-20b-8l": Shape("gpt-oss-20b-8l", n_embd=2880, n_layers=8, n_heads=64, n_kv_heads=8, n_ff=2880,
                            n_vocab=201088, context_length=131072, rope_freq_base=150000.0, rms_eps=1e-5,
                            arch="gpt-oss", head_dim=64, tied_embeddings=False, n_expert=32, n_expert_used=4,
                            n_ff_expert=2880, gpt_oss=True, sliding_window=128, yarn=(32.0, 4096)),
}

# general.file_type values (llama_ftype).
FILE_TYPE = {"q8_0": 7, "q4_k_m": 15, "iq2_xs": 20, "iq3_s": 26, "iq4_xs": 30, "mxfp4": 38}

# Bytes per block, elements per block, and the byte offsets of the F16 scale fields
# with the value each is set to (small enough that the model's activations stay finite).
BLOCK = {
    Q.Q8_0: (34, 32, [(0, 2e-4)]),                  # d | qs[32] int8
    Q.Q4_K: (144, 256, [(0, 4e-5), (2, 4e-5)]),      # d | dmin | scales[12] | qs[128]
    Q.Q6_K: (210, 256, [(208, 1e-5)]),               # ql[128] | qh[64] | scales[16] int8 | d
    Q.IQ4_XS: (136, 256, [(0, 1e-5)]),               # d | scales_h | scales_l[4] | qs[128]
    Q.IQ2_XS: (74, 256, [(0, 2e-5)]),                # d | qs[32] u16 | scales[8]
    Q.IQ3_S: (110, 256, [(0, 2e-5)]),                # d | qs[64] | qh[8] | signs[32] | scales[4]
    Q.MXFP4: (17, 32, []),                           # e (E8M0, set in random_blocks) | qs[16]
}
MXFP4_EXPONENT = 116  # 2^(116 - 128): levels up to 12 * 2^-12, about 3e-3


def row_bytes(qtype: Q, n_cols: int) -> int:
    block_bytes, block_size, _ = BLOCK[qtype]
    assert n_cols % block_size == 0, (qtype, n_cols)
    return n_cols // block_size * block_bytes


def random_blocks(rng: np.random.Generator, qtype: Q, n_rows: int, n_cols: int) -> np.ndarray:
    """[n_rows, row_bytes] uint8 of random valid blocks of qtype."""
    block_bytes, block_size, scales = BLOCK[qtype]
    assert n_cols % block_size == 0, (qtype, n_cols)
    n_blocks = n_rows * n_cols // block_size
    blocks = rng.integers(0, 256, size=(n_blocks, block_bytes), dtype=np.uint8)
    if qtype == Q.Q8_0:
        levels = blocks[:, 2:].view(np.int8)
        np.maximum(levels, -127, out=levels)
    if qtype == Q.MXFP4:
        blocks[:, 0] = MXFP4_EXPONENT
    if qtype == Q.Q6_K:
        sub_scales = blocks[:, 192:208].view(np.int8)
        np.maximum(sub_scales, -127, out=sub_scales)
    for offset, value in scales:
        blocks[:, offset:offset + 2] = np.frombuffer(np.float16(value).tobytes(), dtype=np.uint8)
    return blocks.reshape(n_rows, n_cols // block_size * block_bytes)


def uses_more_bits(layer: int, n_layers: int) -> bool:
    # llama.cpp's use_more_bits(): the first and last eighth of the layers and every
    # third layer between them get the larger type in Q4_K_M.
    return layer < n_layers // 8 or layer >= 7 * n_layers // 8 or (layer - n_layers // 8) % 3 == 2


def tensor_types(shape: Shape, kind: str, layer: int) -> dict[str, Q]:
    """Types of one layer's matrices, keyed "attn_q" ... "ffn_down" (the experts' tensors,
    ffn_*_exps, take the ffn_* entries)."""
    names = ["attn_q", "attn_k", "attn_v", "attn_output", "ffn_gate", "ffn_up", "ffn_down"]
    if kind == "q8_0":
        return {n: Q.Q8_0 for n in names}
    if kind in ("iq4_xs", "iq2_xs", "iq3_s"):
        return {n: Q[kind.upper()] for n in names}
    if kind == "mxfp4":
        if shape.gpt_oss:
            return {n: Q.MXFP4 if n.startswith("ffn") else Q.Q8_0 for n in names}
        return {n: Q.MXFP4 for n in names}
    # llama-quant.cpp gives models of exactly 8 experts Q8_0 attn_k/attn_v and Q5_K
    # attn_output; any other expert count (Qwen3-MoE's 128) takes the dense rules below.
    assert shape.n_expert != 8, "8-expert models get other Q4_K_M types: not made here"
    types = {n: Q.Q4_K for n in names}
    # attn_v counts attn_v tensors (one per layer); ffn_down(_exps) parses the layer from
    # the name: both are the layer index here.
    if uses_more_bits(layer, shape.n_layers):
        types["attn_v"] = Q.Q6_K
        types["ffn_down"] = Q.Q6_K
    return types


def embedding_types(shape: Shape, kind: str) -> tuple[Q, Q | None]:
    """(token_embd, output.weight or None when tied). Q4_K_M: the output projection Q6_K
    (a tied embedding is it); an untied token_embd keeps the file's default type, Q4_K."""
    if kind in ("q8_0", "mxfp4"):
        return Q.Q8_0, None if shape.tied_embeddings else Q.Q8_0
    if kind in ("iq4_xs", "iq2_xs", "iq3_s"):
        return (Q.Q6_K, None) if shape.tied_embeddings else (Q[kind.upper()], Q.Q6_K)
    if shape.tied_embeddings:
        return Q.Q6_K, None
    return Q.Q4_K, Q.Q6_K


def vocabulary(n_vocab: int) -> tuple[list[str], list[float], list[int]]:
    tokens = ["<unk>", "<s>", "</s>"]
    types = [2, 3, 3]  # unknown, control, control
    tokens += [f"<0x{b:02X}>" for b in range(256)]
    types += [6] * 256  # byte
    letters = "abcdefghijklmnopqrstuvwxyz"
    i = 0
    while len(tokens) < n_vocab:
        # Bijective base-26 names: a, b, ..., z, aa, ab, ... each with and without "▁".
        j, name = i, ""
        while True:
            name = letters[j % 26] + name
            j = j // 26 - 1
            if j < 0:
                break
        tokens.append("\u2581" + name)
        types.append(1)
        if len(tokens) < n_vocab:
            tokens.append(name)
            types.append(1)
        i += 1
    scores = [0.0, 0.0, 0.0] + [0.0] * 256 + [-float(k) for k in range(n_vocab - 259)]
    return tokens, scores, types


def llama3_rope_factors(shape: Shape, head_dim: int) -> np.ndarray:
    """Per-pair divisors of the rotary frequencies: 1 for short wavelengths, the scaling
    factor for long ones, a smooth blend between (Llama 3.1's rule)."""
    factor, low, high, old_context = shape.llama3_rope_scaling
    low_wavelen, high_wavelen = old_context / low, old_context / high
    out = []
    for i in range(0, head_dim, 2):
        freq = 1.0 / shape.rope_freq_base ** (i / head_dim)
        wavelen = 2 * math.pi / freq
        if wavelen < high_wavelen:
            out.append(1.0)
        elif wavelen > low_wavelen:
            out.append(factor)
        else:
            smooth = (old_context / wavelen - low) / (high - low)
            out.append(1.0 / ((1 - smooth) / factor + smooth))
    return np.array(out, dtype=np.float32)


def write_model(shape: Shape, kind: str, out_dir: Path, seed: int) -> Path:
    rng = np.random.default_rng(seed)
    path = out_dir / f"{shape.name}-shaped-{kind}.gguf"
    tmp = path.with_suffix(".gguf.tmp")
    w = gguf.GGUFWriter(tmp, shape.arch)
    head_dim = shape.n_embd_head
    w.add_name(f"{shape.name}-shaped {kind} (random weights)")
    w.add_file_type(FILE_TYPE[kind])
    w.add_context_length(shape.context_length)
    w.add_embedding_length(shape.n_embd)
    w.add_block_count(shape.n_layers)
    w.add_feed_forward_length(shape.n_ff)
    w.add_head_count(shape.n_heads)
    w.add_head_count_kv(shape.n_kv_heads)
    if shape.head_dim:
        w.add_key_length(head_dim)
        w.add_value_length(head_dim)
    else:
        w.add_rope_dimension_count(head_dim)
    w.add_rope_freq_base(shape.rope_freq_base)
    w.add_layer_norm_rms_eps(shape.rms_eps)
    if shape.n_expert:
        w.add_expert_count(shape.n_expert)
        w.add_expert_used_count(shape.n_expert_used)
        w.add_expert_feed_forward_length(shape.n_ff_expert)
    if shape.sliding_window:
        w.add_sliding_window(shape.sliding_window)
    if shape.yarn:
        w.add_rope_scaling_type(gguf.RopeScalingType.YARN)
        w.add_rope_scaling_factor(shape.yarn[0])
        w.add_rope_scaling_orig_ctx_len(shape.yarn[1])
    w.add_vocab_size(shape.n_vocab)

    tokens, scores, types = vocabulary(shape.n_vocab)
    w.add_tokenizer_model("llama")
    w.add_token_list(tokens)
    w.add_token_scores(scores)
    w.add_token_types(types)
    w.add_bos_token_id(1)
    w.add_eos_token_id(2)
    w.add_unk_token_id(0)
    w.add_add_bos_token(True)
    w.add_add_eos_token(False)

    # Every tensor's info is declared first and its data made only when it is written,
    # in the same order (so the same seed gives the same file), one tensor in memory at a time.
    pending: list[Callable[[], np.ndarray]] = []

    def add(name: str, make: Callable[[], np.ndarray], byte_shape: tuple[int, ...], dtype: np.dtype,
            qtype: Q | None = None) -> None:
        n_bytes = int(np.prod(byte_shape)) * np.dtype(dtype).itemsize
        w.add_tensor_info(name, byte_shape, np.dtype(dtype), n_bytes, raw_dtype=qtype)
        pending.append(make)

    def matrix(name: str, qtype: Q, n_rows: int, n_cols: int, n_mats: int = 0) -> None:
        """A [n_rows, n_cols] matrix, or n_mats of them stacked (ggml [n_cols, n_rows, n_mats])."""
        rows = n_rows * max(n_mats, 1)
        byte_shape = (n_rows, row_bytes(qtype, n_cols))
        if n_mats:
            byte_shape = (n_mats,) + byte_shape
        add(name, lambda: random_blocks(rng, qtype, rows, n_cols).reshape(byte_shape), byte_shape, np.uint8, qtype)

    def floats(name: str, values: np.ndarray | Callable[[], np.ndarray], f_shape: tuple[int, ...]) -> None:
        add(name, values if callable(values) else (lambda: values), f_shape, np.float32)

    ones = np.ones(shape.n_embd, dtype=np.float32)
    head_ones = np.ones(head_dim, dtype=np.float32)
    if shape.llama3_rope_scaling:
        factors = llama3_rope_factors(shape, head_dim)
        floats("rope_freqs.weight", factors, factors.shape)
    embd_type, output_type = embedding_types(shape, kind)
    matrix("token_embd.weight", embd_type, shape.n_vocab, shape.n_embd)
    floats("output_norm.weight", ones, ones.shape)
    if output_type is not None:
        matrix("output.weight", output_type, shape.n_vocab, shape.n_embd)
    q_dim = shape.n_heads * head_dim
    kv_dim = shape.n_kv_heads * head_dim
    for layer in range(shape.n_layers):
        t = tensor_types(shape, kind, layer)
        p = f"blk.{layer}."
        floats(p + "attn_norm.weight", ones, ones.shape)
        matrix(p + "attn_q.weight", t["attn_q"], q_dim, shape.n_embd)
        matrix(p + "attn_k.weight", t["attn_k"], kv_dim, shape.n_embd)
        matrix(p + "attn_v.weight", t["attn_v"], kv_dim, shape.n_embd)
        matrix(p + "attn_output.weight", t["attn_output"], shape.n_embd, q_dim)
        if shape.gpt_oss:
            for name, n in (("attn_q.bias", q_dim), ("attn_k.bias", kv_dim), ("attn_v.bias", kv_dim),
                            ("attn_output.bias", shape.n_embd), ("attn_sinks.weight", shape.n_heads)):
                floats(p + name, np.zeros(n, dtype=np.float32), (n,))
        if shape.qk_norm:
            floats(p + "attn_q_norm.weight", head_ones, head_ones.shape)
            floats(p + "attn_k_norm.weight", head_ones, head_ones.shape)
        floats(p + ("post_attention_norm.weight" if shape.gpt_oss else "ffn_norm.weight"), ones, ones.shape)
        if shape.n_expert:
            # The router: N(0, 1) logits weights, so every expert is someone's top choice.
            floats(p + "ffn_gate_inp.weight",
                   lambda: rng.standard_normal((shape.n_expert, shape.n_embd), dtype=np.float32),
                   (shape.n_expert, shape.n_embd))
            if shape.gpt_oss:
                floats(p + "ffn_gate_inp.bias", np.zeros(shape.n_expert, dtype=np.float32), (shape.n_expert,))
                for name, n in (("ffn_gate_exps.bias", shape.n_ff_expert), ("ffn_up_exps.bias", shape.n_ff_expert),
                                ("ffn_down_exps.bias", shape.n_embd)):
                    floats(p + name, np.zeros((shape.n_expert, n), dtype=np.float32), (shape.n_expert, n))
            matrix(p + "ffn_gate_exps.weight", t["ffn_gate"], shape.n_ff_expert, shape.n_embd, shape.n_expert)
            matrix(p + "ffn_up_exps.weight", t["ffn_up"], shape.n_ff_expert, shape.n_embd, shape.n_expert)
            matrix(p + "ffn_down_exps.weight", t["ffn_down"], shape.n_embd, shape.n_ff_expert, shape.n_expert)
            continue
        matrix(p + "ffn_gate.weight", t["ffn_gate"], shape.n_ff, shape.n_embd)
        matrix(p + "ffn_up.weight", t["ffn_up"], shape.n_ff, shape.n_embd)
        matrix(p + "ffn_down.weight", t["ffn_down"], shape.n_embd, shape.n_ff)

    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_ti_data_to_file()
    for make in pending:
        w.write_tensor_data(make())
    w.close()
    tmp.replace(path)
    return path


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--shape", choices=list(SHAPES), default="llama-1b")
    parser.add_argument("--type", choices=["q4_k_m", "q8_0", "iq4_xs", "iq2_xs", "iq3_s", "mxfp4", "all"], default="all")
    parser.add_argument("--out-dir", type=Path, default=ROOT / "models")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    args.out_dir.mkdir(parents=True, exist_ok=True)
    kinds = ["q4_k_m", "q8_0"] if args.type == "all" else [args.type]
    for kind in kinds:
        path = write_model(SHAPES[args.shape], kind, args.out_dir, args.seed)
        print(f"{path}  {path.stat().st_size / 2**20:.0f} MiB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
