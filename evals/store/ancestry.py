"""Commit ancestry from the checkout's git history, for choosing a PR's baseline (the base
commit's nearest ancestor with a snapshot) and for the promotion rule (never replace a newer
commit's baseline with an older one).

actions/checkout fetches one commit by default, so missing history is the normal case in CI, not
an error: every function here says what it could not see instead of failing."""

from __future__ import annotations

import re
import subprocess
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from evals.common.gitinfo import git

DEFAULT_LIMIT = 2000
REV_RE = re.compile(r"[0-9A-Za-z][0-9A-Za-z._/-]*")


@dataclass
class Ancestry:
    """Commits reachable from ``start``, nearest first: the first-parent line (the default
    branch's own history) and then the rest of the full ancestry."""

    start: str
    shas: list[str]
    complete: bool  # False when history is shallow, the walk hit ``limit``, or ``start`` is unknown
    warning: str | None = None


def _git(repo: Path | None, *args: str) -> subprocess.CompletedProcess[str] | None:
    """No checkout, no history: callers degrade as documented."""
    return git(repo, *args) if repo is not None else None


def _lines(done: subprocess.CompletedProcess[str] | None) -> list[str] | None:
    if done is None or done.returncode != 0:
        return None
    return [line for line in done.stdout.split() if line]


def resolve(repo: Path | None, rev: str) -> str | None:
    """The full sha of ``rev`` if the checkout has that commit, else None. Only sha- or ref-like
    text reaches git (a value starting with "-" would be read as an option)."""
    if not REV_RE.fullmatch(rev):
        return None
    lines = _lines(_git(repo, "rev-parse", "--verify", "--quiet", f"{rev}^{{commit}}"))
    return lines[0] if lines else None


def is_shallow(repo: Path | None) -> bool:
    lines = _lines(_git(repo, "rev-parse", "--is-shallow-repository"))
    return bool(lines and lines[0] == "true")


def ancestors(start: str, *, repo: Path | None, limit: int = DEFAULT_LIMIT) -> Ancestry:
    """Walk the history from ``start`` (included), at most ``limit`` commits."""
    full = resolve(repo, start)
    if full is None:
        why = "no git checkout" if repo is None else f"commit {start[:12]} is not in the checkout's history"
        return Ancestry(start, [], False, f"{why}; fetch more history (actions/checkout fetch-depth: 0)")
    first = _lines(_git(repo, "rev-list", "--first-parent", f"--max-count={limit}", full)) or [full]
    rest = _lines(_git(repo, "rev-list", f"--max-count={limit}", full)) or []
    # The first-parent line is the default branch's own history, where promotions happen; commits
    # that only a merge brought in come after it.
    on_line = set(first)
    shas = (first + [sha for sha in rest if sha not in on_line])[:limit]
    if is_shallow(repo):
        return Ancestry(
            full, shas, False, "the checkout is shallow; fetch more history (actions/checkout fetch-depth: 0)"
        )
    if len(rest) >= limit:
        return Ancestry(full, shas, False, f"history walk stopped after {limit} commits")
    return Ancestry(full, shas, True)


def is_ancestor(older: str, newer: str, *, repo: Path | None) -> bool | None:
    """True if ``older`` is ``newer`` or one of its ancestors, False if not, None if git cannot
    tell (a commit missing from a shallow checkout, no git)."""
    old, new = resolve(repo, older), resolve(repo, newer)
    if old is None or new is None:
        return None
    done = _git(repo, "merge-base", "--is-ancestor", old, new)
    if done is None or done.returncode not in (0, 1):
        return None
    if done.returncode == 1 and is_shallow(repo):
        return None  # the path between them may be cut off
    return done.returncode == 0


def commit_date(rev: str, *, repo: Path | None) -> datetime | None:
    """The committer date of ``rev`` (UTC), or None if the checkout does not have it."""
    full = resolve(repo, rev)
    lines = _lines(_git(repo, "show", "-s", "--format=%ct", full, "--")) if full else None
    if not lines:
        return None
    try:
        return datetime.fromtimestamp(int(lines[0]), UTC)
    except ValueError:
        return None
