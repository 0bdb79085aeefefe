"""Trajectories in a comparison (docs/spec.md#trajectory-diff): the advisory ``trajectory_changed`` unit appears when
the runs record tool calls and only then, the same from results models and from files loaded lean, and the case diff
aligns the two tool sequences with the first divergence marked."""

from __future__ import annotations

from pathlib import Path

import pytest

from evals.compare.analysis import compare, load_runs
from evals.report.filters import tool_rows
from evals.report.markdown import render_markdown
from evals.results.files import save_results
from evals.results.model import Attempt, CaseResult, Results, RunInfo
from evals.results.trace import build_trace, first_divergence


def attempt(passed: bool, tools: list[str] | None) -> Attempt:
    if tools is None:
        return Attempt(passed=passed)
    events = [e for t in tools for e in ({"kind": "tool_call", "name": t}, {"kind": "tool_result", "name": t})]
    return Attempt(passed=passed, trace=build_trace([{"kind": "message", "name": "user", "content": "q"}, *events]))


def run(*cases: tuple[bool, list[str] | None]) -> Results:
    info = RunInfo(suite="s", status="success", total_cases=len(cases), completed_cases=len(cases))
    return Results(run=info, cases=[CaseResult(id=f"c{i}", attempts=[attempt(*c)]) for i, c in enumerate(cases)])


def units(c) -> dict[str, object]:
    return {u.unit: u for u in c.units if u.metric == "trajectory_changed"}


@pytest.mark.parametrize(
    ("a", "b", "at"),
    [(["s", "f"], ["s", "f"], None), (["s", "f"], ["s"], 1), (["s"], ["f", "s"], 0), ([], ["s"], 0)],
)
def test_first_divergence(a, b, at):
    assert first_divergence(a, b) == at


def test_no_tool_calls_no_trajectory_unit():
    base = run(*[(True, [])] * 10)
    c = compare(base, run(*[(True, [])] * 10), None)
    assert not units(c) and all(g.metric != "trajectory_changed" for g in c.gate.metrics)
    assert c.case_diff.n_trajectory_changes == 0


def test_the_share_of_changed_sequences_is_advisory_and_the_same_loaded_lean(tmp_path: Path):
    base = run(*[(True, ["search", "fetch"])] * 20, (True, None))
    cand = run(*[(True, ["search", "fetch"])] * 15, *[(True, ["fetch", "search"])] * 5, (True, ["search"]))
    c = compare(base, cand, None)
    overall = units(c)["overall"]
    assert overall.candidate == 0.25 and overall.baseline == 0.0 and overall.n == 20  # no trace: left out
    assert not overall.gated and not overall.blocking
    assert c.verdict == "inconclusive"  # pass_rate saw no change on 21 cases; the trajectory does not gate
    assert c.case_diff.n_trajectory_changes == 5
    entry = c.case_diff.trajectory_changes[0]
    assert (entry.baseline_tools, entry.candidate_tools, entry.tools_diverge_at) == (
        ["search", "fetch"],
        ["fetch", "search"],
        0,
    )
    assert tool_rows(entry) == [(1, "search", "fetch", True), (2, "fetch", "search", False)]
    save_results(base, tmp_path / "b.json")
    save_results(cand, tmp_path / "c.json")
    lean = compare(*load_runs(tmp_path / "b.json", tmp_path / "c.json"), None)
    assert units(lean)["overall"].model_dump() == overall.model_dump()
    assert "| overall | trajectory\\_changed | 0.0%\u00a0→\u00a025.0% |" in render_markdown(c)


def test_a_flipped_case_without_a_trace_on_one_side_shows_it():
    base = run(*[(True, None)] * 10)
    cand = run((False, ["search"]), *[(True, ["search"])] * 9)
    c = compare(base, cand, None)
    (entry,) = c.case_diff.pass_to_fail
    assert entry.baseline_tools is None and entry.candidate_tools == ["search"] and entry.tools_diverge_at is None
    assert tool_rows(entry) == [(1, "(no trace)", "search", False)]
    assert units(c)["overall"].n == 0  # nothing to compare on any case
