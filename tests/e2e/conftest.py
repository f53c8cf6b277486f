"""Shared fixtures for the end-to-end tests: where the binary and the default model are."""
import os
import pathlib
import subprocess

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]


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
