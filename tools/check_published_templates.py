#!/usr/bin/env python3
"""Checks our Jinja interpreter against Python's jinja2 on chat templates as models publish them.

The published templates are not ours to commit, so this script takes a directory of them
(`*.jinja` files, e.g. the `models/templates` folder of a llama.cpp checkout), renders each one
with jinja2 in Hugging Face's configuration on a set of conversations (plain turns, a system
prompt, tool definitions and tool calls, reasoning in earlier assistant turns, thinking on and
off), writes the results as fixtures in the format of tests/fixtures/chat_templates, and runs
tests/tokenizer/chat_template_test.cc over them (TOKENMILL_CHAT_TEMPLATE_FIXTURES).

    python3 tools/check_published_templates.py --templates DIR [--test-binary build/tests/test_tokenizer]

Prints one line per template: how many cases matched byte for byte, and the first difference
otherwise. A case that jinja2 itself cannot render (a template written for another engine's
extensions) is reported and left out. Exits non-zero when any rendered case differs.
"""

import argparse
import datetime
import json
import re
import subprocess
import sys
import tempfile
from pathlib import Path

import jinja2
from jinja2 import nodes
from jinja2.ext import Extension

sys.path.insert(0, str(Path(__file__).resolve().parent))
from make_template_fixtures import CONVERSATIONS, TOOL_CONVERSATION, TOOLS, TemplateRaised, make_environment, msg  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent

REASONING_CONVERSATION = [
    msg("system", "Think first."),
    msg("user", "What is 17 * 3?"),
    {"role": "assistant", "content": "51", "reasoning_content": "17 * 3 = 51."},
    msg("user", "And 51 + 1?"),
]

INLINE_THINKING_CONVERSATION = [
    msg("user", "What is 17 * 3?"),
    msg("assistant", "<think>\n17 * 3 = 51.\n</think>\n\n51"),
    msg("user", "And 51 + 1?"),
]

STRING_ARGUMENTS_CONVERSATION = [
    dict(m, tool_calls=[{"type": "function", "id": f"call_{i}", "function": {"name": c["function"]["name"],
                                                                            "arguments": json.dumps(c["function"]["arguments"])}}
                        for i, c in enumerate(m["tool_calls"])]) if "tool_calls" in m else m
    for m in TOOL_CONVERSATION
]

# (case name, messages, extra variables): the variables servers pass beside the messages.
EXTRA_CASES = [
    ("tools_defined", [msg("user", "Weather in Paris?")], {"tools": TOOLS}),
    ("tool_calls", TOOL_CONVERSATION, {"tools": TOOLS}),
    ("tool_calls_string_arguments", STRING_ARGUMENTS_CONVERSATION, {"tools": TOOLS}),
    ("reasoning_content", REASONING_CONVERSATION, {}),
    ("inline_thinking", INLINE_THINKING_CONVERSATION, {}),
    ("thinking_off", [msg("user", "Hi")], {"enable_thinking": False}),
    ("thinking_on", [msg("user", "Hi")], {"enable_thinking": True}),
    ("reasoning_effort", [msg("user", "Hi")], {"reasoning_effort": "high"}),
]


class GenerationTag(Extension):
    """{% generation %}...{% endgeneration %}: HF marks the assistant's tokens with it; the body renders as is."""

    tags = {"generation"}

    def parse(self, parser):
        lineno = next(parser.stream).lineno
        body = parser.parse_statements(("name:endgeneration",), drop_needle=True)
        return nodes.CallBlock(self.call_method("_render_body"), [], [], body).set_lineno(lineno)

    def _render_body(self, caller):
        return caller()


def make_published_environment():
    """HF's apply_chat_template environment, with the strftime_now global and generation tag it adds."""
    env = make_environment()
    env.add_extension(GenerationTag)
    env.globals["strftime_now"] = lambda fmt: datetime.datetime.now().strftime(fmt)
    return env


def special_tokens(source):
    """A bos/eos pair of the template's own family, so renders look like the model's."""
    for bos, eos in (("<|begin_of_text|>", "<|eot_id|>"), ("<|endoftext|>", "<|im_end|>"), ("<s>", "</s>")):
        if eos in source or bos in source:
            return bos, eos
    return "<s>", "</s>"


