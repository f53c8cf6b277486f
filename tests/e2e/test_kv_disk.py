"""The prefix cache's disk tier (--kv-disk) on the default model: prefixes found again
after a restart with the tokens a server without the tier gives; a server killed with
SIGKILL while it writes blocks, then restarted; damaged block files skipped; another KV
type, or a changed model file, reusing nothing; a full disk that stops the writes and
fails no request."""
import concurrent.futures
import pathlib
import random
import re
import shutil
import signal
import time

import openai
import requests

from conftest import start_server

MODEL = "gemma-3-270m-q4_k_m"
WORDS = ("river mountain lantern copper window garden silver engine harbor meadow violet thunder pocket "
         "marble candle forest ladder orbit canvas falcon pepper glacier saddle timber velvet anchor "
         "compass beacon quartz willow").split()


def long_prompt(seed, n_words=900):
    rng = random.Random(seed)
    body = " ".join(rng.choice(WORDS) for _ in range(n_words))
    return f"Notes {seed}: {body}. Summary of notes {seed}:"


def complete(url, prompt, max_tokens=16):
    client = openai.OpenAI(base_url=url + "/v1", api_key="unused", max_retries=0, timeout=300)
    r = client.completions.create(model=MODEL, prompt=prompt, max_tokens=max_tokens, temperature=0)
    return r.choices[0].text, r.usage.prompt_tokens, r.usage.prompt_tokens_details.cached_tokens


def metric(url, name):
    for line in requests.get(url + "/metrics", timeout=10).text.splitlines():
        key, _, number = line.rpartition(" ")
        if key == name:
            return float(number)
    raise KeyError(name)


def disk_server(tokenmill, model, folder, *extra):
    return start_server(tokenmill, model, "-t", "2", "--kv-disk", str(folder), *extra)


def block_files(folder):
    return sorted(pathlib.Path(folder).glob("*/*.kvb"))


def test_prefixes_come_back_after_a_restart_with_the_same_tokens(tokenmill, default_model, server, tmp_path):
    prompts = [long_prompt(seed) for seed in (1, 2)]
    expected = [complete(server.url, p)[0] for p in prompts]
    first = disk_server(tokenmill, default_model, tmp_path / "kv")
    try:
        for p, want in zip(prompts, expected):
            text, _, cached = complete(first.url, p)
            assert (text, cached) == (want, 0)
        assert metric(first.url, "tokenmill_kv_disk_writes_total") > 0
    finally:
        assert first.stop() == 0, first.log()
    assert block_files(tmp_path / "kv"), "no block was written"

    again = disk_server(tokenmill, default_model, tmp_path / "kv")
    try:
        assert re.search(r"KV disk tier: \S+, [\d.]+ of 8\.00 GiB, [1-9]\d* blocks kept from before", again.log()), again.log()
        for p, want in zip(prompts, expected):
            text, n_prompt, cached = complete(again.url, p)
            assert text == want
            assert cached == (n_prompt - 1) // 16 * 16, (n_prompt, cached)
        assert metric(again.url, "tokenmill_kv_disk_hits_total") > 0
        assert metric(again.url, "tokenmill_kv_disk_corrupt_total") == 0
        assert metric(again.url, "tokenmill_kv_disk_usage_bytes") > 0
        ps = requests.get(again.url + "/api/ps", timeout=10).json()["models"][0]
        assert ps["kv_disk"]["blocks"] > 0 and ps["kv_disk"]["folder"].startswith(str(tmp_path / "kv"))
    finally:
        assert again.stop() == 0, again.log()


def test_a_server_killed_while_writing_blocks_restarts_with_the_right_tokens(tokenmill, default_model, server,
                                                                            tmp_path):
    prompts = [long_prompt(seed, 1200) for seed in range(10, 14)]
    expected = [complete(server.url, p)[0] for p in prompts]
    victim = disk_server(tokenmill, default_model, tmp_path / "kv")
    pool = concurrent.futures.ThreadPoolExecutor(len(prompts))
    try:
        futures = [pool.submit(complete, victim.url, p, 64) for p in prompts]
        deadline = time.monotonic() + 120
        while metric(victim.url, "tokenmill_kv_disk_writes_total") < 20 and time.monotonic() < deadline:
            time.sleep(0.02)
        assert not all(f.done() for f in futures), "every request finished before the kill: nothing was in flight"
        victim.proc.send_signal(signal.SIGKILL)
        victim.proc.wait()
    finally:
        pool.shutdown(wait=True, cancel_futures=True)
    again = disk_server(tokenmill, default_model, tmp_path / "kv")
    try:
        assert not list(pathlib.Path(tmp_path / "kv").glob("*/*.tmp")), "unfinished writes were left behind"
        cached_total = 0
        for p, want in zip(prompts, expected):
            text, _, cached = complete(again.url, p)
            assert text == want
            cached_total += cached
        assert cached_total > 0, "nothing written before the kill was reused"
        assert metric(again.url, "tokenmill_kv_disk_corrupt_total") == 0
    finally:
        assert again.stop() == 0, again.log()


