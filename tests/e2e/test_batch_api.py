"""The Files and Batches APIs with the official `openai` client: upload, list, content,
delete; batches created, listed, run, cancelled; bad input answered 4xx or a failed
batch naming its lines; and a server killed with SIGKILL mid-batch that, restarted on
the same data directory, finishes with every custom_id exactly once and the answers the
same requests get interactively."""
import concurrent.futures
import hashlib
import json
import os
import signal
import socket
import threading
import time

import openai
import pytest

from conftest import start_server

N_CRASH = 500


def chat_line(i, max_tokens=8, model="default", url="/v1/chat/completions"):
    return json.dumps({"custom_id": f"req-{i}", "method": "POST", "url": url,
                       "body": {"model": model, "max_tokens": max_tokens, "temperature": 0,
                                "messages": [{"role": "user", "content": f"Say the number {i} in words."}]}})


def write_lines(path, lines):
    path.write_text("\n".join(lines) + "\n")
    return path


def wait_for(client, batch_id, statuses=("completed", "failed", "cancelled", "expired"), timeout=300):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        batch = client.batches.retrieve(batch_id)
        if batch.status in statuses:
            return batch
        time.sleep(0.1)
    raise AssertionError(f"batch {batch_id} still {batch.status}")


def client_for(server):
    return openai.OpenAI(base_url=server.url + "/v1", api_key="unused", max_retries=0)


@pytest.fixture(scope="module")
def batch_data_dir(tmp_path_factory):
    return tmp_path_factory.mktemp("data")


@pytest.fixture(scope="module")
def batch_server(tokenmill, default_model, batch_data_dir):
    process = start_server(tokenmill, default_model, "-t", "2", "--data-dir", str(batch_data_dir))
    yield process
    assert process.stop() == 0, process.log()


@pytest.fixture(scope="module")
def client(batch_server):
    return client_for(batch_server)


def outputs(client, batch):
    lines = []
    for file_id in (batch.output_file_id, batch.error_file_id):
        if file_id:
            lines += [json.loads(line) for line in client.files.content(file_id).text.splitlines()]
    return lines


def test_files_upload_list_content_delete(client, tmp_path):
    path = write_lines(tmp_path / "in.jsonl", [chat_line(i) for i in range(3)])
    uploaded = client.files.create(file=open(path, "rb"), purpose="batch")
    assert uploaded.bytes == path.stat().st_size and uploaded.purpose == "batch" and uploaded.filename == "in.jsonl"
    assert client.files.retrieve(uploaded.id).id == uploaded.id
    assert client.files.content(uploaded.id).content == path.read_bytes()
    assert uploaded.id in [f.id for f in client.files.list(purpose="batch").data]
    assert uploaded.id not in [f.id for f in client.files.list(purpose="user_data").data]
    other = client.files.create(file=("notes.txt", b"hello"), purpose="user_data")
    first_page = client.files.list(limit=1)
    assert len(first_page.data) == 1 and first_page.has_more
    assert client.files.delete(other.id).deleted
    with pytest.raises(openai.NotFoundError):
        client.files.retrieve(other.id)
    with pytest.raises(openai.NotFoundError):
        client.files.content("file-doesnotexist")


def test_a_batch_runs_and_matches_interactive_answers(client, tmp_path):
    path = write_lines(tmp_path / "in.jsonl", [chat_line(i) for i in range(12)])
    uploaded = client.files.create(file=open(path, "rb"), purpose="batch")
    batch = client.batches.create(input_file_id=uploaded.id, endpoint="/v1/chat/completions",
                                  completion_window="24h", metadata={"job": "nightly"})
    assert batch.status == "validating" and batch.metadata == {"job": "nightly"}
    batch = wait_for(client, batch.id)
    assert batch.status == "completed", batch
    assert batch.request_counts.total == 12 and batch.request_counts.completed == 12
    assert batch.in_progress_at and batch.finalizing_at and batch.completed_at and batch.error_file_id is None
    lines = outputs(client, batch)
    assert sorted(line["custom_id"] for line in lines) == sorted(f"req-{i}" for i in range(12))
    for line in lines[:4]:
        i = int(line["custom_id"].split("-")[1])
        assert line["response"]["status_code"] == 200 and line["error"] is None
        alone = client.chat.completions.create(model="default", max_tokens=8, temperature=0,
                                               messages=[{"role": "user", "content": f"Say the number {i} in words."}])
        assert line["response"]["body"]["choices"][0]["message"]["content"] == alone.choices[0].message.content
    assert batch.id in [b.id for b in client.batches.list(limit=5).data]
    output_file = client.files.retrieve(batch.output_file_id)
    assert output_file.purpose == "batch_output"


