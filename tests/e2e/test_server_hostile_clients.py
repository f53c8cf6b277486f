"""Hostile clients on real loopback sockets: oversized and malformed requests, slowloris,
thousands of idle connections, abandoned streams, a burst far beyond --max-seqs, and a
client that never reads its stream. After each the server still answers everyone else,
and once it is quiet every KV block and window slot is back in the pool."""
import concurrent.futures
import resource
import selectors
import socket
import threading
import time

import pytest
import requests

from conftest import start_server

MODEL = "gemma-3-270m-q4_k_m"
HEADER_TIMEOUT = 2


def raise_fd_limit(wanted):
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < wanted:
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(wanted, hard), hard))
    assert resource.getrlimit(resource.RLIMIT_NOFILE)[0] >= wanted, "this machine's open-file limit is too low"


@pytest.fixture(scope="module")
def hostile_server(tokenmill, default_model):
    process = start_server(tokenmill, default_model, "-t", "2", "--max-seqs", "16", "--max-queue", "64",
                           "--header-timeout", str(HEADER_TIMEOUT), "--body-timeout", "3",
                           "--keep-alive-timeout", "5", "--max-stream-buffer", "65536")
    yield process
    assert process.stop() == 0, process.log()


def address(server):
    host, port = server.url.removeprefix("http://").split(":")
    return host, int(port)


def exchange(server, raw, timeout=10):
    """Sends raw bytes on a fresh connection and returns what comes back until it closes."""
    with socket.create_connection(address(server), timeout=timeout) as s:
        try:
            s.sendall(raw)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the server answered and closed before the last bytes went out
        reply = b""
        try:
            while chunk := s.recv(65536):
                reply += chunk
        except ConnectionResetError:
            pass
        return reply


def metrics(server):
    text = requests.get(server.url + "/metrics", timeout=10).text
    values = {}
    for line in text.splitlines():
        if line and not line.startswith("#") and "{" not in line:
            name, value = line.split()
            values[name] = float(value)
    return values


def assert_quiet_and_nothing_leaked(server, within=30):
    deadline = time.monotonic() + within
    while True:
        m = metrics(server)
        idle = m["tokenmill_requests_running"] == 0 and m["tokenmill_requests_waiting"] == 0
        if idle and m["tokenmill_kv_blocks_free"] == m["tokenmill_kv_blocks_total"] and \
                m["tokenmill_kv_window_slots_held"] == 0:
            return m
        assert time.monotonic() < deadline, f"the server never came back to idle with every block free: {m}"
        time.sleep(0.2)


def quick_completion(server, timeout=10):
    start = time.monotonic()
    response = requests.post(server.url + "/v1/completions", timeout=timeout,
                             json={"model": MODEL, "prompt": "The capital of France is", "max_tokens": 2,
                                   "temperature": 0})
    assert response.status_code == 200, response.text
    return time.monotonic() - start


def test_a_one_mebibyte_header_line_is_431(hostile_server):
    reply = exchange(hostile_server, b"GET /health HTTP/1.1\r\nX-Big: " + b"a" * (1 << 20) + b"\r\n\r\n")
    assert reply.startswith(b"HTTP/1.1 431"), reply[:200]
    quick_completion(hostile_server)


def test_ten_thousand_header_fields_are_431(hostile_server):
    fields = b"".join(b"X-F%d: v\r\n" % i for i in range(10_000))
    reply = exchange(hostile_server, b"GET /health HTTP/1.1\r\nHost: a\r\n" + fields + b"\r\n")
    assert reply.startswith(b"HTTP/1.1 431"), reply[:200]
    # Under the byte limit but over the field limit (100) is refused too.
    fields = b"".join(b"X-%d: v\r\n" % i for i in range(150))
    reply = exchange(hostile_server, b"GET /health HTTP/1.1\r\nHost: a\r\n" + fields + b"\r\n")
    assert reply.startswith(b"HTTP/1.1 431"), reply[:200]
    assert b"header fields" in reply


def test_a_content_length_of_a_terabyte_is_413_at_once(hostile_server):
    start = time.monotonic()
    reply = exchange(hostile_server, b"POST /v1/completions HTTP/1.1\r\nHost: a\r\nContent-Type: application/json\r\n"
                                     b"Content-Length: 1000000000000\r\n\r\n")
    assert reply.startswith(b"HTTP/1.1 413"), reply[:200]
    assert time.monotonic() - start < 2


