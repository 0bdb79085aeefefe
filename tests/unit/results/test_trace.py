"""Attempt traces (docs/spec.md#traces): the rules in the results file, what targets record, and
what the runner stores (masked, truncated with the sha256 of the full text)."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from pathlib import Path

import pytest
from fakes.openai_server import openai_server as openai_server  # the fixture
from fakes.suites import write_suite

from evals.common.errors import InputFileError
from evals.results.files import load_results
from evals.results.model import Results
from evals.results.trace import CONTENT_LIMIT, TOOL_RESULT_LIMIT, TraceError, build_trace, tool_pairs
from evals.run.targets.openai_chat import conversation_events

CALL = {"kind": "tool_call", "name": "search", "content": '{"q": "x"}'}
RESULT = {"kind": "tool_result", "name": "search", "content": "found"}


def results_file(tmp_path: Path, trace: list[dict]) -> Path:
    data = {
        "schema_version": 1,
        "run": {"suite": "s", "status": "success", "total_cases": 1, "completed_cases": 1},
        "cases": [{"id": "q-1", "attempts": [{"passed": True, "trace": trace}]}],
    }
    path = tmp_path / "results.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


def run_suite(config: Path, repo_root: Path, **env: str) -> Results:
    """``evalgate run`` in a subprocess; the results it wrote."""
    out = config.parent / "r.json"
    done = subprocess.run(
        [sys.executable, "-m", "evals", "run", "--config", str(config), "-o", str(out)],
        capture_output=True,
        text=True,
        env={"PYTHONPATH": str(repo_root), "EVALGATE_HISTORY": "off", "PATH": "/usr/bin:/bin", **env},
    )
    assert done.returncode == 0, done.stderr
    return load_results(out)


def test_pairs_follow_calls_in_order_per_tool() -> None:
    events = [(0, "message", "user"), (1, "tool_call", "a"), (2, "tool_call", "b"), (3, "tool_call", "a")]
    events += [(4, "tool_result", "a"), (5, "tool_error", "b"), (6, "tool_result", "a")]
    assert tool_pairs(events) == {1: 4, 2: 5, 3: 6}


@pytest.mark.parametrize(
    ("trace", "problem"),
    [
        ([{"seq": 0, "kind": "message"}, {"seq": 2, "kind": "log"}], "trace[1]: seq is 2, expected 1"),
        ([{"seq": 1, "kind": "message"}], "trace[0]: seq is 1, expected 0"),
        ([{"seq": 0, **CALL}, {"seq": 1, "kind": "message"}], "trace[0]: tool_call has no tool_result"),
        ([{"seq": 0, **RESULT}], "trace[0]: tool_result of 'search' answers no earlier tool_call"),
        ([{"seq": 0, **CALL}, {"seq": 1, **RESULT, "name": "other"}], "answers no earlier tool_call"),
        ([{"seq": 0, "kind": "thought"}], "kind"),
    ],
)
def test_results_file_refuses_broken_traces(tmp_path: Path, trace: list[dict], problem: str) -> None:
    with pytest.raises(InputFileError) as caught:
        load_results(results_file(tmp_path, trace))
    message = str(caught.value)
    assert problem in message and "case id 'q-1'" in message and "results.json" in message


def test_results_file_keeps_a_valid_trace(tmp_path: Path) -> None:
    trace = [{"seq": 0, "kind": "message", "name": "user", "content": "hi"}, {"seq": 1, **CALL, "content": "{}"}]
    trace.append({"seq": 2, **RESULT})
    loaded = load_results(results_file(tmp_path, trace))
    assert [e.kind for e in loaded.cases[0].attempts[0].trace] == ["message", "tool_call", "tool_result"]


@pytest.mark.e2e
def test_compare_on_a_broken_trace_is_exit_2(tmp_path: Path, repo_root: Path) -> None:
    path = results_file(tmp_path, [{"seq": 0, **CALL}])
    done = subprocess.run(
        [sys.executable, "-m", "evals", "compare", "--candidate", str(path)],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env={"PYTHONPATH": str(repo_root), "EVALGATE_HISTORY": "off", "PATH": "/usr/bin:/bin"},
    )
    assert done.returncode == 2 and "tool_call has no tool_result" in done.stderr and "Traceback" not in done.stderr


def test_build_trace_truncates_with_the_full_hash_and_masks() -> None:
    long_text = "x" * (CONTENT_LIMIT + 10)
    long_result = "y" * (TOOL_RESULT_LIMIT + 1)
    events = build_trace(
        [
            {"kind": "message", "name": "user", "content": long_text},
            {"kind": "tool_call", "name": "http", "content": {"url": "u", "api_key": "k-123", "n": 1}},
            {"kind": "tool_result", "name": "http", "content": long_result},
            {"kind": "log", "content": "Authorization: Bearer abcdef0123456789"},
        ],
        lambda value: __import__("evals.results.masking", fromlist=["x"]).mask_secrets(value),
    )
    assert [e.seq for e in events] == [0, 1, 2, 3]
    assert len(events[0].content) == CONTENT_LIMIT and events[0].truncated
    assert events[0].sha256 == "sha256:" + hashlib.sha256(long_text.encode()).hexdigest()
    assert len(events[2].content) == TOOL_RESULT_LIMIT and events[2].truncated
    assert json.loads(events[1].content) == {"url": "u", "api_key": "***", "n": 1}
    assert "abcdef0123456789" not in events[3].content and not events[3].truncated


def test_build_trace_names_the_bad_event() -> None:
    with pytest.raises(TraceError, match=r"trace\[1\]: an event is an object"):
        build_trace([{"kind": "log"}, "text"])
    with pytest.raises(TraceError, match="unknown key"):
        build_trace([{"kind": "log", "colour": 1}])


def test_a_conversation_given_by_the_case_is_messages_not_the_attempts_tool_calls() -> None:
    sent = [
        {"role": "system", "content": "be brief"},
        {"role": "user", "content": "weather?"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [{"id": "c1", "function": {"name": "wx", "arguments": "{}"}}],
        },
        {"role": "tool", "tool_call_id": "c1", "content": "sunny"},
    ]
    events = conversation_events(sent)
    assert [(e["kind"], e["name"], e["content"]) for e in events] == [
        ("message", "system", "be brief"),
        ("message", "user", "weather?"),
        ("message", "assistant", "[tool call] wx({})"),
        ("message", "tool", "sunny"),
    ]
    build_trace(events)  # a valid trace


@pytest.mark.e2e
def test_python_and_command_targets_return_traces(tmp_path: Path, repo_root: Path) -> None:
    (tmp_path / "agent.py").write_text(
        "def answer(q):\n"
        "    if q == 'bad':\n"
        "        return {'output': 'x', 'trace': [{'kind': 'tool_call', 'name': 't'}]}\n"
        "    return {'output': q, 'trace': [{'kind': 'message', 'name': 'user', 'content': q},\n"
        "        {'kind': 'tool_call', 'name': 'calc', 'content': {'password': 'hunter2'}},\n"
        "        {'kind': 'tool_error', 'name': 'calc', 'content': 'boom'},\n"
        "        {'kind': 'decision', 'name': 'final', 'content': q}]}\n",
        encoding="utf-8",
    )
    cases = [{"id": "ok", "input": "q1", "expected": "q1"}, {"id": "bad", "input": "bad", "expected": "x"}]
    config = write_suite(tmp_path, cases, target={"python": "agent:answer"}, scorers=["exact"])
    by_id = run_suite(config, repo_root).by_id()
    trace = by_id["ok"].attempts[0].trace
    assert [e.kind for e in trace] == ["message", "tool_call", "tool_error", "decision"]
    assert "hunter2" not in trace[1].content
    bad = by_id["bad"].attempts[0]
    assert bad.trace is None and bad.error.kind == "target" and "invalid trace" in bad.error.message

    script = tmp_path / "cmd.py"
    script.write_text(
        "import json, sys\ncase = json.load(sys.stdin)\n"
        "print(json.dumps({'output': case['input'], 'trace': [{'kind': 'log', 'content': 'ran'}]}))\n",
        encoding="utf-8",
    )
    config = write_suite(tmp_path, cases[:1], target={"command": [sys.executable, str(script)]}, scorers=["exact"])
    assert run_suite(config, repo_root).cases[0].attempts[0].trace[0].content == "ran"


def test_openai_target_records_the_exchange(tmp_path: Path, openai_server, repo_root: Path, monkeypatch) -> None:
    call = {"id": "t1", "type": "function", "function": {"name": "lookup", "arguments": '{"q": "x"}'}}
    openai_server.responder = lambda body: {"content": "let me look", "tool_calls": [call]}
    (tmp_path / "system.md").write_text("You are terse. api_key=sk-abcdefghijklmnopqrstuvwx", encoding="utf-8")
    target = {"openai": {"base_url": openai_server.url, "model": "local:m", "api_key_env": "T_KEY"}}
    target["openai"]["system_prompt"] = "system.md"
    config = write_suite(tmp_path, [{"id": "a", "input": "hello", "expected": "x"}], target=target)
    trace = run_suite(config, repo_root, T_KEY="secret-k").cases[0].attempts[0].trace
    # Without tools: nobody runs the call, and the trace says so in its (paired) result.
    assert [(e.kind, e.name) for e in trace] == [
        ("message", "system"),
        ("message", "user"),
        ("log", "step"),
        ("message", "assistant"),
        ("tool_call", "lookup"),
        ("tool_result", "lookup"),
    ]
    assert "sk-abcdefghijklmnop" not in trace[0].content and trace[1].content == "hello"
    assert json.loads(trace[4].content) == {"q": "x"}
    assert trace[5].content == "not executed: the target has no tools: to run it"


def test_report_case_diff_shows_a_failed_cases_last_events() -> None:
    from evals.compare.analysis import compare
    from evals.report.markdown import render_markdown
    from evals.results.model import Attempt, CaseResult, Results, RunInfo

    def run(passed: bool) -> Results:
        trace = build_trace(
            [
                {"kind": "message", "name": "user", "content": "q"},
                {"kind": "tool_call", "name": "web", "content": "{}"},
                {"kind": "tool_error", "name": "web", "content": "timeout <b>@team</b>"},
            ]
        )
        cases = [CaseResult(id="c1", attempts=[Attempt(passed=passed, trace=trace)])]
        cases += [CaseResult(id=f"c{i}", attempts=[Attempt(passed=True)]) for i in range(2, 30)]
        info = RunInfo(suite="s", status="success", total_cases=29, completed_cases=29)
        return Results(run=info, cases=cases)

    comparison = compare(run(True), run(False), None)
    entry = comparison.case_diff.pass_to_fail[0]
    assert [e["kind"] for e in entry.candidate_trace] == ["message", "tool_call", "tool_error"]
    text = render_markdown(comparison, kind="comment")
    assert "last trace events of the candidate" in text and "- #2 ✗ web: timeout" in text
    assert "<b>" not in text and "@team" not in text  # escaped: no HTML, no mention


@pytest.mark.e2e
def test_trace_without_results_reads_the_newer_default_file_and_names_it(tmp_path: Path, repo_root: Path) -> None:
    """A stale ./results.json (an earlier `evalgate run`) beside the last gate's
    .evalgate/out/results.json: trace read the stale one without a word. It reads the newer and
    says which; with neither, it says where it looked."""
    import os

    def write(path: Path, output: str, mtime: int) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        data = {
            "schema_version": 1,
            "run": {"suite": "s", "status": "success", "total_cases": 1, "completed_cases": 1},
            "cases": [{"id": "es-000", "attempts": [{"passed": True, "output": output}]}],
        }
        path.write_text(json.dumps(data), encoding="utf-8")
        os.utime(path, (mtime, mtime))

    def trace() -> subprocess.CompletedProcess:
        return subprocess.run(
            [sys.executable, "-m", "evals", "trace", "es-000"],
            cwd=tmp_path, capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(repo_root)},
        )  # fmt: skip

    none = trace()
    assert none.returncode == 2 and "neither ./results.json" in none.stderr and "--history" in none.stderr
    write(tmp_path / "results.json", "stale answer", 1_700_000_000)
    write(tmp_path / ".evalgate" / "out" / "results.json", "the gate's answer", 1_700_000_100)
    done = trace()
    assert done.returncode == 0, done.stderr
    assert "the gate's answer" in done.stdout and "stale answer" not in done.stdout
    assert done.stdout.startswith("case es-000 — .evalgate/out/results.json")
    assert "reading .evalgate/out/results.json, newer than results.json" in done.stderr

    os.utime(tmp_path / "results.json", (1_700_000_200, 1_700_000_200))  # a run after the gate
    done = trace()
    assert "stale answer" in done.stdout and "reading results.json, newer than .evalgate/out" in done.stderr


def test_trace_and_the_log_show_terminal_escapes_as_text(tmp_path: Path, repo_root: Path) -> None:
    """A model's output with raw escape sequences (clear the screen, retitle the window, an OSC 8
    link) reached the terminal through ``evalgate trace`` and the log; now each control is text."""
    import os

    nasty = "before\x1b[2J\x1b]0;pwned\x07\x1b]8;;http://evil.example\x1b\\link\x1b]8;;\x1b\\\x9b31mafter"
    data = {
        "schema_version": 1,
        "run": {"suite": "s", "status": "success", "total_cases": 1, "completed_cases": 1},
        "cases": [
            {
                "id": "esc-1",
                "attempts": [
                    {"passed": False, "output": nasty, "trace": [{"seq": 0, "kind": "log", "content": nasty}]}
                ],
            }
        ],
    }
    (tmp_path / "results.json").write_text(json.dumps(data), encoding="utf-8")
    done = subprocess.run(
        [sys.executable, "-m", "evals", "trace", "esc-1", "--results", "results.json"],
        cwd=tmp_path, capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(repo_root)},
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "\x1b" not in done.stdout and "\x07" not in done.stdout and "\x9b" not in done.stdout
    assert "before\\x1b[2J" in done.stdout and "\\x9b31mafter" in done.stdout


def test_the_funnel_shows_terminal_escapes_as_text(capsys, monkeypatch) -> None:
    from evals.results import console

    monkeypatch.delenv("GITHUB_ACTIONS", raising=False)
    console.warning("case \x1b[2Kid\x1b[1A failed", source="gate")
    console.relayed("child \x1b]0;title\x07 line")
    console.result("answer\x1b[31m red")
    out, err = capsys.readouterr()
    assert "\x1b" not in out + err and "\x07" not in err
    assert "case \\x1b[2Kid\\x1b[1A failed" in err and "child \\x1b]0;title\\x07 line" in err
    assert out == "answer\\x1b[31m red\n"
