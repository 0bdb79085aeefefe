"""Trajectory scorers (docs/spec.md#trajectory-scorers): ``tool_used``, ``tool_sequence`` in each mode, ``max_steps``
and ``tool_args`` on an attempt's trace events; each a 0/1 named score outside the answer's verdict (unless
``in_verdict``), no verdict where the case or the trace says nothing, and config errors that name the file and line."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from evals.run.scorers.base import ScorerError
from evals.run.scorers.builtin import build_scorers, score_attempt
from evals.suite.cases import Case
from evals.suite.scoring import ScorerSpec


def call(name: str, args: Any = None) -> list[dict[str, Any]]:
    arguments = None if args is None else json.dumps(args)
    return [{"kind": "tool_call", "name": name, "content": arguments}, {"kind": "tool_result", "name": name}]


def trace(*calls: list[dict[str, Any]], steps: int = 0) -> list[dict[str, Any]]:
    events = [{"kind": "log", "name": "step", "content": f"step {i + 1}"} for i in range(steps)]
    return events + [e for c in calls for e in c]


def case(**metadata: Any) -> Case:
    return Case(id="c1", input="q", expected="42", metadata=metadata)


def judge(scorer: str | dict[str, Any], events: list[dict[str, Any]] | None, c: Case) -> float | None:
    (s,) = build_scorers([ScorerSpec.model_validate(scorer)], Path("."))
    result = score_attempt([s], "whatever", c, events)
    assert result.passed is None and result.score is None  # a trajectory stays out of the answer's verdict
    return result.scores.get(s.name)


SEARCH_FETCH = trace(call("search", {"q": "x"}), call("fetch", {"url": "u", "n": 1}), call("search", {"q": "y"}))


@pytest.mark.parametrize(
    ("mode", "expected", "score"),
    [
        ("exact", ["search", "fetch", "search"], 1.0),
        ("exact", ["search", "fetch"], 0.0),  # a call more than expected
        ("exact", ["fetch", "search", "search"], 0.0),  # another order
        ("in_order", ["search", "search"], 1.0),  # others may come between
        ("in_order", ["fetch", "search"], 1.0),
        ("in_order", ["fetch", "fetch"], 0.0),  # called once, expected twice
        ("in_order", ["search", "fetch", "fetch"], 0.0),
        ("any_order", ["fetch", "search"], 1.0),
        ("any_order", ["search", "search", "fetch"], 1.0),
        ("any_order", ["fetch", "fetch"], 0.0),
        ("any_order", ["lookup"], 0.0),
    ],
)
def test_tool_sequence_modes(mode, expected, score):
    assert judge({"tool_sequence": {"mode": mode}}, SEARCH_FETCH, case(tools=expected)) == score


def test_tool_sequence_reads_expected_when_told_and_judges_nothing_the_case_does_not_say():
    from_expected = Case(id="c", input="q", expected={"answer": "42", "calls": ["search", "fetch", "search"]})
    assert judge({"tool_sequence": {"source": "expected", "key": "calls"}}, SEARCH_FETCH, from_expected) == 1.0
    as_list = Case(id="c", input="q", expected=["search"])
    assert judge({"tool_sequence": {"source": "expected", "mode": "in_order"}}, SEARCH_FETCH, as_list) == 1.0
    assert judge("tool_sequence", SEARCH_FETCH, case()) is None  # the case expects no sequence
    assert judge("tool_sequence", None, case(tools=["search"])) is None  # no trace: unknown, not "no tool"
    assert judge("tool_sequence", [], case(tools=[])) == 1.0  # a trace without calls, and none expected


def test_tool_used_by_name_or_from_the_case():
    assert judge({"tool_used": {"tool": "fetch"}}, SEARCH_FETCH, case()) == 1.0
    assert judge({"tool_used": {"tool": ["fetch", "lookup"]}}, SEARCH_FETCH, case()) == 0.0
    assert judge("tool_used", SEARCH_FETCH, case(tools=["search"])) == 1.0
    assert judge("tool_used", trace(), case(tools=["search"])) == 0.0
    assert judge("tool_used", SEARCH_FETCH, case()) is None


def test_max_steps_counts_the_model_calls_of_the_trace():
    assert judge({"max_steps": {"max": 3}}, trace(call("search"), steps=3), case()) == 1.0
    assert judge({"max_steps": {"max": 2}}, trace(call("search"), steps=3), case()) == 0.0
    assert judge({"max_steps": {"max": 2}}, trace(call("search")), case()) is None  # no step marked


def test_tool_args_is_a_json_subset_match_per_call_in_order():
    def args(*calls: dict[str, Any]) -> float | None:
        return judge("tool_args", SEARCH_FETCH, case(tool_args=list(calls)))

    assert args({"name": "fetch", "arguments": {"url": "u"}}) == 1.0  # n may be there too
    assert args({"name": "search", "arguments": {"q": "x"}}, {"name": "search", "arguments": {"q": "y"}}) == 1.0
    assert args({"name": "search", "arguments": {"q": "y"}}, {"name": "search", "arguments": {"q": "x"}}) == 0.0
    assert args({"name": "fetch", "arguments": {"n": True}}) == 0.0  # true is not 1
    assert args({"name": "fetch", "arguments": {"url": "u", "page": 2}}) == 0.0
    assert args({"name": "fetch"}) == 1.0  # called at all
    assert args({"name": "lookup"}) == 0.0


def test_in_verdict_makes_the_trajectory_part_of_pass():
    (s,) = build_scorers([ScorerSpec.model_validate({"tool_used": {"tool": "lookup", "in_verdict": True}})], Path("."))
    result = score_attempt([s], "x", case(), SEARCH_FETCH)
    assert result.passed is False and result.score == 0.0 and result.scores == {"tool_used": 0.0}


def test_a_case_that_says_it_wrong_is_a_scorer_error_naming_the_case():
    with pytest.raises(ScorerError, match=r"case 'c1': metadata.tools must be a list of tool names"):
        judge("tool_sequence", SEARCH_FETCH, case(tools=[1, 2]))
    with pytest.raises(ScorerError, match=r"case 'c1': metadata.tool_args must be a list of calls"):
        judge("tool_args", SEARCH_FETCH, case(tool_args={"search": {}}))


@pytest.mark.e2e
@pytest.mark.parametrize(
    ("scorer", "fragment"),
    [
        ("{tool_sequence: {mode: sorted}}", "scorers[1]: scorer 'tool_sequence': mode: Input should be 'exact'"),
        ("max_steps", "scorers[1]: scorer 'max_steps': max: Field required"),
        ("{tool_args: {keys: x}}", "scorers[1]: scorer 'tool_args': keys: unknown parameter"),
    ],
)
def test_config_errors_name_the_file_and_line(tmp_path, python_exe, repo_root, scorer, fragment):
    (tmp_path / "c.jsonl").write_text('{"id": "a", "input": "x", "expected": "x"}\n', encoding="utf-8")
    config = tmp_path / "evalgate.yml"
    config.write_text(
        f"suite: s\ncases: c.jsonl\ntarget: {{command: [echo]}}\nscorers:\n  - exact\n  - {scorer}\n", encoding="utf-8"
    )
    done = subprocess.run(
        [python_exe, "-m", "evals", "run", "--config", str(config), "-o", str(tmp_path / "r.json")],
        capture_output=True,
        text=True,
        cwd=repo_root,
        timeout=60,
    )
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert done.stderr.startswith(f"evalgate run: error: {config}:6: {fragment}")
