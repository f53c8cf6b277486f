#!/usr/bin/env python3
"""Writes the seed corpora of the fuzz targets to tests/fuzz/corpus/<target>/.

Seeds are small valid inputs (or near-valid ones) that show the fuzzer each input's
structure: tiny but complete GGUF models (Llama and Gemma 3 shaped, with a vocabulary
and a chat template), chat templates from tests/fixtures/chat_templates with their
messages, JSON schemas with text to feed them, OpenAI and Ollama request bodies, and raw
HTTP requests. Each target's input layout is described at the top of its
tests/fuzz/<target>_fuzzer.cc. Deterministic; stale seeds are deleted.

Usage: python3 tools/make_fuzz_corpus.py
"""

from __future__ import annotations

import json
import struct
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from make_corrupt_gguf import (ARR, F32, I32, STR, T_F32, U32, kv, kv_str, kv_u32,  # noqa: E402
                               string, tensor_info, u32, u64, with_tensors)

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "tests" / "fuzz" / "corpus"


def kv_f32(key: str, v: float) -> bytes:
    return kv(key, F32, struct.pack("<f", v))


def kv_array(key: str, element_type: int, payloads: list[bytes]) -> bytes:
    return kv(key, ARR, u32(element_type) + u64(len(payloads)) + b"".join(payloads))


GEMMA_STYLE_TEMPLATE = ("{{ bos_token }}{% for m in messages %}<start_of_turn>{{ m['role'] }}\n{{ m['content'] | trim }}"
                        "<end_of_turn>\n{% endfor %}{% if add_generation_prompt %}<start_of_turn>model\n{% endif %}")


def with_f32_tensors(kvs: list[bytes], shapes: list[tuple[str, list[int]]]) -> bytes:
    """A file of these tensors, f32: vectors of ones (norms), matrices of small values."""
    infos, data = [], b""
    for name, dims in shapes:
        count = 1
        for d in dims:
            count *= d
        infos.append(tensor_info(name, dims, T_F32, len(data)))
        data += struct.pack(f"<{count}f", *[1.0 if len(dims) == 1 else 0.01 * (i % 7) for i in range(count)])
        data += b"\0" * (-len(data) % 32)
    return with_tensors(kvs, infos, data)


def tiny_model(arch: str, chat_template: str = GEMMA_STYLE_TEMPLATE) -> bytes:
    """A one-layer model of `arch` with F32 weights and an 11-token SentencePiece vocabulary.
    Also used by tests/e2e to make models with hostile chat templates."""
    n_embd, n_ff, n_heads, n_kv_heads, head_dim = 8, 16, 2, 1, 4
    tokens = ["<unk>", "<s>", "</s>", "<start_of_turn>", "<end_of_turn>", "\u2581", "a", "b", "\u2581a", "ab",
              "<0x41>"]
    types = [2, 3, 3, 3, 3, 1, 1, 1, 1, 1, 6]  # unknown, control, normal, byte
    kvs = [
        kv_str("general.architecture", arch),
        kv_str("general.name", "fuzz-seed-" + arch),
        kv_u32(f"{arch}.context_length", 64),
        kv_u32(f"{arch}.embedding_length", n_embd),
        kv_u32(f"{arch}.block_count", 1),
        kv_u32(f"{arch}.feed_forward_length", n_ff),
        kv_u32(f"{arch}.attention.head_count", n_heads),
        kv_u32(f"{arch}.attention.head_count_kv", n_kv_heads),
        kv_u32(f"{arch}.attention.key_length", head_dim),
        kv_u32(f"{arch}.attention.value_length", head_dim),
        kv_f32(f"{arch}.attention.layer_norm_rms_epsilon", 1e-6),
        kv_f32(f"{arch}.rope.freq_base", 10000.0),
        kv_str("tokenizer.ggml.model", "llama"),
        kv_array("tokenizer.ggml.tokens", STR, [string(t) for t in tokens]),
        kv_array("tokenizer.ggml.scores", F32, [struct.pack("<f", -float(i)) for i in range(len(tokens))]),
        kv_array("tokenizer.ggml.token_type", I32, [struct.pack("<i", t) for t in types]),
        kv_u32("tokenizer.ggml.bos_token_id", 1),
        kv_u32("tokenizer.ggml.eos_token_id", 2),
        kv_str("tokenizer.chat_template", chat_template),
    ]
    q_dim, kv_dim = n_heads * head_dim, n_kv_heads * head_dim
    shapes: list[tuple[str, list[int]]] = [("token_embd.weight", [n_embd, len(tokens)])]
    p = "blk.0."
    shapes += [(p + "attn_norm.weight", [n_embd]), (p + "attn_q.weight", [n_embd, q_dim]),
               (p + "attn_k.weight", [n_embd, kv_dim]), (p + "attn_v.weight", [n_embd, kv_dim])]
    if arch == "gemma3":
        shapes += [(p + "attn_q_norm.weight", [head_dim]), (p + "attn_k_norm.weight", [head_dim])]
    shapes += [(p + "attn_output.weight", [q_dim, n_embd])]
    if arch == "gemma3":
        shapes += [(p + "post_attention_norm.weight", [n_embd])]
    shapes += [(p + "ffn_norm.weight", [n_embd]), (p + "ffn_gate.weight", [n_embd, n_ff]),
               (p + "ffn_up.weight", [n_embd, n_ff]), (p + "ffn_down.weight", [n_ff, n_embd])]
    if arch == "gemma3":
        shapes += [(p + "post_ffw_norm.weight", [n_embd])]
    shapes += [("output_norm.weight", [n_embd])]
    return with_f32_tensors(kvs, shapes)


