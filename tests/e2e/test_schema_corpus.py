"""Structured outputs over a corpus of real-world JSON Schemas (tests/fixtures/schema_corpus.jsonl,
written by tools/make_schema_corpus.py): Pydantic models, OpenAI strict tools, hand-written
Draft 2020-12 cases and Spring AI bean schemas. Every schema compiles and is enforced
whole; sampled answers that finish validate, formats included; the keywords a grammar
cannot enforce (tests/fixtures/schema_unenforceable.jsonl) are refused with "strict" and
reported in the response's "tokenmill.unenforced" without it; bad schemas are 400 naming
the problem, and the server answers normally after each.

TOKENMILL_CORPUS_SAMPLES (default 2) and TOKENMILL_CORPUS_MAX_TOKENS (default 384) set
how many answers each schema gets and how long they may be. The per-class table of
results is printed (pytest -s) and written to build/schema_corpus_results.json."""
import collections
import concurrent.futures
import json
import os
import re
import zlib

import pytest
import requests

from conftest import ROOT, start_server
from schema_check import validation_error

MODEL = "gemma-3-270m-q4_k_m"
FIXTURES = ROOT / "tests" / "fixtures"
CORPUS = [json.loads(line) for line in (FIXTURES / "schema_corpus.jsonl").read_text().splitlines() if line]
UNENFORCEABLE = [json.loads(line) for line in (FIXTURES / "schema_unenforceable.jsonl").read_text().splitlines()
                 if line]
SAMPLES = int(os.environ.get("TOKENMILL_CORPUS_SAMPLES", "2"))
MAX_TOKENS = int(os.environ.get("TOKENMILL_CORPUS_MAX_TOKENS", "384"))
WORKERS = 8
SERVER_TIMEOUT = 150  # --request-timeout: generation past this ends as "length"
CLIENT_TIMEOUT = (10, SERVER_TIMEOUT + 60)  # connect, read: a hung request fails instead of hanging the run
RESULTS = ROOT / "build" / "schema_corpus_results.json"

# The class of each unenforceable keyword in the fixtures, and the keywords that name it
# in an answer (if/then/else may be reported as any of the three).
UNENFORCEABLE_CLASSES = {"uniqueItems": ("uniqueItems",), "multipleOf": ("multipleOf",),
                         "if_then_else": ("if", "then", "else"), "dependentSchemas": ("dependentSchemas",)}


@pytest.fixture(scope="module")
def corpus_server(tokenmill, default_model):
    process = start_server(tokenmill, default_model, "-t", "2", "--request-timeout", str(SERVER_TIMEOUT))
    yield process
    assert process.stop() == 0, process.log()


def response_format(schema, strict=None):
    json_schema = {"name": "x", "schema": schema}
    if strict is not None:
        json_schema["strict"] = strict
    return {"type": "json_schema", "json_schema": json_schema}


def prompt(entry):
    """A short request for an instance, from the schema's title or the corpus name."""
    label = entry["schema"].get("title") or entry["name"]
    words = re.sub(r"(?<=[a-z0-9])(?=[A-Z])|[_\[\]]+", " ", label).strip().lower()
    return [{"role": "user", "content": f"Give an example {words} as JSON."}]


def chat(server, messages, **fields):
    body = {"model": MODEL, "messages": messages, **fields}
    return requests.post(server.url + "/v1/chat/completions", json=body, timeout=CLIENT_TIMEOUT)


def error_message(response):
    try:
        return response.json()["error"]["message"]
    except (ValueError, KeyError, TypeError):
        return response.text[:500]


def unenforced(body):
    """The keywords the server accepted but does not enforce: [{"keyword", "path"}, ...]."""
    return (body.get("tokenmill") or {}).get("unenforced") or []


