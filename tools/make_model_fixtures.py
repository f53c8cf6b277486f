#!/usr/bin/env python3
"""Regenerates the golden fixtures for the real default model from llama.cpp.

For each prompt: the prompt's token ids (llama.cpp's tokenizer, BOS added, special tokens
parsed), 64 greedy tokens, and the top-64 first-step logits. llama.cpp runs through the
llama-cpp-python package with its defaults (F16 KV cache, no flash attention), 2 threads.

The prompt is evaluated one token at a time (--ubatch 1). llama.cpp's batched prompt
kernels move its own logits by up to ~1% against its token-at-a-time evaluation (top
logit 23.91 with a 512-token micro-batch, 24.14 with 1, 24.31 with flash attention, on the
first prompt); token at a time is the path closest to the exact arithmetic (a float64
numpy forward gives 24.12), so it is the reference we hold ourselves to. For the same reason weights are not
repacked at load (see plain_kernel_params below).

    python3 tools/make_model_fixtures.py [--model models/gemma-3-270m-q4_k_m.gguf]

Writes tests/fixtures/model/gemma3_greedy.json. Rerun it after changing the prompts.
"""
import argparse
import json
import os
import sys

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# Varied on purpose: English prose and facts, Chinese, Japanese, code, numbers, and
# Gemma-format chat conversations (the format our built-in template renders).
PROMPTS = [
    ("english_story", "Once upon a time, in a small village by the sea, there lived"),
    ("english_facts", "The three largest planets in the solar system are"),
    ("chinese", "人工智能是计算机科学的一个分支，它的目标是"),
    ("japanese", "日本の首都は東京です。東京は"),
    ("python_code", "def fibonacci(n):\n    \"\"\"Return the n-th Fibonacci number.\"\"\"\n"),
    ("c_code", "#include <stdio.h>\n\nint main(void) {\n    int sum = 0;\n    for (int i = 0; i < 10; i++) {\n"),
    ("numbers", "1, 2, 3, 5, 8, 13, 21,"),
    ("chat_single",
     "<start_of_turn>user\nWhat is the capital of France? Answer in one sentence.<end_of_turn>\n"
     "<start_of_turn>model\n"),
    ("chat_multi",
     "<start_of_turn>user\nYou are a helpful assistant.\n\nHi! My name is Ada.<end_of_turn>\n"
     "<start_of_turn>model\nHello Ada! How can I help you today?<end_of_turn>\n"
     "<start_of_turn>user\nWrite a haiku about autumn leaves.<end_of_turn>\n"
     "<start_of_turn>model\n"),
    ("long_context",
     "The history of computing spans centuries. Early mechanical calculators, such as the "
     "abacus and later Pascal's adding machine, helped merchants and scientists with arithmetic. "
     "In the nineteenth century Charles Babbage designed the Analytical Engine, and Ada Lovelace "
     "wrote what many consider the first program. The twentieth century brought electronic "
     "computers: ENIAC filled a room, used vacuum tubes, and was programmed by rewiring. "
     "Transistors and then integrated circuits made machines smaller and faster. Today,"),
]

N_GENERATE = 64
N_TOP = 64


def last_logits(llm):
    # With logits_all off llama.cpp computes only the last position's logits; read them
    # straight from the context (Llama.scores is not filled in that mode).
    n_vocab = llm.n_vocab()
    return np.ctypeslib.as_array(llm._ctx.get_logits(), shape=(n_vocab,)).astype(np.float32).copy()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--model", default=os.path.join(ROOT, "models", "gemma-3-270m-q4_k_m.gguf"))
    parser.add_argument("--ubatch", type=int, default=1,
                        help="llama.cpp micro-batch size for the prompt (default 1: token at a time)")
    parser.add_argument("--out", default=os.path.join(ROOT, "tests", "fixtures", "model", "gemma3_greedy.json"))
    args = parser.parse_args()

    import llama_cpp
    from llama_cpp import __version__ as llama_cpp_version
    import llama_cpp.llama as llama_module

    # Plain ggml kernels: no load-time repacking of weights into interleaved layouts
    # (use_extra_bufts off). The repacked kernels round differently and move logits by up
    # to 0.3 on this model; the plain ones are the closest to exact arithmetic.
    default_params = llama_cpp.llama_model_default_params

    def plain_kernel_params():
        params = default_params()
        params.use_extra_bufts = False
        return params

    llama_module.llama_cpp.llama_model_default_params = plain_kernel_params
    Llama = llama_module.Llama

    llm = Llama(model_path=args.model, n_ctx=1024, n_batch=args.ubatch, n_ubatch=args.ubatch, n_threads=2,
                logits_all=False, flash_attn=False, verbose=False)
    cases = []
    for name, prompt in PROMPTS:
        tokens = llm.tokenize(prompt.encode("utf-8"), add_bos=True, special=True)
        llm.reset()
        llm.eval(tokens)
        first_logits = last_logits(llm)
        top = np.argsort(-first_logits, kind="stable")[:N_TOP]
        generated = []
        margins = []  # llama.cpp's own top-1 minus top-2 logit at each step: near-ties flip
        logits = first_logits
        for _ in range(N_GENERATE):
            token = int(np.argmax(logits))
            second = np.partition(logits, -2)[-2]
            margins.append(float(logits[token] - second))
            generated.append(token)
            llm.eval([token])
            logits = last_logits(llm)
        text = llm.detokenize(generated).decode("utf-8", errors="replace")
        cases.append({
            "name": name,
            "prompt": prompt,
            "prompt_tokens": [int(t) for t in tokens],
            "generated_tokens": generated,
            "generated_text": text,
            "step_margins": margins,
            "first_logits_top_ids": [int(i) for i in top],
            "first_logits_top_values": [float(first_logits[i]) for i in top],
        })
        print(f"{name}: {len(tokens)} prompt tokens -> {text[:60]!r}", file=sys.stderr)

    fixture = {
        "generator": "tools/make_model_fixtures.py",
        "oracle": (f"llama.cpp via llama-cpp-python {llama_cpp_version}, F16 KV, flash_attn off, "
                   f"prompt micro-batch {args.ubatch}, no weight repacking, greedy"),
        "model": os.path.basename(args.model),
        "n_generate": N_GENERATE,
        "cases": cases,
    }
    with open(args.out, "w", encoding="utf-8") as f:
        json.dump(fixture, f, ensure_ascii=False, indent=1)
    print(f"wrote {args.out}", file=sys.stderr)


if __name__ == "__main__":
    main()
