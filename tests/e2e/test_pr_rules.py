"""On a pull request the base commit's gate settings decide (docs/spec.md#trust-boundaries): a PR
that breaks Korean and, in the same change, sets the metric it breaks to ``tolerance: 0.5`` and
``gate: false`` fails by its base commit's rules, and the headline says what it changed of them.
Before, the PR's own config judged it and the gate ended ``inconclusive`` (exit 0)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

from fakes.paths import ROOT
from fakes.suites import commit_all

LOOSE = "  pass_rate: {tolerance: 0.5, gate: false}\n"


def _evalgate(repo: Path, env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "evals",
            "gate",
            "--config",
            "evalgate.yml",
            "--out-dir",
            "out",
            "--comment",
            "off",
            *args,
        ],
        cwd=repo,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


def _pr_env(repo: Path, base: str, head: str, tmp_path: Path) -> dict[str, str]:
    event = tmp_path / "event.json"
    event.write_text(
        json.dumps(
            {
                "pull_request": {
                    "number": 7,
                    "base": {"sha": base, "ref": "main", "repo": {"full_name": "o/r"}},
                    "head": {"sha": head, "ref": "loosen", "repo": {"full_name": "o/r"}},
                },
                "repository": {"full_name": "o/r", "default_branch": "main"},
            }
        ),
        encoding="utf-8",
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GITHUB_", "GH_", "EVALGATE_"))}
    return {
        **env,
        "GITHUB_ACTIONS": "true",
        "GITHUB_EVENT_NAME": "pull_request",
        "GITHUB_EVENT_PATH": str(event),
        "GITHUB_REF": "refs/pull/7/merge",
        "GITHUB_SHA": head,
        "GITHUB_REPOSITORY": "o/r",
        "GITHUB_STEP_SUMMARY": str(tmp_path / "summary.md"),
        "GITHUB_OUTPUT": str(tmp_path / "output.txt"),
        "QUICKSTART_REGRESS": "ko",
    }


def _quickstart_repo(tmp_path: Path) -> tuple[Path, str]:
    repo = tmp_path / "repo"
    shutil.copytree(
        ROOT / "examples" / "quickstart", repo, ignore=shutil.ignore_patterns("baselines", "__pycache__", ".evalgate")
    )
    base = commit_all(repo, "suite")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GITHUB_", "GH_", "EVALGATE_", "QUICKSTART_"))}
    seeded = _evalgate(repo, env, "--seed")  # the base commit's full run becomes the baseline
    assert seeded.returncode == 0, seeded.stderr
    (repo / ".gitignore").write_text("out/\nbaselines/\n__pycache__/\n", encoding="utf-8")
    return repo, base


def test_a_pr_that_loosens_its_own_gate_is_judged_by_the_base_commits_settings(tmp_path):
    repo, base = _quickstart_repo(tmp_path)
    config = repo / "evalgate.yml"
    text = config.read_text(encoding="utf-8")
    config.write_text(text.replace("  pass_rate: {tolerance: 0.02}\n", LOOSE), encoding="utf-8")
    head = commit_all(repo, "loosen the gate")

    done = _evalgate(repo, _pr_env(repo, base, head, tmp_path))
    comparison = json.loads((repo / "out" / "comparison.json").read_text(encoding="utf-8"))
    assert done.returncode == 1, done.stderr
    assert comparison["verdict"] == "fail"
    assert "metrics.pass_rate.tolerance: 0.02 → 0.5" in comparison["gate_changes"]
    assert "metrics.pass_rate.gate: true → false" in comparison["gate_changes"]
    assert comparison["gate_decided_by"] == f"the base commit {base[:7]}'s evalgate.yml"
    comment = (repo / "out" / "comment.md").read_text(encoding="utf-8")
    banner = comment.splitlines()[1]
    assert f"This change also changes its own gate, so the base commit {base[:7]}'s evalgate.yml judged it" in banner
    assert "tolerance: 0.02 → 0.5" in banner and "cut" not in banner  # the reviewer sees what it loosened


def test_without_the_base_commit_the_baseline_runs_settings_decide(tmp_path):
    """A shallow checkout (or a config new in the PR): ``git show`` cannot give the base's file; the
    settings the baseline run recorded stand in for it."""
    repo, _ = _quickstart_repo(tmp_path)
    config = repo / "evalgate.yml"
    config.write_text(config.read_text(encoding="utf-8").replace("  pass_rate: {tolerance: 0.02}\n", LOOSE))
    head = commit_all(repo, "loosen the gate")

    done = _evalgate(repo, _pr_env(repo, "0" * 40, head, tmp_path))  # a base commit this clone lacks
    comparison = json.loads((repo / "out" / "comparison.json").read_text(encoding="utf-8"))
    assert done.returncode == 1, done.stderr
    assert comparison["gate_decided_by"].startswith("the baseline run's record (")
    assert "metrics.pass_rate.tolerance: 0.02 → 0.5" in comparison["gate_changes"]


def test_a_pr_that_keeps_the_base_settings_is_judged_as_before(tmp_path):
    repo, base = _quickstart_repo(tmp_path)
    (repo / "bot.py").write_text((repo / "bot.py").read_text(encoding="utf-8") + "\n# a comment\n")
    head = commit_all(repo, "touch the bot")
    env = _pr_env(repo, base, head, tmp_path)
    env.pop("QUICKSTART_REGRESS")
    done = _evalgate(repo, env)
    comparison = json.loads((repo / "out" / "comparison.json").read_text(encoding="utf-8"))
    assert done.returncode == 0, done.stderr
    assert comparison["gate_changes"] == [] and comparison["gate_decided_by"] is None