def test_a_request_that_fails_alone_goes_to_the_error_file(client, tmp_path):
    good = [chat_line(0), chat_line(1)]
    bad = json.dumps({"custom_id": "bad", "method": "POST", "url": "/v1/chat/completions",
                      "body": {"model": "default", "messages": []}})
    uploaded = client.files.create(file=open(write_lines(tmp_path / "in.jsonl", good + [bad]), "rb"), purpose="batch")
    batch = wait_for(client, client.batches.create(input_file_id=uploaded.id, endpoint="/v1/chat/completions",
                                                   completion_window="24h").id)
    assert batch.status == "completed" and batch.request_counts.failed == 1 and batch.request_counts.completed == 2
    errors = [json.loads(line) for line in client.files.content(batch.error_file_id).text.splitlines()]
    assert [e["custom_id"] for e in errors] == ["bad"] and errors[0]["response"]["status_code"] == 400


def test_validation_fails_the_batch_with_line_numbers(client, tmp_path):
    lines = [chat_line(0), chat_line(0), chat_line(2, url="/v1/completions"), chat_line(3, model="no-such-model")]
    uploaded = client.files.create(file=open(write_lines(tmp_path / "in.jsonl", lines), "rb"), purpose="batch")
    batch = wait_for(client, client.batches.create(input_file_id=uploaded.id, endpoint="/v1/chat/completions",
                                                   completion_window="24h").id)
    assert batch.status == "failed" and batch.failed_at
    found = {(e.code, e.line) for e in batch.errors.data}
    assert found == {("duplicate_custom_id", 2), ("mismatched_endpoint", 3), ("model_not_found", 4)}


def anonymous_kib(pid):
    """The process's resident anonymous memory (heap and stacks, not mapped files)."""
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("RssAnon:"):
                return int(line.split()[1])
    raise AssertionError("no RssAnon")


def incoming_files(data_dir):
    return [name for name in os.listdir(data_dir / "files") if name.startswith(".incoming-")]


