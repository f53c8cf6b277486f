"""Security defaults: an API key from a file never shows in the process's command line,
CORS is off unless --cors-origin names an origin, and then only that origin gets the
Access-Control headers (preflights answered without the key, as browsers send them)."""
import pathlib

import requests

from conftest import start_server

KEY = "sk-test-0123456789abcdef"


def test_api_key_file_and_cors_origin(tokenmill, default_model, tmp_path):
    key_file = tmp_path / "key"
    key_file.write_text(KEY + "\n")
    process = start_server(tokenmill, default_model, "-t", "1", "--api-key-file", str(key_file),
                           "--cors-origin", "http://app.example")
    try:
        assert KEY not in pathlib.Path(f"/proc/{process.proc.pid}/cmdline").read_text()
        assert requests.get(process.url + "/v1/models").status_code == 401
        ok = requests.get(process.url + "/v1/models", headers={"Authorization": "Bearer " + KEY})
        assert ok.status_code == 200 and "Access-Control-Allow-Origin" not in ok.headers

        page = {"Origin": "http://app.example"}
        preflight = requests.options(process.url + "/v1/chat/completions",
                                     headers={**page, "Access-Control-Request-Method": "POST",
                                              "Access-Control-Request-Headers": "authorization, content-type"})
        assert preflight.status_code == 204
        assert preflight.headers["Access-Control-Allow-Origin"] == "http://app.example"
        assert "POST" in preflight.headers["Access-Control-Allow-Methods"]
        assert "Authorization" in preflight.headers["Access-Control-Allow-Headers"]

        answer = requests.get(process.url + "/v1/models", headers={**page, "Authorization": "Bearer " + KEY})
        assert answer.status_code == 200
        assert answer.headers["Access-Control-Allow-Origin"] == "http://app.example"
        refused = requests.get(process.url + "/v1/models", headers=page)  # the key is still required
        assert refused.status_code == 401 and refused.headers["Access-Control-Allow-Origin"] == "http://app.example"
        # The key never comes back in an error.
        wrong = requests.get(process.url + "/v1/models", headers={**page, "Authorization": "Bearer " + KEY + "x"})
        assert wrong.status_code == 401 and KEY not in wrong.text

        other = requests.get(process.url + "/v1/models",
                             headers={"Origin": "http://evil.example", "Authorization": "Bearer " + KEY})
        assert other.status_code == 200 and "Access-Control-Allow-Origin" not in other.headers
        other_preflight = requests.options(process.url + "/v1/chat/completions",
                                           headers={"Origin": "http://evil.example",
                                                    "Access-Control-Request-Method": "POST"})
        assert other_preflight.status_code != 204 and "Access-Control-Allow-Origin" not in other_preflight.headers
    finally:
        assert process.stop() == 0, process.log()


def test_cors_is_off_by_default(server):
    answer = requests.get(server.url + "/v1/models", headers={"Origin": "http://app.example"})
    assert answer.status_code == 200 and "Access-Control-Allow-Origin" not in answer.headers
    preflight = requests.options(server.url + "/v1/models", headers={"Origin": "http://app.example",
                                                                     "Access-Control-Request-Method": "GET"})
    assert preflight.status_code in (404, 405) and "Access-Control-Allow-Origin" not in preflight.headers


def test_bad_api_key_files_are_refused(tokenmill, default_model, tmp_path):
    import subprocess
    empty = tmp_path / "empty"
    empty.write_text("\n")
    for path, message in ((tmp_path / "missing", "cannot read"), (empty, "no key")):
        result = subprocess.run([tokenmill, "serve", "-m", default_model, "--port", "0", "--api-key-file", str(path)],
                                capture_output=True, text=True, timeout=120)
        assert result.returncode != 0 and message in result.stderr, result.stderr


def tiny_model_with_template(path, template):
    import sys
    sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2] / "tools"))
    import make_fuzz_corpus
    path.write_bytes(make_fuzz_corpus.tiny_model("llama", template))
    return str(path)


def test_a_hostile_chat_template_in_the_file_is_refused_not_fatal(tokenmill, tmp_path):
    """Such a file once aborted serve and run --chat at start (std::out_of_range)."""
    import subprocess
    model = tiny_model_with_template(tmp_path / "hostile.gguf", "{{ 99999999999999999999 }}")
    result = subprocess.run([tokenmill, "run", "-m", model, "--chat", "-p", "ab", "-n", "2"],
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 1 and "out of range" in result.stderr, result.stderr
    process = start_server(tokenmill, model, "-t", "1")
    try:
        chat = requests.post(process.url + "/v1/chat/completions",
                             json={"model": "default", "messages": [{"role": "user", "content": "ab"}], "max_tokens": 2})
        assert chat.status_code == 400 and "out of range" in chat.json()["error"]["message"]
        text = requests.post(process.url + "/v1/completions", json={"model": "default", "prompt": "ab", "max_tokens": 2})
        assert text.status_code == 200
    finally:
        assert process.stop() == 0, process.log()


def test_a_template_that_builds_huge_strings_is_stopped(tokenmill, tmp_path):
    model = tiny_model_with_template(
        tmp_path / "greedy.gguf",
        "{% set ns = namespace(x='ab') %}{% for i in range(64) %}{% set ns.x = ns.x ~ ns.x %}{% endfor %}{{ ns.x }}")
    process = start_server(tokenmill, model, "-t", "1")
    try:
        chat = requests.post(process.url + "/v1/chat/completions",
                             json={"model": "default", "messages": [{"role": "user", "content": "ab"}], "max_tokens": 2})
        assert chat.status_code == 400 and "MiB" in chat.json()["error"]["message"]
        assert requests.get(process.url + "/health").status_code == 200
    finally:
        assert process.stop() == 0, process.log()
