"""`tokenmill quantize`, `imatrix` and `perplexity` on the default model, as a user runs them."""
import json
import math
import pathlib
import re
import sys

import pytest

from conftest import ROOT, run

TEXT_EN = ROOT / "tests/fixtures/text/eval_en.txt"
CALIB = ROOT / "tests/fixtures/text/calib.txt"
SMALL = ["--ctx", "64", "--chunks", "2", "-t", "2"]


def tensor_types(tokenmill, path):
    info = run([tokenmill, "info", str(path)])
    assert info.returncode == 0, info.stderr
    return dict(re.findall(r"^\s+(\S+\.weight)\s+(\S+)\s", info.stdout, re.M))


@pytest.fixture(scope="module")
def q8_model(tokenmill, default_model, tmp_path_factory):
    out = tmp_path_factory.mktemp("quant") / "q8_0.gguf"
    result = run([tokenmill, "quantize", default_model, str(out), "Q8_0", "-t", "2"])
    assert result.returncode == 0, result.stderr
    assert "requantizing loses quality" in result.stderr  # the source is Q4_K_M
    return out


def test_q8_0_from_the_default_model_loads_and_generates(tokenmill, q8_model):
    types = tensor_types(tokenmill, q8_model)
    assert types["blk.0.attn_q.weight"] == "q8_0"
    assert types["token_embd.weight"] == "q8_0"
    assert types["blk.0.attn_norm.weight"] == "f32"
    info = run([tokenmill, "info", str(q8_model)]).stdout
    assert re.search(r"general\.file_type\s+u32\s+7\b", info)
    assert '"Q8_0"' in info and "tokenmill.quantize.source" in info
    gen = run([tokenmill, "run", "-m", str(q8_model), "-p", "The capital of France is", "-n", "8", "--temp", "0"])
    assert gen.returncode == 0, gen.stderr
    assert len(gen.stdout.strip()) > 0


def test_q4_0_mix_and_perplexity(tokenmill, default_model, tmp_path):
    out = tmp_path / "q4_0.gguf"
    result = run([tokenmill, "quantize", default_model, str(out), "q4_0", "-t", "2"])
    assert result.returncode == 0, result.stderr
    types = tensor_types(tokenmill, out)
    assert types["blk.3.ffn_up.weight"] == "q4_0"
    assert types["token_embd.weight"] == "q8_0"  # tied output: Q6_K does not fit 640-wide rows
    ppl = run([tokenmill, "perplexity", "-m", str(out), "-f", str(TEXT_EN), "--json", *SMALL])
    assert ppl.returncode == 0, ppl.stderr
    assert 3 < json.loads(ppl.stdout)["ppl"] < 300


def test_a_named_output_type_makes_a_small_draft_model(tokenmill, default_model, tmp_path):
    """--output-tensor-type overrides the mix for the tied output projection: the default
    model in Q2_K with a Q4_0 vocabulary is about 60% of the file (a draft for speculation)."""
    out = tmp_path / "draft.gguf"
    result = run([tokenmill, "quantize", default_model, str(out), "Q2_K", "--output-tensor-type", "q4_0", "-t", "2"])
    assert result.returncode == 0, result.stderr
    types = tensor_types(tokenmill, out)
    assert types["token_embd.weight"] == "q4_0" and types["blk.0.ffn_down.weight"] == "q3_K"  # Q2_K's rule
    assert out.stat().st_size < 0.65 * pathlib.Path(default_model).stat().st_size
    bad = run([tokenmill, "quantize", default_model, str(tmp_path / "bad.gguf"), "Q2_K", "--output-tensor-type", "q8_k"])
    assert bad.returncode != 0 and "--output-tensor-type: unknown tensor type 'q8_k'" in bad.stderr
    assert not (tmp_path / "bad.gguf").exists()


def test_perplexity_of_the_default_model_is_sane(tokenmill, default_model):
    result = run([tokenmill, "perplexity", "-m", default_model, "-f", str(TEXT_EN), "--json", *SMALL])
    assert result.returncode == 0, result.stderr
    r = json.loads(result.stdout)
    assert r["n_windows"] == 2 and r["n_scored"] == 2 * 31
    assert math.isfinite(r["ppl"]) and 3 < r["ppl"] < 300
    assert 0 < r["ppl_stderr"] < r["ppl"]