def test_a_large_upload_streams_to_disk_and_a_cut_one_leaves_nothing(batch_server, batch_data_dir, client, tmp_path):
    """A 160 MiB upload is written to a file as it arrives, and its content is sent back a
    piece at a time: the server's heap grows by far less than the file while it uploads or
    sends it (sampled every 5 ms), and the bytes are the sent ones. An upload whose client
    leaves half-way leaves no file behind."""
    size = 160 << 20
    path = tmp_path / "big.bin"
    block = os.urandom(1 << 20)
    with open(path, "wb") as f:
        for i in range(size >> 20):
            f.write(block[i:] + block[:i])
    pid = batch_server.proc.pid

    def heap_growth_mib(action):
        before = anonymous_kib(pid)
        peak = [before]
        running = threading.Event()
        running.set()

        def sample():
            while running.is_set():
                peak[0] = max(peak[0], anonymous_kib(pid))
                time.sleep(0.005)

        sampler = threading.Thread(target=sample)
        sampler.start()
        try:
            result = action()
        finally:
            running.clear()
            sampler.join()
        return result, (peak[0] - before) / 1024

    uploaded, growth_mib = heap_growth_mib(lambda: client.files.create(file=open(path, "rb"), purpose="user_data"))
    assert uploaded.bytes == size
    assert growth_mib < 40, f"the server's heap grew by {growth_mib:.0f} MiB during a 160 MiB upload"
    content, growth_mib = heap_growth_mib(lambda: client.files.content(uploaded.id).content)
    assert growth_mib < 40, f"the server's heap grew by {growth_mib:.0f} MiB sending a 160 MiB file"
    assert hashlib.sha256(content).hexdigest() == hashlib.sha256(path.read_bytes()).hexdigest()
    client.files.delete(uploaded.id)
    assert incoming_files(batch_data_dir) == []

    host, port = batch_server.url.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port))) as cut:
        cut.sendall(b"POST /v1/files HTTP/1.1\r\nHost: x\r\nContent-Type: multipart/form-data; boundary=b\r\n"
                    b"Content-Length: 50000000\r\n\r\n--b\r\n" + b"x" * (4 << 20))
        deadline = time.monotonic() + 10
        while not incoming_files(batch_data_dir) and time.monotonic() < deadline:
            time.sleep(0.01)
        assert incoming_files(batch_data_dir), "the upload was not being spooled to the data directory"
    deadline = time.monotonic() + 10
    while incoming_files(batch_data_dir) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert incoming_files(batch_data_dir) == []


def test_bad_uploads_and_bad_batches_are_4xx(client, tmp_path):
    with pytest.raises(openai.BadRequestError) as not_json:
        client.files.create(file=("in.jsonl", b'{"custom_id": "a"}\n{"custom_id": "b", "body": {'), purpose="batch")
    assert "Line 2" in str(not_json.value)
    with pytest.raises(openai.BadRequestError) as not_utf8:
        client.files.create(file=("in.jsonl", b'{"custom_id": "\xff\xfe"}\n'), purpose="batch")
    assert "UTF-8" in str(not_utf8.value)
    with pytest.raises(openai.BadRequestError):
        client.files.create(file=("in.jsonl", b"x"), purpose="nonsense")
    uploaded = client.files.create(file=open(write_lines(tmp_path / "in.jsonl", [chat_line(0)]), "rb"),
                                   purpose="batch")
    with pytest.raises(openai.BadRequestError):
        client.batches.create(input_file_id=uploaded.id, endpoint="/v1/chat/completions", completion_window="1h")
    with pytest.raises(openai.BadRequestError):
        client.batches.create(input_file_id=uploaded.id, endpoint="/v1/chat/completions", completion_window="24h",
                              metadata={f"k{i}": "v" for i in range(17)})
    with pytest.raises(openai.BadRequestError):
        client.batches.create(input_file_id=uploaded.id, endpoint="/v1/images", completion_window="24h")
    with pytest.raises(openai.BadRequestError) as no_embedding_model:
        client.batches.create(input_file_id=uploaded.id, endpoint="/v1/embeddings", completion_window="24h")
    assert "--embedding-model" in str(no_embedding_model.value)
    with pytest.raises(openai.NotFoundError):
        client.batches.create(input_file_id="file-missing", endpoint="/v1/chat/completions", completion_window="24h")
    client.files.delete(uploaded.id)
    with pytest.raises(openai.NotFoundError):
        client.batches.create(input_file_id=uploaded.id, endpoint="/v1/chat/completions", completion_window="24h")
    with pytest.raises(openai.NotFoundError):
        client.batches.retrieve("batch_missing")


