"""No suite runs under an event that runs in the default branch's context with its secrets
(docs/spec.md#trust-boundaries): ``pull_request_target``, ``workflow_run`` and ``issue_comment`` —
each can be started by anyone's pull request or comment, and each job holds the base repository's
token and secrets. Every mode that runs the suite is refused, and so is ``evalgate run`` itself (a
workflow's own ``run:`` step is no safer a place for the PR's code); ``mode: comment`` and a gate
of a results file run no code of the repository and are not refused."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from fakes.suites import echo_cases, write_suite

from evals.common.errors import UsageError
from evals.github.activity import detect
from evals.pipeline.exposure import RUN_KINDS, SECRET_EVENTS, guard_install, guard_run, guard_secret_events


def _env(tmp_path: Path, event: str) -> dict[str, str]:
    payload = tmp_path / "event.json"
    payload.write_text(json.dumps({"repository": {"full_name": "o/r", "default_branch": "main"}}), encoding="utf-8")
    return {
        "GITHUB_ACTIONS": "true",
        "GITHUB_EVENT_NAME": event,
        "GITHUB_EVENT_PATH": str(payload),
        "GITHUB_REF": "refs/heads/main",
        "GITHUB_SHA": "a" * 40,
        "GITHUB_REPOSITORY": "o/r",
    }


@pytest.mark.parametrize("event", SECRET_EVENTS)
@pytest.mark.parametrize("mode", [kind for kind in RUN_KINDS if kind != "reset"] + ["reset"])
def test_every_mode_that_runs_the_suite_is_refused(tmp_path, event, mode):
    env = _env(tmp_path, event)
    activity = detect(mode, env=env, reason="r" if mode == "reset" else None)
    with pytest.raises(UsageError) as err:
        guard_secret_events(activity, runs_suite=True, env=env)
    said = str(err.value)
    assert said.startswith(f"{event}: evalgate does not run the suite") and "mode: comment" in said
    guard_secret_events(activity, runs_suite=False, env=env)  # a results file, a stored report: fine
    with pytest.raises(UsageError, match=f"^{event}: the input install"):
        guard_install(activity, None, runs_suite=True, env=env)


def test_pull_request_and_push_are_not_refused(tmp_path):
    for event in ("pull_request", "push", "workflow_dispatch"):
        env = _env(tmp_path, event)
        guard_secret_events(detect("run", env=env), runs_suite=True, env=env)
        guard_run(env)


BOT = """
from pathlib import Path

def answer(text):
    with open(Path(__file__).with_name("calls.log"), "a") as fh:
        fh.write(text + "\\n")
    return text
"""


@pytest.mark.parametrize("event", SECRET_EVENTS)
def test_evalgate_run_itself_refuses_and_runs_nothing(tmp_path, event):
    (tmp_path / "bot.py").write_text(BOT, encoding="utf-8")
    write_suite(tmp_path, echo_cases(2), target={"python": "bot:answer", "path": ["."]}, scorers=["exact"])
    environ = {k: v for k, v in os.environ.items() if not k.startswith("GITHUB_")}
    done = subprocess.run(
        [sys.executable, "-m", "evals", "run", "--config", "evalgate.yml", "-o", "r.json"],
        cwd=tmp_path,
        env={**environ, **_env(tmp_path, event)},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 2, done.stderr
    assert f"{event}: evalgate does not run evalgate run under this event" in done.stderr
    assert "Traceback" not in done.stderr
    assert not (tmp_path / "calls.log").exists() and not (tmp_path / "r.json").exists()