def test_kl_divergence_of_a_model_against_itself_is_zero(tokenmill, default_model, tmp_path):
    base = tmp_path / "base.tmlg"
    saved = run([tokenmill, "perplexity", "-m", default_model, "-f", str(TEXT_EN), "--save-logits", str(base),
                 "--kl-top-k", "64", *SMALL])
    assert saved.returncode == 0, saved.stderr
    compared = run([tokenmill, "perplexity", "-m", default_model, "-f", str(TEXT_EN), "--kl-base", str(base),
                    "--json", *SMALL])
    assert compared.returncode == 0, compared.stderr
    r = json.loads(compared.stdout)
    assert r["kld_mean"] < 1e-6 and r["kld_max"] < 1e-5
    assert r["top1_agreement"] == 1.0
    assert abs(r["ln_ppl_ratio"]) < 1e-5
    # Another context length cannot be compared with it.
    other = run([tokenmill, "perplexity", "-m", default_model, "-f", str(TEXT_EN), "--kl-base", str(base),
                 "--ctx", "32", "--chunks", "2"])
    assert other.returncode != 0 and "--ctx 64" in other.stderr


def test_imatrix_then_importance_weighted_quantize(tokenmill, default_model, tmp_path):
    imatrix = tmp_path / "calib.imatrix"
    made = run([tokenmill, "imatrix", "-m", default_model, "-f", str(CALIB), "-o", str(imatrix), *SMALL])
    assert made.returncode == 0, made.stderr
    assert "127 weight matrices" in made.stdout  # 18 layers x 7, plus the tied output
    out = tmp_path / "q3_k_m.gguf"
    result = run([tokenmill, "quantize", default_model, str(out), "Q3_K_M", "--imatrix", str(imatrix), "-t", "2"])
    assert result.returncode == 0, result.stderr
    assert "[imatrix]" in result.stderr
    assert "tokenmill.quantize.method" in run([tokenmill, "info", str(out)]).stdout


def test_calibration_text_shorter_than_a_context_is_refused(tokenmill, default_model, tmp_path):
    short = tmp_path / "short.txt"
    short.write_text("Too short.")
    result = run([tokenmill, "imatrix", "-m", default_model, "-f", str(short), "-o", str(tmp_path / "x.imatrix")])
    assert result.returncode != 0
    assert "fewer than one context" in result.stderr
    assert not (tmp_path / "x.imatrix").exists()


def test_bad_inputs_give_clear_errors_and_leave_nothing(tokenmill, default_model, tmp_path):
    out = tmp_path / "out.gguf"

    unknown = run([tokenmill, "quantize", default_model, str(out), "Q4_K_X"])
    assert unknown.returncode != 0 and "unknown type 'Q4_K_X'" in unknown.stderr and "Q4_K_M" in unknown.stderr

    missing = run([tokenmill, "quantize", str(tmp_path / "nope.gguf"), str(out), "Q8_0"])
    assert missing.returncode != 0 and "nope.gguf" in missing.stderr

    truncated = tmp_path / "truncated.gguf"
    with open(default_model, "rb") as f:
        truncated.write_bytes(f.read(10_000_000))
    cut = run([tokenmill, "quantize", str(truncated), str(out), "Q8_0"])
    assert cut.returncode != 0 and "error:" in cut.stderr

    import gguf  # scripts/setup installs it
    import numpy as np
    foreign = tmp_path / "foreign.imatrix"
    writer = gguf.GGUFWriter(str(foreign), arch="imatrix")
    writer.add_string("general.type", "imatrix")
    writer.add_tensor("blk.40.attn_q.weight.in_sum2", np.ones((1, 4096), dtype=np.float32))
    writer.add_tensor("blk.40.attn_q.weight.counts", np.ones((1, 1), dtype=np.float32))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    mismatch = run([tokenmill, "quantize", default_model, str(out), "Q4_K_M", "--imatrix", str(foreign)])
    assert mismatch.returncode != 0
    assert "blk.40.attn_q.weight" in mismatch.stderr and "another model" in mismatch.stderr

    awq = run([tokenmill, "quantize", default_model, str(out), "Q4_K_M", "--method", "awq"])
    assert awq.returncode != 0 and "not implemented" in awq.stderr

    assert not out.exists()
    assert not any(p.name.startswith("out.gguf") for p in tmp_path.iterdir())


def test_quantized_file_loads_in_llama_cpp_with_the_same_greedy_tokens(tokenmill, q8_model):
    result = run([sys.executable, str(ROOT / "tools/check_llamacpp_interop.py"), str(q8_model), "--bin", tokenmill,
                  "-n", "12"], timeout=600)
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.count("OK ") == 3