def test_damaged_block_files_are_skipped_and_the_answer_is_unchanged(tokenmill, default_model, server, tmp_path):
    prompt = long_prompt(20)
    want = complete(server.url, prompt)[0]
    first = disk_server(tokenmill, default_model, tmp_path / "kv")
    try:
        complete(first.url, prompt)
    finally:
        assert first.stop() == 0, first.log()
    files = block_files(tmp_path / "kv")
    assert len(files) >= 4
    for i, path in enumerate(files):
        data = bytearray(path.read_bytes())
        if i % 2 == 0:
            data = data[: len(data) // 2]  # cut short, as by a crash mid-write on another file system
        else:
            data[200] ^= 0x40  # one flipped bit in the keys of the first layer
        path.write_bytes(bytes(data))
    again = disk_server(tokenmill, default_model, tmp_path / "kv")
    try:
        text, _, cached = complete(again.url, prompt)
        assert text == want
        assert cached == 0
        assert metric(again.url, "tokenmill_kv_disk_corrupt_total") >= 1
        assert "KV disk tier: skipped" in again.log()
    finally:
        assert again.stop() == 0, again.log()


def test_another_kv_type_or_a_changed_model_reuses_nothing(tokenmill, default_model, tmp_path):
    model = tmp_path / "gemma-3-270m-q4_k_m.gguf"  # the name requests use
    shutil.copy(default_model, model)
    prompt = long_prompt(30)
    first = disk_server(tokenmill, str(model), tmp_path / "kv")
    try:
        complete(first.url, prompt)
    finally:
        assert first.stop() == 0, first.log()
    q8 = disk_server(tokenmill, str(model), tmp_path / "kv", "--kv-type", "q8_0")
    try:
        assert "0 blocks kept from before" in q8.log()
        assert complete(q8.url, prompt)[2] == 0
        assert metric(q8.url, "tokenmill_kv_disk_hits_total") == 0
    finally:
        assert q8.stop() == 0, q8.log()
    assert len(list((tmp_path / "kv").iterdir())) == 2, "the F16 blocks of the same model should stay"
    with open(model, "r+b") as f:  # the model file changes (its last byte is tensor data)
        f.seek(-1, 2)
        last = f.read(1)
        f.seek(-1, 2)
        f.write(bytes([last[0] ^ 1]))
    changed = disk_server(tokenmill, str(model), tmp_path / "kv")
    try:
        assert "0 blocks kept from before" in changed.log()
        assert "of blocks of a previous version of the model" in changed.log()
        assert complete(changed.url, prompt)[2] == 0
    finally:
        assert changed.stop() == 0, changed.log()
    assert len(list((tmp_path / "kv").iterdir())) == 1, "the old model's folders should be gone"


def test_a_full_disk_stops_the_writes_and_fails_no_request(tokenmill, default_model, server, tmp_path):
    """The tier's folder lies on a 1 MiB tmpfs (a few blocks of the default model), mounted
    in a user and mount namespace of the server's own (unshare): no privileges needed."""
    small = tmp_path / "small"
    small.mkdir()
    script = (f"mount -t tmpfs -o size=1m tmpfs {small} && exec {tokenmill} serve -m {default_model} -t 2 "
              f"--host 127.0.0.1 --port 0 --kv-disk {small / 'kv'}")
    full = start_server(tokenmill, None, command=["unshare", "-rm", "sh", "-c", script])
    try:
        for seed in (40, 41, 42):
            prompt = long_prompt(seed, 400)
            assert complete(full.url, prompt)[0] == complete(server.url, prompt)[0]
        assert metric(full.url, "tokenmill_kv_disk_dropped_total") > 0
        assert "spilling paused" in full.log()
    finally:
        assert full.stop() == 0, full.log()
