#!/usr/bin/env python3
"""Writes tests/fixtures/hf_models/<name>/: tiny random-weight Hugging Face models with reference outputs.

Sixteen models, each a complete Hugging Face model directory (config.json, model.safetensors
in bfloat16, tokenizer.json, tokenizer_config.json, generation_config.json; the Gemma models
tokenizer.model too) plus the reference outputs the C++ tests compare against, so the tests
need neither torch nor transformers:

    llama3    LlamaConfig,    2 heads x 64, 1 kv head, llama3 rope scaling  Llama-3 style tokenizer
    mistral   MistralConfig,  4 heads x 32, 2 kv heads                      Llama-3 style tokenizer
    mistral_swa  as mistral, with a sliding window of 8 tokens on every     Llama-3 style tokenizer
              layer (Mistral 7B v0.1's, shrunk)
    qwen2     Qwen2Config,    2 heads x 64, 1 kv head, q/k/v biases, tied   Qwen-2 style tokenizer
    qwen3     Qwen3Config,    4 heads x 64, 2 kv heads, q/k norms, tied     Qwen-2 style tokenizer
    qwen3moe  Qwen3MoeConfig, as qwen3 but untied; every layer a mixture of Qwen-2 style tokenizer
              8 experts (ff 64), 2 per token, top-k probabilities renormalized
    mixtral   MixtralConfig,  as mistral; every layer a mixture of 8        Llama-3 style tokenizer
              experts (ff 64), 2 per token
    gemma2    Gemma2Config,   2 heads x 64, 1 kv head, 4 layers alternating Gemma style tokenizer
              sliding (window 8) and global, attention and final logits
              soft-capped (50, 30), tied
    gemma3    Gemma3TextConfig (Gemma3ForCausalLM), 2 heads x 64, 1 kv      Gemma style tokenizer
              head, 6 layers: 5 sliding (window 8, rope base 1e4), 1 global
              (rope base 1e6), q/k norms, no soft-capping, tied
    phi3      Phi3Config,     4 heads x 32, 2 kv heads, q/k/v fused into    Llama-3 style tokenizer
              self_attn.qkv_proj (q rows, then k, then v), gate and up into
              mlp.gate_up_proj (gate rows first), rope base 1e4 over the
              whole head (partial_rotary_factor 1), no LongRoPE
    phi3_longrope  as phi3, with LongRoPE (short and long factors, original  Llama-3 style tokenizer
              context 16 so that the prompts run on the long factors)
    phi3_partial   as phi3, rope over 3/4 of each head (partial_rotary_factor  Llama-3 style tokenizer
              0.75, as microsoft/Phi-4-mini-instruct): 24 of 32 values rotate
    qwen3_yarn  as qwen3, with YaRN rope scaling (factor 4 over an original    Qwen-2 style tokenizer
              context of 16, rope base 1e4)
    smollm3   SmolLM3Config,  4 heads x 32, 2 kv heads, 4 layers, the fourth   Llama-3 style tokenizer
              without rotary embedding (NoPE, no_rope_layer_interval 4), tied
    olmo2     Olmo2Config,    4 heads x 32, 2 kv heads, norms after attention  Llama-3 style tokenizer
              and FFN only, q/k norms over all heads together
    granite   GraniteConfig,  2 heads x 64, 1 kv head, embedding, residual,    Llama-3 style tokenizer
              attention and logit multipliers (2, 1.5, 0.2, 1/0.5), tied
    gpt_oss   GptOssConfig,   4 heads x 64, 2 kv heads, 4 layers alternating  Qwen-2 style tokenizer
              sliding (window 8) and full, attention sinks, q/k/v/o biases,
              YaRN as openai/gpt-oss (factor 32 over 4096, truncate false),
              8 experts (ff 64, biases, clamped SwiGLU), 2 per token; the
              experts in MXFP4 as the Hub stores them (see write_hub_mxfp4)

All but the Gemma models and SmolLM3 (4) have 3 layers, hidden size 128, max_position_embeddings 256 and a 640-token
vocabulary; the Gemma models hidden size 128, max_position_embeddings 256, a 768-token vocabulary,
query_pre_attn_scalar = head_dim = 64, gelu_pytorch_tanh, RMSNorms (post-attention and
post-feed-forward ones too) that scale by 1 + weight, embeddings scaled by sqrt(hidden_size).
The two byte-level BPE tokenizers are trained with the `tokenizers` library on
tests/fixtures/tokenizer/corpus.txt (escapes as in make_tokenizer_corpus.py), with the
Llama 3 and Qwen 2 split patterns and the models' special tokens appended after the
learned tokens. The Gemma style tokenizer is a SentencePiece BPE model (tokenizer.model) trained
on the same corpus with Gemma's settings (GEMMA_SPM_TRAINER: byte fallback, split digits,
identity normalization, no dummy prefix; <pad> <eos> <bos> <unk> at Gemma's ids 0-3, then <mask>,
<start_of_turn>, <end_of_turn> as user-defined pieces) and the tokenizer.json transformers'
GemmaTokenizer converts it into; the script checks that transformers encodes every corpus line as
SentencePiece does, except that it matches the texts <pad> <eos> <bos> <unk> as special tokens
(tokenizer_ids.json's ids_sentencepiece has SentencePiece's ids of those lines). Only the Gemma
tokenizer needs the `sentencepiece` and `protobuf` packages (and only this tool: the C++ reads
tokenizer.model itself). Weights are random from a fixed seed per model, deliberately "sharp"
(large q/k weights, RMSNorm weights around 1, random q/k norms and biases, sharp routers)
so that a converter that drops a detail (rope scaling, q/k norms, biases, the experts'
order or weighting, the order of phi3's fused gate and up halves) changes the logits; the Gemma
models' stored norm weights are random around 0 (input and pre-feed-forward norms) or larger (see
GEMMA_NORM_INIT), so a converter that forgets the + 1 fails. Of
16 consecutive seeds per model the one whose closest greedy decision is widest is kept, so
the greedy tokens do not hinge on rounding. The MoE models' seeds are drawn from those
whose routing decisions do not hinge on rounding either (see build).

Every parameter is rounded to bfloat16 before the reference runs, so the bfloat16
safetensors hold exactly the weights the float32 reference used. References are computed
in float32 with eager attention:

    reference.json       prompts (token ids), n_vocab, logits_file, logits_positions,
                         greedy (24 argmax tokens per prompt; EOS ids may occur and
                         neither stop nor are suppressed), greedy_margin
                         (top-1 minus top-2 logit at each greedy step), sensitivity numbers
                         (max abs logit change when a detail is dropped); MoE models also
                         n_expert, n_expert_used, min_router_gap (smallest k-th minus
                         (k+1)-th router probability over all prompt positions and layers),
                         min_router_gap_greedy (the same over prompt + greedy tokens),
                         min_router_logit_gap (the same of router logits, over both),
                         routing_sensitivity (top-(k+1) experts instead of top-k, renormalized),
                         routing_weight_sensitivity (the top-k experts weighted 1/k),
                         routing_norm_sensitivity (the top-k probabilities not renormalized);
                         Gemma models also layer_types, sliding_window and the sensitivities
                         of gemma_sensitivities (soft-capping, sliding window, rope bases,
                         q/k norms, the norms' + 1, the embedding scale); phi3 also
                         fused_order_sensitivity (gate_up_proj's gate and up halves swapped);
                         gpt_oss also llamacpp_reference: logits file, greedy tokens and
                         margins with YaRN's ramp ends rounded, as llama.cpp computes
                         (logits_yarn_rounded.f32), for tools/check_convert_llamacpp.py
    logits.f32           little-endian float32 logits of every prompt position, prompt after
                         prompt, [position][vocab]
    tokenizer_ids.json   ids of every corpus line as tokenizer(text, add_special_tokens=False)
                         gives them (special-token texts in a line ARE matched, as Hugging
                         Face always does; ids_specials_as_text has the lines that differ
                         when they are not; Gemma: ids_sentencepiece, see above), and of a
                         few texts with special tokens

config.json comes in two styles (config_style in MODELS; --config-style overrides): llama3,
qwen2, qwen3moe and phi3 are "legacy", what transformers 5 saves rewritten into the key names of the
checkpoints on the Hub that transformers 4.x wrote (top-level rope_theta and rope_scaling,
torch_dtype, num_experts for qwen3_moe where transformers 5 writes num_local_experts, and
partial_rotary_factor top-level, as microsoft/Phi-4-mini-instruct has it; microsoft/Phi-3-mini-4k-instruct
has rope_scaling null and no partial_rotary_factor);
mistral, mistral_swa, qwen3 and mixtral are "v5", transformers 5's own (rope_parameters holding
rope_theta and the scaling, dtype). gemma2 is "legacy" (as google/gemma-2-2b: rope_theta, no
layer_types), gemma3 "v5" (rope_parameters {full_attention: {rope_theta 1e6}, sliding_attention:
{rope_theta 1e4}}, layer_types; its legacy form, as google/gemma-3-1b-it: rope_theta,
rope_local_base_freq, rope_scaling, sliding_window_pattern 6). Both load back in transformers 5, which the script
checks (same logits, same token ids through AutoTokenizer, same greedy tokens from
generate()).

model.safetensors holds the tensors under the names of the Hub checkpoints. For the MoE models
that means one 2-D tensor per expert and projection, as Qwen/Qwen3-30B-A3B
(mlp.experts.E.{gate,up,down}_proj.weight) and mistralai/Mixtral-8x7B-v0.1
(block_sparse_moe.experts.E.w1 (gate) / w2 (down) / w3 (up)) ship them, and the router as
mlp.gate.weight / block_sparse_moe.gate.weight [n_expert, hidden]. transformers 5 holds the
experts fused (experts.gate_up_proj [n_expert, 2 ff, hidden], experts.down_proj
[n_expert, hidden, ff]); 5.24's save_pretrained splits them back into the Hub layout, which the
script checks tensor by tensor against its own split (and writes itself should save_pretrained
not), and the reload through from_pretrained (which fuses them again) must give the same logits.
phi3's fused tensors are the Hub's layout too (microsoft/Phi-3-mini-4k-instruct:
self_attn.qkv_proj.weight [(heads + 2 kv_heads) head_dim, hidden], mlp.gate_up_proj.weight
[2 ff, hidden]); save_pretrained writes them as transformers holds them, which the script checks.

    pip install torch transformers tokenizers safetensors   # transformers 5.x, CPU torch
    pip install sentencepiece protobuf                        # gemma2, gemma3 only
    python3 tools/make_hf_models.py [--only llama3,qwen3]

Rerunning rewrites the same files (fixed seeds, one thread). Takes about a minute on one core for the
dense models, about two more for the MoE models and under a minute for the Gemma models.
"""
import argparse
import copy
import io
import json
import os
import pathlib
import shutil
import sys
import tempfile
import types

os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
os.environ.setdefault("RAYON_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import numpy as np  # noqa: E402
import torch  # noqa: E402
import transformers  # noqa: E402
from safetensors import safe_open  # noqa: E402
from tokenizers import (AddedToken, Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers,  # noqa: E402
                        processors, trainers)
from transformers import (AutoModelForCausalLM, AutoTokenizer, Gemma2Config, Gemma3TextConfig, GraniteConfig,
                          GptOssConfig, Olmo2Config, SmolLM3Config,  # noqa: E402
                          GemmaTokenizer, GenerationConfig, LlamaConfig, MistralConfig, MixtralConfig, Phi3Config,
                          Qwen2Config, Qwen3Config, Qwen3MoeConfig)

ROOT = pathlib.Path(__file__).resolve().parent.parent
CORPUS = ROOT / "tests/fixtures/tokenizer/corpus.txt"
OUT = ROOT / "tests/fixtures/hf_models"

N_VOCAB = 640  # byte-level BPE tokenizers: learned tokens (byte alphabet included) + special tokens
N_GREEDY = 24
N_SEEDS = 16  # weight seeds tried per model (see build)
N_MOE_SEEDS = 2048  # most seeds whose routing is looked at per MoE model (see build)
N_MOE_CANDIDATES = 8

LLAMA3_PATTERN = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}|"
                  r" ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+")
