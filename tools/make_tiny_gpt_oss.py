#!/usr/bin/env python3
"""Writes a tiny gpt-oss GGUF with gpt-oss's real vocabulary, for the harmony tests.

The vocabulary is o200k_harmony as gpt-oss's GGUF files carry it: o200k_base's 199,998
byte-level BPE tokens (from the `bpe-openai` package's copy of o200k_base.tiktoken, with
the merges derived from its ranks as converters from tiktoken do: each token's two parts
are what byte-pair encoding with the ranks below its own leaves), then the harmony special
tokens at their ids (<|return|> 200002, <|constrain|> 200003, <|channel|> 200005,
<|start|> 200006, <|end|> 200007, <|message|> 200008, <|call|> 200012, ...), padded with
reserved tokens to 201,088; tokenizer.ggml.pre "gpt-4o"; EOS <|return|>.

The model is gpt-oss's architecture at toy sizes (64 wide, 2 layers, 2 heads of 32, 4
experts of width 64, 2 per token, window 16) with random weights, except that the output
norm's weights are zero: every logit is 0, so greedy decoding writes token 0 ("!")
forever. A test can then force the rest (a thinking budget's close, a grammar) and know
exactly what the model wrote.

    python3 tools/make_tiny_gpt_oss.py OUT.gguf

Needs the `gguf`, `numpy` and `bpe-openai` packages.
"""
from __future__ import annotations

import base64
import gzip
import pathlib
import sys

import numpy as np

N_VOCAB = 201088
N_EMBD, N_LAYERS, N_HEADS, N_KV_HEADS, HEAD_DIM, N_EXPERT, N_USED, N_FF = 64, 2, 2, 1, 32, 4, 2, 64
HARMONY_SPECIALS = {
    199998: "<|startoftext|>", 199999: "<|endoftext|>", 200002: "<|return|>", 200003: "<|constrain|>",
    200005: "<|channel|>", 200006: "<|start|>", 200007: "<|end|>", 200008: "<|message|>", 200012: "<|call|>",
    200018: "<|endofprompt|>",
}


def o200k_ranks() -> dict[bytes, int]:
    import bpe_openai
    data = pathlib.Path(bpe_openai.__file__).parent / "data" / "o200k_base.tiktoken.gz"
    ranks = {}
    for line in gzip.decompress(data.read_bytes()).splitlines():
        if line:
            token, rank = line.split()
            ranks[base64.b64decode(token)] = int(rank)
    return ranks


def byte_table() -> list[str]:
    """GPT-2's byte-to-unicode mapping, as GGUF byte-level BPE vocabularies store tokens."""
    printable = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + \
        list(range(ord("®"), ord("ÿ") + 1))
    table, extra = [], 0
    for b in range(256):
        if b in printable:
            table.append(chr(b))
        else:
            table.append(chr(256 + extra))
            extra += 1
    return table


BYTE_TABLE = byte_table()


def byte_level(token: bytes) -> str:
    return "".join(BYTE_TABLE[b] for b in token)


def merges_from_ranks(ranks: dict[bytes, int]) -> list[str]:
    def split(token: bytes, max_rank: int) -> list[bytes]:
        parts = [bytes([b]) for b in token]
        while True:
            best, best_rank = None, None
            for i in range(len(parts) - 1):
                r = ranks.get(parts[i] + parts[i + 1])
                if r is not None and r < max_rank and (best_rank is None or r < best_rank):
                    best, best_rank = i, r
            if best is None:
                return parts
            parts = parts[:best] + [parts[best] + parts[best + 1]] + parts[best + 2:]

    merges = []
    for token, rank in sorted(ranks.items(), key=lambda kv: kv[1]):
        if len(token) < 2:
            continue
        # Usually one split has both parts ranked below the token: then it is the merge.
        candidates = [i for i in range(1, len(token))
                      if ranks.get(token[:i], rank) < rank and ranks.get(token[i:], rank) < rank]
        if len(candidates) == 1:
            a, b = token[:candidates[0]], token[candidates[0]:]
        else:
            a, b = split(token, rank)
        merges.append(byte_level(a) + " " + byte_level(b))
    return merges


