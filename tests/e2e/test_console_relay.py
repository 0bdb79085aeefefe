"""The gate's child `evalgate run` speaks plain lines inside Actions (evals.results.console,
RELAYED_ENV): the gate relays its output through the log guard, which would defuse a workflow
command the child meant into an unreadable line."""

from __future__ import annotations

from pathlib import Path

import pytest
from fakes.suites import echo_cases, write_suite

from evals.pipeline.candidate import run_suite
from evals.suite.options import RunOptions


def test_the_gates_child_run_speaks_plain_lines_in_actions(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The gate's child `evalgate run` (run_suite) is started with RELAYED_ENV: its notice about
    a target returning an object reaches the gate's log as a readable line, not a defused command."""
    (tmp_path / "bot.py").write_text("def answer(question):\n    return {'text': question}\n", encoding="utf-8")
    config = write_suite(tmp_path, echo_cases(1), target={"python": "bot:answer"})
    monkeypatch.setenv("GITHUB_ACTIONS", "true")
    run_suite(RunOptions(config=str(config), output=str(tmp_path / "results.json")))
    err = capsys.readouterr().err
    assert "evalgate run: note: bot:answer returned a JSON object ({text})" in err and "::notice" not in err
