"""Cancellation and resume with a real ``python -m evals run`` process: SIGINT mid-run leaves a
valid partial file that says ``cancelled`` with true counts; ``--resume`` finishes it without
running any completed case again (the target logs every case it finishes)."""

from __future__ import annotations

import os
import shlex
import signal
import subprocess
import textwrap
import time
from collections import Counter
from pathlib import Path

import pytest
from fakes.suites import echo_cases, process_alive, write_suite

from evals.results.files import load_results

N_CASES = 20


def start(python_exe: str, config: Path, output: Path, *extra: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [
            python_exe,
            "-m",
            "evals",
            "run",
            "--config",
            str(config),
            "--output",
            str(output),
            "--progress",
            "lines",
            *extra,
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "GITHUB_SHA": "feedface"},
    )


def logged(log: Path) -> list[str]:
    return log.read_text().split() if log.exists() else []


@pytest.mark.e2e
def test_sigint_writes_cancelled_partial_then_resume_completes(tmp_path: Path, python_exe: str) -> None:
    log = tmp_path / "done.log"
    (tmp_path / "slowtarget.py").write_text(
        textwrap.dedent(
            f"""
            import time

            def answer(text, case):
                time.sleep(0.3)
                with open({str(log)!r}, "a") as fh:
                    fh.write(case.id + "\\n")
                return text
            """
        )
    )
    config = write_suite(tmp_path, echo_cases(N_CASES), target={"python": "slowtarget:answer"}, concurrency=2)
    output = tmp_path / "candidate.json"

    proc = start(python_exe, config, output)
    deadline = time.monotonic() + 60
    while len(logged(log)) < 4 and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    assert proc.poll() is None, f"the run ended before it could be interrupted: {proc.communicate()}"
    running = load_results(output)  # the file is valid while the run is going
    assert running.run.status == "running" and running.run.total_cases == N_CASES
    assert running.run.completed_cases == len(running.cases) < N_CASES
    proc.send_signal(signal.SIGINT)
    _, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 3, stderr
    assert "SIGINT" in stderr

    partial = load_results(output)
    ids = [c.id for c in partial.cases]
    assert partial.run.status == "cancelled" and partial.run.ended_at and "cancelled" in partial.run.message
    # The message names this very run's command: a bare --resume would read ./evalgate.yml and ./results.json.
    again = shlex.join(["evalgate", "run", "--config", str(config), "--output", str(output), "--resume"])
    assert f"rerun with `{again}` to finish" in partial.run.message, partial.run.message
    assert partial.run.total_cases == N_CASES
    assert partial.run.completed_cases == len(ids) == sum(c.complete for c in partial.cases)
    assert 4 <= len(ids) < N_CASES
    assert sorted(ids) == sorted(logged(log)), "in-flight cases finished in the grace period and were recorded"

    resumed = start(python_exe, config, output, "--resume")
    _, stderr = resumed.communicate(timeout=60)
    assert resumed.returncode == 0, stderr
    assert f"keeping {len(ids)} complete cases" in stderr
    final = load_results(output)
    assert final.run.status == "success" and final.run.completed_cases == final.run.total_cases == N_CASES
    assert final.run.started_at == partial.run.started_at
    runs = Counter(logged(log))
    assert sorted(runs) == [f"c{i:03d}" for i in range(N_CASES)]
    assert set(runs.values()) == {1}, f"cases ran twice: {[k for k, v in runs.items() if v > 1]}"
    kept = final.by_id()
    assert all(kept[c.id] == c for c in partial.cases), "resume kept the earlier records untouched"


def test_resume_redoes_errored_and_changed_cases(tmp_path: Path, python_exe: str) -> None:
    log = tmp_path / "calls.log"
    healed = tmp_path / "healed"
    (tmp_path / "flaky.py").write_text(
        textwrap.dedent(
            f"""
            import os
            from evals.run.targets.code import TargetFailure

            def answer(text, case):
                with open({str(log)!r}, "a") as fh:
                    fh.write(case.id + "\\n")
                if case.id == "c001" and not os.path.exists({str(healed)!r}):
                    raise TargetFailure("infra", "backend unavailable")
                return text
            """
        )
    )
    cases = echo_cases(4)
    config = write_suite(tmp_path, cases, target={"python": "flaky:answer"}, retries={"max": 0})
    output = tmp_path / "out.json"
    first = start(python_exe, config, output)
    _, stderr = first.communicate(timeout=60)
    assert first.returncode == 3, stderr
    errored = load_results(output)
    assert errored.run.status == "error" and errored.run.completed_cases == 3 and "c001" in errored.run.message

    healed.touch()
    # Edit one case: its hash changes, so resume must run it again; the others are kept.
    cases[2]["expected"] = "changed"
    write_suite(tmp_path, cases, target={"python": "flaky:answer"}, retries={"max": 0})
    proc = start(python_exe, config, output, "--resume")
    _, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 0, stderr
    assert Counter(logged(log)) == {"c000": 1, "c001": 2, "c002": 2, "c003": 1}
    final = load_results(output)
    assert final.run.status == "success" and final.by_id()["c002"].expected == "changed"


def test_sigterm_without_grace_kills_in_flight_commands(tmp_path: Path, python_exe: str) -> None:
    (tmp_path / "stuck.py").write_text(
        textwrap.dedent(
            """
            import json, os, sys, time
            case = json.load(sys.stdin)
            with open(f"pid-{case['id']}", "w") as fh:
                fh.write(str(os.getpid()))
            time.sleep(120)
            """
        )
    )
    config = write_suite(
        tmp_path, echo_cases(4), target={"command": [python_exe, "stuck.py"]}, concurrency=2, timeout_s=300
    )
    output = tmp_path / "out.json"
    proc = start(python_exe, config, output, "--grace-s", "0")
    deadline = time.monotonic() + 60
    while len([p for p in tmp_path.glob("pid-*") if p.read_text()]) < 2 and time.monotonic() < deadline:
        time.sleep(0.05)
    pids = [int(p.read_text()) for p in tmp_path.glob("pid-*")]
    proc.send_signal(signal.SIGTERM)
    _, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 3, stderr
    results = load_results(output)
    assert results.run.status == "cancelled" and results.run.completed_cases == 0 and results.cases == []
    assert results.run.total_cases == 4
    assert len(pids) == 2 and not any(process_alive(pid) for pid in pids)
