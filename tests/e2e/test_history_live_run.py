"""``evalgate run`` records its history while it runs, in a child process it forked before the run
(``evals.history.live``): a target that looks at its own process sees that child, and the run in
the history is the results file's (its digest); with the history off, or for the HTML page (which
records from models), there is no such child."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from evals.history.rows import run_digest
from evals.results.files import load_results

# The target counts the processes forked from evalgate's own (same command line): the history's child.
PROBE = """
import os
from pathlib import Path


def answer(question: str) -> str:
    me = Path("/proc/self/cmdline").read_bytes()
    children = []
    for task in Path("/proc/self/task").iterdir():
        children += (task / "children").read_text().split()
    forks = [pid for pid in children if Path(f"/proc/{pid}/cmdline").read_bytes() == me]
    return f"FINAL ANSWER: {len(forks)}"
"""


@pytest.mark.skipif(not Path("/proc/self/task").exists(), reason="reads /proc (Linux)")
@pytest.mark.parametrize(
    ("history", "flags", "forks"), [("on", [], 1), ("off", [], 0), ("on", ["--html", "page.html"], 0)]
)
def test_run_records_its_history_from_a_child_forked_before_the_run(
    tmp_path: Path, history: str, flags: list[str], forks: int
) -> None:
    (tmp_path / "probe.py").write_text(PROBE, encoding="utf-8")
    cases = [{"id": f"c{i}", "input": "how many?", "expected": "1", "tags": {"half": str(i % 2)}} for i in range(6)]
    (tmp_path / "cases.jsonl").write_text("".join(json.dumps(c) + "\n" for c in cases), encoding="utf-8")
    (tmp_path / "evalgate.yml").write_text(
        "suite: probe\ncases: cases.jsonl\ntarget: {python: 'probe:answer', path: ['.']}\n"
        "scorers: [final_answer]\nslices: [half]\nconcurrency: 2\n",
        encoding="utf-8",
    )
    url = tmp_path / "history.sqlite"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GITHUB_", "EVALGATE_"))}
    env.update(EVALGATE_HISTORY=history, EVALGATE_HISTORY_URL=str(url))
    done = subprocess.run(
        [sys.executable, "-m", "evals", "run", "-o", "results.json", *flags],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    results = load_results(tmp_path / "results.json")
    assert {a.output for c in results.cases for a in c.attempts} == {f"FINAL ANSWER: {forks}"}
    if history == "off":
        assert not url.exists()
        return
    with sqlite3.connect(url) as db:
        assert db.execute("SELECT digest FROM runs").fetchall() == [(run_digest(results),)]
        assert db.execute("SELECT count(*) FROM cases").fetchone() == (6,)