QWEN2_PATTERN = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}|"
                 r" ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+")

LLAMA3_CHAT_TEMPLATE = (
    "{{- bos_token }}"
    "{%- for message in messages %}"
    "{{- '<|start_header_id|>' + message['role'] + '<|end_header_id|>\\n\\n' + message['content'] | trim + '<|eot_id|>' }}"
    "{%- endfor %}"
    "{%- if add_generation_prompt %}"
    "{{- '<|start_header_id|>assistant<|end_header_id|>\\n\\n' }}"
    "{%- endif %}")
# Gemma's turn format (as google/gemma-2-2b-it and google/gemma-3-1b-it write it; ours is shorter:
# no system turn).
GEMMA_CHAT_TEMPLATE = (
    "{{- bos_token }}"
    "{%- for message in messages %}"
    "{%- set role = 'model' if message['role'] == 'assistant' else message['role'] %}"
    "{{- '<start_of_turn>' + role + '\\n' + message['content'] | trim + '<end_of_turn>\\n' }}"
    "{%- endfor %}"
    "{%- if add_generation_prompt %}"
    "{{- '<start_of_turn>model\\n' }}"
    "{%- endif %}")
CHATML_TEMPLATE = (
    "{%- for message in messages %}"
    "{{- '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>' + '\\n' }}"
    "{%- endfor %}"
    "{%- if add_generation_prompt %}"
    "{{- '<|im_start|>assistant\\n' }}"
    "{%- endif %}")

TOKENIZER_STYLES = {
    # As Meta's Llama 3 tokenizer.json: ignore_merges, BOS prepended by a
    # Sequence[ByteLevel, TemplateProcessing] post-processor, merges written as "a b" strings.
    "llama3": {
        "pattern": LLAMA3_PATTERN,
        "specials": ["<|begin_of_text|>", "<|end_of_text|>", "<|start_header_id|>", "<|end_header_id|>",
                     "<|eot_id|>"],
        "ignore_merges": True,
        "nfc": False,
        "bos": "<|begin_of_text|>",
        "merges_as_strings": True,
    },
    # As Qwen 2's tokenizer.json: an NFC normalizer (transformers 5 puts one in whatever
    # tokenizer.json says when it loads a qwen2 directory as Qwen2Tokenizer), no BOS, a
    # ByteLevel post-processor that changes no ids, merges as [a, b] pairs (the format
    # tokenizers >= 0.20 writes).
    "qwen2": {
        "pattern": QWEN2_PATTERN,
        "specials": ["<|endoftext|>", "<|im_start|>", "<|im_end|>"],
        "ignore_merges": False,
        "nfc": True,
        "bos": None,
        "merges_as_strings": False,
    },
    # As Gemma 2 and 3: a SentencePiece BPE model (tokenizer.model, see GEMMA_SPM_TRAINER) and the
    # tokenizer.json transformers converts it into. Ids 0-4 as Gemma's: <pad> <eos> <bos> (control
    # pieces) <unk>, then <mask>, <start_of_turn> and <end_of_turn> as user-defined pieces (Gemma has
    # <mask> at 4 and the turn tokens at 106/107 (Gemma 2) or 105/106 (Gemma 3), all user-defined).
    "gemma": {
        "specials": ["<pad>", "<eos>", "<bos>", "<unk>", "<mask>", "<start_of_turn>", "<end_of_turn>"],
        "bos": "<bos>",
        "sentencepiece": True,
        "merges_as_strings": False,
    },
}

# SentencePiece trainer settings of the gemma tokenizer. As Gemma's tokenizer.model: BPE, byte
# fallback, digits split, identity normalization (no NFKC: an empty precompiled_charsmap), spaces
# escaped to U+2581, no dummy prefix and extra whitespace kept (add_dummy_prefix and
# remove_extra_whitespaces false in the normalizer_spec of both Gemma 2's and Gemma 3's tokenizer.model:
# "<bos>Hey" encodes to '<' 'bos' '>' 'Hey', and transformers' GemmaTokenizer has no prefix space),
# whitespace-only pieces allowed. The corpus has some 400 distinct characters and SentencePiece
# insists on a character_coverage of at least 0.98, which keeps 326 of them as pieces (the rest
# falls back to bytes), so 768 pieces leave room for 180 merged ones (640 would leave 52).
GEMMA_SPM_TRAINER = dict(
    model_type="bpe", vocab_size=768, character_coverage=0.98, byte_fallback=True, split_digits=True,
    normalization_rule_name="identity", add_dummy_prefix=False, remove_extra_whitespaces=False,
    split_by_unicode_script=True, split_by_number=True, split_by_whitespace=True, treat_whitespace_as_suffix=False,
    allow_whitespace_only_pieces=True, pad_id=0, eos_id=1, bos_id=2, unk_id=3, pad_piece="<pad>", eos_piece="<eos>",
    bos_piece="<bos>", unk_piece="<unk>", user_defined_symbols=["<mask>", "<start_of_turn>", "<end_of_turn>"],
    input_sentence_size=0, shuffle_input_sentence=False, max_sentence_length=1 << 16, num_threads=1, minloglevel=2)
SENTENCEPIECE_MODELS: dict[str, bytes] = {}  # style -> tokenizer.model (serialized ModelProto), see train_tokenizer

SPECIAL_TEXTS = {
    "llama3": [
        "<|begin_of_text|><|start_header_id|>user<|end_header_id|>\n\nHi<|eot_id|>",
        "<|start_header_id|>system<|end_header_id|>\n\nYou are helpful.<|eot_id|>"
        "<|start_header_id|>assistant<|end_header_id|>\n\n",
        "text<|end_of_text|>more text",
        "<|eot_id|><|eot_id|> trailing",
        "<|im_start|>user\nhi<|im_end|>",
        "< |eot_id| > <|eot_id <|begin_of_text|>x",
    ],
    "qwen2": [
        "<|im_start|>user\nhi<|im_end|>",
        "<|im_start|>system\nYou are helpful.<|im_end|>\n<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n",
        "text<|endoftext|>more text",
        "<|im_end|><|im_end|> trailing",
        "<|begin_of_text|><|start_header_id|>user<|end_header_id|>\n\nHi<|eot_id|>",
        "< |im_end| > <|im_start <|endoftext|>x",
    ],
    "gemma": [
        "<bos><start_of_turn>user\nHi<end_of_turn>\n<start_of_turn>model\n",
        "<start_of_turn>user\nYou are helpful.<end_of_turn>\n<start_of_turn>model\nHello!<end_of_turn>\n",
        "text<eos>more text",
        "<end_of_turn><end_of_turn> trailing",
        "<pad><unk><mask> <bos>",
        "<|im_start|>user\nhi<|im_end|>",
        "< start_of_turn > <start_of_turn <eos>x",
    ],
}

# Our own texts; the last is rendered through the chat template.
PROMPT_TEXTS = [
    "The quick brown fox jumps over the lazy dog.",
    "def add(a, b):\n    return a + b",
    "今天天气很好。Prices rose 3.5% in 2023.",
]
PROMPT_CHAT = [{"role": "user", "content": "What is 12 + 30?"}]

LLAMA3_ROPE_SCALING = {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                       "original_max_position_embeddings": 16}

# LongRoPE factors for the 16 rotary pairs of a 32-wide head: near 1 for the short context, growing
# towards the slow pairs for the long one (the shape of Phi-3.5's).
LONGROPE_SHORT = [round(1.0 + 0.02 * i, 2) for i in range(16)]
LONGROPE_LONG = [round(1.0 + 1.5 * i * i / 15, 2) for i in range(16)]

COMMON = dict(vocab_size=N_VOCAB, hidden_size=128, num_hidden_layers=3, max_position_embeddings=256,
              hidden_act="silu", dtype="bfloat16")

# Gemma 2 and 3: head_dim 64 = query_pre_attn_scalar (so the attention scale is 1/sqrt(head_dim), as
# llama.cpp assumes for all but Gemma 2 27B), gelu_pytorch_tanh, RMSNorms scaling by (1 + weight) (post-
# attention and post-feed-forward norms too), embeddings scaled by sqrt(hidden_size), tied. A sliding
# window of 8 tokens (transformers: a query at position i sees keys at i-7 .. i) so that the prompts
# (18-32 tokens) and greedy continuations exercise it.
GEMMA_COMMON = dict(vocab_size=GEMMA_SPM_TRAINER["vocab_size"], hidden_size=128, max_position_embeddings=256,
                    num_attention_heads=2, head_dim=64, num_key_value_heads=1, intermediate_size=256,
                    hidden_activation="gelu_pytorch_tanh", rms_norm_eps=1e-6, query_pre_attn_scalar=64,
                    sliding_window=8, tie_word_embeddings=True, attention_bias=False, dtype="bfloat16")

def llama3_special_ids(ids: dict) -> dict:
    """The Llama-3 style tokenizer's BOS and EOS ids, and no pad token (Phi3Config's default
    pad id, 32000, is past the vocabulary)."""
    return dict(pad_token_id=None, bos_token_id=ids["<|begin_of_text|>"],
                eos_token_id=[ids["<|end_of_text|>"], ids["<|eot_id|>"]])


