"""`tokenmill pull`, `list`, `show`, `import`, `cp`, `rm` against a loopback mirror that
answers as a Hugging Face mirror does (tests/e2e/model_mirror.py)."""
import hashlib
import os
import pathlib
import resource
import signal
import subprocess
import sys
import threading

import pytest

from conftest import ROOT, run
from model_mirror import Mirror

SMALL_MODEL = ROOT / "models" / "all-minilm-l6-v2-f16.gguf"


@pytest.fixture(scope="module")
def other_model(tmp_path_factory):
    """A second small GGUF with other bytes: the same encoder converted to q8_0."""
    out = tmp_path_factory.mktemp("other") / "mini-q8_0.gguf"
    result = run([sys.executable, str(ROOT / "tools/convert_bert_gguf.py"), "--minilm", str(out), "--outtype", "q8_0"],
                 timeout=300)
    assert result.returncode == 0, result.stderr
    return out


@pytest.fixture(scope="module")
def small_bytes():
    assert SMALL_MODEL.exists(), "run scripts/setup first"
    return SMALL_MODEL.read_bytes()


@pytest.fixture()
def mirror(small_bytes):
    m = Mirror()
    m.add_repo_file("org/tiny-GGUF", "tiny-F16.gguf", small_bytes)
    yield m
    m.close()


@pytest.fixture()
def store(tmp_path):
    return tmp_path / "store"


def tm(tokenmill, store, *args, env=None, **kwargs):
    return run([tokenmill, *args, "--models-dir", str(store)], env={**os.environ, **(env or {})}, **kwargs)


def hf_env(mirror):
    return {"HF_ENDPOINT": mirror.url}


def blobs(store):
    d = store / "blobs"
    return sorted(p.name for p in d.iterdir()) if d.exists() else []


def test_pull_from_a_hugging_face_mirror(tokenmill, mirror, store, small_bytes):
    result = tm(tokenmill, store, "pull", "hf:org/tiny-GGUF/tiny-F16.gguf", env=hf_env(mirror))
    assert result.returncode == 0, result.stderr
    for status in ["pulling manifest", "downloading sha256:", "verifying sha256 digest", "writing manifest", "success"]:
        assert status in result.stderr
    sha = hashlib.sha256(small_bytes).hexdigest()
    assert blobs(store) == [f"sha256-{sha}"]
    assert (store / "blobs" / f"sha256-{sha}").read_bytes() == small_bytes
    assert mirror.bytes_sent == len(small_bytes)
    listing = tm(tokenmill, store, "list").stdout
    assert "tiny-f16:latest" in listing and sha[:12] in listing and "bert" in listing
    shown = tm(tokenmill, store, "show", "tiny-f16").stdout
    assert f"sha256:{sha}" in shown and "/resolve/main/tiny-F16.gguf" in shown
    assert list((store / "partial").glob("*.partial")) == []


def test_a_cut_download_resumes_with_the_rest(tokenmill, mirror, store, small_bytes):
    half = len(small_bytes) // 2
    mirror.cut_after = half
    first = tm(tokenmill, store, "pull", "hf:org/tiny-GGUF/tiny-F16.gguf", "tiny", env=hf_env(mirror))
    assert first.returncode != 0
    assert "run the same pull again to resume" in first.stderr
    assert tm(tokenmill, store, "list").stdout.count("\n") == 1, "nothing half-written is visible"
    sent_first = mirror.bytes_sent
    second = tm(tokenmill, store, "pull", "hf:org/tiny-GGUF/tiny-F16.gguf", "tiny", env=hf_env(mirror))
    assert second.returncode == 0, second.stderr
    sent_second = mirror.bytes_sent - sent_first
    rest = len(small_bytes) - half
    assert abs(sent_second - rest) <= len(small_bytes) * 0.02, (sent_first, sent_second, rest)
    sha = hashlib.sha256(small_bytes).hexdigest()
    assert (store / "blobs" / f"sha256-{sha}").read_bytes() == small_bytes


def test_a_wrong_checksum_installs_nothing(tokenmill, mirror, store):
    given = tm(tokenmill, store, "pull", "hf:org/tiny-GGUF/tiny-F16.gguf", "--sha256", "ab" * 32, env=hf_env(mirror))
    assert given.returncode != 0 and "expected abab" in given.stderr and "nothing was installed" in given.stderr
    mirror.wrong_etag = True
    announced = tm(tokenmill, store, "pull", "hf:org/tiny-GGUF/tiny-F16.gguf", env=hf_env(mirror))
    assert announced.returncode != 0 and "expected 0000" in announced.stderr
    assert blobs(store) == []
    assert not (store / "manifests").exists() or not any((store / "manifests").iterdir())
    assert list((store / "partial").glob("*.partial")) == []


def test_not_found_and_not_gguf_are_clear_errors(tokenmill, mirror, store):
    missing = tm(tokenmill, store, "pull", "hf:org/tiny-GGUF/nope.gguf", env=hf_env(mirror))
    assert missing.returncode != 0 and "404" in missing.stderr
    mirror.raw["page.gguf"] = ("text/html", b"<html><body>Sign in to continue</body></html>" * 50)
    html = tm(tokenmill, store, "pull", f"{mirror.url}/files/page.gguf")
    assert html.returncode != 0 and "not a usable GGUF file" in html.stderr
    bad_source = tm(tokenmill, store, "pull", "ftp://example/x.gguf")
    assert bad_source.returncode != 0 and "https://" in bad_source.stderr
    assert blobs(store) == []


