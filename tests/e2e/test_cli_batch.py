"""`tokenmill batch`: a file in OpenAI's batch format run offline. Every custom_id ends up
exactly once in the output and error files, answers equal the same requests sent to the
server, and a run killed with SIGKILL, interrupted with Ctrl-C, or stopped by a full disk
finishes when run again, without repeating a line."""
import json
import os
import shutil
import signal
import subprocess
import time

import openai
import pytest

from conftest import run


def chat_line(i, max_tokens=6):
    return {"custom_id": f"req-{i}", "method": "POST", "url": "/v1/chat/completions",
            "body": {"model": "gpt-4o-mini", "max_tokens": max_tokens, "temperature": 0,
                     "messages": [{"role": "user", "content": f"Say the number {i} in words."}]}}


def write_lines(path, lines):
    path.write_text("".join((line if isinstance(line, str) else json.dumps(line)) + "\n" for line in lines))
    return path


def read_lines(*paths):
    rows = []
    for path in paths:
        if os.path.exists(path):
            rows += [json.loads(line) for line in open(path).read().splitlines()]
    return rows


def batch_cmd(tokenmill, model, *args):
    return [tokenmill, "batch", "-m", model, "-t", "2", *map(str, args)]


def count_lines(path):
    try:
        with open(path, "rb") as f:
            return f.read().count(b"\n")
    except FileNotFoundError:
        return 0


def same_as_interactive(server, rows, every=1):
    client = openai.OpenAI(base_url=server.url + "/v1", api_key="unused", max_retries=0)
    for row in rows[::every]:
        i = int(row["custom_id"].split("-")[1])
        alone = client.chat.completions.create(model="default", max_tokens=6, temperature=0,
                                               messages=[{"role": "user", "content": f"Say the number {i} in words."}])
        assert row["response"]["body"]["choices"][0]["message"]["content"] == alone.choices[0].message.content


def test_a_file_runs_with_each_line_once_and_failures_in_the_error_file(tokenmill, default_model, server, tmp_path):
    lines = [chat_line(i) for i in range(20)]
    lines.append({"custom_id": "plain", "method": "POST", "url": "/v1/completions",
                  "body": {"model": "x", "prompt": "The capital of France is", "max_tokens": 5, "temperature": 0}})
    lines.append({"custom_id": "refused", "method": "POST", "url": "/v1/completions",
                  "body": {"model": "x", "prompt": "hi", "max_tokens": -1}})
    src = write_lines(tmp_path / "in.jsonl", lines)
    out, err = tmp_path / "out.jsonl", tmp_path / "err.jsonl"
    done = run(batch_cmd(tokenmill, default_model, "-i", src, "-o", out, "--errors", err))
    assert done.returncode == 0, done.stderr
    assert "21 completed, 1 failed" in done.stderr
    rows = read_lines(out)
    assert sorted(r["custom_id"] for r in rows) == sorted([f"req-{i}" for i in range(20)] + ["plain"])
    assert all(r["response"]["status_code"] == 200 and r["id"].startswith("batch_req_") for r in rows)
    (refused,) = read_lines(err)
    assert refused["custom_id"] == "refused" and refused["response"]["status_code"] == 400
    assert "max_tokens" in refused["response"]["body"]["error"]["message"]
    same_as_interactive(server, [r for r in rows if r["custom_id"].startswith("req-")], every=4)
    plain = next(r for r in rows if r["custom_id"] == "plain")
    alone = openai.OpenAI(base_url=server.url + "/v1", api_key="unused").completions.create(
        model="default", prompt="The capital of France is", max_tokens=5, temperature=0)
    assert plain["response"]["body"]["choices"][0]["text"] == alone.choices[0].text

    again = run(batch_cmd(tokenmill, default_model, "-i", src, "-o", out, "--errors", err))
    assert again.returncode == 0 and "22 already done" in again.stderr, again.stderr
    assert len(read_lines(out, err)) == 22


def test_without_an_error_file_failures_go_to_the_output(tokenmill, default_model, tmp_path):
    src = write_lines(tmp_path / "in.jsonl", [chat_line(0), {"custom_id": "bad", "method": "POST",
                                                             "url": "/v1/chat/completions",
                                                             "body": {"model": "x", "messages": "not a list"}}])
    out = tmp_path / "out.jsonl"
    done = run(batch_cmd(tokenmill, default_model, "-i", src, "-o", out))
    assert done.returncode == 0, done.stderr
    assert {r["custom_id"]: r["response"]["status_code"] for r in read_lines(out)} == {"req-0": 200, "bad": 400}


