#!/usr/bin/env python3
"""Exact-arithmetic reference for the default model: a float64 numpy forward pass.

Dequantizes every weight with the `gguf` package (the format's reference), runs Gemma 3 in
float64 with no intermediate rounding, and records the top-64 first-step logits of each
prompt in tests/fixtures/model/gemma3_greedy.json (the prompts written by
make_model_fixtures.py). Engines round in different places (F16 KV cache, int8
activations, kernel summation order); this tells how far each one lands from the exact
result.

    python3 tools/make_exact_reference.py   # about 30 s per prompt
"""
import json
import os
import sys

import numpy as np
from gguf import GGUFReader
from gguf.quants import dequantize

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MODEL = os.path.join(ROOT, "models", "gemma-3-270m-q4_k_m.gguf")
PROMPTS = os.path.join(ROOT, "tests", "fixtures", "model", "gemma3_greedy.json")
OUT = os.path.join(ROOT, "tests", "fixtures", "model", "gemma3_exact_f64.json")


class Weights:
    def __init__(self, path):
        self.reader = GGUFReader(path)
        self.tensors = {t.name: t for t in self.reader.tensors}
        self.cache = {}

    def __getitem__(self, name):
        if name not in self.cache:
            t = self.tensors[name]
            self.cache[name] = dequantize(t.data, t.tensor_type).astype(np.float64)
        return self.cache[name]

    def field(self, key):
        return self.reader.fields[key].contents()


def rms_norm(x, w, eps):
    return x / np.sqrt((x * x).mean(-1, keepdims=True) + eps) * w


def rope_neox(x, positions, base):
    # x: [n_tokens, n_heads, head_dim]; element i pairs with i + head_dim/2.
    d = x.shape[-1]
    half = d // 2
    inv_freq = base ** (-np.arange(half) * 2.0 / d)
    angle = positions[:, None] * inv_freq[None, :]
    cos, sin = np.cos(angle)[:, None, :], np.sin(angle)[:, None, :]
    a, b = x[..., :half], x[..., half:]
    return np.concatenate([a * cos - b * sin, a * sin + b * cos], -1)


def gelu_tanh(x):
    return 0.5 * x * (1.0 + np.tanh(np.sqrt(2.0 / np.pi) * (x + 0.044715 * x ** 3)))


def forward_last_logits(w, tokens):
    n_embd = int(w.field("gemma3.embedding_length"))
    n_layers = int(w.field("gemma3.block_count"))
    n_heads = int(w.field("gemma3.attention.head_count"))
    n_kv = int(w.field("gemma3.attention.head_count_kv"))
    head_dim = int(w.field("gemma3.attention.key_length"))
    eps = float(w.field("gemma3.attention.layer_norm_rms_epsilon"))
    base_global = float(w.field("gemma3.rope.freq_base"))
    window = int(w.field("gemma3.attention.sliding_window"))
    n = len(tokens)
    positions = np.arange(n, dtype=np.float64)
    embd = w["token_embd.weight"]
    x = embd[tokens] * np.sqrt(float(n_embd))
    causal = np.triu(np.ones((n, n)), 1) > 0
    for l in range(n_layers):
        p = f"blk.{l}."
        sliding = l % 6 < 5
        base = 10000.0 if sliding else base_global
        h = rms_norm(x, w[p + "attn_norm.weight"], eps)
        q = (h @ w[p + "attn_q.weight"].T).reshape(n, n_heads, head_dim)
        k = (h @ w[p + "attn_k.weight"].T).reshape(n, n_kv, head_dim)
        v = (h @ w[p + "attn_v.weight"].T).reshape(n, n_kv, head_dim)
        q = rope_neox(rms_norm(q, w[p + "attn_q_norm.weight"], eps), positions, base)
        k = rope_neox(rms_norm(k, w[p + "attn_k_norm.weight"], eps), positions, base)
        group = n_heads // n_kv
        k = np.repeat(k, group, 1)
        v = np.repeat(v, group, 1)
        scores = np.einsum("qhd,khd->hqk", q, k) / np.sqrt(float(head_dim))
        mask = causal.copy()
        if sliding:
            mask |= (positions[:, None] - positions[None, :]) >= window
        scores = np.where(mask[None], -np.inf, scores)
        scores = np.exp(scores - scores.max(-1, keepdims=True))
        scores /= scores.sum(-1, keepdims=True)
        attn = np.einsum("hqk,khd->qhd", scores, v).reshape(n, n_heads * head_dim)
        x = x + rms_norm(attn @ w[p + "attn_output.weight"].T, w[p + "post_attention_norm.weight"], eps)
        h = rms_norm(x, w[p + "ffn_norm.weight"], eps)
        ffn = (gelu_tanh(h @ w[p + "ffn_gate.weight"].T) * (h @ w[p + "ffn_up.weight"].T)) @ w[p + "ffn_down.weight"].T
        x = x + rms_norm(ffn, w[p + "post_ffw_norm.weight"], eps)
    return embd @ rms_norm(x[-1], w["output_norm.weight"], eps)


def main():
    weights = Weights(MODEL)
    cases = json.load(open(PROMPTS, encoding="utf-8"))["cases"]
    out = []
    for case in cases:
        logits = forward_last_logits(weights, case["prompt_tokens"])
        top = np.argsort(-logits, kind="stable")[:64]
        out.append({"name": case["name"], "top_ids": [int(i) for i in top],
                    "top_values": [float(logits[i]) for i in top]})
        print(case["name"], [(int(i), round(float(logits[i]), 3)) for i in top[:3]], file=sys.stderr)
    json.dump({"generator": "tools/make_exact_reference.py", "arithmetic": "float64 numpy, weights dequantized by gguf.quants",
               "cases": out}, open(OUT, "w"), indent=1)
    print(f"wrote {OUT}", file=sys.stderr)


if __name__ == "__main__":
    main()