def test_gptq_quantize_loads_and_generates(tokenmill, default_model, tmp_path):
    out = tmp_path / "q4_0_gptq.gguf"
    result = run([tokenmill, "quantize", default_model, str(out), "Q4_0", "--method", "gptq", "--calib", str(CALIB),
                  "--calib-ctx", "64", "--calib-chunks", "4", "-t", "2"], timeout=600)
    assert result.returncode == 0, result.stderr
    assert "[gptq]" in result.stderr and "126 with GPTQ" in result.stderr  # 18 layers x 7; not the Q8_0 embedding
    types = tensor_types(tokenmill, out)
    assert types["blk.3.ffn_up.weight"] == "q4_0"
    info = run([tokenmill, "info", str(out)]).stdout
    assert '"gptq"' in info and "tokenmill.quantize.gptq.calibration_tokens" in info
    gen = run([tokenmill, "run", "-m", str(out), "-p", "The capital of France is", "-n", "8", "--temp", "0"])
    assert gen.returncode == 0, gen.stderr
    assert len(gen.stdout.strip()) > 0
    ppl = run([tokenmill, "perplexity", "-m", str(out), "-f", str(TEXT_EN), "--json", *SMALL])
    assert ppl.returncode == 0, ppl.stderr
    assert 3 < json.loads(ppl.stdout)["ppl"] < 300


def test_gptq_bad_calibration_gives_clear_errors_and_leaves_nothing(tokenmill, default_model, tmp_path):
    out = tmp_path / "out.gguf"
    no_calib = run([tokenmill, "quantize", default_model, str(out), "Q4_0", "--method", "gptq"])
    assert no_calib.returncode != 0 and "--calib" in no_calib.stderr
    short = tmp_path / "short.txt"
    short.write_text("Too short.")
    too_short = run([tokenmill, "quantize", default_model, str(out), "Q4_0", "--method", "gptq", "--calib", str(short)])
    assert too_short.returncode != 0 and "fewer than one context" in too_short.stderr
    missing = run([tokenmill, "quantize", default_model, str(out), "Q4_0", "--method", "gptq", "--calib",
                   str(tmp_path / "nope.txt")])
    assert missing.returncode != 0 and "nope.txt" in missing.stderr
    both = run([tokenmill, "quantize", default_model, str(out), "Q4_0", "--method", "gptq", "--calib", str(CALIB),
                "--imatrix", str(tmp_path / "x.imatrix")])
    assert both.returncode != 0 and "--imatrix" in both.stderr
    assert not any(p.name.startswith("out.gguf") for p in tmp_path.iterdir())


def llama_quantize(source, out, ftype):
    """llama.cpp's quantizer (llama-cpp-python's llama_model_quantize); ftype: a llama_ftype."""
    import ctypes

    import llama_cpp
    params = llama_cpp.llama_model_quantize_default_params()
    params.ftype = ftype
    params.allow_requantize = True  # the default model is Q4_K_M already
    params.nthread = 2
    assert llama_cpp.llama_model_quantize(str(source).encode(), str(out).encode(), ctypes.byref(params)) == 0


def test_iq4_xs_files_run_both_ways_with_llama_cpp(tokenmill, default_model, tmp_path):
    """Our IQ4_XS file (IQ4_NL where 256 does not divide a row) in llama.cpp, and
    llama-quantize's IQ4_XS file in tokenmill: the same greedy tokens up to near-ties."""
    ours = tmp_path / "ours-iq4_xs.gguf"
    result = run([tokenmill, "quantize", default_model, str(ours), "IQ4_XS", "-t", "2"])
    assert result.returncode == 0, result.stderr
    types = set(tensor_types(tokenmill, ours).values())
    assert {"iq4_xs", "iq4_nl"} <= types, types
    theirs = tmp_path / "llama-iq4_xs.gguf"
    llama_quantize(default_model, theirs, 30)  # LLAMA_FTYPE_MOSTLY_IQ4_XS
    assert "iq4_xs" in set(tensor_types(tokenmill, theirs).values())
    for model in (ours, theirs):
        check = run([sys.executable, str(ROOT / "tools/check_llamacpp_interop.py"), str(model), "--bin", tokenmill,
                     "-n", "12"], timeout=600)
        assert check.returncode == 0, check.stdout + check.stderr
        assert check.stdout.count("OK ") == 3


@pytest.mark.parametrize("ftype,mix", [(26, "iq3_s"), (27, "iq3_m")])  # LLAMA_FTYPE_MOSTLY_IQ3_S, _IQ3_M
def test_llama_quantize_iq3_mixes_run_as_in_llama_cpp(tokenmill, default_model, tmp_path, ftype, mix):
    """llama-quantize's IQ3_S and IQ3_M mixes (IQ3_S beside IQ4_NL, Q4_K, Q5_0 tensors) in
    tokenmill: the same greedy tokens as llama.cpp up to near-ties."""
    model = tmp_path / f"llama-{mix}.gguf"
    llama_quantize(default_model, model, ftype)
    assert "iq3_s" in set(tensor_types(tokenmill, model).values())
    check = run([sys.executable, str(ROOT / "tools/check_llamacpp_interop.py"), str(model), "--bin", tokenmill,
                 "-n", "12"], timeout=600)
    assert check.returncode == 0, check.stdout + check.stderr
    assert check.stdout.count("OK ") == 3