def assert_still_answers(server):
    reply = chat(server, [{"role": "user", "content": "Say hi."}], max_tokens=2)
    assert reply.status_code == 200, reply.text
    schema = {"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]}
    reply = chat(server, [{"role": "user", "content": "Are you ok?"}], max_tokens=16, temperature=0,
                 response_format=response_format(schema))
    assert reply.status_code == 200, reply.text


def test_every_corpus_schema_compiles(corpus_server):
    def one(entry):
        try:
            reply = chat(corpus_server, prompt(entry), max_tokens=1, response_format=response_format(entry["schema"]))
        except requests.RequestException as e:
            return f"{entry['name']}: {type(e).__name__}: {e}"
        if reply.status_code != 200:
            return f"{entry['name']}: {reply.status_code} {error_message(reply)}"
        if unenforced(reply.json()):
            return f"{entry['name']}: accepted, but not enforced: {unenforced(reply.json())}"
        return None

    with concurrent.futures.ThreadPoolExecutor(WORKERS) as pool:
        failures = [f for f in pool.map(one, CORPUS) if f]
    for failure in failures:
        print(failure)
    assert not failures, f"{len(failures)} of {len(CORPUS)} schemas failed:\n" + "\n".join(failures)


def tally(results):
    """Per keyword class (and per source, and all): samples, finished ("stop"), valid."""
    rows = collections.defaultdict(collections.Counter)
    invalid = []
    for entry, choices in results:
        keys = ["all", f"source:{entry['source']}", *entry["classes"]]
        for choice in choices:
            finished = choice["finish_reason"] == "stop"
            error = None
            if finished:
                text = choice["message"].get("content") or ""
                try:
                    error = validation_error(json.loads(text), entry["schema"])
                except ValueError as e:  # JSONDecodeError
                    error = f"not JSON: {e}"
                if error:
                    invalid.append({"name": entry["name"], "choice": choice["index"], "error": error,
                                    "content": text[:400]})
            for key in keys:
                rows[key]["samples"] += 1
                rows[key]["finished"] += finished
                rows[key]["valid"] += finished and error is None
    return rows, invalid


def test_sampled_answers_validate(corpus_server):
    def one(entry):
        seed = zlib.crc32(entry["name"].encode()) % 2**31
        try:
            reply = chat(corpus_server, prompt(entry), max_tokens=MAX_TOKENS, temperature=1.0, seed=seed, n=SAMPLES,
                         response_format=response_format(entry["schema"]))
        except requests.RequestException as e:
            return entry, [], f"{entry['name']}: {type(e).__name__}: {e}"
        if reply.status_code != 200:
            return entry, [], f"{entry['name']}: {reply.status_code} {error_message(reply)}"
        return entry, reply.json()["choices"], None

    with concurrent.futures.ThreadPoolExecutor(WORKERS) as pool:
        answers = list(pool.map(one, CORPUS))
    errors = [error for _, _, error in answers if error]
    rows, invalid = tally((entry, choices) for entry, choices, _ in answers)

    order = ["all"] + sorted(k for k in rows if k.startswith("source:")) + sorted(
        k for k in rows if k != "all" and not k.startswith("source:"))
    print(f"\n{'class':32}{'samples':>9}{'finished':>10}{'valid':>7}")
    for key in order:
        print(f"{key:32}{rows[key]['samples']:>9}{rows[key]['finished']:>10}{rows[key]['valid']:>7}")
    for bad in invalid:
        print(f"INVALID {bad['name']} choice {bad['choice']}: {bad['error']}\n  {bad['content']!r}")
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps({"samples_per_schema": SAMPLES, "max_tokens": MAX_TOKENS, "schemas": len(CORPUS),
                                   "table": {k: dict(rows[k]) for k in order}, "invalid": invalid,
                                   "errors": errors}, indent=1) + "\n")

    assert not errors, f"{len(errors)} requests failed:\n" + "\n".join(errors)
    assert not invalid, f"{len(invalid)} finished answers are invalid (see {RESULTS})"
    total = rows["all"]
    assert total["samples"] == SAMPLES * len(CORPUS)
    assert total["finished"] >= 0.75 * total["samples"], (
        f"only {total['finished']} of {total['samples']} answers finished within {MAX_TOKENS} tokens")


def expected_keywords(entry):
    """The unenforceable keywords in a fixture, each as the names that may report it."""
    return [UNENFORCEABLE_CLASSES[c] for c in entry["classes"] if c in UNENFORCEABLE_CLASSES]


def names_keyword(message, keyword):
    # Short keywords are ordinary words: only quoted do they name the keyword.
    if len(keyword) <= 4:
        return re.search(rf"""['"`]{keyword}['"`]|if/then""", message) is not None
    return re.search(rf"(?<![A-Za-z]){keyword}(?![A-Za-z])", message) is not None


