"""`tokenmill distill`: each filter on fixtures made to trip it (tools/make_distill_fixtures.py),
every output layout loaded with the `datasets` package's JSON loader, a teacher run on the
default model with token-id logprobs that a rerun does not repeat, stored completions read
while their server runs, and bad input refused."""
import json
import os

import datasets
import openai
import pytest

from conftest import ROOT, run, start_server

FIXTURES = ROOT / "tests" / "fixtures" / "distill"
EXPECTED = json.loads((FIXTURES / "expected.json").read_text())
ALL_FILTERS = ["--min-length", "20", "--max-length", "200", "--require", '"capital"', "--reject", "password",
               "--refusals", "--max-repeat-ratio", "0.3", "--json-schema", str(FIXTURES / "schema.json"), "--dedup",
               "--near-dedup", "0.7"]


def distill(tokenmill, *args):
    return run([tokenmill, "distill", *map(str, args)])


def load(path):
    return datasets.load_dataset("json", data_files=str(path), split="train")


def test_each_filter_drops_what_it_should(tokenmill, tmp_path):
    out, summary = tmp_path / "out.jsonl", tmp_path / "summary.json"
    done = distill(tokenmill, "--batch-input", FIXTURES / "batch_input.jsonl", "--batch-output",
                   FIXTURES / "batch_output.jsonl", "-o", out, "--summary-json", summary, *ALL_FILTERS)
    assert done.returncode == 0, done.stderr
    counts = json.loads(summary.read_text())
    expected_drops = {}
    for case in EXPECTED.values():
        if case["dropped_by"]:
            expected_drops[case["dropped_by"]] = expected_drops.get(case["dropped_by"], 0) + 1
    assert {k: v for k, v in counts["dropped"].items() if v} == expected_drops
    assert counts["read"] == len(EXPECTED)  # the failed request has no answer
    kept = [case["answer"] for case in EXPECTED.values() if case["dropped_by"] is None]
    assert [r["messages"][-1]["content"] for r in load(out)] == kept
    # Each filter alone drops its own cases and no other.
    for flag, name in (("--refusals", "refusal"), ("--dedup", "duplicate")):
        alone = distill(tokenmill, "--batch-input", FIXTURES / "batch_input.jsonl", "--batch-output",
                        FIXTURES / "batch_output.jsonl", "-o", out, "--summary-json", summary, "--keep-truncated",
                        flag)
        assert alone.returncode == 0, alone.stderr
        dropped = {k: v for k, v in json.loads(summary.read_text())["dropped"].items() if v}
        assert dropped == {name: expected_drops[name]}


@pytest.mark.parametrize("layout,columns", [("alpaca", {"instruction", "input", "output", "system"}),
                                            ("sharegpt", {"conversations"}), ("messages", {"messages"})])
def test_every_layout_loads_with_datasets(tokenmill, tmp_path, layout, columns):
    out = tmp_path / f"{layout}.jsonl"
    done = distill(tokenmill, "--batch-input", FIXTURES / "batch_input.jsonl", "--batch-output",
                   FIXTURES / "batch_output.jsonl", "-o", out, "--format", layout, *ALL_FILTERS)
    assert done.returncode == 0, done.stderr
    data = load(out)
    assert set(data.column_names) == columns and len(data) == 3
    if layout == "sharegpt":
        assert [t["from"] for t in data[0]["conversations"]] == ["system", "human", "gpt"]
    if layout == "alpaca":
        assert data[0]["instruction"] == "What is the capital of France?" and data[0]["system"] == "Answer in JSON."


def test_a_teacher_run_with_logprobs_for_distillation(tokenmill, default_model, tmp_path):
    prompts = tmp_path / "prompts.jsonl"
    prompts.write_text("\n".join(json.dumps(p) for p in [
        {"prompt": "Name three colors."},
        {"instruction": "Translate to French.", "input": "Good morning"},
        {"messages": [{"role": "user", "content": "Count to five."}], "system": "Be brief."}]) + "\n")
    out = tmp_path / "out.jsonl"
    args = ["--prompts", prompts, "-m", default_model, "-t", "2", "-o", out, "--format", "alpaca", "--samples", "2",
            "--max-tokens", "12", "--top-logprobs", "3", "--keep-truncated", "--seed", "5"]
    done = distill(tokenmill, *args)
    assert done.returncode == 0, done.stderr
    data = load(out)
    assert len(data) == 6
    assert data[2]["instruction"] == "Translate to French." and data[2]["input"] == "Good morning"
    assert data[4]["system"] == "Be brief."
    for record in data:
        assert 1 <= len(record["logprobs"]) <= 12  # one row per answer token
        for row in record["logprobs"]:
            assert 1 <= len(row) <= 3
            assert all(t["token"].startswith("token_id:") and t["logprob"] <= 0 for t in row)
            assert [t["logprob"] for t in row] == sorted((t["logprob"] for t in row), reverse=True)
    teacher = out.with_name("out.jsonl.teacher.jsonl")
    answers = teacher.read_text()
    assert len(answers.splitlines()) == 3
    # A rerun with other filters asks the teacher nothing new.
    again = distill(tokenmill, *args, "--min-length", "1000")
    assert again.returncode == 0, again.stderr
    assert teacher.read_text() == answers
    assert "6 answers read, 0 kept" in again.stderr


def test_stored_completions_by_metadata_while_their_server_runs(tokenmill, default_model, tmp_path):
    data = tmp_path / "data"
    server = start_server(tokenmill, default_model, "-t", "2", "--data-dir", str(data))
    try:
        client = openai.OpenAI(base_url=server.url + "/v1", api_key="unused", max_retries=0)
        for i, tag in enumerate(["support", "support", "sales"]):
            client.chat.completions.create(model="default", max_tokens=8, temperature=0, store=True,
                                           metadata={"dataset": tag},
                                           messages=[{"role": "user", "content": f"Question {i}?"}])
        out = tmp_path / "out.jsonl"
        done = distill(tokenmill, "--stored", "--data-dir", data, "--metadata", "dataset=support", "-o", out,
                       "--format", "sharegpt", "--keep-truncated")
        assert done.returncode == 0, done.stderr
        records = load(out)
        assert [r["conversations"][0]["value"] for r in records] == ["Question 0?", "Question 1?"]
    finally:
        assert server.stop() == 0, server.log()


def test_bad_input_is_refused(tokenmill, tmp_path):
    out = tmp_path / "out.jsonl"
    nothing = distill(tokenmill, "-o", out)
    assert nothing.returncode == 1 and "give one source" in nothing.stderr
    half = distill(tokenmill, "--batch-input", FIXTURES / "batch_input.jsonl", "-o", out)
    assert half.returncode == 1 and "go together" in half.stderr
    regex = distill(tokenmill, "--batch-input", FIXTURES / "batch_input.jsonl", "--batch-output",
                    FIXTURES / "batch_output.jsonl", "-o", out, "--require", "(unclosed")
    assert regex.returncode == 1 and "regular expression" in regex.stderr
    prompts = tmp_path / "prompts.jsonl"
    prompts.write_text('{"prompt": "fine"}\nnot json\n{"neither": 1}\n')
    bad = distill(tokenmill, "--prompts", prompts, "-o", out)
    assert bad.returncode == 1 and "line 2" in bad.stderr and "line 3" in bad.stderr
    empty = tmp_path / "empty-data"
    stored = distill(tokenmill, "--stored", "--data-dir", empty, "-o", out)
    assert stored.returncode == 1 and "no stored state" in stored.stderr
    assert not empty.exists()
    assert not out.exists()