def test_cancel_keeps_the_results_so_far(client, tmp_path):
    lines = [chat_line(i, max_tokens=48) for i in range(200)]
    uploaded = client.files.create(file=open(write_lines(tmp_path / "in.jsonl", lines), "rb"), purpose="batch")
    batch = client.batches.create(input_file_id=uploaded.id, endpoint="/v1/chat/completions", completion_window="24h")
    wait_for(client, batch.id, statuses=("in_progress",))
    # Four cancels at once: each answered, the batch cancelled once.
    with concurrent.futures.ThreadPoolExecutor(4) as pool:
        answers = list(pool.map(lambda _: client.batches.cancel(batch.id), range(4)))
    assert all(a.status in ("cancelling", "cancelled") for a in answers)
    assert any(a.status == "cancelling" for a in answers)
    batch = wait_for(client, batch.id)
    assert batch.status == "cancelled" and batch.cancelled_at and batch.cancelling_at
    done = outputs(client, batch)
    assert len(done) < 200 and len({line["custom_id"] for line in done}) == len(done)
    with pytest.raises(openai.ConflictError):
        finished = client.files.create(file=open(write_lines(tmp_path / "one.jsonl", [chat_line(0)]), "rb"),
                                       purpose="batch")
        completed = wait_for(client, client.batches.create(input_file_id=finished.id,
                                                           endpoint="/v1/chat/completions",
                                                           completion_window="24h").id)
        assert completed.status == "completed"
        client.batches.cancel(completed.id)


