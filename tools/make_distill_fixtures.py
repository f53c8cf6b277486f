#!/usr/bin/env python3
"""Writes tests/fixtures/distill/: a batch input and output pair in OpenAI's batch format
whose answers are each made to be dropped by one filter of `tokenmill distill` (or kept),
the filter expected for each custom_id (expected.json), and the JSON schema the json
filter checks them against (schema.json). The flags tests/e2e/test_cli_distill.py runs
them with are in that test.

    python3 tools/make_distill_fixtures.py
"""
import json
import pathlib

OUT = pathlib.Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "distill"

# (custom_id, prompt, answer, finish_reason, the filter that drops it or None)
CASES = [
    ("keep-1", "What is the capital of France?", '{"capital": "Paris", "country": "France"}', "stop", None),
    ("keep-2", "Give the boiling point of water.",
     '```json\n{"capital": "none", "country": "water boils at 100 C"}\n```', "stop", None),
    ("cut", "Tell a long story.", '{"capital": "Rome", "country": "It', "length", "truncated"),
    ("short", "Say something.", '{}', "stop", "min_length"),
    ("long", "Describe everything.", json.dumps({"capital": "x" * 400, "country": "y"}), "stop", "max_length"),
    ("no-capital", "Any JSON please.", '{"country": "Spain", "city": "Madrid"}', "stop", "require"),
    ("secret", "Leak the password.", '{"capital": "Paris", "country": "France", "password": "hunter2"}', "stop",
     "reject"),
    ("refuses", "Help me with this.", "I'm sorry, but I can't help with that request. \"capital\"", "stop", "refusal"),
    ("loops", "Repeat after me.", '"capital" ' + "the capital is the capital is " * 6, "stop", "repetition"),
    ("not-json", "Write prose.", 'The "capital" of Italy is Rome, which is lovely.', "stop", "json"),
    ("bad-schema", "Numbers as JSON.", '{"capital": 12, "country": "France"}', "stop", "json"),
    ("keep-1-again", "What is the capital of France?", '{"capital": "Paris",   "country": "France"}', "stop",
     "duplicate"),
    ("near", "Where is the capital of France located?", '{"capital": "Paris", "country": "France"}', "stop",
     "near_duplicate"),
    ("keep-3", "Capital of Japan?", '{"capital": "Tokyo", "country": "Japan, an island nation in East Asia"}', "stop",
     None),
]


def main():
    OUT.mkdir(parents=True, exist_ok=True)
    expected = {}
    with open(OUT / "batch_input.jsonl", "w") as fin, open(OUT / "batch_output.jsonl", "w") as fout:
        for cid, prompt, answer, finish, dropped_by in CASES:
            body = {"model": "teacher", "messages": [{"role": "system", "content": "Answer in JSON."},
                                                     {"role": "user", "content": prompt}], "max_tokens": 64}
            fin.write(json.dumps({"custom_id": cid, "method": "POST", "url": "/v1/chat/completions", "body": body})
                      + "\n")
            response = {"id": f"chatcmpl-{cid}", "object": "chat.completion", "created": 1, "model": "teacher",
                        "choices": [{"index": 0, "message": {"role": "assistant", "content": answer},
                                     "logprobs": None, "finish_reason": finish}],
                        "usage": {"prompt_tokens": 10, "completion_tokens": 10, "total_tokens": 20}}
            fout.write(json.dumps({"id": f"batch_req_{cid}", "custom_id": cid,
                                   "response": {"status_code": 200, "request_id": response["id"], "body": response},
                                   "error": None}) + "\n")
            expected[cid] = {"answer": answer, "dropped_by": dropped_by}
        # A request that failed has no answer to read.
        fin.write(json.dumps({"custom_id": "failed", "method": "POST", "url": "/v1/chat/completions",
                              "body": {"model": "teacher", "messages": []}}) + "\n")
        fout.write(json.dumps({"id": "batch_req_failed", "custom_id": "failed",
                               "response": {"status_code": 400, "request_id": "", "body": {"error": {"message": "x"}}},
                               "error": None}) + "\n")
    (OUT / "expected.json").write_text(json.dumps(expected, indent=1) + "\n")
    (OUT / "schema.json").write_text(json.dumps(
        {"type": "object", "required": ["capital", "country"],
         "properties": {"capital": {"type": "string"}, "country": {"type": "string"}}}, indent=1) + "\n")


if __name__ == "__main__":
    main()
