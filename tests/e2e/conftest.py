"""Shared fixtures for the end-to-end tests: where the binary and the default model are."""
import os
import pathlib
import re
import signal
import subprocess
import tempfile
import time
import urllib.request

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]

# The servers the tests start listen on loopback; never send that through a proxy.
os.environ["NO_PROXY"] = os.environ["no_proxy"] = "127.0.0.1,localhost"


@pytest.fixture(scope="session")
def tokenmill():
    binary = pathlib.Path(os.environ.get("TOKENMILL_BIN", ROOT / "build" / "bin" / "tokenmill"))
    assert binary.exists(), f"{binary} is missing: run scripts/build first"
    return str(binary)


@pytest.fixture(scope="session")
def default_model():
    path = pathlib.Path(os.environ.get("TOKENMILL_MODEL", ROOT / "models" / "gemma-3-270m-q4_k_m.gguf"))
    assert path.exists(), f"{path} is missing: run scripts/setup first"
    return str(path)


def run(cmd, timeout=300, **kwargs):
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, **kwargs)


# --- tokenmill serve ---------------------------------------------------------------

class ServerProcess:
    """A `tokenmill serve` child process on a loopback port the OS picked."""

    def __init__(self, proc, url, log_path):
        self.proc = proc
        self.url = url          # "http://127.0.0.1:PORT"
        self.log_path = log_path

    def log(self):
        return pathlib.Path(self.log_path).read_text(errors="replace")

    def stop(self, timeout=60):
        """SIGTERM, then wait; returns the exit code."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        return self.proc.returncode


def start_server(binary, model, *extra_args, env=None, timeout=120, command=None):
    """Starts `tokenmill serve` on port 0 and waits until /health answers. command: a
    command line that execs the server itself (listening on 127.0.0.1, port 0) instead."""
    log = tempfile.NamedTemporaryFile(prefix="tokenmill-serve-", suffix=".log", delete=False)
    model_args = ["-m", model] if model else []  # None: a store server (--models-dir in extra_args)
    cmd = command or [binary, "serve", *model_args, "--host", "127.0.0.1", "--port", "0", *extra_args]
    proc = subprocess.Popen(cmd, stdout=log, stderr=log, env={**os.environ, **(env or {})})
    deadline = time.monotonic() + timeout
    url = None
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"tokenmill serve exited with {proc.returncode}:\n" + pathlib.Path(log.name).read_text())
        match = re.search(r"listening on (http://\S+)", pathlib.Path(log.name).read_text(errors="replace"))
        if match:
            url = match.group(1)
            break
        time.sleep(0.05)
    if url is None:
        proc.kill()
        raise RuntimeError("tokenmill serve did not start:\n" + pathlib.Path(log.name).read_text())
    while time.monotonic() < deadline:
        try:
            opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
            with opener.open(url + "/health", timeout=5) as response:
                if response.status == 200:
                    return ServerProcess(proc, url, log.name)
        except OSError:
            time.sleep(0.05)
    proc.kill()
    raise RuntimeError("tokenmill serve never became healthy:\n" + pathlib.Path(log.name).read_text())


@pytest.fixture(scope="session")
def server(tokenmill, default_model):
    """One server shared by the server tests (2 compute threads, prefix caching on)."""
    process = start_server(tokenmill, default_model, "-t", "2")
    yield process
    code = process.stop()
    assert code == 0, f"server exited with {code}:\n{process.log()}"


def read_corpus():
    """tests/fixtures/tokenizer/corpus.txt, one text a line, with \\n \\r \\t \\\\ escapes."""
    escapes = {"n": "\n", "r": "\r", "t": "\t", "\\": "\\"}
    texts = []
    for line in (ROOT / "tests" / "fixtures" / "tokenizer" / "corpus.txt").read_text(encoding="utf-8").split("\n")[:-1]:
        out, i = [], 0
        while i < len(line):
            if line[i] == "\\" and i + 1 < len(line) and line[i + 1] in escapes:
                out.append(escapes[line[i + 1]])
                i += 2
            else:
                out.append(line[i])
                i += 1
        texts.append("".join(out))
    return texts
