"""Targets that kept a run from ending (docs/spec.md#runner), with real subprocesses: a sync python
target that overruns its timeout, a command whose grandchild escapes into its own session, a
command that answers and leaves a helper holding its stdout, a command that never stops writing
(``yes``), and a python target whose helper holds the run's stderr (as the gate reads it). Each
run must end promptly, record the right outcome, and leave no process of the target behind."""

from __future__ import annotations

import contextlib
import json
import os
import resource
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from fakes.suites import echo_cases, load_suite, process_alive, write_suite

from evals.results.files import load_results
from evals.run.execution import execute

PY = sys.executable


def evalgate_run(config: Path, output: Path, timeout: float, **popen) -> tuple[subprocess.CompletedProcess, float]:
    """``python -m evals run`` as the gate starts it (stderr read to EOF); wall time to EOF and exit."""
    started = time.monotonic()
    proc = subprocess.run(
        [PY, "-m", "evals", "run", "--config", str(config), "--output", str(output), "--progress", "lines"],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        timeout=timeout,
        **popen,
    )
    return proc, time.monotonic() - started


def pids_in(folder: Path) -> list[int]:
    return [int(p.read_text()) for p in sorted(folder.glob("*.pid"))]


def wait_dead(pids: list[int], within: float = 3.0) -> list[int]:
    """The pids still alive after ``within`` seconds (a SIGKILL takes a moment to land)."""
    deadline = time.monotonic() + within
    while time.monotonic() < deadline and any(process_alive(p) for p in pids):
        time.sleep(0.05)
    return [p for p in pids if process_alive(p)]


def script(tmp_path: Path, name: str, body: str) -> list[str]:
    path = tmp_path / name
    path.write_text(textwrap.dedent(body))
    return [PY, str(path)]


def test_a_sync_python_target_that_overruns_does_not_keep_the_run_from_exiting(tmp_path: Path) -> None:
    (tmp_path / "slow.py").write_text("import time\n\ndef answer(x):\n    time.sleep(60)\n    return x\n")
    config = write_suite(tmp_path, echo_cases(2), target={"python": "slow:answer"}, timeout_s=0.5, concurrency=2)
    proc, took = evalgate_run(config, tmp_path / "results.json", timeout=40)
    assert proc.returncode == 0, proc.stderr
    assert took < 15  # before: the exit joined the worker threads, stuck in sleep(60)
    results = load_results(tmp_path / "results.json")
    assert [c.attempts[0].error.kind for c in results.cases] == ["timeout", "timeout"]


def test_a_command_whose_grandchild_escapes_into_its_own_session_is_stopped_at_the_timeout(tmp_path: Path) -> None:
    command = script(
        tmp_path,
        "escape.py",
        f"""
        import subprocess, sys, time
        child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"], start_new_session=True)
        open({str(tmp_path / "grandchild.pid")!r}, "w").write(str(child.pid))
        time.sleep(120)
        """,
    )
    config = load_suite(tmp_path, echo_cases(1), target={"command": command}, timeout_s=1.5)
    started = time.monotonic()
    results = execute(config, tmp_path / "results.json", progress=False)
    assert time.monotonic() - started < 10
    assert results.cases[0].attempts[0].error.kind == "timeout"
    assert wait_dead(pids_in(tmp_path)) == []


def test_a_command_that_answers_and_leaves_a_helper_running_is_not_a_timeout(tmp_path: Path) -> None:
    command = script(
        tmp_path,
        "answer.py",
        f"""
        import json, subprocess, sys
        case = json.load(sys.stdin)
        helper = subprocess.Popen(["sleep", "120"])  # inherits stdout and stderr
        open({str(tmp_path / "helper.pid")!r}, "w").write(str(helper.pid))
        print(json.dumps({{"output": case["input"]}}), flush=True)
        """,
    )
    config = load_suite(tmp_path, echo_cases(1), target={"command": command}, timeout_s=10)
    started = time.monotonic()
    results = execute(config, tmp_path / "results.json", progress=False)
    attempt = results.cases[0].attempts[0]
    assert attempt.error is None and attempt.passed is True  # before: a timeout, waiting for the helper's EOF
    assert time.monotonic() - started < 8
    assert wait_dead(pids_in(tmp_path)) == []