def render_case(env, template, variables):
    """jinja2's result: expected text, an error the template raised, or None when jinja2 fails."""
    try:
        return {"expected": template.render(**variables)}
    except TemplateRaised as e:
        return {"error": str(e)}
    except Exception:  # noqa: BLE001 -- a template jinja2 itself cannot run is not checked
        return None


def build_fixture(env, name, source):
    bos, eos = special_tokens(source)
    template = env.from_string(source)
    cases, skipped = [], []
    plan = [(f"{conv}/{'gen' if gen else 'nogen'}", messages, gen, None)
            for conv, messages in CONVERSATIONS.items() for gen in (False, True)]
    plan += [(case, messages, True, extra) for case, messages, extra in EXTRA_CASES]
    for case_name, messages, gen, extra in plan:
        variables = {"messages": messages, "add_generation_prompt": gen, "bos_token": bos, "eos_token": eos,
                     **(extra or {})}
        result = render_case(env, template, variables)
        if result is None:
            skipped.append(case_name)
            continue
        case = {"name": case_name, "messages": messages, "add_generation_prompt": gen}
        if extra is not None:
            case["extra_variables"] = extra
        case.update(result)
        cases.append(case)
    return {"name": name, "template": source, "bos_token": bos, "eos_token": eos, "cases": cases}, skipped


def fixture_name(path):
    return re.sub(r"[^A-Za-z0-9_]", "_", path.stem)


def run_test_binary(binary, fixture_dir, name):
    env = {"TOKENMILL_CHAT_TEMPLATE_FIXTURES": str(fixture_dir), "PATH": "/usr/bin:/bin"}
    result = subprocess.run([str(binary), f"--gtest_filter=Fixtures/ChatTemplateFixture.MatchesJinja2/{name}"],
                            env=env, capture_output=True, text=True)
    return result.returncode == 0, result.stdout


def first_failure(output):
    lines = output.splitlines()
    for i, line in enumerate(lines):
        if "Failure" in line:
            trace = next((l.strip() for l in lines[i:i + 40] if "Trace" in l or "trace" in l), "")
            detail = " ".join(l.strip() for l in lines[i + 1:i + 6])
            return (detail[:300] + (" | " + trace if trace else "")).strip()
    return "the test binary failed without a failure line"


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--templates", required=True, type=Path, help="a directory of published *.jinja chat templates")
    parser.add_argument("--test-binary", type=Path, default=ROOT / "build" / "tests" / "test_tokenizer")
    parser.add_argument("--only", default="", help="a substring a template's file name must contain")
    args = parser.parse_args()
    if not args.test_binary.exists():
        sys.exit(f"{args.test_binary} does not exist: build it first (cmake --build build --target test_tokenizer)")
    paths = sorted(p for p in args.templates.glob("*.jinja") if args.only in p.name)
    if not paths:
        sys.exit(f"no *.jinja files in {args.templates}")

    env = make_published_environment()
    n_failed = n_checked = 0
    with tempfile.TemporaryDirectory() as tmp:
        for path in paths:
            name = fixture_name(path)
            try:
                fixture, skipped = build_fixture(env, name, path.read_text())
            except jinja2.TemplateError as e:
                print(f"{path.name}: jinja2 cannot parse it ({e}); not checked")
                continue
            if not fixture["cases"]:
                print(f"{path.name}: jinja2 renders none of the cases; not checked")
                continue
            for old in Path(tmp).glob("*.json"):
                old.unlink()
            (Path(tmp) / f"{name}.json").write_text(json.dumps(fixture, ensure_ascii=False))
            ok, output = run_test_binary(args.test_binary, tmp, name)
            n_checked += 1
            note = f"; {len(skipped)} left out (jinja2 fails: {', '.join(skipped)})" if skipped else ""
            if ok:
                print(f"{path.name}: {len(fixture['cases'])} cases match{note}")
            else:
                n_failed += 1
                print(f"{path.name}: DIFFERS: {first_failure(output)}{note}")
    print(f"{n_checked} templates checked, {n_failed} differ (jinja2 {jinja2.__version__})")
    sys.exit(1 if n_failed else 0)


if __name__ == "__main__":
    main()
