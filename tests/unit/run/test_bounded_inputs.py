"""What comes from outside is bounded (docs/spec.md#reliability). JSON nested deeper than anything
real — a model's reply, its tool call's arguments, a command's stdout, an imported file:
``json.loads`` recurses per level, so 1,100 levels of brackets (2.2 KB) ended the whole run as an
internal error, its in-flight cases lost; now each is that attempt's error (the run goes on) or,
for a file, exit 2 naming it. And an imported case id of megabytes is shortened, staying distinct."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from fakes.openai_server import OpenAIServer, status, tool_results
from fakes.openai_server import openai_server as openai_server  # the fixture
from fakes.suites import echo_cases, write_suite

from evals.common import jsonsafe
from evals.run.execution import execute
from evals.suite.loading import load_config

DEEP = "[" * 1100 + "]" * 1100
NEAR = "[" * 900 + "]" * 900  # parses under the interpreter's limit, then breaks what walks it


def test_loads_refuses_deep_values_as_invalid_json():
    for text in (DEEP, NEAR, '{"a": ' + NEAR + "}"):
        with pytest.raises(json.JSONDecodeError, match="nested more than 128 levels deep"):
            jsonsafe.loads(text)
        with pytest.raises(json.JSONDecodeError, match="nested more than 128 levels deep"):
            jsonsafe.loads(text.encode())  # a reply's bytes, as the runner reads them
    assert jsonsafe.loads("[" * 128 + "]" * 128) is not None
    assert jsonsafe.loads('{"a": [1, {"b": 2}]}') == {"a": [1, {"b": 2}]}
    # Brackets inside strings are counted too: many of them send a shallow value to the walk, which passes it.
    assert jsonsafe.loads(json.dumps({"text": "[{" * 200})) == {"text": "[{" * 200}


TOOLS = """
def lookup(city) -> str:
    return "sunny"
"""


def deep_caller(body: dict[str, Any]) -> dict[str, Any] | str:
    """A model whose first step calls a tool with arguments nested 1,100 deep, then answers with
    what it was told."""
    results = tool_results(body)
    if not results:
        call = {
            "id": "call_0",
            "type": "function",
            "function": {"name": "lookup", "arguments": '{"city": ' + DEEP + "}"},
        }
        return {"role": "assistant", "content": None, "tool_calls": [call]}
    return f"FINAL ANSWER: {results[-1][:60]}"


def openai_suite(tmp_path: Path, server: OpenAIServer, **openai: Any) -> Path:
    target = {"openai": {"base_url": server.url, "model": "local:m", "api_key_env": None, **openai}}
    return write_suite(
        tmp_path, echo_cases(3), target=target, scorers=["contains"], retries={"max": 0, "backoff_s": [0]}
    )


def test_tool_arguments_nested_too_deep_are_the_tools_error_not_a_crash(tmp_path, openai_server):
    openai_server.responder = deep_caller
    (tmp_path / "deep_tools.py").write_text(TOOLS, encoding="utf-8")
    config = openai_suite(tmp_path, openai_server, tools={"lookup": "deep_tools:lookup"})
    results = execute(load_config(config), tmp_path / "r.json", progress=False)
    outputs = [c.attempts[0].output or "" for c in results.cases]
    assert len(outputs) == 3
    assert all("not JSON" in out and "nested more than" in out for out in outputs), outputs


def test_a_reply_nested_too_deep_is_that_attempts_error(tmp_path, openai_server):
    openai_server.script(None, status(200, body='{"choices": ' + DEEP + "}"))
    config = openai_suite(tmp_path, openai_server)
    results = execute(load_config(config), tmp_path / "r.json", progress=False)
    errors = [c.attempts[0].error for c in results.cases]
    broken = [e for e in errors if e is not None]
    assert len(broken) == 1 and "malformed response" in broken[0].message
    assert sum(c.attempts[0].passed is True for c in results.cases) == 2  # the others went on


def test_a_command_printing_deep_json_is_that_attempts_error(tmp_path):
    deep_answer = '{"output": ' + NEAR + "}"
    (tmp_path / "bot.py").write_text(
        "import json, sys\ncase = json.load(sys.stdin)\n"
        f"print({deep_answer!r} if case['id'] == 'c000' else json.dumps({{'output': case['input']}}))\n",
        encoding="utf-8",
    )
    config = write_suite(tmp_path, echo_cases(3), target={"command": [sys.executable, "bot.py"]}, scorers=["exact"])
    results = execute(load_config(config), tmp_path / "r.json", progress=False)
    by_id = {c.id: c.attempts[0] for c in results.cases}
    assert by_id["c000"].error is not None and "did not print" in by_id["c000"].error.message
    assert by_id["c001"].passed and by_id["c002"].passed


@pytest.mark.parametrize(
    ("fmt", "suffix"),
    [
        ("auto", ".json"),
        ("promptfoo", ".json"),
        ("deepeval", ".json"),
        ("openai_evals", ".jsonl"),
        ("braintrust", ".json"),
    ],
)
def test_importing_a_deep_file_is_exit_2_naming_it(tmp_path, fmt, suffix):
    path = tmp_path / f"results{suffix}"
    path.write_text('{"results": ' + DEEP + "}\n", encoding="utf-8")
    done = subprocess.run(
        [sys.executable, "-m", "evals", "import", "--from", fmt, str(path), "-o", str(tmp_path / "out.json")],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 2, done.stderr
    assert str(path) in done.stderr and "Traceback" not in done.stderr


def test_an_imported_id_of_megabytes_is_shortened_and_stays_distinct(tmp_path):
    """pytest's parametrised names carry their arguments: a 20 MB id was kept whole."""
    long_a, long_b = "test_api[" + "a" * 2_000_000 + "x]", "test_api[" + "a" * 2_000_000 + "y]"
    report = {
        "created": 1.0,
        "duration": 1.0,
        "exitcode": 1,
        "root": str(tmp_path),
        "environment": {},
        "summary": {"passed": 2, "total": 3},
        "collectors": [],
        "tests": [
            {"nodeid": f"t.py::{name}", "lineno": 1, "outcome": outcome, "keywords": [], "setup": {}, "call": {}}
            for name, outcome in ((long_a, "passed"), (long_b, "failed"), ("test_short", "passed"))
        ],
    }
    path = tmp_path / "report.json"
    path.write_text(json.dumps(report), encoding="utf-8")
    out = tmp_path / "out.json"
    done = subprocess.run(
        [sys.executable, "-m", "evals", "import", "--from", "pytest_json", str(path), "-o", str(out)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert "longer than 512 characters were shortened" in done.stderr
    ids = [case["id"] for case in json.loads(out.read_text(encoding="utf-8"))["cases"]]
    assert len(ids) == len(set(ids)) == 3 and max(len(i) for i in ids) <= 512
    assert any(i.endswith("test_short") for i in ids)
