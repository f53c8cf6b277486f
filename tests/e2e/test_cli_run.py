"""`tokenmill run` and `tokenmill info` as a user runs them."""
import json
import os
import re
import subprocess

import pytest

from conftest import ROOT, run

GREEDY = ["--temp", "0"]


def test_info_prints_metadata_and_tensor_table(tokenmill, default_model):
    result = run([tokenmill, "info", default_model])
    assert result.returncode == 0, result.stderr
    assert "general.architecture" in result.stdout and '"gemma3"' in result.stdout
    assert re.search(r"token_embd\.weight\s+q8_0\s+640 x 262144\s+\d+", result.stdout)
    assert "tensors (236)" in result.stdout


def test_greedy_run_is_deterministic_and_reports_timing(tokenmill, default_model):
    args = [tokenmill, "run", "-m", default_model, "-p", "The three largest planets are", "-n", "12", *GREEDY]
    first = run(args)
    second = run(args)
    assert first.returncode == 0, first.stderr
    assert first.stdout == second.stdout
    assert len(first.stdout.strip()) > 0
    stats = first.stderr
    for field in ("prompt tokens:", "time to first token:", "prompt:", "generation:"):
        assert field in stats, stats


def test_greedy_run_matches_the_model_forward_fixture(tokenmill, default_model):
    # The first tokens of the llama.cpp fixture, before any near-tie, must come out of the
    # CLI too: tokenizer, forward pass and detokenizer together.
    fixture = json.loads((ROOT / "tests/fixtures/model/gemma3_greedy.json").read_text())
    def n_before_near_tie(case):
        return next((i for i, m in enumerate(case["step_margins"]) if m < 0.35), len(case["step_margins"]))

    case = max(fixture["cases"], key=n_before_near_tie)
    n_safe = min(n_before_near_tie(case), 24)
    assert n_safe >= 4
    result = run([tokenmill, "run", "-m", default_model, "-p", case["prompt"], "-n", str(n_safe),
                  "--show-prompt-tokens", *GREEDY])
    assert result.returncode == 0, result.stderr
    prompt_ids = [int(t) for t in re.search(r"prompt tokens:([ \d]+)\n", result.stderr).group(1).split()]
    assert prompt_ids == case["prompt_tokens"]
    # The fixture's text is the detokenized 64 tokens; ours is a prefix of it.
    assert case["generated_text"].startswith(result.stdout.rstrip("\n")), (result.stdout, case["generated_text"])


def test_seeded_sampling_is_reproducible(tokenmill, default_model):
    base = [tokenmill, "run", "-m", default_model, "-p", "Once upon a time", "-n", "16", "--temp", "1.0"]
    a = run(base + ["--seed", "7"])
    b = run(base + ["--seed", "7"])
    c = run(base + ["--seed", "8"])
    assert a.returncode == b.returncode == c.returncode == 0
    assert a.stdout == b.stdout
    assert a.stdout != c.stdout


def test_chat_mode_uses_the_template(tokenmill, default_model):
    result = run([tokenmill, "run", "-m", default_model, "-p", "Hi!", "--chat", "-s", "Be brief.", "-n", "4",
                  "--show-prompt-tokens", *GREEDY])
    assert result.returncode == 0, result.stderr
    ids = [int(t) for t in re.search(r"prompt tokens:([ \d]+)\n", result.stderr).group(1).split()]
    # <bos> <start_of_turn> user ... <end_of_turn> ... <start_of_turn> model \n
    assert ids[0] == 2 and ids[1] == 105
    assert ids.count(105) == 2 and ids.count(106) == 1


def test_bad_sampling_values_are_rejected(tokenmill, default_model):
    result = run([tokenmill, "run", "-m", default_model, "-p", "x", "--top-p", "1.5"])
    assert result.returncode != 0
    assert "top_p" in result.stderr