def test_a_command_that_never_stops_writing_is_cut_off_with_a_target_error(tmp_path: Path) -> None:
    config = write_suite(tmp_path, echo_cases(1), target={"command": ["yes"]}, timeout_s=20)

    def one_gib_of_memory() -> None:  # before: `yes` filled 8 GB in 20 s
        resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))

    proc, took = evalgate_run(config, tmp_path / "results.json", timeout=60, preexec_fn=one_gib_of_memory)
    assert proc.returncode == 0, proc.stderr
    error = load_results(tmp_path / "results.json").cases[0].attempts[0].error
    assert error is not None and error.kind == "target"
    assert "stdout" in error.message and "MiB" in error.message, error.message
    assert took < 15


def test_a_python_targets_helper_holding_stderr_does_not_hold_up_the_gate(tmp_path: Path) -> None:
    (tmp_path / "spawns.py").write_text(
        textwrap.dedent(
            f"""
            import subprocess

            def answer(x):
                helper = subprocess.Popen(["sleep", "120"])  # inherits the run's stderr
                with open({str(tmp_path)!r} + f"/helper-{{x}}.pid", "w") as fh:
                    fh.write(str(helper.pid))
                return x
            """
        )
    )
    config = write_suite(tmp_path, echo_cases(2), target={"python": "spawns:answer"})
    proc, took = evalgate_run(config, tmp_path / "results.json", timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert took < 15  # before: stderr reached EOF only when the helpers exited
    assert json.loads((tmp_path / "results.json").read_text())["run"]["status"] == "success"
    assert wait_dead(pids_in(tmp_path)) == [] and len(pids_in(tmp_path)) == 2


def test_a_call_that_overran_gives_its_thread_up_to_the_next_case(tmp_path: Path) -> None:
    """With one thread (concurrency 1), the case after one that overran still gets an answer."""
    (tmp_path / "first_slow.py").write_text(
        "import time\n\ndef answer(x):\n    if x == 'q0':\n        time.sleep(30)\n    return x\n"
    )
    config = load_suite(tmp_path, echo_cases(3), target={"python": "first_slow:answer"}, timeout_s=0.5, concurrency=1)
    results = execute(config, tmp_path / "results.json", progress=False)
    outcomes = [(a.passed, a.error.kind if a.error else None) for c in results.cases for a in c.attempts]
    assert outcomes == [(False, "timeout"), (True, None), (True, None)]


@pytest.mark.e2e
def test_a_run_killed_outright_whose_helper_holds_its_output_does_not_hold_up_the_gate(tmp_path: Path) -> None:
    """The run is SIGKILLed (as the OOM killer does) after its target started a helper: nothing is
    left to clean up after it, and the helper keeps the suite's output pipe open. The gate stops
    reading shortly after the run died and says why (before: it read to EOF, i.e. until the
    helper ended)."""
    (tmp_path / "dies.py").write_text(
        textwrap.dedent(
            f"""
            import os, signal, subprocess

            def answer(x):
                helper = subprocess.Popen(["sleep", "60"])  # inherits the run's stdout/stderr
                with open({str(tmp_path)!r} + f"/helper-{{x}}.pid", "w") as fh:
                    fh.write(str(helper.pid))
                os.kill(os.getpid(), signal.SIGKILL)
            """
        )
    )
    config = write_suite(tmp_path, echo_cases(1), target={"python": "dies:answer"})
    started = time.monotonic()
    try:
        proc = subprocess.run(
            [
                PY,
                "-m",
                "evals",
                "gate",
                "--config",
                str(config),
                "--store",
                "local",
                "--out-dir",
                str(tmp_path / "out"),
            ],
            cwd=tmp_path,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=45,
            env={**os.environ, "EVALGATE_HISTORY": "off"},
        )
        assert time.monotonic() - started < 30, proc.stderr
        assert proc.returncode == 3, proc.stderr
        assert "still holds its output" in proc.stderr and "killed by signal 9" in proc.stderr, proc.stderr
    finally:
        for pid in pids_in(tmp_path):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
