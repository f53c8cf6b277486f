"""Malformed model files: one clear line on stderr, a non-zero exit, never a crash."""
import pathlib

import pytest

from conftest import ROOT, run

CORPUS = sorted((ROOT / "tests" / "fixtures" / "gguf_corrupt").glob("*.gguf"))


def test_corpus_is_large_enough():
    assert len(CORPUS) >= 20


@pytest.mark.parametrize("path", CORPUS, ids=[p.name for p in CORPUS])
@pytest.mark.parametrize("command", ["info", "run"])
def test_corrupt_file_gives_one_line_error(tokenmill, path, command):
    args = [tokenmill, command, str(path)] if command == "info" else [tokenmill, "run", "-m", str(path), "-p", "x"]
    result = run(args, timeout=60)
    assert result.returncode == 1, (result.returncode, result.stderr)  # not a signal
    lines = [l for l in result.stderr.splitlines() if l.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr


def test_missing_file(tokenmill, tmp_path):
    result = run([tokenmill, "info", str(tmp_path / "nope.gguf")])
    assert result.returncode == 1 and "does not exist" in result.stderr


def test_directory_instead_of_file(tokenmill, tmp_path):
    result = run([tokenmill, "info", str(tmp_path)])
    assert result.returncode == 1 and "not a regular file" in result.stderr


def test_unsupported_architecture(tokenmill, tmp_path):
    # A well-formed GGUF whose architecture we do not implement.
    import struct

    def string(s):
        b = s.encode()
        return struct.pack("<Q", len(b)) + b

    data = b"GGUF" + struct.pack("<IQQ", 3, 0, 1) + string("general.architecture") + struct.pack("<I", 8) + string("mamba")
    path = tmp_path / "mamba.gguf"
    path.write_bytes(data)
    result = run([tokenmill, "run", "-m", str(path), "-p", "x"])
    assert result.returncode == 1 and "architecture 'mamba' is not supported" in result.stderr
