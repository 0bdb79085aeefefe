"""A reader that closes evalgate's stdout early (``| head``, a pager quit early) ends the output,
never the command: no traceback, no "internal error", no exit 3; a gate still writes its report
and promotes, and its exit code is still the verdict (docs/spec.md#exit-codes). Each command runs in a real
subprocess whose stdout is a pipe with no reader left."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from fakes.paths import ROOT

from evals.history import open_history
from evals.history.record import Writer
from evals.results.model import Attempt, CaseResult, Results, RunInfo
from evals.store.baseline import LocalStore

QUICKSTART_BASELINE = next((ROOT / "examples" / "quickstart" / "baselines").glob("baseline-*.json.gz"))


def closed_stdout(
    *args: str, cwd: Path, env: dict[str, str] | None = None, stderr_too: bool = False
) -> subprocess.CompletedProcess[str]:
    """``python -m evals ARGS`` with stdout (and with ``stderr_too`` stderr: ``2>&1 | head``) a
    pipe whose read end is already closed: every write to it fails with EPIPE, deterministically."""
    environ = {k: v for k, v in os.environ.items() if not k.startswith("GITHUB_")}
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        return subprocess.run(
            [sys.executable, "-m", "evals", *args],
            stdout=write_end,
            stderr=write_end if stderr_too else subprocess.PIPE,
            text=True,
            cwd=cwd,
            env={**environ, "PYTHONPATH": str(ROOT), **(env or {})},
            timeout=300,
            check=False,
        )
    finally:
        os.close(write_end)


def assert_quiet(done: subprocess.CompletedProcess[str], code: int) -> None:
    assert done.returncode == code, done.stderr
    assert "Traceback" not in done.stderr and "internal error" not in done.stderr, done.stderr
    assert "BrokenPipe" not in done.stderr and "Exception ignored" not in done.stderr, done.stderr


@pytest.fixture
def suite(tmp_path: Path) -> Path:
    """The quickstart suite outside git, with an empty store that lets the first full run in."""
    folder = tmp_path / "suite"
    shutil.copytree(
        ROOT / "examples" / "quickstart", folder, ignore=shutil.ignore_patterns("baselines", "*.md", ".evalgate")
    )
    config = folder / "evalgate.yml"
    text = config.read_text(encoding="utf-8")
    config.write_text(text.replace("path: baselines}", "path: baselines, on_missing: seed}"), encoding="utf-8")
    return config


@pytest.mark.e2e
@pytest.mark.parametrize("args", [["--json"], []])
def test_show_into_a_closed_pipe_ends_quietly(tmp_path, args):
    assert_quiet(closed_stdout("show", str(QUICKSTART_BASELINE), *args, cwd=tmp_path), 0)


def test_history_show_into_a_closed_pipe_ends_quietly(tmp_path):
    url = str(tmp_path / "history.sqlite")
    cases = [CaseResult(id=f"c{i}", slices={"language": "en"}, attempts=[Attempt(passed=i % 2 == 0)]) for i in range(4)]
    run = RunInfo(suite="demo", status="success", total_cases=4, completed_cases=4, git_sha="a" * 40)
    with open_history(url) as db:
        Writer(db).run(Results(run=run, cases=cases), recorded_by="run")
    assert_quiet(closed_stdout("history", "show", "--url", url, cwd=tmp_path), 0)


@pytest.mark.e2e
def test_compare_into_a_closed_pipe_keeps_the_verdict_as_exit_code(suite, tmp_path):
    regressed = tmp_path / "regressed.json"
    made = closed_stdout(
        "run", "--config", str(suite), "-o", str(regressed), cwd=tmp_path, env={"QUICKSTART_REGRESS": "ko"}
    )
    assert_quiet(made, 0)
    compared = closed_stdout(
        "compare", "--config", str(suite), "--baseline", str(QUICKSTART_BASELINE), "--candidate", str(regressed),
        cwd=tmp_path,
    )  # fmt: skip
    assert_quiet(compared, 1)


@pytest.mark.e2e
def test_gate_into_a_closed_pipe_still_reports_promotes_and_exits_with_its_verdict(suite):
    folder = suite.parent
    store = LocalStore(folder / "baselines")
    first = closed_stdout("gate", "--config", str(suite), "--promote", "--sha", "v1", cwd=folder)
    assert_quiet(first, 0)
    assert [s.sha for s in store.list().snapshots] == ["v1"]  # promoted (seeded) all the same
    report = folder / ".evalgate" / "out" / "report.md"
    report.unlink()
    failed = closed_stdout(
        "gate", "--config", str(suite), "--promote", "--sha", "v2", cwd=folder, env={"QUICKSTART_REGRESS": "ko"}
    )
    assert_quiet(failed, 1)
    assert "language=ko" in report.read_text(encoding="utf-8")  # the report was still written
    assert [s.sha for s in store.list().snapshots] == ["v1"]  # a failed gate promotes nothing
    # `2>&1 | head`: the progress and the suite's relayed output have no reader either.
    both = closed_stdout("gate", "--config", str(suite), cwd=folder, env={"QUICKSTART_REGRESS": "ko"}, stderr_too=True)
    assert both.returncode == 1
