"""No text evalgate prints in Actions can issue a workflow command (docs/spec.md#security), judged the
way the runner reads a log: lines end at ``\\r`` or ``\\n``; a line is a command when it starts
with ``::`` after .NET ``TrimStart()`` (any Unicode whitespace), or when it holds ``##[`` anywhere
(``ActionCommand.TryParse``, the legacy form, looks the prefix up with ``IndexOf``)."""

from __future__ import annotations

import io
import re

import pytest

from evals.common.escape import log_line, log_value
from evals.common.logguard import LogGuard

HOSTILE = [
    "::add-mask::leak",
    "  ::warning::indented",
    "\u00a0::stop-commands::nbsp",
    "\f::add-mask::formfeed",
    "\v::add-mask::vtab",
    "\u3000::warning::ideographic space",
    "\u2003::error::em space",
    "ok\r::add-mask::carriage return",
    "##[add-mask]legacy at the start",
    "a line with ##[stop-commands]token in the middle",
    "text ###[warning]three hashes",
]


def runner_commands(log: str) -> list[str]:
    return [line for line in re.split(r"\r\n|\r|\n", log) if line.lstrip().startswith("::") or "##[" in line]


@pytest.mark.parametrize("text", HOSTILE)
def test_the_guard_defuses_every_form_the_runner_reads(text: str) -> None:
    out = io.StringIO()
    guard = LogGuard(out)
    guard.write("before\n" + text + "\n")
    assert runner_commands(out.getvalue()) == []
    assert out.getvalue().replace("\u200b", "") == "before\n" + text + "\n"  # the text itself is kept


@pytest.mark.parametrize("text", HOSTILE)
def test_the_guard_holds_across_write_calls(text: str) -> None:
    out = io.StringIO()
    guard = LogGuard(out)
    for char in "x\n" + text:
        guard.write(char)
    assert runner_commands(out.getvalue()) == []


@pytest.mark.parametrize("text", HOSTILE)
def test_log_line_and_log_value_defuse_every_form(text: str) -> None:
    assert runner_commands(log_line(text)) == []
    assert runner_commands(log_value(text)) == []


def test_the_commands_evalgate_means_still_go_through() -> None:
    out = io.StringIO()
    guard = LogGuard(out)
    guard.write("partial")
    guard.command("::warning title=evalgate::real")
    assert out.getvalue() == "partial\n::warning title=evalgate::real\n"


def test_what_the_suite_writes_to_its_stdout_is_relayed_defused(tmp_path, repo_root, python_exe):
    """The suite runs in a child process: text its code (or a tool it starts) writes straight to
    file descriptor 1 reaches the job log through our relay, never as a command."""
    import json
    import os
    import subprocess

    bot = (
        "import os, subprocess, sys\n"
        "def answer(question):\n"
        "    os.write(1, b'::add-mask::leak\\n##[stop-commands]tok\\n')\n"
        "    subprocess.run([sys.executable, '-c', 'print(\"::warning::forged\")'], check=True)\n"
        "    return 'FINAL ANSWER: 1'\n"
    )
    (tmp_path / "bot.py").write_text(bot, encoding="utf-8")
    (tmp_path / "cases.jsonl").write_text(json.dumps({"id": "a", "input": "q", "expected": "1"}) + "\n")
    (tmp_path / "evalgate.yml").write_text(
        "suite: demo\ncases: cases.jsonl\ntarget:\n  python: bot:answer\n  path: ['.']\n"
        "scorers: [final_answer]\nbaseline: {store: local, path: baselines}\n",
        encoding="utf-8",
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("GITHUB_")}
    env["PYTHONPATH"] = str(repo_root)
    proc = subprocess.run(
        [python_exe, "-m", "evals", "gate", "--config", "evalgate.yml"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=env,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr  # no baseline yet: warn
    log = proc.stdout + proc.stderr
    assert "add-mask" in log and "forged" in log  # shown ...
    assert runner_commands(log) == []  # ... as text
