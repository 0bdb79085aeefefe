"""The history story end to end, as a user lives it (docs/spec.md#history), on SQLite and on PostgreSQL:
the quickstart in a git repository, its baselines in a GitHub release (the local fake server);
a reset blesses the first run, a change is gated and promoted, a Korean regression fails its gate
(the PR comment shows the slice's trend), the fix is promoted. Then the per-slice trend with
its markers in the terminal and as images; and ``history sync`` rebuilds the same baseline history
from the release store into an empty database."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from fakes.github_server import GitHubServer, github_api_fixture  # noqa: F401  (registers the fixture)
from fakes.history_db import ENGINES, new_url
from fakes.history_db import pg_admin_url as pg_admin_url  # the fixture
from fakes.paths import ROOT
from fakes.suites import git

from evals.history import open_history
from evals.history.trends import load_trends


def evalgate(repo: Path, env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "evals", *args], cwd=repo, env=env, capture_output=True, text=True, timeout=300
    )


@pytest.fixture
def quickstart_repo(tmp_path: Path) -> Path:
    repo = tmp_path / "repo"
    shutil.copytree(ROOT / "examples" / "quickstart", repo, ignore=shutil.ignore_patterns("baselines", ".evalgate"))
    git(repo, "init", "-q")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "quickstart", date="2026-11-01T10:00:00Z")
    return repo


def commit(repo: Path, note: str, date: str) -> str:
    with (repo / "CHANGES.md").open("a", encoding="utf-8") as fh:
        fh.write(note + "\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", note, date=date)
    return git(repo, "rev-parse", "HEAD")


@pytest.mark.parametrize("engine", ENGINES)
def test_story_trend_with_markers_and_sync(
    engine: str, quickstart_repo: Path, github_api: GitHubServer, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    repo = quickstart_repo
    url = new_url(engine, tmp_path, request)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GITHUB_", "EVALGATE_"))}
    env.update(github_api.env(), EVALGATE_HISTORY_URL=url, PYTHONPATH=str(ROOT))
    store = ["--store", "github-release"]

    # 1. the first run, blessed by a reset
    first = git(repo, "rev-parse", "HEAD")
    done = evalgate(repo, env, "reset", "--reason", "first baseline", "--actor", "alice", *store)
    assert done.returncode == 0, done.stderr
    # 2. a change, gated and promoted
    second = commit(repo, "tidy prompts", "2026-11-02T10:00:00Z")
    done = evalgate(repo, env, "gate", "--promote", *store)
    assert done.returncode == 0, done.stderr
    assert "promoted" in done.stderr
    # 3. a change that breaks Korean answers: the gate fails, nothing is promoted
    third = commit(repo, "new tokenizer", "2026-11-03T10:00:00Z")
    done = evalgate(repo, {**env, "QUICKSTART_REGRESS": "ko"}, "gate", "--promote", *store)
    assert done.returncode == 1, done.stderr
    comment = (repo / ".evalgate" / "out" / "comment.md").read_text(encoding="utf-8")
    trends = comment.split("<summary>Trends of the regressed units", 1)[1].split("</details>", 1)[0]
    assert "pass\\_rate on language=ko:" in trends
    assert f"| {first[:7]} | {second[:7]} | candidate |" in trends
    # 4. the fix, promoted
    fourth = commit(repo, "fix tokenizer", "2026-11-04T10:00:00Z")
    done = evalgate(repo, env, "gate", "--promote", *store)
    assert done.returncode == 0, done.stderr

    # The trend in the terminal: one row per run, with what happened to it.
    shown = evalgate(repo, env, "history", "show", "--slice", "language=ko")
    assert shown.returncode == 0, shown.stderr
    lines = {line.split()[0]: line for line in shown.stdout.splitlines() if line[:7] in {first[:7], third[:7]}}
    assert "◆ reset" in lines[first[:7]] and "✗ failed gate" in lines[third[:7]]
    assert "reset by alice: first baseline" in shown.stdout
    assert shown.stdout.count("▲ promotion") == 2
    matrix = evalgate(repo, env, "history", "show")
    assert "language=ko" in matrix.stdout and "category=sort" in matrix.stdout

    with open_history(url) as db:
        trends = load_trends(db, units=["language=ko"])
        ko = [v.value for v in trends.units["language=ko"]]
        assert [run.sha for run in trends.runs] == [first, second, third, fourth]
        assert ko[2] < ko[1] - 0.2 and ko[0] == ko[1] == ko[3]  # the regression, and back
        assert trends.units["language=ko"][0].low < ko[0] < trends.units["language=ko"][0].high
        baselines = load_trends(db, baselines_only=True)

    # ... and as images.
    for name in ("trend.png", "trend.svg"):
        done = evalgate(repo, env, "history", "plot", "--slice", "language", "--out", str(tmp_path / name))
        assert done.returncode == 0, done.stderr
    assert (tmp_path / "trend.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    svg = (tmp_path / "trend.svg").read_text(encoding="utf-8")
    assert "<svg" in svg and "language=ko" in svg

    # history sync rebuilds the default branch's history from the release store alone.
    rebuilt = new_url(engine, tmp_path, request)
    done = evalgate(repo, {**env, "EVALGATE_HISTORY_URL": rebuilt}, "history", "sync", *store)
    assert done.returncode == 0, done.stderr
    assert "3 snapshot(s)" in done.stdout and "added 3 run(s)" in done.stdout
    again = evalgate(repo, {**env, "EVALGATE_HISTORY_URL": rebuilt}, "history", "sync", *store)
    assert "added 0 run(s) and 0 promotion/reset record(s)" in again.stdout
    with open_history(rebuilt) as db:
        synced = load_trends(db)
    assert [r.sha for r in synced.runs] == [r.sha for r in baselines.runs] == [first, second, fourth]
    assert [r.markers for r in synced.runs] == [r.markers for r in baselines.runs]
    assert [r.notes for r in synced.runs] == [r.notes for r in baselines.runs]
    assert synced.units.keys() == baselines.units.keys()
    for unit, values in baselines.units.items():
        assert [v.value for v in synced.units[unit]] == pytest.approx([v.value for v in values])
    # Syncing into the history that recorded the story adds nothing: same runs, same promotions.
    done = evalgate(repo, env, "history", "sync", *store)
    assert "added 0 run(s) and 0 promotion/reset record(s)" in done.stdout