MODELS = {
    "llama3": {
        "seed": 1000, "tokenizer": "llama3", "config_style": "legacy",
        "config": lambda ids: LlamaConfig(
            **COMMON, num_attention_heads=2, head_dim=64, num_key_value_heads=1, intermediate_size=256,
            rms_norm_eps=1e-5, tie_word_embeddings=False,
            rope_parameters={"rope_theta": 500000.0, **LLAMA3_ROPE_SCALING},
            bos_token_id=ids["<|begin_of_text|>"], eos_token_id=[ids["<|end_of_text|>"], ids["<|eot_id|>"]]),
    },
    "mistral": {
        "seed": 2000, "tokenizer": "llama3", "config_style": "v5",
        "config": lambda ids: MistralConfig(
            **COMMON, num_attention_heads=4, head_dim=32, num_key_value_heads=2, intermediate_size=320,
            rms_norm_eps=1e-5, tie_word_embeddings=False, sliding_window=None,
            rope_parameters={"rope_type": "default", "rope_theta": 1000000.0},
            bos_token_id=ids["<|begin_of_text|>"], eos_token_id=[ids["<|end_of_text|>"], ids["<|eot_id|>"]]),
    },
    # Mistral 7B v0.1's sliding window (every layer), shrunk to 8 tokens so that the prompts and
    # greedy continuations exercise it. llama.cpp runs Mistral as llama and ignores the window.
    "mistral_swa": {
        "seed": 2100, "tokenizer": "llama3", "config_style": "v5",
        "config": lambda ids: MistralConfig(
            **COMMON, num_attention_heads=4, head_dim=32, num_key_value_heads=2, intermediate_size=320,
            rms_norm_eps=1e-5, tie_word_embeddings=False, sliding_window=8,
            rope_parameters={"rope_type": "default", "rope_theta": 1000000.0},
            bos_token_id=ids["<|begin_of_text|>"], eos_token_id=[ids["<|end_of_text|>"], ids["<|eot_id|>"]]),
    },
    "qwen2": {
        "seed": 3000, "tokenizer": "qwen2", "config_style": "legacy",
        "config": lambda ids: Qwen2Config(
            **COMMON, num_attention_heads=2, num_key_value_heads=1, intermediate_size=256, rms_norm_eps=1e-6,
            tie_word_embeddings=True, use_sliding_window=False, sliding_window=None,
            rope_parameters={"rope_type": "default", "rope_theta": 1000000.0},
            bos_token_id=ids["<|endoftext|>"], eos_token_id=ids["<|im_end|>"]),
    },
    "qwen3": {
        "seed": 4000, "tokenizer": "qwen2", "config_style": "v5",
        "config": lambda ids: Qwen3Config(
            **COMMON, num_attention_heads=4, head_dim=64, num_key_value_heads=2, intermediate_size=256,
            rms_norm_eps=1e-6, tie_word_embeddings=True, attention_bias=False, use_sliding_window=False,
            sliding_window=None, rope_parameters={"rope_type": "default", "rope_theta": 1000000.0},
            bos_token_id=ids["<|endoftext|>"], eos_token_id=ids["<|im_end|>"]),
    },
    # Qwen 3 with YaRN (as Qwen's long-context configs: rope_type yarn, factor 4), the original
    # context shrunk to 16 and the base to 1e4 so that the prompts' positions reach the
    # interpolated pairs; q and k scaled by 1 + 0.1 ln 4 (transformers' default attention factor).
    "qwen3_yarn": {
        "seed": 4100, "tokenizer": "qwen2", "config_style": "v5",
        "config": lambda ids: Qwen3Config(
            **COMMON, num_attention_heads=4, head_dim=64, num_key_value_heads=2, intermediate_size=256,
            rms_norm_eps=1e-6, tie_word_embeddings=True, attention_bias=False, use_sliding_window=False,
            sliding_window=None,
            rope_parameters={"rope_type": "yarn", "rope_theta": 10000.0, "factor": 4.0,
                             "original_max_position_embeddings": 16},
            bos_token_id=ids["<|endoftext|>"], eos_token_id=ids["<|im_end|>"]),
    },
    # Mixture of experts: every layer sparse, 8 experts, 2 per token.
    "qwen3moe": {
        "seed": 5000, "tokenizer": "qwen2", "config_style": "legacy", "moe": True,
        "config": lambda ids: Qwen3MoeConfig(
            **COMMON, num_attention_heads=4, head_dim=64, num_key_value_heads=2, intermediate_size=256,
            num_experts=8, num_experts_per_tok=2, moe_intermediate_size=64, decoder_sparse_step=1,
            mlp_only_layers=[], norm_topk_prob=True, rms_norm_eps=1e-6, tie_word_embeddings=False,
            attention_bias=False, use_sliding_window=False, sliding_window=None,
            rope_parameters={"rope_type": "default", "rope_theta": 1000000.0},
            bos_token_id=ids["<|endoftext|>"], eos_token_id=ids["<|im_end|>"]),
    },
    "mixtral": {
        "seed": 6000, "tokenizer": "llama3", "config_style": "v5", "moe": True,
        "config": lambda ids: MixtralConfig(
            **COMMON, num_attention_heads=4, head_dim=32, num_key_value_heads=2, intermediate_size=64,
            num_local_experts=8, num_experts_per_tok=2, rms_norm_eps=1e-5, tie_word_embeddings=False,
            sliding_window=None, rope_parameters={"rope_type": "default", "rope_theta": 1000000.0},
            bos_token_id=ids["<|begin_of_text|>"], eos_token_id=[ids["<|end_of_text|>"], ids["<|eot_id|>"]]),
    },
    # Layers alternate sliding and global attention, sliding first (transformers' default layer_types:
    # layer i slides when i is even), so 4 layers give each kind twice. Attention logits and final
    # logits soft-capped (tanh), as all Gemma 2 models.
    "gemma2": {
        "seed": 7000, "tokenizer": "gemma", "config_style": "legacy", "gemma": True,
        "config": lambda ids: Gemma2Config(
            **GEMMA_COMMON, num_hidden_layers=4, rope_parameters={"rope_type": "default", "rope_theta": 10000.0},
            attn_logit_softcapping=50.0, final_logit_softcapping=30.0,
            pad_token_id=ids["<pad>"], bos_token_id=ids["<bos>"], eos_token_id=[ids["<eos>"], ids["<end_of_turn>"]]),
    },
    # Gemma 3's pattern: 5 sliding layers, then a global one (transformers' default layer_types:
    # layer i is global when (i + 1) % 6 == 0), global layers with rope base 1e6, sliding ones 1e4
    # (rope_parameters per layer type; 4.x configs: rope_theta and rope_local_base_freq), q/k norms,
    # no soft-capping.
    "gemma3": {
        "seed": 8000, "tokenizer": "gemma", "config_style": "v5", "gemma": True,
        "config": lambda ids: Gemma3TextConfig(
            **GEMMA_COMMON, num_hidden_layers=6,
            rope_parameters={"full_attention": {"rope_type": "default", "rope_theta": 1000000.0},
                             "sliding_attention": {"rope_type": "default", "rope_theta": 10000.0}},
            attn_logit_softcapping=None, final_logit_softcapping=None,
            pad_token_id=ids["<pad>"], bos_token_id=ids["<bos>"], eos_token_id=[ids["<eos>"], ids["<end_of_turn>"]]),
    },
    # Phi-3 (as microsoft/Phi-3-mini-4k-instruct, but grouped-query attention and no sliding window):
    # q/k/v fused into self_attn.qkv_proj, gate and up into mlp.gate_up_proj, head_dim = hidden /
    # heads (Phi3Config has no head_dim), rope over the whole head, no LongRoPE (rope_scaling null;
    # original_max_position_embeddings = max_position_embeddings, as the 4k model), no biases
    # (attention_bias false as the Hub configs say; Phi3Attention has none either way). pad_token_id
    # None: Phi3Config's default (32000) is past the vocabulary.
    "phi3": {
        "seed": 9000, "tokenizer": "llama3", "config_style": "legacy",
        "config": lambda ids: Phi3Config(
            **COMMON, num_attention_heads=4, num_key_value_heads=2, intermediate_size=256, rms_norm_eps=1e-5,
            tie_word_embeddings=False, sliding_window=None, attention_bias=False,
            original_max_position_embeddings=256,
            rope_parameters={"rope_type": "default", "rope_theta": 10000.0, "partial_rotary_factor": 1.0},
            **llama3_special_ids(ids)),
    },
    # Phi-3 rotating 3/4 of each head (partial_rotary_factor 0.75, top level in the legacy config as
    # microsoft/Phi-4-mini-instruct has it): the rotary pairs are values [0, 12) with [12, 24); 24..31
    # pass unrotated.
    "phi3_partial": {
        "seed": 9200, "tokenizer": "llama3", "config_style": "legacy",
        "config": lambda ids: Phi3Config(
            **COMMON, num_attention_heads=4, num_key_value_heads=2, intermediate_size=256, rms_norm_eps=1e-5,
            tie_word_embeddings=False, sliding_window=None, attention_bias=False,
            original_max_position_embeddings=256,
            rope_parameters={"rope_type": "default", "rope_theta": 10000.0, "partial_rotary_factor": 0.75},
            **llama3_special_ids(ids)),
    },
    # Phi-3 with LongRoPE (as microsoft/Phi-3.5-mini-instruct: rope_scaling longrope with short and
    # long factors per rotary pair, original_max_position_embeddings top level), the original context
    # shrunk to 16 so that every prompt (19-32 tokens) runs on the long factors, as transformers
    # picks them for a sequence longer than the original context; the attention factor is
    # transformers' default, sqrt(1 + ln(256 / 16) / ln(16)) = sqrt(2).
    "phi3_longrope": {
        "seed": 9100, "tokenizer": "llama3", "config_style": "legacy",
        "config": lambda ids: Phi3Config(
            **COMMON, num_attention_heads=4, num_key_value_heads=2, intermediate_size=256, rms_norm_eps=1e-5,
            tie_word_embeddings=False, sliding_window=None, attention_bias=False,
            original_max_position_embeddings=16,
            rope_parameters={"rope_type": "longrope", "rope_theta": 10000.0, "partial_rotary_factor": 1.0,
                             "short_factor": LONGROPE_SHORT, "long_factor": LONGROPE_LONG},
            **llama3_special_ids(ids)),
    },
    # SmolLM3: Llama's block, but every fourth layer (here layer 3) without rotary embedding (NoPE),
    # as HuggingFaceTB/SmolLM3-3B's no_rope_layer_interval 4; tied embeddings.
    "smollm3": {
        "seed": 10000, "tokenizer": "llama3", "config_style": "v5",
        "config": lambda ids: SmolLM3Config(
            **{**COMMON, "num_hidden_layers": 4}, num_attention_heads=4, head_dim=32, num_key_value_heads=2,
            intermediate_size=256, rms_norm_eps=1e-6, tie_word_embeddings=True, attention_bias=False,
            use_sliding_window=False, sliding_window=None, no_rope_layer_interval=4,
            rope_parameters={"rope_type": "default", "rope_theta": 2000000.0},
            **llama3_special_ids(ids)),
    },
    # OLMo 2: no norms before attention and FFN, RMSNorms after each (before the residual add), and
    # q/k RMSNorms over the whole q and k projections (all heads together), untied.
    "olmo2": {
        "seed": 11000, "tokenizer": "llama3", "config_style": "v5",
        "config": lambda ids: Olmo2Config(
            **COMMON, num_attention_heads=4, num_key_value_heads=2, intermediate_size=256, rms_norm_eps=1e-6,
            tie_word_embeddings=False, attention_bias=False,
            rope_parameters={"rope_type": "default", "rope_theta": 500000.0},
            **llama3_special_ids(ids)),
    },
    # Granite 3: Llama's block with four multipliers: input embeddings times embedding_multiplier, each
    # block's attention and FFN output times residual_multiplier before the residual add, attention
    # scores scaled by attention_multiplier (in place of 1/sqrt(head_dim)), logits divided by
    # logits_scaling. Chosen apart from the neutral values (1, and 1/sqrt(64) = 0.125 for attention) so
    # that dropping any one shows; logits_scaling below 1 (Granite 3's is 8 or 16) keeps the tiny
    # model's logits sharp enough for distinct greedy tokens.
    # gpt-oss (openai/gpt-oss-20b's structure, shrunk): YaRN with its rope values, the window shrunk
    # to 8 so that the prompts slide; gate_up's weights wide enough that the clamp at 7 acts.
    "gpt_oss": {
        "seed": 13000, "tokenizer": "qwen2", "config_style": "v5", "moe": True,
        "init_std": {"experts.gate_up_proj": 0.3},
        "config": lambda ids: GptOssConfig(
            **{**COMMON, "num_hidden_layers": 4, "max_position_embeddings": 131072}, num_attention_heads=4,
            head_dim=64, num_key_value_heads=2, intermediate_size=64, num_local_experts=8, num_experts_per_tok=2,
            rms_norm_eps=1e-5, tie_word_embeddings=False, attention_bias=True, sliding_window=8, swiglu_limit=7.0,
            rope_parameters={"rope_type": "yarn", "rope_theta": 150000.0, "factor": 32.0, "beta_fast": 32.0,
                             "beta_slow": 1.0, "truncate": False, "original_max_position_embeddings": 4096},
            bos_token_id=ids["<|endoftext|>"], eos_token_id=ids["<|im_end|>"]),
    },
    "granite": {
        "seed": 12000, "tokenizer": "llama3", "config_style": "v5",
        "config": lambda ids: GraniteConfig(
            **COMMON, num_attention_heads=2, num_key_value_heads=1, intermediate_size=256, rms_norm_eps=1e-5,
            tie_word_embeddings=True, attention_bias=False, mlp_bias=False,
            embedding_multiplier=2.0, residual_multiplier=1.5, attention_multiplier=0.2, logits_scaling=0.5,
            rope_parameters={"rope_type": "default", "rope_theta": 10000.0},
            **llama3_special_ids(ids)),
    },
}
GEMMA_LAYER_TYPES = {
    "gemma2": ["sliding_attention", "full_attention"] * 2,
    "gemma3": ["sliding_attention"] * 5 + ["full_attention"],
}