@pytest.mark.parametrize("entry", UNENFORCEABLE, ids=[e["name"] for e in UNENFORCEABLE])
def test_unenforceable_keyword_is_refused_when_strict(corpus_server, entry):
    assert expected_keywords(entry), entry
    reply = chat(corpus_server, prompt(entry), max_tokens=1, response_format=response_format(entry["schema"], True))
    assert reply.status_code == 400, reply.text
    message = error_message(reply)
    assert any(names_keyword(message, k) for group in expected_keywords(entry) for k in group), message


@pytest.mark.parametrize("entry", UNENFORCEABLE, ids=[e["name"] for e in UNENFORCEABLE])
def test_unenforceable_keyword_is_reported_when_not_strict(corpus_server, entry):
    reply = chat(corpus_server, prompt(entry), max_tokens=8, response_format=response_format(entry["schema"]))
    assert reply.status_code == 200, reply.text
    body = reply.json()
    assert "tokenmill" in body and "unenforced" in body["tokenmill"], body
    reported = body["tokenmill"]["unenforced"]
    assert isinstance(reported, list) and reported, body["tokenmill"]
    for item in reported:
        assert isinstance(item, dict) and isinstance(item.get("keyword"), str) and isinstance(item.get("path"), str), \
            reported
    keywords = {item["keyword"] for item in reported}
    for group in expected_keywords(entry):
        assert keywords & set(group), (group, reported)


def many_properties(count):
    return {"type": "object", "properties": {f"field_{i:06d}": {"type": "integer", "minimum": 0}
                                             for i in range(count)}}


BAD_SCHEMAS = [
    ("malformed", {"type": 5}, r"type"),
    ("unknown_ref", {"type": "object", "properties": {"a": {"$ref": "#/$defs/Nope"}}}, r"Nope"),
    ("back_reference", {"type": "string", "pattern": r"^(a)\1$"}, r"(?i)back-?reference"),
    ("look_ahead", {"type": "string", "pattern": "(?=a)"}, r"(?i)look"),
    ("conflicting_allOf", {"allOf": [{"type": "string"}, {"type": "integer"}]}, r"allOf"),
]


@pytest.mark.parametrize("schema, words", [(s, w) for _, s, w in BAD_SCHEMAS], ids=[n for n, _, _ in BAD_SCHEMAS])
def test_bad_schema_is_400_naming_the_problem(corpus_server, schema, words):
    reply = chat(corpus_server, [{"role": "user", "content": "x"}], max_tokens=1,
                 response_format=response_format(schema))
    assert reply.status_code == 400, reply.text
    assert re.search(words, error_message(reply)), error_message(reply)
    assert_still_answers(corpus_server)


def test_schema_over_a_megabyte_is_refused_naming_its_size(corpus_server):
    schema = many_properties(45_000)
    assert len(json.dumps(schema)) > 1_400_000
    reply = chat(corpus_server, [{"role": "user", "content": "x"}], max_tokens=1,
                 response_format=response_format(schema))
    assert reply.status_code in (400, 413), reply.text[:500]
    assert re.search(r"(?i)size|large|big|bytes|[KM]i?B|limit", error_message(reply)), error_message(reply)
    assert_still_answers(corpus_server)


def test_schema_nested_10000_deep_is_refused(corpus_server):
    # Built as text: Python's json module would hit its recursion limit on the way.
    depth = 10_000
    schema = '{"type":"array","items":' * depth + '{"type":"integer"}' + "}" * depth
    body = ('{"model":%s,"messages":[{"role":"user","content":"x"}],"max_tokens":1,'
            '"response_format":{"type":"json_schema","json_schema":{"name":"x","schema":%s}}}') % (
        json.dumps(MODEL), schema)
    reply = requests.post(corpus_server.url + "/v1/chat/completions", data=body.encode(),
                          headers={"Content-Type": "application/json"}, timeout=CLIENT_TIMEOUT)
    assert reply.status_code == 400, reply.text[:500]
    assert re.search(r"(?i)dep|deep|nest", error_message(reply)), error_message(reply)
    assert_still_answers(corpus_server)
