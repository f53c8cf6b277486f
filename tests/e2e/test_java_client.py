"""docs/integrations/Client.java, the dependency-free Java client, against a live server:
it streams an answer, makes a tool call whose arguments parse, and sends the result back."""
import json
import pathlib
import re
import shutil
import subprocess

import pytest

from conftest import ROOT

CLIENT = ROOT / "docs" / "integrations" / "Client.java"


@pytest.mark.skipif(shutil.which("java") is None, reason="no JDK: scripts/setup installs one")
def test_java_client_streams_and_calls_a_tool(server):
    result = subprocess.run(["java", str(CLIENT), server.url], capture_output=True, text=True, timeout=240)
    assert result.returncode == 0, result.stdout + result.stderr
    lines = result.stdout.splitlines()
    assert lines[0].startswith("streamed: ") and len(result.stdout.split("tool call:")[0]) > len("streamed: ") + 3
    call = next(line for line in lines if line.startswith("tool call: "))
    name, arguments = call[len("tool call: "):].split(" ", 1)
    assert name == "get_weather"
    assert isinstance(json.loads(arguments)["city"], str)
    assert re.search(r"^tool result: \{.*\}$", result.stdout, re.M)
    assert any(line.startswith("answer: ") for line in lines)