def test_missing_prompt_and_unknown_flag(tokenmill, default_model):
    result = run([tokenmill, "run", "-m", default_model])
    assert result.returncode == 1 and "no prompt" in result.stderr
    result = run([tokenmill, "run", "--no-such-flag"])
    assert result.returncode != 0


def test_a_kv_cache_larger_than_memory_is_refused_before_it_is_built(tokenmill, default_model):
    # bench's cache for 256 sequences of 65,544 positions is ~290 GiB; the commands commit
    # their cache up front, so they refuse it at once, naming the flags that size it.
    result = run([tokenmill, "bench", "-m", default_model, "-p", "0", "-n", "8", "-d", "65536", "--parallel", "256"])
    assert result.returncode == 1
    assert "KV cache needs" in result.stderr and "--parallel" in result.stderr, result.stderr


def test_bench_roofline_reports_bandwidth_and_the_threads_round_trip(tokenmill, default_model):
    result = run([tokenmill, "bench", "-m", default_model, "-p", "0", "-n", "4", "-r", "1", "-t", "2", "--roofline",
                  "--json"])
    assert result.returncode == 0, result.stderr
    [row] = json.loads(result.stdout)
    assert row["test"] == "tg4" and row["avg_ts"] > 0
    assert row["read_bandwidth_gbs"] > 0 and row["roofline_ts"] > 0
    # A cache line between two cores takes tens to hundreds of nanoseconds, never zero or
    # a millisecond.
    assert 1 < row["thread_round_trip_ns"] < 100_000, row


def test_bench_tune_prints_the_choice_and_the_profile_reads_weights_in_gb_per_s(tokenmill, default_model, tmp_path):
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path)}
    result = subprocess.run([tokenmill, "bench", "-m", default_model, "-p", "0", "-n", "2", "-r", "1", "-t", "2",
                             "--tune"], capture_output=True, text=True, timeout=300, env=env)
    assert result.returncode == 0, result.stderr
    line = next(l for l in result.stdout.splitlines() if l.startswith("kernel tuning: "))
    # Timed where the model has matrices whose kernels the variants change (then cached
    # under the user's cache directory), else said so.
    if "(timed" in line:
        assert "prefetch_weights=1" in line and "prefetch_weights=0" in line and " ms" in line, line
        assert "decode_variant=none" in line, line
        cache = tmp_path / "tokenmill" / "kernel-tuning.tsv"
        assert cache.read_text().count("\t") == 1, cache.read_text()
    else:
        assert "(nothing to tune)" in line, line
    off = subprocess.run([tokenmill, "bench", "-m", default_model, "-p", "0", "-n", "2", "-r", "1", "-t", "2",
                          "--tune", "--profile", "--json"], capture_output=True, text=True, timeout=300,
                         env={**env, "TOKENMILL_TUNE": "off"})
    assert off.returncode == 0, off.stderr
    [row] = json.loads(off.stdout)
    assert row["kernel_tuning"] == "prefetch_weights=1 decode_variant=none"  # the default
    matmuls = [op for op in row["profile"] if op["op"].startswith("matmul ")]
    assert matmuls and all(op["weight_gbs"] > 0 for op in matmuls), row["profile"]


@pytest.mark.parametrize("sampling", [["--temp", "0"], ["--seed", "42"]])
def test_speculative_run_gives_the_plain_text(tokenmill, default_model, sampling):
    """run --spec ngram (the default) goes through the serving engine with n-gram drafts;
    greedy and seeded output equal --spec off's single-sequence generator, token for token."""
    prompt = "Repeat exactly: the quick brown fox jumps over the lazy dog. The quick brown fox jumps over the lazy dog."
    base = [tokenmill, "run", "-m", default_model, "-p", prompt, "-n", "48", *sampling]
    plain = run(base + ["--spec", "off"])
    spec = run(base + ["--spec", "ngram"])
    assert plain.returncode == 0 and spec.returncode == 0, spec.stderr
    assert spec.stdout == plain.stdout
    assert "speculation:" in spec.stderr
    assert "speculation:" not in plain.stderr
