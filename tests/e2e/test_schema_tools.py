"""Forced tool calls whose parameters use the JSON Schema keywords beyond the basic
subset (integer bounds, patterns, formats, string lengths, a nested object), through the
official openai client on the default model: sampled at temperature 1, every call's
arguments parse and validate against its tool's parameters, formats included. A strict
function with a keyword no grammar enforces (uniqueItems) is refused naming it; without
"strict" the call is answered and the keyword listed in the response's
"tokenmill.unenforced"."""
import collections
import concurrent.futures
import copy
import json

import openai
import pytest

from schema_check import validation_error

MODEL = "gemma-3-270m-q4_k_m"
CALLS = 56

PLACE_ORDER = {"type": "function", "function": {
    "name": "place_order", "description": "Order a product for delivery",
    "parameters": {"type": "object", "properties": {
        "sku": {"type": "string", "pattern": "^[A-Z]{3}-[0-9]{4}$", "description": "e.g. ABC-1234"},
        "quantity": {"type": "integer", "minimum": 1, "maximum": 20},
        "priority": {"type": "string", "enum": ["low", "normal", "high"]},
        "ship_to": {"type": "object", "properties": {
            "zip": {"type": "string", "pattern": "^[0-9]{5}$"},
            "country": {"type": "string", "minLength": 2, "maxLength": 2}},
            "required": ["zip", "country"], "additionalProperties": False},
        "delivery_date": {"type": "string", "format": "date"}},
        "required": ["sku", "quantity", "priority", "ship_to", "delivery_date"], "additionalProperties": False}}}
LOOKUP_USER = {"type": "function", "function": {
    "name": "lookup_user", "description": "Look up a user account by id",
    "parameters": {"type": "object", "properties": {
        "user_id": {"type": "string", "format": "uuid"}, "include_history": {"type": "boolean"}},
        "required": ["user_id", "include_history"], "additionalProperties": False}}}
SCHEMAS = {t["function"]["name"]: t["function"]["parameters"] for t in (PLACE_ORDER, LOOKUP_USER)}
NAMED = {"type": "function", "function": {"name": "place_order"}}
QUESTIONS = [
    "Order 3 units of ABC-1234 to zip 94107 in the US, normal priority, delivered on 2025-07-01.",
    "I need 12 XYZ-0042 shipped to 10001, US, high priority, by June 3rd 2025.",
    "Look up user 3f2b8c1e-9a4d-4c2b-8f1e-2a9b7c6d5e4f and include their history.",
    "Who is user 0d6f7a10-1234-4bcd-9abc-0123456789ab? No history needed.",
    "Send two boxes of QRS-7788 to 60614 (US) as soon as possible.",
    "Reorder 20 units of LMN-5500 for the Berlin office, postcode 10115, country DE, low priority, next Monday.",
    "Check the account of user 7c9e6679-7425-40de-944b-e07fc1f90ae7 with order history.",
    "Please buy 5 of DEF-0001, ship to 73301 US, normal priority, deliver 2025-12-24.",
]

# A tool with a keyword no grammar enforces: distinct tags.
TAG_ITEM = {"name": "tag_item", "description": "Attach tags to a catalogue item",
            "parameters": {"type": "object", "properties": {
                "item_id": {"type": "integer", "minimum": 1},
                "tags": {"type": "array", "items": {"type": "string", "maxLength": 20}, "maxItems": 5,
                         "uniqueItems": True}},
                "required": ["item_id", "tags"], "additionalProperties": False}}
TAG_QUESTION = [{"role": "user", "content": "Tag item 42 as red, sale and new."}]


@pytest.fixture(scope="module")
def client(server):
    return openai.OpenAI(base_url=server.url + "/v1", api_key="none", max_retries=0, timeout=120)


def test_forced_calls_parse_and_validate(client):
    def one(i):
        tools = [PLACE_ORDER, LOOKUP_USER] if i % 4 < 2 else [LOOKUP_USER, PLACE_ORDER]
        tool_choice = "required" if i % 2 == 0 else NAMED
        reply = client.chat.completions.create(
            model=MODEL, messages=[{"role": "user", "content": QUESTIONS[i % len(QUESTIONS)]}], tools=tools,
            tool_choice=tool_choice, max_tokens=300, temperature=1.0, seed=i)
        return i, tool_choice, reply

    with concurrent.futures.ThreadPoolExecutor(8) as pool:
        results = list(pool.map(one, range(CALLS)))
    problems, called = [], collections.Counter()
    for i, tool_choice, reply in results:
        choice = reply.choices[0]
        if not choice.message.tool_calls:
            problems.append(f"call {i}: no tool call ({choice.finish_reason}): {choice.message.content!r}")
            continue
        for call in choice.message.tool_calls:
            name = call.function.name
            called[name] += 1
            if name not in SCHEMAS or (tool_choice == NAMED and name != "place_order"):
                problems.append(f"call {i}: called {name!r} under tool_choice {tool_choice}")
                continue
            try:
                error = validation_error(json.loads(call.function.arguments), SCHEMAS[name])
            except ValueError as e:
                error = f"not JSON: {e}"
            if error:
                problems.append(f"call {i}: {name} {call.function.arguments!r}: {error}")
        left = ((reply.model_extra or {}).get("tokenmill") or {}).get("unenforced")
        if left:
            problems.append(f"call {i}: accepted, but not enforced: {left}")
    assert not problems, "\n".join(problems)
    assert called["place_order"] >= CALLS // 2  # every named call, at least


def test_strict_function_with_unique_items_is_refused(client):
    with pytest.raises(openai.BadRequestError) as error:
        client.chat.completions.create(model=MODEL, messages=TAG_QUESTION,
                                       tools=[{"type": "function", "function": {**TAG_ITEM, "strict": True}}],
                                       tool_choice="required", max_tokens=100, temperature=0)
    assert "uniqueItems" in str(error.value)


def test_function_with_unique_items_is_answered_and_reported(client):
    raw = client.chat.completions.with_raw_response.create(
        model=MODEL, messages=TAG_QUESTION, tools=[{"type": "function", "function": TAG_ITEM}],
        tool_choice="required", max_tokens=100, temperature=0)
    body = raw.http_response.json()
    reported = body["tokenmill"]["unenforced"]
    assert any(item["keyword"] == "uniqueItems" and isinstance(item["path"], str) for item in reported), reported
    calls = raw.parse().choices[0].message.tool_calls
    assert calls and calls[0].function.name == "tag_item"
    # Everything but the unenforced keyword holds.
    enforced = copy.deepcopy(TAG_ITEM["parameters"])
    del enforced["properties"]["tags"]["uniqueItems"]
    assert validation_error(json.loads(calls[0].function.arguments), enforced) is None, calls[0].function.arguments