@pytest.mark.parametrize("ftype,mix", [(27, "IQ3_M"), (22, "IQ3_XS")])  # LLAMA_FTYPE_MOSTLY_IQ3_M, _IQ3_XS
def test_our_iq3_mixes_have_llama_quantizes_layout_and_run_in_llama_cpp(tokenmill, default_model, tmp_path, ftype,
                                                                        mix):
    """Our IQ3_M / IQ3_XS files: every tensor in the type llama-quantize gives it, and llama.cpp
    gives our greedy tokens up to near-ties."""
    ours = tmp_path / f"ours-{mix}.gguf"
    result = run([tokenmill, "quantize", default_model, str(ours), mix, "-t", "2"])
    assert result.returncode == 0, result.stderr
    theirs = tmp_path / f"llama-{mix}.gguf"
    llama_quantize(default_model, theirs, ftype)
    ours_types, their_types = tensor_types(tokenmill, ours), tensor_types(tokenmill, theirs)
    assert "iq3_s" in set(ours_types.values())
    assert ours_types == their_types
    # IQ3_M parts on "salt and eggs / sugar", 0.25 apart in llama.cpp's batched logits
    # but over 0.35 in its one-token ones: the wider margin of a 3-bit file.
    check = run([sys.executable, str(ROOT / "tools/check_llamacpp_interop.py"), str(ours), "--bin", tokenmill,
                 "-n", "12", "--near-tie", "0.5"], timeout=600)
    assert check.returncode == 0, check.stdout + check.stderr
    assert check.stdout.count("OK ") == 3


def test_iq2_xs_needs_an_imatrix_then_runs_in_llama_cpp(tokenmill, default_model, tmp_path):
    out = tmp_path / "iq2_xs.gguf"
    refused = run([tokenmill, "quantize", default_model, str(out), "IQ2_XS", "-t", "2"])
    assert refused.returncode != 0 and "needs an importance matrix" in refused.stderr, refused.stderr
    assert "--imatrix" in refused.stderr
    assert not out.exists()
    imatrix = tmp_path / "calib.imatrix"
    made = run([tokenmill, "imatrix", "-m", default_model, "-f", str(CALIB), "-o", str(imatrix), *SMALL])
    assert made.returncode == 0, made.stderr
    result = run([tokenmill, "quantize", default_model, str(out), "IQ2_XS", "--imatrix", str(imatrix), "-t", "2"])
    assert result.returncode == 0, result.stderr
    types = tensor_types(tokenmill, out)
    # llama-quantize's IQ2_XS layout: IQ2_XS where 256 divides the rows, Q2_K for the first
    # eighth of ffn_down, IQ4_NL for the 640-wide rows, Q4_K (as Q5_0) for attn_v.
    assert types["blk.9.ffn_down.weight"] == "iq2_xs" and types["blk.9.attn_output.weight"] == "iq2_xs"
    assert types["blk.0.ffn_down.weight"] == "q2_K"
    assert types["blk.9.ffn_up.weight"] == "iq4_nl"
    check = run([sys.executable, str(ROOT / "tools/check_llamacpp_interop.py"), str(out), "--bin", tokenmill,
                 "-n", "12"], timeout=600)
    assert check.returncode == 0, check.stdout + check.stderr
    assert check.stdout.count("OK ") == 3


def test_the_ternary_mix_writes_tq2_0_where_the_rows_allow(tokenmill, default_model, tmp_path):
    """TQ2_0 (for models trained ternary; it ruins any other) under llama-quantize's rule:
    the 256-divisible rows ternary, Q4_0 for the 640-wide ones; the file loads and runs."""
    out = tmp_path / "tq2_0.gguf"
    result = run([tokenmill, "quantize", default_model, str(out), "TQ2_0", "-t", "2"])
    assert result.returncode == 0, result.stderr
    types = tensor_types(tokenmill, out)
    assert types["blk.9.ffn_down.weight"] == "tq2_0" and types["blk.9.attn_output.weight"] == "tq2_0"
    assert types["blk.9.ffn_up.weight"] == "q4_0"
    gen = run([tokenmill, "run", "-m", str(out), "-p", "Hello", "-n", "4", "--temp", "0"])
    assert gen.returncode == 0, gen.stderr