def test_concurrent_pulls_share_one_download(tokenmill, mirror, store, small_bytes):
    mirror.throttle = 0.03  # per MiB: the download lasts long enough for the two to overlap
    env = {**os.environ, **hf_env(mirror)}
    cmd = [tokenmill, "pull", "hf:org/tiny-GGUF/tiny-F16.gguf", "--models-dir", str(store), "-q"]
    procs = [subprocess.Popen(cmd + [name], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for name in ("first", "second")]
    outs = [p.communicate(timeout=120) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], outs
    assert mirror.gets == 1 and mirror.bytes_sent == len(small_bytes)
    listing = tm(tokenmill, store, "list").stdout
    assert "first:latest" in listing and "second:latest" in listing
    assert len(blobs(store)) == 1


def test_a_quantization_picks_its_file_from_the_listing(tokenmill, mirror, store, small_bytes, other_model):
    other = other_model.read_bytes()
    mirror.add_repo_file("org/tiny-GGUF", "tiny-Q8_0.gguf", other)
    mirror.add_repo_file("org/tiny-GGUF", "README.md", b"# tiny")
    picked = tm(tokenmill, store, "pull", "hf:org/tiny-GGUF:Q8_0", env=hf_env(mirror))
    assert picked.returncode == 0, picked.stderr
    assert "tiny:q8_0" in tm(tokenmill, store, "list").stdout
    assert blobs(store) == [f"sha256-{hashlib.sha256(other).hexdigest()}"]
    mirror.add_repo_file("org/tiny-GGUF", "tiny-Q8_0-imatrix.gguf", small_bytes)
    ambiguous = tm(tokenmill, store, "pull", "hf:org/tiny-GGUF:Q8_0", env=hf_env(mirror))
    assert ambiguous.returncode != 0 and "tiny-Q8_0-imatrix.gguf" in ambiguous.stderr
    none = tm(tokenmill, store, "pull", "hf:org/tiny-GGUF:Q2_K", env=hf_env(mirror))
    assert none.returncode != 0 and "no .gguf file of quantization Q2_K" in none.stderr


def limited_file_size(limit):
    def apply():
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit fails with EFBIG instead
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
    return apply


def test_a_disk_that_fills_during_a_pull_leaves_the_store_consistent(tokenmill, mirror, store, small_bytes):
    cmd = [tokenmill, "pull", "hf:org/tiny-GGUF/tiny-F16.gguf", "--models-dir", str(store)]
    env = {**os.environ, **hf_env(mirror)}
    full = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=120,
                          preexec_fn=limited_file_size(8 << 20))
    assert full.returncode != 0 and "failed: File too large" in full.stderr, full.stderr
    assert tm(tokenmill, store, "list").stdout.count("\n") == 1
    assert blobs(store) == []
    # Room again: the pull resumes from what was written and completes.
    again = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=120)
    assert again.returncode == 0, again.stderr
    sha = hashlib.sha256(small_bytes).hexdigest()
    assert (store / "blobs" / f"sha256-{sha}").read_bytes() == small_bytes


def test_import_copy_remove_and_bad_names(tokenmill, store, tmp_path):
    imported = tm(tokenmill, store, "import", str(SMALL_MODEL), "mini:f16")
    assert imported.returncode == 0, imported.stderr
    assert tm(tokenmill, store, "cp", "mini:f16", "team/mini").returncode == 0
    listing = tm(tokenmill, store, "list").stdout
    assert "mini:f16" in listing and "team/mini:latest" in listing
    for bad in ["a/../b", "../x", "x:bad/tag", "x:t?g", ".hidden"]:
        result = tm(tokenmill, store, "import", str(SMALL_MODEL), bad)
        assert result.returncode != 0 and "must be" in result.stderr, bad
    assert not (tmp_path / "b").exists() and not (tmp_path / "x").exists()
    assert tm(tokenmill, store, "rm", "mini:f16").returncode == 0
    assert len(blobs(store)) == 1, "team/mini still names the blob"
    assert tm(tokenmill, store, "rm", "team/mini").returncode == 0
    assert blobs(store) == []
    gone = tm(tokenmill, store, "rm", "team/mini")
    assert gone.returncode != 0 and "not in the store" in gone.stderr


def test_a_corrupt_manifest_and_a_missing_blob_are_named(tokenmill, store, other_model):
    assert tm(tokenmill, store, "import", str(SMALL_MODEL), "kept").returncode == 0
    assert tm(tokenmill, store, "import", str(other_model), "lost").returncode == 0
    (store / "blobs" / f"sha256-{hashlib.sha256(other_model.read_bytes()).hexdigest()}").unlink()
    (store / "manifests" / "broken").mkdir(parents=True)
    (store / "manifests" / "broken" / "latest").write_text('{"schema_version": 1, "digest": ')
    listing = tm(tokenmill, store, "list")
    assert listing.returncode == 0
    assert "kept:latest" in listing.stdout and "lost:latest" in listing.stdout and "missing" in listing.stdout
    assert "broken" in listing.stderr and "corrupt" in listing.stderr
    shown = tm(tokenmill, store, "show", "broken")
    assert shown.returncode != 0 and "corrupt" in shown.stderr and "tokenmill rm broken:latest" in shown.stderr
    missing = tm(tokenmill, store, "show", "lost")
    assert missing.returncode != 0 and "missing" in missing.stderr
    assert tm(tokenmill, store, "show", "kept").returncode == 0