def tiny_bert() -> bytes:
    """A one-layer BERT encoder (f32) with a WordPiece vocabulary, as tools/convert_bert_gguf.py writes one."""
    n_embd, n_ff, n_heads, n_positions = 8, 16, 2, 16
    tokens = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "\u2581a", "\u2581b", "b", "\u2581!", "\u2581hello", "llo"]
    types = [3, 3, 3, 3, 1, 1, 1, 1, 1, 1]
    kvs = [
        kv_str("general.architecture", "bert"),
        kv_u32("bert.context_length", n_positions),
        kv_u32("bert.embedding_length", n_embd),
        kv_u32("bert.feed_forward_length", n_ff),
        kv_u32("bert.block_count", 1),
        kv_u32("bert.attention.head_count", n_heads),
        kv_f32("bert.attention.layer_norm_epsilon", 1e-12),
        kv_u32("bert.pooling_type", 1),
        kv_str("tokenizer.ggml.model", "bert"),
        kv_array("tokenizer.ggml.tokens", STR, [string(t) for t in tokens]),
        kv_array("tokenizer.ggml.token_type", I32, [struct.pack("<i", t) for t in types]),
        kv_u32("tokenizer.ggml.bos_token_id", 2),
        kv_u32("tokenizer.ggml.eos_token_id", 3),
        kv_u32("tokenizer.ggml.unknown_token_id", 1),
    ]
    shapes = [("token_embd.weight", [n_embd, len(tokens)]), ("token_types.weight", [n_embd, 2]),
              ("position_embd.weight", [n_embd, n_positions]), ("token_embd_norm.weight", [n_embd]),
              ("token_embd_norm.bias", [n_embd])]
    for name, dims in (("attn_q", [n_embd, n_embd]), ("attn_k", [n_embd, n_embd]), ("attn_v", [n_embd, n_embd]),
                       ("attn_output", [n_embd, n_embd]), ("ffn_up", [n_embd, n_ff]), ("ffn_down", [n_ff, n_embd])):
        shapes += [(f"blk.0.{name}.weight", dims), (f"blk.0.{name}.bias", [dims[1]])]
    for name in ("attn_output_norm", "layer_output_norm"):
        shapes += [(f"blk.0.{name}.weight", [n_embd]), (f"blk.0.{name}.bias", [n_embd])]
    return with_f32_tensors(kvs, shapes)


def chat_template_seeds() -> dict[str, bytes]:
    seeds = {}
    for path in sorted((ROOT / "tests" / "fixtures" / "chat_templates").glob("*.json")):
        fixture = json.loads(path.read_text())
        case = fixture["cases"][0]
        variables = {"messages": case["messages"], "add_generation_prompt": True,
                     "bos_token": fixture.get("bos_token", ""), "eos_token": fixture.get("eos_token", "")}
        seeds[path.stem] = fixture["template"].encode() + b"\0" + json.dumps(variables).encode()
    seeds["plain_messages"] = b"{% for m in messages %}[{{ m.role }}] {{ m.content }}\n{% endfor %}\0hello\0hi there"
    seeds["literals"] = b"{{ 12 + 3.5e2 }}{{ 'a' * 3 }}{{ [1, 2][1] }}{{ {'k': 1}.k }}{{ range(3) | list }}\0"
    return seeds


def json_schema_seeds() -> dict[str, bytes]:
    person = {"type": "object", "properties": {"name": {"type": "string"}, "age": {"type": "integer"},
                                               "tags": {"type": "array", "items": {"type": "string"}, "maxItems": 3}},
              "required": ["name", "age"], "additionalProperties": False}
    choice = {"$defs": {"c": {"enum": ["red", "green", 3, None]}}, "type": "object",
              "properties": {"c": {"$ref": "#/$defs/c"}, "n": {"anyOf": [{"type": "number"}, {"type": "null"}]}}}
    return {
        "person": json.dumps(person).encode() + b'\0{"name": "Ann \\u00e9", "age": 31, "tags": ["a"]}',
        "choice": json.dumps(choice).encode() + b'\0{"c": "green", "n": -1.5e3}',
        "array": b'{"type": "array", "items": {"type": "boolean"}, "minItems": 1}\0[true, false]',
        "json_mode": b'{}\0{"a": [1, {"b": null}], "c": "\\n"}',
    }


