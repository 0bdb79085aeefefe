"""Git, for everything that asks it something: the commit a run was made on (here) and commit
ancestry (``evals.store.ancestry``). Inside GitHub Actions the workflow's ``GITHUB_SHA``/``GITHUB_REF``
win (a PR job checks out a merge commit whose sha the runner already knows); elsewhere ``git``."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Mapping
from pathlib import Path


def git(cwd: Path | str | None, *args: str, timeout: float = 30) -> subprocess.CompletedProcess[str] | None:
    """``git ARGS`` in ``cwd`` (None: the current folder); None when git cannot run at all (no
    binary, a hang): callers degrade to "unknown" instead of failing."""
    try:
        return subprocess.run(
            ["git", *args],
            cwd=cwd,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
            stdin=subprocess.DEVNULL,
        )
    except (OSError, subprocess.SubprocessError):
        return None


def git_output(cwd: Path | str | None, *args: str) -> str | None:
    """The stripped output of a successful ``git ARGS``, else None."""
    done = git(cwd, *args, timeout=10)
    out = done.stdout.strip() if done is not None and done.returncode == 0 else ""
    return out or None


def current_sha(cwd: Path | str | None = None, env: Mapping[str, str] = os.environ) -> str | None:
    """The commit sha, or None outside a git checkout (the run is still valid, just without provenance)."""
    return env.get("GITHUB_SHA") or git_output(cwd, "rev-parse", "HEAD")


def current_ref(cwd: Path | str | None = None, env: Mapping[str, str] = os.environ) -> str | None:
    """The full ref (``refs/heads/main``), or None on a detached HEAD outside Actions."""
    return env.get("GITHUB_REF") or git_output(cwd, "symbolic-ref", "-q", "HEAD")


def in_repository(cwd: Path | str | None) -> bool:
    """Whether ``cwd`` lies in a git repository git can read (False with no git at all): without
    one, no commit can be ordered against another."""
    return cwd is not None and git_output(cwd, "rev-parse", "--git-dir") is not None


def uncommitted_changes(cwd: Path | str, *, exclude: Path | None = None) -> list[str]:
    """Tracked files of the repository holding ``cwd`` that differ from HEAD (staged or not), as
    paths from its top, leaving out those under ``exclude``; [] when clean or not a checkout.
    Untracked files are not counted: results, reports and stores are usually among them."""
    top = git_output(cwd, "rev-parse", "--show-toplevel")
    done = git(cwd, "--no-optional-locks", "status", "--porcelain", "-z", "--untracked-files=no", "--no-renames")
    if top is None or done is None or done.returncode != 0:
        return []
    skip = exclude.resolve() if exclude is not None else None
    paths = [entry[3:] for entry in done.stdout.split("\0") if len(entry) > 3]
    return [p for p in paths if skip is None or not (Path(top) / p).resolve().is_relative_to(skip)]


def repository_root(folder: Path) -> Path:
    """The git work tree holding ``folder``, or ``folder`` itself outside one."""
    top = git_output(folder, "rev-parse", "--show-toplevel")
    return Path(top).resolve() if top else folder.resolve()
