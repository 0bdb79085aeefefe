"""Paths a config names, kept inside the repository it belongs to (docs/spec.md#trust-boundaries).

A config is a file of the repository, so on a pull request it is the PR author's. The job that
gates and comments holds a token that can write, and posts what it renders: with
``report.template: /proc/self/environ`` (or a committed symlink to it) the job's whole environment
became the PR comment; with ``history.url: sqlite:///<venv>/…/zz.pth`` it wrote a file that ran at
every later Python start. So every path a config names — what evalgate reads into a report, and
where it writes — must be relative, and must land (symlinks followed) inside the repository
holding the config (the config's folder outside git), never in ``/proc``, ``/sys`` or ``/dev``.
Paths given on the command line or in the environment are the workflow's, not the PR's: they are
not checked here."""

from __future__ import annotations

import os
from pathlib import Path

from evals.common.errors import InputFileError
from evals.common.gitinfo import repository_root

SYSTEM = (Path("/proc"), Path("/sys"), Path("/dev"))


def confined(root: Path, raw: str, key: str, where: str, top: Path | None = None) -> Path:
    """``raw`` (a path from the config at ``where``, under ``key``) resolved against ``root``, the
    config's folder; InputFileError when it is absolute or lands outside the repository (``top``:
    its work tree, when the caller already knows it)."""
    fix = (
        f"{key} must be a path relative to the config, inside its repository: move the file into the "
        "repository (a symlink out of it does not count), or give the path on the command line instead"
    )
    if os.path.isabs(raw) or raw.startswith("~"):
        raise InputFileError(where, f"{key} is an absolute path ({raw!r})", fix)
    top = top or repository_root(root)
    path = (root / raw).resolve()  # follows every symlink that exists along the way
    if not path.is_relative_to(top) or any(path.is_relative_to(place) for place in SYSTEM):
        raise InputFileError(where, f"{key} ({raw!r}) leads outside the repository {top} (to {path})", fix)
    return path