def test_bad_chunked_encoding_is_400(hostile_server):
    reply = exchange(hostile_server, b"POST /v1/completions HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n"
                                     b"zz\r\nhello\r\n0\r\n\r\n")
    assert reply.startswith(b"HTTP/1.1 400"), reply[:200]
    reply = exchange(hostile_server, b"POST /v1/completions HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n"
                                     b"ffffffffffffffffff\r\n")
    assert reply.startswith(b"HTTP/1.1 4"), reply[:200]


def test_a_body_too_large_for_its_timeout_is_cut(hostile_server):
    """A body announced but never sent: the connection is closed after --body-timeout."""
    with socket.create_connection(address(hostile_server), timeout=15) as s:
        s.sendall(b"POST /v1/completions HTTP/1.1\r\nHost: a\r\nContent-Length: 100\r\n\r\n{")
        start = time.monotonic()
        assert s.recv(4096) == b""
        assert 2.5 < time.monotonic() - start < 8


def test_400_slowloris_connections_do_not_starve_a_normal_client(hostile_server):
    raise_fd_limit(4096)
    sockets = []
    for _ in range(400):
        s = socket.create_connection(address(hostile_server), timeout=10)
        s.sendall(b"POST /v1/completions HTTP/1.1\r\nHost: a\r\n")
        sockets.append(s)
    opened = time.monotonic()
    # Trickle a byte of header now and then, as slowloris does, while a normal client asks.
    for s in sockets[:200]:
        s.sendall(b"X")
    assert quick_completion(hostile_server) < 2
    for s in sockets[200:]:
        s.sendall(b"Y")
    assert quick_completion(hostile_server) < 2
    # The header deadline closes every one of them.
    closed = 0
    for s in sockets:
        s.settimeout(max(0.1, opened + HEADER_TIMEOUT + 5 - time.monotonic()))
        try:
            closed += s.recv(1) == b""
        except ConnectionResetError:
            closed += 1
        except socket.timeout:
            pass
        s.close()
    assert closed == 400


def test_3000_idle_connections_are_held_and_then_closed(hostile_server):
    raise_fd_limit(8192)
    sockets = [socket.create_connection(address(hostile_server), timeout=10) for _ in range(3000)]
    opened = time.monotonic()
    assert quick_completion(hostile_server) < 2
    m = metrics(hostile_server)
    assert m["tokenmill_http_connections"] >= 3000
    selector = selectors.DefaultSelector()
    for s in sockets:
        s.setblocking(False)
        selector.register(s, selectors.EVENT_READ)
    closed = 0
    while closed < 3000 and time.monotonic() < opened + HEADER_TIMEOUT + 10:
        for key, _ in selector.select(timeout=1):
            try:
                data = key.fileobj.recv(1)
            except ConnectionResetError:
                data = b""
            assert data == b"", "an idle connection got bytes"
            selector.unregister(key.fileobj)
            key.fileobj.close()
            closed += 1
    assert closed == 3000
    assert time.monotonic() - opened > HEADER_TIMEOUT - 0.5


def test_300_streams_abandoned_midway(hostile_server):
    def abandon(i):
        body = {"model": MODEL, "prompt": f"Story number {i}:", "max_tokens": 200, "stream": True}
        with requests.post(hostile_server.url + "/v1/completions", json=body, stream=True, timeout=60) as response:
            if response.status_code == 429:
                return "refused"
            assert response.status_code == 200
            for line in response.iter_lines():
                if line.startswith(b"data: {"):
                    return "abandoned"  # closing the response closes the connection mid-stream
        return "finished"

    with concurrent.futures.ThreadPoolExecutor(max_workers=64) as pool:
        outcomes = list(pool.map(abandon, range(300)))
    assert outcomes.count("abandoned") >= 200, outcomes
    assert_quiet_and_nothing_leaked(hostile_server)
    quick_completion(hostile_server)