def test_bad_input_files_are_refused_naming_their_lines(tokenmill, default_model, tmp_path):
    src = write_lines(tmp_path / "in.jsonl", [chat_line(0), "{not json", chat_line(0),
                                              {**chat_line(3), "url": "/v1/other"}, {**chat_line(4), "method": "GET"}])
    out = tmp_path / "out.jsonl"
    refused = run(batch_cmd(tokenmill, default_model, "-i", src, "-o", out))
    assert refused.returncode == 1
    for expected in ("line 2: invalid_json_line", "line 3: duplicate_custom_id", "line 4: mismatched_endpoint",
                     "line 5: invalid_method"):
        assert expected in refused.stderr, refused.stderr
    assert not out.exists() or out.read_text() == ""
    (tmp_path / "latin1.jsonl").write_bytes(json.dumps(chat_line(0)).encode().replace(b"number", b"n\xfcmber") + b"\n")
    refused = run(batch_cmd(tokenmill, default_model, "-i", tmp_path / "latin1.jsonl", "-o", out))
    assert refused.returncode == 1 and "line 1: invalid_json_line" in refused.stderr
    missing = run(batch_cmd(tokenmill, default_model, "-i", tmp_path / "nope.jsonl", "-o", out))
    assert missing.returncode == 1 and "file_not_found" in missing.stderr
    same = run(batch_cmd(tokenmill, default_model, "-i", src, "-o", out, "--errors", out))
    assert same.returncode == 1 and "--errors" in same.stderr


@pytest.mark.parametrize("kill_after", [50, 300])
def test_a_killed_run_finishes_when_run_again(tokenmill, default_model, server, tmp_path, kill_after):
    n = 500
    src = write_lines(tmp_path / "in.jsonl", [chat_line(i) for i in range(n)])
    out = tmp_path / "out.jsonl"
    proc = subprocess.Popen(batch_cmd(tokenmill, default_model, "-q", "-i", src, "-o", out),
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 300
    while count_lines(out) < kill_after:
        assert proc.poll() is None, proc.stderr.read()
        assert time.monotonic() < deadline
        time.sleep(0.02)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    proc.stderr.close()
    first = count_lines(out)
    assert kill_after <= first < n

    done = run(batch_cmd(tokenmill, default_model, "-i", src, "-o", out))
    assert done.returncode == 0, done.stderr
    assert f"resuming: {first} of {n}" in done.stderr
    rows = read_lines(out)
    assert sorted(r["custom_id"] for r in rows) == sorted(f"req-{i}" for i in range(n))
    same_as_interactive(server, rows, every=100)


def test_ctrl_c_stops_between_requests_and_a_rerun_finishes(tokenmill, default_model, tmp_path):
    n = 300
    src = write_lines(tmp_path / "in.jsonl", [chat_line(i) for i in range(n)])
    out = tmp_path / "out.jsonl"
    proc = subprocess.Popen(batch_cmd(tokenmill, default_model, "-i", src, "-o", out),
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 300
    while count_lines(out) < 30:
        assert proc.poll() is None and time.monotonic() < deadline
        time.sleep(0.02)
    proc.send_signal(signal.SIGINT)
    _, stderr = proc.communicate(timeout=120)
    assert proc.returncode == 130, stderr
    assert "interrupted: run the same command again" in stderr
    first = count_lines(out)
    assert 30 <= first < n
    done = run(batch_cmd(tokenmill, default_model, "-i", src, "-o", out))
    assert done.returncode == 0, done.stderr
    assert sorted(r["custom_id"] for r in read_lines(out)) == sorted(f"req-{i}" for i in range(n))


def test_a_full_disk_stops_the_run_with_whole_lines_and_a_rerun_finishes(tokenmill, default_model, tmp_path):
    """The output lies on a 48 KiB tmpfs, mounted in a user and mount namespace of its own
    (unshare), so the test needs no privileges."""
    if shutil.which("unshare") is None:
        pytest.fail("unshare (util-linux, part of every Debian system) is missing")
    n = 200
    src = write_lines(tmp_path / "in.jsonl", [chat_line(i, max_tokens=16) for i in range(n)])
    small = tmp_path / "small"
    small.mkdir()
    kept = tmp_path / "out.jsonl"
    script = (f"mount -t tmpfs -o size=48k tmpfs {small} && "
              f"{' '.join(batch_cmd(tokenmill, default_model, '-q', '-i', src, '-o', small / 'out.jsonl'))}; "
              f"echo exit=$?; cp {small / 'out.jsonl'} {kept}")
    full = run(["unshare", "-rm", "sh", "-c", script])
    assert "exit=1" in full.stdout, full.stdout + full.stderr
    assert "No space left on device" in full.stderr, full.stderr
    rows = read_lines(kept)  # every line whole: each parses
    assert 0 < len(rows) < n
    assert len({r["custom_id"] for r in rows}) == len(rows)

    done = run(batch_cmd(tokenmill, default_model, "-i", src, "-o", kept))
    assert done.returncode == 0, done.stderr
    assert sorted(r["custom_id"] for r in read_lines(kept)) == sorted(f"req-{i}" for i in range(n))
