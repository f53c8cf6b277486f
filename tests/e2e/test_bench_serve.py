"""`tokenmill bench-serve` against the real `tokenmill serve` (the shared `server` fixture)."""
import json
import socket

from conftest import run

LATENCIES = ("ttft", "tpot", "itl", "e2el")


def bench(tokenmill, url, *args):
    return run([tokenmill, "bench-serve", "--url", url, *args], timeout=600)


def bench_json(tokenmill, url, *args):
    result = bench(tokenmill, url, *args, "--json")
    assert result.stdout.strip(), result.stderr
    return result, json.loads(result.stdout)


def test_completions_every_request_completes_with_ordered_percentiles(tokenmill, server):
    result, report = bench_json(tokenmill, server.url, "-c", "4", "-n", "8", "--prompt-len", "32", "--gen-len", "8")
    assert result.returncode == 0, result.stderr + result.stdout
    assert report["completed"] == 8 and report["failed"] == 0 and report["errors"] == []
    assert report["total_output_tokens"] == 8 * 8  # ignore_eos: every request runs to max_tokens
    assert report["input_tokens_from_usage"]
    assert 8 * 32 <= report["total_input_tokens"] <= 8 * 32 * 2  # words are about a token each
    assert report["duration"] > 0
    assert report["request_throughput"] > 0 and report["output_throughput"] > 0
    assert report["total_token_throughput"] > report["output_throughput"]
    for name in LATENCIES:
        mean, median, p99 = (report[f"{kind}_{name}_ms"] for kind in ("mean", "median", "p99"))
        assert 0 < median <= p99, (name, report)
        assert 0 < mean <= p99, (name, report)
    # A request's TTFT comes before its end, and the time per token after the first is
    # bounded by the whole request.
    assert report["median_ttft_ms"] < report["median_e2el_ms"]
    assert report["mean_tpot_ms"] < report["mean_e2el_ms"]


def test_chat_with_a_shared_prefix_hits_the_prefix_cache(tokenmill, server):
    args = ["--endpoint", "chat", "-c", "2", "-n", "6", "--prompt-len", "80", "--shared-prefix", "64",
            "--gen-len", "4", "--seed", "7"]
    result, report = bench_json(tokenmill, server.url, *args)
    assert result.returncode == 0, result.stderr + result.stdout
    assert report["completed"] == 6 and report["failed"] == 0
    assert report["endpoint"] == "chat" and report["shared_prefix"] == 64
    # Later requests reuse at least one 16-token block of the shared prefix.
    assert report["total_cached_tokens"] >= 16, report


def test_table_output(tokenmill, server):
    result = bench(tokenmill, server.url, "-c", "1", "-n", "1", "--prompt-len", "8", "--gen-len", "2")
    assert result.returncode == 0, result.stderr
    for line in ("Successful requests:", "Output token throughput (tok/s):", "Median TTFT (ms):", "P99 ITL (ms):"):
        assert line in result.stdout, result.stdout


def test_failed_requests_are_counted_and_exit_1(tokenmill, server):
    result, report = bench_json(tokenmill, server.url, "-c", "2", "-n", "3", "--prompt-len", "8", "--gen-len", "2",
                                "--model", "no-such-model")
    assert result.returncode == 1
    assert report["completed"] == 0 and report["failed"] == 3
    assert len(report["errors"]) == 1 and report["errors"][0]["count"] == 3
    assert report["errors"][0]["message"].startswith("HTTP 404"), report["errors"]


def test_unreachable_server_and_bad_urls_fail_in_one_line(tokenmill):
    with socket.socket() as s:  # a loopback port that nothing listens on once closed
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    for url, expected in ((f"http://127.0.0.1:{port}", "cannot connect to 127.0.0.1"),
                          ("https://127.0.0.1:1", "https is not supported"),
                          ("127.0.0.1:8080", "expected a URL like http://")):
        result = bench(tokenmill, url, "-n", "1")
        assert result.returncode == 1, (url, result.stdout)
        assert result.stdout == ""
        lines = result.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("error: ") and expected in lines[0], (url, result.stderr)
