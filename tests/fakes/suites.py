"""Test helpers: small suites written into a test's tmp folder (a config plus a JSONL case file),
a liveness check for processes a target started, git in a test repository, and GITHUB_OUTPUT as
the runner reads it."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import yaml

from evals.suite.config import SuiteConfig
from evals.suite.loading import load_config


def write_suite(folder: Path, cases: list[dict[str, Any]], **config: Any) -> Path:
    """Write ``cases.jsonl`` and ``evalgate.yml`` (``suite: t``, ``cases: cases.jsonl`` plus
    ``config``) into ``folder``; returns the config path."""
    folder.mkdir(parents=True, exist_ok=True)
    with (folder / "cases.jsonl").open("w", encoding="utf-8") as fh:
        for case in cases:
            fh.write(json.dumps(case, ensure_ascii=False) + "\n")
    path = folder / "evalgate.yml"
    path.write_text(yaml.safe_dump({"suite": "t", "cases": "cases.jsonl", **config}, sort_keys=False), encoding="utf-8")
    return path


def load_suite(folder: Path, cases: list[dict[str, Any]], **config: Any) -> SuiteConfig:
    return load_config(write_suite(folder, cases, **config))


def echo_cases(n: int, **tags: list[str]) -> list[dict[str, Any]]:
    """``c000``..: input ``q<i>``, expected the same (an echo target passes them all); each tag
    key cycles through its values."""
    out = []
    for i in range(n):
        case: dict[str, Any] = {"id": f"c{i:03d}", "input": f"q{i}", "expected": f"q{i}"}
        if tags:
            case["tags"] = {k: values[i % len(values)] for k, values in tags.items()}
        out.append(case)
    return out


def process_alive(pid: int) -> bool:
    """Running or sleeping; a zombie waiting for its reaper is dead for our purposes."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, IndexError):
        return False
    return state not in ("Z", "X")


def git(repo: Path, *args: str, date: str | None = None) -> str:
    """``git ARGS`` in ``repo`` without the user's git config (a fixed identity, branch main);
    ``date`` sets the author and committer date. Returns the stripped stdout; fails the test on error."""
    env = {**os.environ, "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_SYSTEM": os.devnull}
    if date:
        env["GIT_AUTHOR_DATE"] = env["GIT_COMMITTER_DATE"] = date
    done = subprocess.run(
        ["git", "-c", "user.name=dev", "-c", "user.email=dev@example.com", "-c", "init.defaultBranch=main", *args],
        cwd=repo,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stdout.strip()


def commit_all(repo: Path, message: str = "suite", date: str = "2026-11-01T10:00:00Z") -> str:
    """Make ``repo`` a git repository holding everything in it as one commit; returns its sha.
    Runs in a folder that is not a checkout have no commit, and the history never counts them
    as repeats of the same code (docs/spec.md#repeated-runs)."""
    git(repo, "init", "-q")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", message, date=date)
    return git(repo, "rev-parse", "HEAD")


def read_output_file(path: Path) -> dict[str, str]:
    """GITHUB_OUTPUT as the runner reads it: ``name=value`` lines and ``name<<DELIM`` blocks."""
    values: dict[str, str] = {}
    lines = path.read_text(encoding="utf-8").split("\n") if path.exists() else []
    i = 0
    while i < len(lines):
        line = lines[i]
        if "<<" in line and ("=" not in line or line.index("<<") < line.index("=")):
            name, delimiter = line.split("<<", 1)
            end = lines.index(delimiter, i + 1)
            values[name] = "\n".join(lines[i + 1 : end])
            i = end + 1
        elif "=" in line:
            name, value = line.split("=", 1)
            values[name] = value
            i += 1
        else:
            i += 1
    return values