def assert_each_line_once_as_interactive(client, batch, n, max_tokens):
    """The batch completed with every custom_id of its n lines exactly once across its
    output and error files, and (for a sample) the answer the same request gets alone."""
    assert batch.status == "completed", batch
    assert batch.request_counts.completed == n
    done = outputs(client, batch)
    ids = [line["custom_id"] for line in done]
    assert len(ids) == n and set(ids) == {f"req-{i}" for i in range(n)}
    for line in done[:: n // 5]:
        i = int(line["custom_id"].split("-")[1])
        alone = client.chat.completions.create(model="default", max_tokens=max_tokens, temperature=0,
                                               messages=[{"role": "user", "content": f"Say the number {i} in words."}])
        assert line["response"]["body"]["choices"][0]["message"]["content"] == alone.choices[0].message.content


@pytest.mark.parametrize("kill_after", [40, 300])
def test_a_killed_server_resumes_without_losing_or_repeating_a_line(tokenmill, default_model, tmp_path, kill_after):
    data = tmp_path / "data"
    lines = [chat_line(i, max_tokens=6) for i in range(N_CRASH)]
    path = write_lines(tmp_path / "in.jsonl", lines)
    server = start_server(tokenmill, default_model, "-t", "2", "--data-dir", str(data))
    client = client_for(server)
    uploaded = client.files.create(file=open(path, "rb"), purpose="batch")
    batch = client.batches.create(input_file_id=uploaded.id, endpoint="/v1/chat/completions", completion_window="24h")
    deadline = time.monotonic() + 300
    while client.batches.retrieve(batch.id).request_counts.completed < kill_after:
        assert time.monotonic() < deadline
        time.sleep(0.05)
    server.proc.send_signal(signal.SIGKILL)
    server.proc.wait()

    server = start_server(tokenmill, default_model, "-t", "2", "--data-dir", str(data))
    try:
        client = client_for(server)
        assert_each_line_once_as_interactive(client, wait_for(client, batch.id, timeout=600), N_CRASH, 6)
    finally:
        assert server.stop() == 0, server.log()


@pytest.mark.parametrize("step", ["output recorded", "files recorded"])
def test_a_server_killed_while_finalizing_finishes_with_each_line_once(tokenmill, default_model, tmp_path, step):
    """Finalizing writes the output file and records it, then the error file (none here),
    then records the batch as completed. The server's test hook pauses after each step,
    naming it in the log; SIGKILL comes inside the pause: after the output file is recorded
    but before the batch names it, or after both files are recorded."""
    data = tmp_path / "data"
    path = write_lines(tmp_path / "in.jsonl", [chat_line(i, max_tokens=2) for i in range(N_CRASH)])
    pause = {"TOKENMILL_TEST_FINALIZE_PAUSE_MS": "60000"}
    server = start_server(tokenmill, default_model, "-t", "2", "--data-dir", str(data), env=pause)
    client = client_for(server)
    uploaded = client.files.create(file=open(path, "rb"), purpose="batch")
    batch = client.batches.create(input_file_id=uploaded.id, endpoint="/v1/chat/completions", completion_window="24h")
    marker = f"batch {batch.id} finalize step: {step}"
    try:
        deadline = time.monotonic() + 300
        while marker not in server.log():
            assert time.monotonic() < deadline, server.log()
            time.sleep(0.05)
        assert client.batches.retrieve(batch.id).status == "finalizing"
    finally:
        server.proc.send_signal(signal.SIGKILL)  # also when the step never came: no server left behind
        server.proc.wait()

    server = start_server(tokenmill, default_model, "-t", "2", "--data-dir", str(data))
    try:
        client = client_for(server)
        again = wait_for(client, batch.id)
        assert_each_line_once_as_interactive(client, again, N_CRASH, 2)
        named = [f for f in client.files.list(purpose="batch_output") if f.filename == f"{batch.id}_output.jsonl"]
        assert [f.id for f in named] == [again.output_file_id]
    finally:
        assert server.stop() == 0, server.log()


def test_a_full_disk_is_507_and_a_batch_waits_for_room_losing_nothing(tokenmill, default_model, tmp_path):
    """The data directory lies on an 8 MiB tmpfs (room for SQLite's write-ahead log, which
    grows to 4 MiB between checkpoints), mounted in a user and mount namespace of
    the server's own (unshare), so the test needs no privileges. Uploads that do not fit
    are 507 and leave the stored files intact; a batch whose results do not fit waits,
    and finishes with every line once when room is made."""
    small = tmp_path / "small"
    small.mkdir()
    script = (f"mount -t tmpfs -o size=8m tmpfs {small} && exec {tokenmill} serve -m {default_model} -t 2 "
              f"--host 127.0.0.1 --port 0 --data-dir {small / 'data'}")
    server = start_server(tokenmill, None, command=["unshare", "-rm", "sh", "-c", script])
    try:
        client = client_for(server)
        n = 200
        uploaded = client.files.create(file=open(write_lines(tmp_path / "in.jsonl",
                                                             [chat_line(i, max_tokens=16) for i in range(n)]), "rb"),
                                       purpose="batch")
        batch = client.batches.create(input_file_id=uploaded.id, endpoint="/v1/chat/completions",
                                      completion_window="24h")
        fillers = []
        with pytest.raises(openai.APIStatusError) as full:
            for _ in range(64):
                fillers.append(client.files.create(file=("fill.bin", b"x" * 262144), purpose="user_data").id)
        assert full.value.status_code == 507 and "disk is full" in str(full.value)
        assert fillers, "the disk was full before the first filler"
        assert client.files.content(uploaded.id).text == (tmp_path / "in.jsonl").read_text()

        def fill(size):
            with pytest.raises(openai.APIStatusError) as refused:
                for _ in range(256):
                    fillers.append(client.files.create(file=("fill.bin", b"x" * size), purpose="user_data").id)
            assert refused.value.status_code == 507

        # An upload is spooled before it is stored, so a refused one may leave up to twice
        # its size free, which the batch's results can still use: smaller fillers take it
        # until the disk refuses a result.
        for size in (65536, 16384, 4096):
            fill(size)
        deadline = time.monotonic() + 60
        while "cannot record a result" not in server.log() and time.monotonic() < deadline:
            time.sleep(0.5)
            fill(4096)
        assert "cannot record a result" in server.log()  # the full disk refused some, which run again
        stalled = client.batches.retrieve(batch.id)
        assert stalled.status == "in_progress" and stalled.request_counts.completed < n
        for file_id in fillers:
            client.files.delete(file_id)
        batch = wait_for(client, batch.id, timeout=600)
        assert batch.status == "completed" and batch.request_counts.completed == n, batch
        ids = [line["custom_id"] for line in outputs(client, batch)]
        assert sorted(ids) == sorted(f"req-{i}" for i in range(n))
    finally:
        assert server.stop() == 0, server.log()