def main() -> int:
    import gguf
    out = pathlib.Path(sys.argv[1])
    ranks = o200k_ranks()
    tokens = [""] * N_VOCAB
    types = [gguf.TokenType.NORMAL] * N_VOCAB
    for token, rank in ranks.items():
        tokens[rank] = byte_level(token)
    for i in range(len(ranks), N_VOCAB):
        tokens[i] = HARMONY_SPECIALS.get(i, f"<|reserved_{i}|>")
        types[i] = gguf.TokenType.CONTROL
    rng = np.random.default_rng(0)

    w = gguf.GGUFWriter(str(out), "gpt-oss")
    w.add_name("tiny gpt-oss (random weights, o200k_harmony vocabulary)")
    w.add_context_length(4096)
    w.add_embedding_length(N_EMBD)
    w.add_block_count(N_LAYERS)
    w.add_feed_forward_length(N_FF)
    w.add_head_count(N_HEADS)
    w.add_head_count_kv(N_KV_HEADS)
    w.add_key_length(HEAD_DIM)
    w.add_value_length(HEAD_DIM)
    w.add_rope_freq_base(150000.0)
    w.add_layer_norm_rms_eps(1e-5)
    w.add_expert_count(N_EXPERT)
    w.add_expert_used_count(N_USED)
    w.add_expert_feed_forward_length(N_FF)
    w.add_sliding_window(16)
    w.add_tokenizer_model("gpt2")
    w.add_tokenizer_pre("gpt-4o")
    w.add_token_list(tokens)
    w.add_token_types(types)
    w.add_token_merges(merges_from_ranks(ranks))
    w.add_bos_token_id(199998)
    w.add_eos_token_id(200002)
    w.add_add_bos_token(False)

    def normal(*shape, std=0.05):
        return (std * rng.standard_normal(shape)).astype(np.float32)

    w.add_tensor("token_embd.weight", normal(N_VOCAB, N_EMBD, std=1.0).astype(np.float16))
    w.add_tensor("output_norm.weight", np.zeros(N_EMBD, dtype=np.float32))  # every logit 0
    w.add_tensor("output.weight", normal(N_VOCAB, N_EMBD).astype(np.float16))
    q_dim, kv_dim = N_HEADS * HEAD_DIM, N_KV_HEADS * HEAD_DIM
    for l in range(N_LAYERS):
        p = f"blk.{l}."
        w.add_tensor(p + "attn_norm.weight", np.ones(N_EMBD, dtype=np.float32))
        for name, rows in (("attn_q", q_dim), ("attn_k", kv_dim), ("attn_v", kv_dim)):
            w.add_tensor(p + name + ".weight", normal(rows, N_EMBD))
            w.add_tensor(p + name + ".bias", normal(rows))
        w.add_tensor(p + "attn_output.weight", normal(N_EMBD, q_dim))
        w.add_tensor(p + "attn_output.bias", normal(N_EMBD))
        w.add_tensor(p + "attn_sinks.weight", normal(N_HEADS, std=1.0))
        w.add_tensor(p + "post_attention_norm.weight", np.ones(N_EMBD, dtype=np.float32))
        w.add_tensor(p + "ffn_gate_inp.weight", normal(N_EXPERT, N_EMBD, std=1.0))
        w.add_tensor(p + "ffn_gate_inp.bias", normal(N_EXPERT))
        for name, rows, cols in (("ffn_gate_exps", N_FF, N_EMBD), ("ffn_up_exps", N_FF, N_EMBD),
                                 ("ffn_down_exps", N_EMBD, N_FF)):
            w.add_tensor(p + name + ".weight", normal(N_EXPERT, rows, cols))
            w.add_tensor(p + name + ".bias", normal(N_EXPERT, rows))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    print(f"{out}: {out.stat().st_size / 2**20:.0f} MiB, {len(ranks)} o200k tokens")
    return 0


if __name__ == "__main__":
    sys.exit(main())