def api_request_seeds() -> dict[str, bytes]:
    chat = {"model": "default", "messages": [{"role": "system", "content": "Be brief."},
                                             {"role": "user", "content": "Hi"}],
            "max_tokens": 8, "temperature": 0.7, "top_p": 0.9, "stop": ["\n"], "n": 2, "seed": 1,
            "logprobs": True, "top_logprobs": 2, "stream": True, "stream_options": {"include_usage": True},
            "response_format": {"type": "json_schema", "json_schema": {"name": "x", "schema": {
                "type": "object", "properties": {"a": {"type": "integer"}}}}},
            "prediction": {"type": "content", "content": "Hello"}}
    completion = {"model": "default", "prompt": ["Once upon", "a time"], "max_tokens": 4, "echo": True,
                  "presence_penalty": 0.5, "frequency_penalty": 0.1, "logit_bias": {}}
    ollama_chat = {"model": "default", "messages": [{"role": "user", "content": "Hi"}], "stream": False,
                   "format": "json", "options": {"num_predict": 5, "temperature": 0, "num_ctx": 512, "stop": ["x"]}}
    weather = {"type": "function", "function": {"name": "get_weather", "description": "Weather", "parameters": {
        "type": "object", "properties": {"city": {"type": "string", "maxLength": 20}}, "required": ["city"]}}}
    tool_chat = {"model": "default", "tools": [weather], "tool_choice": "required", "parallel_tool_calls": False,
                 "logit_bias": {"100": -100, "7": 2.5},
                 "messages": [{"role": "user", "content": "Weather?"},
                              {"role": "assistant", "content": None, "tool_calls": [
                                  {"id": "call_1", "type": "function",
                                   "function": {"name": "get_weather", "arguments": "{\"city\": \"Oslo\"}"}}]},
                              {"role": "tool", "tool_call_id": "call_1", "content": "12 C"}]}
    ollama_tools = {"model": "default", "tools": [weather], "stream": False,
                    "messages": [{"role": "user", "content": "Weather?"},
                                 {"role": "assistant", "content": "", "tool_calls": [
                                     {"function": {"name": "get_weather", "arguments": {"city": "Oslo"}}}]},
                                 {"role": "tool", "content": "12 C"}]}
    ollama_generate = {"model": "default", "prompt": "Why is the sky blue?", "system": "Short.", "raw": False,
                       "context": [2, 100, 200], "options": {"seed": 7, "top_k": 10}}
    return {"chat": b"\0" + json.dumps(chat).encode(), "completion": b"\1" + json.dumps(completion).encode(),
            "ollama_chat": b"\2" + json.dumps(ollama_chat).encode(),
            "ollama_generate": b"\3" + json.dumps(ollama_generate).encode(),
            "tool_chat": b"\0" + json.dumps(tool_chat).encode(), "ollama_tools": b"\2" + json.dumps(ollama_tools).encode()}


def http_request_seeds() -> dict[str, bytes]:
    body = b'{"model": "default", "prompt": "x"}'
    return {
        "post": b"POST /v1/completions?x=1 HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                b"Content-Length: " + str(len(body)).encode() + b"\r\n\r\n" + body,
        "chunked": b"POST /api/chat HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n"
                   b"5\r\nhello\r\n0\r\n\r\n",
        "get_1_0": b"GET /metrics HTTP/1.0\r\nConnection: keep-alive\r\n\r\n",
        "expect": b"POST /v1/chat/completions HTTP/1.1\r\nExpect: 100-continue\r\nContent-Length: 2\r\n\r\n{}",
    }


def tokenizer_seeds() -> dict[str, bytes]:
    return {
        "wordpiece": b"\x12Unbelievably, Caf\xc3\xa9 \xe4\xb8\xad\xe6\x96\x87 [SEP] tabs\tand\x01control",
        "spm_plain": b"\0Hello, world! How are you?",
        "spm_special": b"\6<start_of_turn>user\nhi<end_of_turn>",
        "bpe_code": b"\1def f(x):\n    return x ** 2  # 42",
        "bpe_special": b"\7<|begin_of_text|><|start_header_id|>user<|end_header_id|>\n\n\xe4\xbd\xa0\xe5\xa5\xbd",
        "utf8_mix": b"\x08caf\xc3\xa9 \xf0\x9f\x98\x80 \xe2\x80\x94 \xff\xfe",
    }


def main() -> None:
    corpora = {
        "gguf": {"tiny_llama": tiny_model("llama"), "tiny_gemma3": tiny_model("gemma3"), "tiny_bert": tiny_bert()},
        "chat_template": chat_template_seeds(),
        "json_schema": json_schema_seeds(),
        "api_request": api_request_seeds(),
        "http_request": http_request_seeds(),
        "tokenizer": tokenizer_seeds(),
    }
    for target, seeds in corpora.items():
        folder = OUT / target
        folder.mkdir(parents=True, exist_ok=True)
        wanted = {f"seed_{name}" for name in seeds}
        for stale in folder.glob("seed_*"):
            if stale.name not in wanted:
                stale.unlink()
        for name, data in seeds.items():
            (folder / f"seed_{name}").write_bytes(data)
    print(f"wrote {sum(len(s) for s in corpora.values())} seeds under {OUT.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