def test_a_burst_of_1500_requests_is_served_or_refused_never_hung(hostile_server):
    raise_fd_limit(8192)
    request = (b"POST /v1/completions HTTP/1.1\r\nHost: a\r\nContent-Type: application/json\r\nConnection: close\r\n"
               b"Content-Length: %d\r\n\r\n")
    body = b'{"model": "default", "prompt": "Count: one, two,", "max_tokens": 2}'
    raw = request % len(body) + body
    selector = selectors.DefaultSelector()
    replies = {}
    for i in range(1500):
        s = socket.create_connection(address(hostile_server), timeout=10)
        s.sendall(raw)
        s.setblocking(False)
        replies[s] = b""
        selector.register(s, selectors.EVENT_READ)
    deadline = time.monotonic() + 120
    open_sockets = len(replies)
    while open_sockets and time.monotonic() < deadline:
        for key, _ in selector.select(timeout=1):
            try:
                data = key.fileobj.recv(65536)
            except ConnectionResetError:
                data = b""
            if data:
                replies[key.fileobj] += data
                continue
            selector.unregister(key.fileobj)
            key.fileobj.close()
            open_sockets -= 1
    assert open_sockets == 0, f"{open_sockets} requests still unanswered after 120 s"
    statuses = [reply.split(b" ", 2)[1] if reply.startswith(b"HTTP/1.1 ") else b"none" for reply in replies.values()]
    served, refused = statuses.count(b"200"), statuses.count(b"429") + statuses.count(b"503")
    assert served + refused == 1500, {s: statuses.count(s) for s in set(statuses)}
    assert served >= 16 + 64 and refused > 0
    refusal = next(r for r in replies.values() if r.startswith(b"HTTP/1.1 429"))
    assert b"Retry-After: 1" in refusal
    assert metrics(hostile_server)["tokenmill_requests_refused_total"] > 0
    assert_quiet_and_nothing_leaked(hostile_server)


def test_a_client_that_never_reads_its_stream_is_dropped(hostile_server):
    """Eight choices with 20 log-probabilities each write far more than the socket buffers
    hold; the server buffers at most --max-stream-buffer for this client, then drops it and
    cancels its request, while everyone else is served."""
    body = (b'{"model": "default", "prompt": "Once upon a time", "max_tokens": 1500, "n": 8, "logprobs": 20, '
            b'"temperature": 1, "stream": true}')
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    s.connect(address(hostile_server))
    s.sendall(b"POST /v1/completions HTTP/1.1\r\nHost: a\r\nContent-Type: application/json\r\n"
              b"Content-Length: %d\r\n\r\n" % len(body) + body)
    stop = threading.Event()
    latencies = []

    def others():
        while not stop.is_set():
            latencies.append(quick_completion(hostile_server, timeout=30))

    worker = threading.Thread(target=others)
    worker.start()
    try:
        deadline = time.monotonic() + 300  # a few seconds here; minutes under ThreadSanitizer
        while time.monotonic() < deadline and metrics(hostile_server)["tokenmill_http_slow_readers_dropped_total"] < 1:
            time.sleep(0.5)
        assert metrics(hostile_server)["tokenmill_http_slow_readers_dropped_total"] == 1
        assert "dropping a client that stopped reading" in hostile_server.log()
    finally:
        stop.set()
        worker.join()
        s.close()
    assert latencies and max(latencies) < 30
    assert_quiet_and_nothing_leaked(hostile_server)


def test_too_many_connections_are_refused_at_once(tokenmill, default_model):
    process = start_server(tokenmill, default_model, "-t", "1", "--max-connections", "50")
    try:
        held = [socket.create_connection(address(process), timeout=10) for _ in range(50)]
        time.sleep(0.3)  # the server has accepted them all
        start = time.monotonic()
        refused = exchange(process, b"GET /health HTTP/1.1\r\nHost: a\r\n\r\n")
        assert refused.startswith(b"HTTP/1.1 503"), refused[:200]
        assert b"Retry-After: 1" in refused
        assert time.monotonic() - start < 2
        for s in held:
            s.close()
        deadline = time.monotonic() + 10
        while not exchange(process, b"GET /health HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n").startswith(
                b"HTTP/1.1 200"):
            assert time.monotonic() < deadline, "connections closed by their clients were never counted out"
            time.sleep(0.1)
        assert metrics(process)["tokenmill_http_connections_refused_total"] >= 1
    finally:
        assert process.stop() == 0, process.log()


def test_request_timeout_cuts_a_long_answer(tokenmill, default_model):
    process = start_server(tokenmill, default_model, "-t", "2", "--request-timeout", "1")
    try:
        start = time.monotonic()
        response = requests.post(process.url + "/v1/completions", timeout=60,
                                 json={"model": MODEL, "prompt": "Once upon a time", "max_tokens": 4000,
                                       "ignore_eos": True, "temperature": 0})
        elapsed = time.monotonic() - start
        assert response.status_code == 200, response.text
        body = response.json()
        assert body["choices"][0]["finish_reason"] == "length"
        assert 0 < body["usage"]["completion_tokens"] < 4000
        assert 0.9 < elapsed < 10
        assert_quiet_and_nothing_leaked(process)
    finally:
        assert process.stop() == 0, process.log()