# ----------------------------------------------------------------------------- tokenizers

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


def train_tokenizer(style: str, texts: list[str]) -> Tokenizer:
    s = TOKENIZER_STYLES[style]
    if s.get("sentencepiece"):
        return train_sentencepiece(style, texts)
    tok = Tokenizer(models.BPE(ignore_merges=s["ignore_merges"]))
    if s["nfc"]:
        tok.normalizer = normalizers.NFC()
    tok.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(s["pattern"]), behavior="isolated", invert=False),
        pre_tokenizers.ByteLevel(add_prefix_space=False, trim_offsets=True, use_regex=False),
    ])
    tok.decoder = decoders.ByteLevel()
    n_learned = N_VOCAB - len(s["specials"])
    trainer = trainers.BpeTrainer(vocab_size=n_learned, show_progress=False, special_tokens=[],
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tok.train_from_iterator(texts, trainer)
    assert tok.get_vocab_size() == n_learned, (style, tok.get_vocab_size())
    tok.add_special_tokens([AddedToken(t, special=True, normalized=False) for t in s["specials"]])
    byte_level = processors.ByteLevel(add_prefix_space=True, trim_offsets=False, use_regex=True)
    if s["bos"]:
        bos = s["bos"]
        template = processors.TemplateProcessing(single=f"{bos} $A", pair=f"{bos} $A:0 {bos}:1 $B:1",
                                                 special_tokens=[(bos, tok.token_to_id(bos))])
        tok.post_processor = processors.Sequence([byte_level, template])
    else:
        tok.post_processor = processors.ByteLevel(add_prefix_space=False, trim_offsets=False, use_regex=False)
    assert tok.get_vocab_size() == N_VOCAB
    return tok


def train_sentencepiece(style: str, texts: list[str]) -> Tokenizer:
    """Trains a SentencePiece BPE model (GEMMA_SPM_TRAINER; kept in SENTENCEPIECE_MODELS[style]) and
    returns the tokenizer transformers' GemmaTokenizer converts it into (BPE with byte fallback, merges
    ranked by piece score, a normalizer replacing " " with U+2581 and no pre-tokenization), with a
    post-processor prepending <bos> and every piece of specials an added token marked special (as the
    tokenizer.json of google/gemma-2-2b-it and google/gemma-3-1b-it have them; the conversion leaves
    <start_of_turn> and <end_of_turn> unmarked)."""
    import sentencepiece as spm  # only the gemma tokenizer needs it (and protobuf, for the conversion)

    s = TOKENIZER_STYLES[style]
    buf = io.BytesIO()
    spm.SentencePieceTrainer.train(sentence_iterator=iter(texts), model_writer=buf, **GEMMA_SPM_TRAINER)
    model = buf.getvalue()
    SENTENCEPIECE_MODELS[style] = model
    sp = spm.SentencePieceProcessor(model_proto=model)
    assert [sp.id_to_piece(i) for i in range(len(s["specials"]))] == s["specials"]
    with tempfile.TemporaryDirectory() as tmp:
        (pathlib.Path(tmp) / "tokenizer.model").write_bytes(model)
        converted = GemmaTokenizer.from_pretrained(tmp)
    data = json.loads(converted.backend_tokenizer.to_str())
    assert [t["content"] for t in data["added_tokens"]] == s["specials"], data["added_tokens"]
    for t in data["added_tokens"]:
        t["special"] = True
    tok = Tokenizer.from_str(json.dumps(data))
    bos = s["bos"]
    tok.post_processor = processors.TemplateProcessing(single=f"{bos}:0 $A:0", pair=f"{bos}:0 $A:0 {bos}:1 $B:1",
                                                       special_tokens=[(bos, tok.token_to_id(bos))])
    assert tok.get_vocab_size() == sp.get_piece_size() == GEMMA_SPM_TRAINER["vocab_size"]
    return tok


def sentencepiece_ids(style: str, texts: list[str]) -> list[list[int]]:
    """Ids of texts as SentencePiece itself encodes them (no BOS). It matches user-defined pieces
    (<mask>, <start_of_turn>, <end_of_turn>) in the text, but not control pieces (<pad> <eos> <bos>)
    nor <unk>, which transformers matches as special tokens."""
    import sentencepiece as spm

    sp = spm.SentencePieceProcessor(model_proto=SENTENCEPIECE_MODELS[style])
    return [sp.encode(t) for t in texts]


def tokenizer_json_text(style: str, tok: Tokenizer) -> str:
    data = json.loads(tok.to_str())
    if TOKENIZER_STYLES[style]["merges_as_strings"]:
        merges = data["model"]["merges"]
        assert all(" " not in a and " " not in b for a, b in merges)
        data["model"]["merges"] = [f"{a} {b}" for a, b in merges]
    return json.dumps(data, ensure_ascii=False, indent=2) + "\n"


def tokenizer_config(style: str, tok: Tokenizer) -> dict:
    s = TOKENIZER_STYLES[style]
    added = {str(tok.token_to_id(t)): {"content": t, "lstrip": False, "normalized": False, "rstrip": False,
                                       "single_word": False, "special": True} for t in s["specials"]}
    if style == "llama3":  # as meta-llama/Llama-3.2-1B-Instruct
        return {
            "added_tokens_decoder": added,
            "bos_token": "<|begin_of_text|>",
            "chat_template": LLAMA3_CHAT_TEMPLATE,
            "clean_up_tokenization_spaces": True,
            "eos_token": "<|eot_id|>",
            "model_input_names": ["input_ids", "attention_mask"],
            "model_max_length": 256,
            "tokenizer_class": "PreTrainedTokenizerFast",
        }
    if style == "gemma":  # as google/gemma-2-2b-it (mask_token included: GemmaTokenizer's default is <mask>)
        return {
            "add_bos_token": True,
            "add_eos_token": False,
            "added_tokens_decoder": added,
            "additional_special_tokens": ["<start_of_turn>", "<end_of_turn>"],
            "bos_token": "<bos>",
            "chat_template": GEMMA_CHAT_TEMPLATE,
            "clean_up_tokenization_spaces": False,
            "eos_token": "<eos>",
            "mask_token": "<mask>",
            "model_max_length": 256,
            "pad_token": "<pad>",
            "spaces_between_special_tokens": False,
            "tokenizer_class": "GemmaTokenizer",
            "unk_token": "<unk>",
        }
    return {  # as Qwen/Qwen2.5-0.5B-Instruct
        "add_prefix_space": False,
        "added_tokens_decoder": added,
        "additional_special_tokens": ["<|im_start|>", "<|im_end|>"],
        "bos_token": None,
        "chat_template": CHATML_TEMPLATE,
        "clean_up_tokenization_spaces": False,
        "eos_token": "<|im_end|>",
        "errors": "replace",
        "model_max_length": 256,
        "pad_token": "<|endoftext|>",
        "split_special_tokens": False,
        "tokenizer_class": "Qwen2Tokenizer",
        "unk_token": None,
    }


def generation_config(style: str, ids: dict) -> GenerationConfig:
    if style == "llama3":
        return GenerationConfig(bos_token_id=ids["<|begin_of_text|>"],
                                eos_token_id=[ids["<|end_of_text|>"], ids["<|eot_id|>"]])
    if style == "gemma":  # as google/gemma-2-2b-it and google/gemma-3-1b-it
        return GenerationConfig(bos_token_id=ids["<bos>"], pad_token_id=ids["<pad>"],
                                eos_token_id=[ids["<eos>"], ids["<end_of_turn>"]])
    return GenerationConfig(bos_token_id=ids["<|endoftext|>"], pad_token_id=ids["<|endoftext|>"],
                            eos_token_id=[ids["<|im_end|>"], ids["<|endoftext|>"]])


def write_tokenizer_files(directory: pathlib.Path, style: str, tok: Tokenizer) -> None:
    (directory / "tokenizer.json").write_text(tokenizer_json_text(style, tok), encoding="utf-8")
    if style in SENTENCEPIECE_MODELS:
        (directory / "tokenizer.model").write_bytes(SENTENCEPIECE_MODELS[style])
    write_pretty_json(directory / "tokenizer_config.json", tokenizer_config(style, tok))


def check_tokenizer(style: str, tok: Tokenizer, hf_tok, texts: list[str]) -> list[list[int]]:
    """The ids of texts, the same through transformers and through tokenizers alone."""
    ids = []
    for text in texts + SPECIAL_TEXTS[style]:
        for add in (False, True):
            hf = hf_tok(text, add_special_tokens=add)["input_ids"]
            assert hf == tok.encode(text, add_special_tokens=add).ids, (style, type(hf_tok).__name__, text)
        ids.append(hf_tok(text, add_special_tokens=False)["input_ids"])
    if style in SENTENCEPIECE_MODELS:
        check_sentencepiece(style, tok, texts + SPECIAL_TEXTS[style], ids)
    return ids[:len(texts)]


SENTENCEPIECE_UNMATCHED = ("<pad>", "<eos>", "<bos>", "<unk>")  # control and unknown pieces: never matched in text


def check_sentencepiece(style: str, tok: Tokenizer, texts: list[str], ids: list[list[int]]) -> dict[int, list[int]]:
    """Checks that texts encode (without BOS) to ids as SentencePiece encodes them, except where
    a text holds <pad>, <eos>, <bos> or <unk>, which transformers matches as special tokens and
    SentencePiece encodes as text: with those four left unmatched, tokenizers gives SentencePiece's
    ids for every text. Returns SentencePiece's ids of the texts where they differ from ids."""
    data = json.loads(tok.to_str())
    data["added_tokens"] = [t for t in data["added_tokens"] if t["content"] not in SENTENCEPIECE_UNMATCHED]
    unmatched = Tokenizer.from_str(json.dumps(data))
    differ = {}
    for i, (text, sp) in enumerate(zip(texts, sentencepiece_ids(style, texts))):
        assert unmatched.encode(text, add_special_tokens=False).ids == sp, (style, text)
        if sp != ids[i]:
            assert any(t in text for t in SENTENCEPIECE_UNMATCHED), (style, text)
            differ[i] = sp
    return differ


def write_tokenizer_ids(directory: pathlib.Path, style: str, tok: Tokenizer, hf_tok, texts: list[str]) -> None:
    """Corpus ids as transformers encodes them (checked against the raw tokenizer)."""
    ids = check_tokenizer(style, tok, hf_tok, texts)
    plain = copy.deepcopy(tok)
    plain.encode_special_tokens = True
    as_text = {}
    for i, text in enumerate(texts):
        p = plain.encode(text, add_special_tokens=False).ids
        if p != ids[i]:
            as_text[str(i)] = p
    special_texts = []
    for text in SPECIAL_TEXTS[style]:
        special_texts.append({
            "text": text,
            "ids": hf_tok(text, add_special_tokens=False)["input_ids"],
            "ids_add_special_tokens": hf_tok(text, add_special_tokens=True)["input_ids"],
        })
    specials = {t: tok.token_to_id(t) for t in TOKENIZER_STYLES[style]["specials"]}
    lines = ["{",
             f'  "corpus": {json.dumps(CORPUS.relative_to(ROOT).as_posix())},',
             f'  "n_vocab": {tok.get_vocab_size()},',
             f'  "special_tokens": {json.dumps(specials)},',
             '  "ids": [']
    lines += ["    " + json.dumps(x, separators=(",", ":")) + ("," if i + 1 < len(ids) else "")
              for i, x in enumerate(ids)]
    lines.append("  ],")
    lines.append('  "ids_specials_as_text": {')
    items = list(as_text.items())
    lines += [f"    {json.dumps(k)}: " + json.dumps(v, separators=(",", ":")) + ("," if i + 1 < len(items) else "")
              for i, (k, v) in enumerate(items)]
    lines.append("  },")
    if style in SENTENCEPIECE_MODELS:
        # As SentencePiece encodes the lines where it differs from ids: it leaves <pad> <eos> <bos> <unk> as text.
        differ = list(check_sentencepiece(style, tok, texts, ids).items())
        lines.append('  "ids_sentencepiece": {')
        lines += [f"    {json.dumps(str(k))}: " + json.dumps(v, separators=(",", ":")) +
                  ("," if i + 1 < len(differ) else "") for i, (k, v) in enumerate(differ)]
        lines.append("  },")
    lines.append('  "special_texts": [')
    lines += ["    " + json.dumps(c, ensure_ascii=False, separators=(",", ":")) +
              ("," if i + 1 < len(special_texts) else "") for i, c in enumerate(special_texts)]
    lines.append("  ]")
    lines.append("}")
    (directory / "tokenizer_ids.json").write_text("\n".join(lines) + "\n", encoding="utf-8")


# ----------------------------------------------------------------------------- models

# Standard deviations of the random weights (norm weights are 1 + 0.1 randn, q/k norms 1 + 0.2 randn).
# q/k are large so attention is far from uniform; o/down are large so the residual stream
# outgrows the token embedding and tied models do not just repeat their last token.
INIT_STD = {
    "embed": 0.3,
    "q_proj.weight": 0.15, "k_proj.weight": 0.15, "v_proj.weight": 0.08, "o_proj.weight": 0.3,
    "q_proj.bias": 0.3, "k_proj.bias": 0.3, "v_proj.bias": 0.1,
    "gate_proj.weight": 0.08, "up_proj.weight": 0.08, "down_proj.weight": 0.3,
    # Phi-3's fused projections: gate_up_proj as gate_proj and up_proj; qkv_proj's q and k rows as
    # q_proj and k_proj, its v rows as v_proj (see fused_qkv_std).
    "gate_up_proj.weight": 0.08,
    # Mixture of experts, as transformers 5 holds it: the router [n_expert, hidden] and the experts
    # fused into 3-D tensors (see hub_moe_tensors). Router logits have a std of about
    # 0.2 * sqrt(hidden) = 2.3: sharp enough that which experts are chosen, and with what weights,
    # matters, yet the second expert's weight is rarely negligible. (Much sharper routers put the
    # k-th and (k+1)-th probabilities both near 0, so some routing gap is always tiny; see build.)
    "gate.weight": 0.2, "experts.gate_up_proj": 0.08, "experts.down_proj": 0.3,
    # gpt-oss: its router (with a bias), the experts' biases, the output projection's bias and the
    # attention sinks (one logit per head, the size of the scaled scores).
    "router.weight": 0.2, "router.bias": 0.5, "experts.gate_up_proj_bias": 0.5, "experts.down_proj_bias": 0.3,
    "o_proj.bias": 0.3, "self_attn.sinks": 1.0,
}
MIN_ROUTER_GAP = 1e-3  # wanted smallest k-th minus (k+1)-th router probability (see build)

# Gemma. Its RMSNorms scale by (1 + weight), and the weights are stored so: (mean, std) of the stored
# weight. Those of input_layernorm and pre_feedforward_layernorm are small (effective scale near 1),
# so a converter that forgets the +1 scales by ~0.1 instead. The rest are large for sharpness: the
# post-attention and post-feed-forward norms set how much each block adds to the residual stream,
# and at an effective 5 the blocks outgrow the embedding (scaled by sqrt(128) = 11.3), so the tied
# model does not just repeat its last token; the final norm's 6 gives logits a std of some 6.5, whose
# largest (20-30) the final soft-cap of 30 bends; q/k norms of about 2.5 make Gemma 3's attention
# sharp (scores of std ~6), as q/k std 0.25 does Gemma 2's (without its q/k norms), whose largest
# scores reach the attention soft-cap of 50. Embeddings: std 0.1 (see above).
GEMMA_NORM_INIT = {  # first suffix that matches
    "q_norm.weight": (1.5, 0.3), "k_norm.weight": (1.5, 0.3),
    "post_attention_layernorm.weight": (4.0, 0.1), "post_feedforward_layernorm.weight": (4.0, 0.1),
    "model.norm.weight": (5.0, 0.1),
    "norm.weight": (0.0, 0.1),  # input_layernorm, pre_feedforward_layernorm
}
GEMMA_INIT_STD = {**INIT_STD, "embed": 0.1, "q_proj.weight": 0.25, "k_proj.weight": 0.25}


def fused_qkv_sizes(config) -> tuple[int, int]:
    """Rows of q and of each of k and v in Phi-3's qkv_proj (q rows, then k, then v)."""
    head_dim = getattr(config, "head_dim", None) or config.hidden_size // config.num_attention_heads
    return config.num_attention_heads * head_dim, config.num_key_value_heads * head_dim


def fused_qkv_std(config, init_std: dict) -> torch.Tensor:
    """Per-row standard deviations of qkv_proj.weight: q_proj's, k_proj's, v_proj's."""
    q, kv = fused_qkv_sizes(config)
    return torch.cat([torch.full((q,), init_std["q_proj.weight"]), torch.full((kv,), init_std["k_proj.weight"]),
                      torch.full((kv,), init_std["v_proj.weight"])])


def init_weights(model: torch.nn.Module, seed: int, gemma: bool = False, extra_std: dict | None = None) -> None:
    """Sharp random weights, rounded to bfloat16 (kept in float32); gpt-oss's experts then rounded
    to MXFP4 values (see mxfp4_quantize)."""
    gen = torch.Generator().manual_seed(seed)
    init_std = {**(GEMMA_INIT_STD if gemma else INIT_STD), **(extra_std or {})}

    def randn(shape):
        return torch.randn(shape, generator=gen, dtype=torch.float32)

    with torch.no_grad():
        for name, p in model.named_parameters():
            if gemma and name.endswith("norm.weight"):
                mean, std = next(v for k, v in GEMMA_NORM_INIT.items() if name.endswith(k))
                value = mean + std * randn(p.shape)
            elif name.endswith(("q_norm.weight", "k_norm.weight")):
                value = 1 + 0.2 * randn(p.shape)
            elif name.endswith("norm.weight"):
                value = 1 + 0.1 * randn(p.shape)
            elif name.endswith(("embed_tokens.weight", "lm_head.weight")):
                value = init_std["embed"] * randn(p.shape)
            elif name.endswith("qkv_proj.weight"):
                value = fused_qkv_std(model.config, init_std)[:, None] * randn(p.shape)
            else:
                kind = name.rsplit(".", 2)[-2] + "." + name.rsplit(".", 1)[-1]  # e.g. q_proj.weight
                if kind not in init_std:
                    raise ValueError(f"no initializer for {name}")
                value = init_std[kind] * randn(p.shape)
            p.copy_(value.to(torch.bfloat16).to(torch.float32))
        if model.config.model_type == "gpt_oss":
            for layer in model.model.layers:
                for p in (layer.mlp.experts.gate_up_proj, layer.mlp.experts.down_proj):
                    rows = p.transpose(1, 2)  # by output, as the Hub stores them
                    p.copy_(mxfp4_dequantize(*mxfp4_quantize(rows)).transpose(1, 2))


# ----------------------------------------------------------------------------- MXFP4 (gpt-oss)
#
# As openai/gpt-oss-* store their experts: each output row in blocks of 32 values, every block an
# E8M0 exponent byte (value 2^(byte - 127)) and 16 bytes of E2M1 codes, element 2j in the low nibble
# of byte j and 2j + 1 in the high one (transformers' convert_moe_packed_tensors reads them so).

FP4_VALUES = torch.tensor([0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0, -0.0, -0.5, -1.0, -1.5, -2.0, -3.0, -4.0, -6.0])


def mxfp4_quantize(rows: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """rows [..., n] (n a multiple of 32) -> (blocks uint8 [..., n / 32, 16], scales uint8 [..., n / 32]):
    per block the smallest exponent that fits the largest magnitude in 6, each value to the nearest code."""
    x = rows.detach().float().reshape(*rows.shape[:-1], -1, 32)
    amax = x.abs().amax(dim=-1)
    e = torch.where(amax > 0, torch.ceil(torch.log2(amax / 6.0)), torch.full_like(amax, -127.0)).clamp(-127, 127)
    scaled = x / torch.pow(2.0, e)[..., None]
    magnitude = (scaled.abs()[..., None] - FP4_VALUES[:8]).abs().argmin(dim=-1)
    codes = (magnitude + 8 * (scaled < 0)).to(torch.uint8)
    blocks = codes[..., 0::2] | (codes[..., 1::2] << 4)
    return blocks.to(torch.uint8).contiguous(), (e + 127).to(torch.uint8).contiguous()


def mxfp4_dequantize(blocks: torch.Tensor, scales: torch.Tensor) -> torch.Tensor:
    codes = torch.stack([blocks & 0x0F, blocks >> 4], dim=-1).reshape(*blocks.shape[:-1], 32).long()
    values = FP4_VALUES[codes] * torch.pow(2.0, scales.float() - 127)[..., None]
    return values.reshape(*blocks.shape[:-2], -1)


def write_hub_mxfp4(path: pathlib.Path, model) -> None:
    """Rewrites the experts of a gpt_oss safetensors file as the Hub stores them:
    mlp.experts.{gate_up,down}_proj_{blocks,scales} (MXFP4 by output row) and the biases in bfloat16;
    the other tensors unchanged. The values are exactly the float32 reference's (init_weights rounded
    them to MXFP4)."""
    from safetensors.torch import save_file
    with safe_open(path, "pt") as f:
        saved = {k: f.get_tensor(k) for k in f.keys() if ".mlp.experts." not in k}
        metadata = f.metadata()
    for i, layer in enumerate(model.model.layers):
        experts = layer.mlp.experts
        prefix = f"model.layers.{i}.mlp.experts."
        for name, p in (("gate_up_proj", experts.gate_up_proj), ("down_proj", experts.down_proj)):
            rows = p.detach().transpose(1, 2)
            blocks, scales = mxfp4_quantize(rows)
            assert torch.equal(mxfp4_dequantize(blocks, scales), rows), name  # exact: already MXFP4 values
            saved[prefix + name + "_blocks"] = blocks
            saved[prefix + name + "_scales"] = scales
            saved[prefix + name + "_bias"] = getattr(experts, name + "_bias").detach().to(torch.bfloat16).contiguous()
    save_file(saved, str(path), metadata=metadata)


def mark_mxfp4_config(path: pathlib.Path) -> None:
    """config.json's quantization_config as openai/gpt-oss-20b has it."""
    data = json.loads(path.read_text())
    data["quantization_config"] = {"quant_method": "mxfp4", "modules_to_not_convert": [
        "model.layers.*.self_attn", "model.layers.*.mlp.router", "model.embed_tokens", "lm_head"]}
    write_pretty_json(path, data)


def with_config(model, config):
    """model's weights under another configuration (eager attention, float32)."""
    other = AutoModelForCausalLM.from_config(config, attn_implementation="eager", dtype=torch.float32).eval()
    other.load_state_dict(model.state_dict())
    return other


def all_logits(model, prompts: list[list[int]]) -> list[torch.Tensor]:
    with torch.no_grad():
        return [model(torch.tensor([p])).logits[0].float() for p in prompts]


def greedy(model, prompt: list[int]) -> tuple[list[int], list[float]]:
    ids, margins = list(prompt), []
    with torch.no_grad():
        for _ in range(N_GREEDY):
            last = model(torch.tensor([ids])).logits[0, -1].float()
            top = torch.topk(last, 2)
            ids.append(int(top.indices[0]))
            margins.append(float(top.values[0] - top.values[1]))
    return ids[len(prompt):], margins


def max_diff(a: list[torch.Tensor], b: list[torch.Tensor]) -> float:
    return max(float((x - y).abs().max()) for x, y in zip(a, b))


# ----------------------------------------------------------------------------- mixture of experts
#
# transformers 5 routes as both Qwen3MoeTopKRouter and MixtralTopKRouter do: router logits
# = linear(hidden, gate.weight); probabilities = softmax over all experts in float32; the top-k
# probabilities (torch.topk) renormalized to sum to 1 (Qwen3 MoE only when norm_topk_prob,
# always for Mixtral) weight the experts' outputs.

def moe_gates(model) -> list[torch.nn.Module]:
    return [layer.mlp.router if model.config.model_type == "gpt_oss" else layer.mlp.gate for layer in model.model.layers]


def router_gaps(model, seqs: list[list[int]]) -> tuple[float, float]:
    """Smallest k-th minus (k+1)-th largest router probability and the same of router logits,
    over every position of every sequence in every layer."""
    gates = moe_gates(model)
    k = gates[0].top_k
    logits = []
    hooks = [g.register_forward_hook(lambda _m, _i, out: logits.append(out[0].detach().float())) for g in gates]
    try:
        with torch.no_grad():
            for s in seqs:
                model(torch.tensor([s]))
    finally:
        for h in hooks:
            h.remove()
    x = torch.cat(logits)
    probs = torch.softmax(x, dim=-1).sort(dim=-1, descending=True).values
    x = x.sort(dim=-1, descending=True).values
    return float((probs[:, k - 1] - probs[:, k]).min()), float((x[:, k - 1] - x[:, k]).min())


def router_gap_per_position(model, seqs: list[list[int]]) -> list[float]:
    """For every position of every sequence (in order), the smallest k-th minus (k+1)-th
    largest router probability over the layers: where it is tiny, an engine's rounding may
    route that token to another expert."""
    gates = moe_gates(model)
    k = gates[0].top_k
    out = []
    for s in seqs:
        logits = []
        hooks = [g.register_forward_hook(lambda _m, _i, o: logits.append(o[0].detach().float())) for g in gates]
        try:
            with torch.no_grad():
                model(torch.tensor([s]))
        finally:
            for h in hooks:
                h.remove()
        probs = torch.softmax(torch.stack(logits), dim=-1).sort(dim=-1, descending=True).values  # [layers, pos, E]
        out.extend(float(f"{g:.3e}") for g in (probs[..., k - 1] - probs[..., k]).min(dim=0).values.tolist())
    return out


def variant_router_forward(mode: str):
    """A router forward: "top_k" as transformers' own; "top_k_plus_1" one expert more, renormalized;
    "uniform" the same top-k experts weighted 1/k; "unnormalized" the top-k softmax probabilities
    as they are."""
    def forward(self, hidden_states):
        hidden_states = hidden_states.reshape(-1, self.hidden_dim)
        router_logits = torch.nn.functional.linear(hidden_states, self.weight, getattr(self, "bias", None))
        probs = torch.nn.functional.softmax(router_logits, dtype=torch.float, dim=-1)
        values, indices = torch.topk(probs, self.top_k + (mode == "top_k_plus_1"), dim=-1)
        if mode == "uniform":
            values = torch.full_like(values, 1.0 / self.top_k)
        elif mode != "unnormalized":
            values /= values.sum(dim=-1, keepdim=True)
        return router_logits, values.to(router_logits.dtype), indices
    return forward


def variant_logits(model, prompts: list[list[int]], mode: str) -> list[torch.Tensor]:
    gates = moe_gates(model)
    for g in gates:
        g.forward = types.MethodType(variant_router_forward(mode), g)
    try:
        return all_logits(model, prompts)
    finally:
        for g in gates:
            del g.forward


# Names of the Hub checkpoints (Qwen/Qwen3-30B-A3B, mistralai/Mixtral-8x7B-v0.1): the MoE block,
# then the gate, up and down projections of an expert.
HUB_MOE_NAMES = {
    "qwen3_moe": ("mlp", "gate_proj", "up_proj", "down_proj"),
    "mixtral": ("block_sparse_moe", "w1", "w3", "w2"),
}


def hub_moe_tensors(model) -> dict[str, torch.Tensor]:
    """The router and expert tensors of model in bfloat16 under the names and shapes of the Hub
    checkpoints: <block>.gate.weight [n_expert, hidden], and per expert gate and up [ff, hidden],
    down [hidden, ff]. transformers 5 holds the experts fused: gate_up_proj [n_expert, 2 ff, hidden]
    whose rows [0, ff) are the gate projection and [ff, 2 ff) the up projection (its forward:
    gate, up = linear(x, gate_up_proj[e]).chunk(2, dim=-1)), and down_proj [n_expert, hidden, ff]."""
    block, gate, up, down = HUB_MOE_NAMES[model.config.model_type]
    out = {}
    for i, layer in enumerate(model.model.layers):
        experts = layer.mlp.experts
        n_expert, ff2, hidden = experts.gate_up_proj.shape
        ff = ff2 // 2
        assert experts.down_proj.shape == (n_expert, hidden, ff)
        prefix = f"model.layers.{i}.{block}"
        out[f"{prefix}.gate.weight"] = layer.mlp.gate.weight
        for e in range(n_expert):
            out[f"{prefix}.experts.{e}.{gate}.weight"] = experts.gate_up_proj[e, :ff]
            out[f"{prefix}.experts.{e}.{up}.weight"] = experts.gate_up_proj[e, ff:]
            out[f"{prefix}.experts.{e}.{down}.weight"] = experts.down_proj[e]
    return {k: v.detach().to(torch.bfloat16).contiguous() for k, v in out.items()}


def ensure_hub_moe_layout(path: pathlib.Path, model) -> bool:
    """Makes the safetensors file hold the MoE tensors exactly as hub_moe_tensors gives them (and
    the other tensors unchanged). transformers 5.24's save_pretrained already writes them so (it
    reverses the conversion it applies on load); a version that writes the fused 3-D tensors
    gets them replaced here. Returns whether the file was rewritten."""
    expected = hub_moe_tensors(model)
    with safe_open(path, "pt") as f:
        saved = {k: f.get_tensor(k) for k in f.keys()}
        metadata = f.metadata()
    other = {k for k in model.state_dict() if ".mlp." not in k}
    rewritten = set(saved) != other | set(expected)
    if rewritten:
        from safetensors.torch import save_file
        save_file({**{k: saved[k] for k in sorted(other)}, **expected}, str(path), metadata=metadata)
    with safe_open(path, "pt") as f:
        assert set(f.keys()) == other | set(expected), sorted(set(f.keys()) ^ (other | set(expected)))
        for k, v in expected.items():
            t = f.get_tensor(k)
            assert t.dtype == torch.bfloat16 and torch.equal(t, v), k
    return rewritten


GEMMA_SENSITIVITIES = ("softcap_sensitivity", "final_softcap_sensitivity", "sliding_window_sensitivity",
                       "rope_local_base_sensitivity", "norm_offset_sensitivity", "embed_scale_sensitivity")


def gemma_sensitivities(name: str, model, prompts: list[list[int]], logits: list[torch.Tensor]) -> dict:
    """layer_types and sliding_window, and the max abs logit change when a Gemma detail is dropped:
    softcap_sensitivity (gemma2: attn_logit_softcapping None), final_softcap_sensitivity (gemma2:
    final_logit_softcapping None), sliding_window_sensitivity (sliding_window 4096, so no layer
    slides), rope_local_base_sensitivity (gemma3: the sliding layers with the global layers' rope
    base), qk_norm_sensitivity (gemma3: q/k norms' stored weights 0, an effective scale of 1),
    norm_offset_sensitivity (every RMSNorm scaling by its stored weight instead of 1 + weight),
    embed_scale_sensitivity (embeddings not scaled by sqrt(hidden_size))."""
    config = model.config
    assert config.layer_types == GEMMA_LAYER_TYPES[name], config.layer_types
    out = {"layer_types": config.layer_types, "sliding_window": config.sliding_window}

    def with_config(**changes) -> float:
        changed = copy.deepcopy(config)
        for key, value in changes.items():
            setattr(changed, key, value)
        other = AutoModelForCausalLM.from_config(changed, attn_implementation="eager", dtype=torch.float32).eval()
        other.load_state_dict(model.state_dict())
        return round(max_diff(logits, all_logits(other, prompts)), 5)

    def with_weights(change) -> float:
        other = copy.deepcopy(model)
        with torch.no_grad():
            change(other)
        return round(max_diff(logits, all_logits(other, prompts)), 5)

    def norms_unshifted(m):
        for pname, p in m.named_parameters():
            if pname.endswith("norm.weight"):
                p.sub_(1.0)  # (1 + (w - 1)) = w

    def qk_norms_one(m):
        for pname, p in m.named_parameters():
            if pname.endswith(("q_norm.weight", "k_norm.weight")):
                p.fill_(0.0)

    def embed_unscaled(m):
        m.model.embed_tokens.embed_scale.fill_(1.0)

    if config.model_type == "gemma2":
        out["softcap_sensitivity"] = with_config(attn_logit_softcapping=None)
        out["final_softcap_sensitivity"] = with_config(final_logit_softcapping=None)
    out["sliding_window_sensitivity"] = with_config(sliding_window=4096)
    if config.model_type == "gemma3_text":
        rope = copy.deepcopy(config.rope_parameters)
        rope["sliding_attention"]["rope_theta"] = rope["full_attention"]["rope_theta"]
        out["rope_local_base_sensitivity"] = with_config(rope_parameters=rope)
        out["qk_norm_sensitivity"] = with_weights(qk_norms_one)
    out["norm_offset_sensitivity"] = with_weights(norms_unshifted)
    out["embed_scale_sensitivity"] = with_weights(embed_unscaled)
    return out


# ----------------------------------------------------------------------------- phi3
#
# transformers' Phi3Attention: qkv = qkv_proj(x); query = qkv[..., :heads * head_dim], key the next
# kv_heads * head_dim, value the rest. Phi3MLP: gate, up = gate_up_proj(x).chunk(2, dim=-1);
# down_proj(up * silu(gate)), so rows [0, ff) of gate_up_proj.weight are the gate projection.

def gate_up_swapped(model):
    """A copy of model whose gate_up_proj halves are swapped (the gate used as up and vice versa)."""
    other = copy.deepcopy(model)
    with torch.no_grad():
        for layer in other.model.layers:
            w = layer.mlp.gate_up_proj.weight
            w.copy_(torch.cat(w.chunk(2, dim=0)[::-1]))
    return other


def phi3_as_llama(model):
    """The same model as a LlamaForCausalLM: qkv_proj split into q_proj, k_proj, v_proj and gate_up_proj
    into gate_proj, up_proj in the order transformers' Phi-3 forward reads them (Phi-3 without LongRoPE,
    biases or sliding window is Llama with fused projections)."""
    config = model.config
    assert config.rope_parameters["rope_type"] == "default" and config.sliding_window is None
    assert config.rope_parameters.get("partial_rotary_factor", 1.0) == 1.0
    q, kv = fused_qkv_sizes(config)
    llama = LlamaConfig(
        vocab_size=config.vocab_size, hidden_size=config.hidden_size, num_hidden_layers=config.num_hidden_layers,
        max_position_embeddings=config.max_position_embeddings, hidden_act=config.hidden_act,
        num_attention_heads=config.num_attention_heads, head_dim=q // config.num_attention_heads,
        num_key_value_heads=config.num_key_value_heads, intermediate_size=config.intermediate_size,
        rms_norm_eps=config.rms_norm_eps, tie_word_embeddings=config.tie_word_embeddings,
        rope_parameters={"rope_type": "default", "rope_theta": config.rope_parameters["rope_theta"]})
    state = {}
    for k, v in model.state_dict().items():
        if k.endswith("qkv_proj.weight"):
            for part, w in zip(("q_proj", "k_proj", "v_proj"), v.split([q, kv, kv])):
                state[k.replace("qkv_proj", part)] = w
        elif k.endswith("gate_up_proj.weight"):
            for part, w in zip(("gate_proj", "up_proj"), v.chunk(2, dim=0)):
                state[k.replace("gate_up_proj", part)] = w
        else:
            state[k] = v
    other = AutoModelForCausalLM.from_config(llama, attn_implementation="eager", dtype=torch.float32).eval()
    other.load_state_dict(state, strict=True)
    return other


def check_phi3_safetensors(path: pathlib.Path, model) -> None:
    """save_pretrained wrote every tensor of model, the fused ones as such, unchanged."""
    config = model.config
    q, kv = fused_qkv_sizes(config)
    state = model.state_dict()
    with safe_open(path, "pt") as f:
        assert set(f.keys()) == set(state), sorted(set(f.keys()) ^ set(state))
        for k in f.keys():
            t = f.get_tensor(k)
            assert t.dtype == torch.bfloat16 and torch.equal(t, state[k].to(torch.bfloat16)), k
        for i in range(config.num_hidden_layers):
            prefix = f"model.layers.{i}"
            assert f.get_slice(f"{prefix}.self_attn.qkv_proj.weight").get_shape() == [q + 2 * kv, config.hidden_size]
            assert f.get_slice(f"{prefix}.mlp.gate_up_proj.weight").get_shape() == [2 * config.intermediate_size,
                                                                                   config.hidden_size]
        unfused = (".q_proj.weight", ".k_proj.weight", ".v_proj.weight", ".gate_proj.weight", ".up_proj.weight")
        assert not any(k.endswith(unfused) for k in f.keys()), sorted(f.keys())


def gemma_sliding_window_pattern(layer_types: list[str]) -> int:
    """The 4.x sliding_window_pattern (every pattern-th layer global) that gives layer_types."""
    pattern = layer_types.index("full_attention") + 1
    assert layer_types == ["full_attention" if (i + 1) % pattern == 0 else "sliding_attention"
                           for i in range(len(layer_types))], layer_types
    return pattern


def legacy_config(data: dict) -> dict:
    """transformers 5's config.json in the key names transformers 4.x wrote (as on the Hub)."""
    out = {}
    for key, value in data.items():
        if key == "rope_parameters" and "full_attention" in value:
            # gemma3_text: rope_theta (global layers), rope_local_base_freq (sliding layers), rope_scaling
            # (global layers; 4.x applied it to those only)
            full, local = dict(value["full_attention"]), dict(value["sliding_attention"])
            out["rope_theta"] = full.pop("rope_theta")
            out["rope_scaling"] = None if full.get("rope_type", "default") == "default" else full
            out["rope_local_base_freq"] = local.pop("rope_theta")
            assert local.get("rope_type", "default") == "default", local
        elif key == "rope_parameters":
            rope = dict(value)
            out["rope_theta"] = rope.pop("rope_theta")
            if "partial_rotary_factor" in rope:  # phi3: top-level in 4.x (microsoft/Phi-4-mini-instruct)
                out["partial_rotary_factor"] = rope.pop("partial_rotary_factor")
            out["rope_scaling"] = None if rope.get("rope_type", "default") == "default" else rope
        elif key == "dtype":
            out["torch_dtype"] = value
        elif key == "_sliding_window_pattern":
            continue  # what transformers 5 keeps of sliding_window_pattern (written below)
        elif key == "layer_types" and data.get("model_type") == "gemma3_text":
            out["sliding_window_pattern"] = gemma_sliding_window_pattern(value)  # as google/gemma-3-1b-it
        elif key == "layer_types" and data.get("model_type") == "gemma2":
            # 4.x configs have none: layers alternate, sliding first (what transformers 5 assumes without one)
            assert value == ["sliding_attention" if i % 2 == 0 else "full_attention" for i in range(len(value))]
        elif key == "layer_types":
            continue  # 4.x configs of these models have none; all layers are full attention
        elif key == "num_local_experts" and data.get("model_type") == "qwen3_moe":
            out["num_experts"] = value  # transformers 5 writes num_local_experts (an alias of num_experts)
        else:
            out[key] = value
    return dict(sorted(out.items()))


def write_pretty_json(path: pathlib.Path, data: dict) -> None:
    path.write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")


def build(name: str, spec: dict, tok: Tokenizer, texts: list[str], config_style: str) -> None:
    style = spec["tokenizer"]
    directory = OUT / name
    if directory.exists():
        shutil.rmtree(directory)
    directory.mkdir(parents=True)
    write_tokenizer_files(directory, style, tok)
    ids = {t: tok.token_to_id(t) for t in TOKENIZER_STYLES[style]["specials"]}
    config = spec["config"](ids)
    # AutoTokenizer picks its class by config.json's model_type too (see check_tokenizer).
    config.save_pretrained(directory)
    hf_tok = AutoTokenizer.from_pretrained(directory)
    write_tokenizer_ids(directory, style, tok, hf_tok, texts)

    prompt_texts = PROMPT_TEXTS + [hf_tok.apply_chat_template(PROMPT_CHAT, tokenize=False,
                                                              add_generation_prompt=True)]
    prompts = [hf_tok(t)["input_ids"] for t in PROMPT_TEXTS]
    # The rendered chat already starts with the BOS the template writes (as apply_chat_template does).
    prompts.append(hf_tok(prompt_texts[-1], add_special_tokens=False)["input_ids"])
    for text, p in zip(prompt_texts, prompts):
        assert 8 <= len(p) <= 40, (name, text, len(p))
        assert tok.encode(text, add_special_tokens=text is not prompt_texts[-1]).ids == p

    model = AutoModelForCausalLM.from_config(config, attn_implementation="eager", dtype=torch.float32,
                                             **({"experts_implementation": "eager"} if spec.get("moe") else {}))
    model.eval()
    # Of N_SEEDS seeds, the one whose closest greedy decision (smallest top-1 minus top-2
    # margin) is widest, so that greedy tokens survive other implementations' rounding.
    # MoE models want routing decisions that survive rounding too. Few seeds give every routing
    # decision over the prompts (some 300: k-th minus (k+1)-th router probability) a gap of
    # MIN_ROUTER_GAP, so the first N_MOE_CANDIDATES such seeds (of up to N_MOE_SEEDS) are tried
    # instead. (Failing that, the N_MOE_CANDIDATES with the widest gaps are tried, and the widest
    # gap wins.) The gaps over the greedy sequences are only reported: asking for them too
    # leaves seeds with poor greedy margins.
    moe = spec.get("moe", False)
    gemma = spec.get("gemma", False)
    gpt_oss = config.model_type == "gpt_oss"

    def init_weights(model, seed, gemma):  # noqa: F811 - the module's, with this model's std overrides
        globals()["init_weights"](model, seed, gemma, spec.get("init_std"))
    seeds = list(range(spec["seed"], spec["seed"] + N_SEEDS))
    if moe:
        gaps = []
        for seed in range(spec["seed"], spec["seed"] + N_MOE_SEEDS):
            init_weights(model, seed, gemma)
            gaps.append((router_gaps(model, prompts)[0], seed))
            if sum(g >= MIN_ROUTER_GAP for g, _ in gaps) == N_MOE_CANDIDATES:
                break
        seeds = ([s for g, s in gaps if g >= MIN_ROUTER_GAP] or
                 sorted(s for _, s in sorted(gaps)[-N_MOE_CANDIDATES:]))
        print(f"{name}: {len(gaps)} seeds, {sum(g >= MIN_ROUTER_GAP for g, _ in gaps)} with router gaps of "
              f"at least {MIN_ROUTER_GAP} over the prompts")
    best = None
    for seed in seeds:
        init_weights(model, seed, gemma)
        runs = [greedy(model, p) for p in prompts]
        closest = min(m for r in runs for m in r[1])
        key = (True, closest)
        if moe:
            prompt_gap = router_gaps(model, prompts)[0]
            gap = min(prompt_gap, router_gaps(model, [p + r[0][:-1] for p, r in zip(prompts, runs)])[0])
            key = (prompt_gap >= MIN_ROUTER_GAP, closest if prompt_gap >= MIN_ROUTER_GAP else prompt_gap)
            print(f"{name}: seed {seed}: greedy margin min {closest:.4f}, router gap min {prompt_gap:.2e} "
                  f"(prompts), {gap:.2e} (greedy sequences)")
        if best is None or key > best[1]:
            best = (seed, key)
    seed = best[0]
    init_weights(model, seed, gemma)
    logits = all_logits(model, prompts)
    runs = [greedy(model, p) for p in prompts]

    reference = {
        "seed": seed,
        "prompts": prompts,
        "prompt_texts": prompt_texts,
        "n_vocab": config.vocab_size,
        "logits_file": "logits.f32",
        "logits_positions": [len(p) for p in prompts],
        "greedy": [r[0] for r in runs],
        "greedy_margin": [[round(m, 5) for m in r[1]] for r in runs],
    }
    if name == "llama3":
        plain = copy.deepcopy(config)
        plain.rope_parameters = {"rope_type": "default", "rope_theta": config.rope_parameters["rope_theta"]}
        other = AutoModelForCausalLM.from_config(plain, attn_implementation="eager", dtype=torch.float32).eval()
        other.load_state_dict(model.state_dict())
        reference["rope_scaling_sensitivity"] = round(max_diff(logits, all_logits(other, prompts)), 5)
    if name == "mistral_swa":
        plain = copy.deepcopy(config)
        plain.sliding_window = None
        other = AutoModelForCausalLM.from_config(plain, attn_implementation="eager", dtype=torch.float32).eval()
        other.load_state_dict(model.state_dict())
        reference["sliding_window"] = config.sliding_window
        reference["sliding_window_sensitivity"] = round(max_diff(logits, all_logits(other, prompts)), 5)
    if name in ("qwen3", "qwen3moe", "olmo2"):
        other = copy.deepcopy(model)
        with torch.no_grad():
            for pname, p in other.named_parameters():
                if pname.endswith(("q_norm.weight", "k_norm.weight")):
                    p.fill_(1.0)
        reference["qk_norm_sensitivity"] = round(max_diff(logits, all_logits(other, prompts)), 5)
    if gemma:
        reference.update(gemma_sensitivities(name, model, prompts, logits))
    if name == "phi3_longrope":
        for key, change in (("long_factor_sensitivity", {"long_factor": LONGROPE_SHORT}),
                            ("attention_factor_sensitivity", {"attention_factor": 1.0})):
            plain = copy.deepcopy(config)
            plain.rope_parameters = {**config.rope_parameters, **change}
            other = AutoModelForCausalLM.from_config(plain, attn_implementation="eager", dtype=torch.float32).eval()
            other.load_state_dict(model.state_dict())
            reference[key] = round(max_diff(logits, all_logits(other, prompts)), 5)
    if name == "phi3_partial":
        whole = copy.deepcopy(config)
        whole.rope_parameters = {**config.rope_parameters, "partial_rotary_factor": 1.0}
        other = AutoModelForCausalLM.from_config(whole, attn_implementation="eager", dtype=torch.float32).eval()
        other.load_state_dict(model.state_dict())
        reference["partial_rotary_sensitivity"] = round(max_diff(logits, all_logits(other, prompts)), 5)
    if name == "qwen3_yarn":
        plain = copy.deepcopy(config)
        plain.rope_parameters = {"rope_type": "default", "rope_theta": config.rope_parameters["rope_theta"]}
        reference["yarn_sensitivity"] = round(max_diff(logits, all_logits(with_config(model, plain), prompts)), 5)
    if name == "smollm3":
        every = copy.deepcopy(config)
        every.no_rope_layers = [1] * config.num_hidden_layers
        reference["no_rope_layers"] = list(config.no_rope_layers)
        reference["nope_sensitivity"] = round(max_diff(logits, all_logits(with_config(model, every), prompts)), 5)
    if gpt_oss:
        changes = {"sliding_window_sensitivity": {"sliding_window": 4096},
                   "swiglu_limit_sensitivity": {"swiglu_limit": 1e9},
                   "yarn_sensitivity": {"rope_parameters": {"rope_type": "default", "rope_theta": 150000.0}},
                   "yarn_truncate_sensitivity": {"rope_parameters": {**config.rope_parameters, "truncate": True}}}
        for key, change in changes.items():
            plain = copy.deepcopy(config)
            for attr, value in change.items():
                setattr(plain, attr, value)
            reference[key] = round(max_diff(logits, all_logits(with_config(model, plain), prompts)), 5)
        # What llama.cpp computes: its YaRN rounds the ramp's ends (transformers' truncate true).
        rounded = copy.deepcopy(config)
        rounded.rope_parameters = {**config.rope_parameters, "truncate": True}
        rounded_model = with_config(model, rounded)
        rounded_logits = all_logits(rounded_model, prompts)
        rounded_runs = [greedy(rounded_model, p) for p in prompts]
        with open(directory / "logits_yarn_rounded.f32", "wb") as f:
            for rows in rounded_logits:
                f.write(np.ascontiguousarray(rows.numpy(), dtype="<f4").tobytes())
        reference["llamacpp_reference"] = {
            "why": "llama.cpp rounds YaRN's ramp ends outwards (truncate true), gpt-oss was trained without",
            "logits_file": "logits_yarn_rounded.f32",
            "greedy": [r[0] for r in rounded_runs],
            "greedy_margin": [[round(m, 5) for m in r[1]] for r in rounded_runs]}
        no_sinks = copy.deepcopy(model)
        with torch.no_grad():
            for layer in no_sinks.model.layers:
                layer.self_attn.sinks.fill_(-1e4)
        reference["sinks_sensitivity"] = round(max_diff(logits, all_logits(no_sinks, prompts)), 5)
    if name == "granite":
        for key in ("embedding_multiplier", "residual_multiplier", "attention_multiplier", "logits_scaling"):
            plain = copy.deepcopy(config)
            default = (config.hidden_size // config.num_attention_heads) ** -0.5 if key == "attention_multiplier" else 1.0
            setattr(plain, key, default)
            reference[key + "_sensitivity"] = round(max_diff(logits, all_logits(with_config(model, plain), prompts)), 5)
    if config.model_type == "phi3":
        # LlamaForCausalLM has no LongRoPE and rotates whole heads.
        if config.rope_parameters["rope_type"] == "default" and config.rope_parameters.get("partial_rotary_factor", 1.0) == 1.0:
            split_diff = max_diff(logits, all_logits(phi3_as_llama(model), prompts))
            assert split_diff <= 1e-4, split_diff
            print(f"{name}: as LlamaForCausalLM (fused tensors split q, k, v and gate, up): max logit diff {split_diff}")
        reference["fused_order_sensitivity"] = round(max_diff(logits, all_logits(gate_up_swapped(model), prompts)), 5)
    if moe:
        # variant_router_forward("top_k") is transformers' router to the bit (see the comment above it);
        # gpt-oss's takes the softmax of the top-k logits, the same weights rounded otherwise.
        assert max_diff(logits, variant_logits(model, prompts, "top_k")) <= (1e-4 if gpt_oss else 0.0)
        reference["n_expert"] = moe_gates(model)[0].num_experts
        reference["n_expert_used"] = moe_gates(model)[0].top_k
        gap, logit_gap = router_gaps(model, prompts)
        greedy_gap, greedy_logit_gap = router_gaps(model, [p + r[0][:-1] for p, r in zip(prompts, runs)])
        reference["min_router_gap"] = float(f"{gap:.3e}")
        reference["min_router_gap_greedy"] = float(f"{greedy_gap:.3e}")
        reference["min_router_logit_gap"] = float(f"{min(logit_gap, greedy_logit_gap):.3e}")
        reference["router_gap_per_position"] = router_gap_per_position(model, prompts)
        for key, mode in (("routing_sensitivity", "top_k_plus_1"), ("routing_weight_sensitivity", "uniform"),
                          ("routing_norm_sensitivity", "unnormalized")):
            reference[key] = round(max_diff(logits, variant_logits(model, prompts, mode)), 5)
    reference["transformers_version"] = transformers.__version__
    reference["torch_version"] = torch.__version__.split("+")[0]
    reference["config_style"] = config_style

    with open(directory / "logits.f32", "wb") as f:
        for rows in logits:
            f.write(np.ascontiguousarray(rows.numpy(), dtype="<f4").tobytes())
    lines = ["{"]
    for i, (key, value) in enumerate(reference.items()):
        sep = "," if i + 1 < len(reference) else ""
        if isinstance(value, list) and value and isinstance(value[0], list):
            inner = [json.dumps(v, separators=(",", ":")) for v in value]
            lines.append(f"  {json.dumps(key)}: [\n    " + ",\n    ".join(inner) + f"\n  ]{sep}")
        else:
            lines.append(f"  {json.dumps(key)}: {json.dumps(value, ensure_ascii=False)}{sep}")
    lines.append("}")
    (directory / "reference.json").write_text("\n".join(lines) + "\n", encoding="utf-8")

    model.generation_config = generation_config(style, ids)
    model.to(torch.bfloat16).save_pretrained(directory)
    (directory / "model.safetensors").chmod(0o644)  # written 0600
    if config.model_type == "phi3":
        check_phi3_safetensors(directory / "model.safetensors", model)
    if gpt_oss:
        write_hub_mxfp4(directory / "model.safetensors", model)
        mark_mxfp4_config(directory / "config.json")
    elif moe:
        rewritten = ensure_hub_moe_layout(directory / "model.safetensors", model)
        print(f"{name}: experts as the Hub has them, {'rewritten' if rewritten else 'as save_pretrained wrote them'}")
    if config_style == "legacy":
        path = directory / "config.json"
        write_pretty_json(path, legacy_config(json.loads(path.read_text())))

    # Load everything back through the Auto classes: same tokens, same logits.
    back_tok = AutoTokenizer.from_pretrained(directory)
    assert [back_tok(t)["input_ids"] for t in PROMPT_TEXTS] == prompts[:3]
    check_tokenizer(style, tok, back_tok, texts)
    assert back_tok.apply_chat_template(PROMPT_CHAT, tokenize=False, add_generation_prompt=True) == prompt_texts[-1]
    # gpt-oss's MXFP4 experts are dequantized on load (transformers' own reading of the Hub format).
    back = AutoModelForCausalLM.from_pretrained(directory, dtype=torch.float32, attn_implementation="eager",
                                                **({"experts_implementation": "eager"} if moe else {}),
                                                **({"quantization_config": transformers.Mxfp4Config(dequantize=True)}
                                                   if gpt_oss else {})).eval()
    if name == "llama3":
        assert back.config.rope_parameters["rope_type"] == "llama3", back.config.rope_parameters
    reload_diff = max_diff(logits, all_logits(back, prompts))
    assert reload_diff == 0.0, (name, reload_diff)
    # transformers' own greedy search (KV cache) gives the same tokens. EOS neither stops it
    # nor is suppressed (min_new_tokens would suppress it), as in greedy() above.
    with torch.no_grad():
        for p, (tokens, _) in zip(prompts, runs):
            out = back.generate(torch.tensor([p]), do_sample=False, max_new_tokens=N_GREEDY,
                                eos_token_id=None, pad_token_id=0)
            assert out[0, len(p):].tolist() == tokens, (name, p)
    margins = [m for r in runs for m in r[1]]
    flat = torch.cat(logits)
    print(f"{name}: seed {seed}, AutoTokenizer class {type(back_tok).__name__}, "
          f"prompts {[len(p) for p in prompts]}, logits std {float(flat.std()):.2f}, "
          f"greedy margin min {min(margins):.4f} median {float(np.median(margins)):.3f}, "
          f"distinct greedy tokens {[len(set(r[0])) for r in runs]}, reload diff {reload_diff}")
    for key in ("rope_scaling_sensitivity", "qk_norm_sensitivity", *GEMMA_SENSITIVITIES, "fused_order_sensitivity",
                "nope_sensitivity", "yarn_sensitivity", "yarn_truncate_sensitivity", "sinks_sensitivity",
                "swiglu_limit_sensitivity", "sliding_window_sensitivity", "embedding_multiplier_sensitivity", "residual_multiplier_sensitivity",
                "attention_multiplier_sensitivity", "logits_scaling_sensitivity",
                "long_factor_sensitivity", "attention_factor_sensitivity",
                "n_expert", "n_expert_used",
                "min_router_gap", "min_router_gap_greedy", "min_router_logit_gap", "routing_sensitivity",
                "routing_weight_sensitivity", "routing_norm_sensitivity"):
        if key in reference:
            print(f"{name}: {key} = {reference[key]}")
    with safe_open(directory / "model.safetensors", "pt") as f:
        names = list(f.keys())
        dtypes = {str(f.get_slice(n).get_dtype()) for n in names}
        layer0 = [(n, f.get_slice(n).get_shape()) for n in names if ".layers.0." in n or ".layers." not in n]
    print(f"{name}: {len(names)} tensors, dtypes {sorted(dtypes)}; layer 0 and the rest:")
    for n, shape in layer0:
        print(f"    {n} {shape}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", default="", help="comma-separated model names (default: all)")
    parser.add_argument("--config-style", choices=["per-model", "legacy", "v5"], default="per-model",
                        help="config.json key names for all models (default: each model's config_style)")
    args = parser.parse_args()
    torch.set_num_threads(1)
    torch.use_deterministic_algorithms(True)
    names = [n for n in args.only.split(",") if n] or list(MODELS)
    texts = read_corpus(CORPUS)
    tokenizers = {}
    for name in names:
        spec = MODELS[name]
        style = spec["tokenizer"]
        if style not in tokenizers:
            tokenizers[style] = train_tokenizer(style, texts)
            tok = tokenizers[style]
            print(f"tokenizer {style}: {tok.get_vocab_size()} tokens, specials "
                  f"{ {t: tok.token_to_id(t) for t in TOKENIZER_STYLES[style]['specials']} }")
        style_name = spec["config_style"] if args.config_style == "per-model" else args.config_style
        build(name, spec, tokenizers[style], texts, style_name)
    print(f"wrote {', '.join(str((OUT / n).relative_to(ROOT)) for n in names)}")


if __name__ == "__main__":
    sys.exit(main())
