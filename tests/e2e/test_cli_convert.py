"""`tokenmill convert` as a user runs it: a Hugging Face directory to GGUF, then `run`."""
import json
import re
import shutil
import sys

import pytest

from conftest import ROOT, run

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


def test_converted_files_give_transformers_tokens_in_llama_cpp(tokenmill):
    """Each fixture converted to F32 loads in llama.cpp (llama-cpp-python) with
    transformers' logits (1e-4 relative), greedy tokens and token ids."""
    pytest.importorskip("llama_cpp")
    result = run([sys.executable, str(ROOT / "tools/check_convert_llamacpp.py"), "--bin", str(tokenmill)], timeout=600)
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.count(" OK ") >= 9, result.stdout
