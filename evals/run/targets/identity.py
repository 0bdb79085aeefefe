"""The code identity of a python or command target (docs/spec.md#response-cache): the git blob
hashes of the repository files its answers come from, so that a cached answer is never served
for code that has changed since (a ``cache.key`` left at ``v1`` across a regression served 10 of
10 old answers, "no change seen", and on main that promotes).

What counts as the target's code:

- a **python** target: every module loaded when the target is, whose file lies in the repository
  (the git work tree holding the config, else the config's folder) and outside any installed
  environment — the target's module and everything it imports from the repository;
- a **command** target: the repository files its command line names, and every file git tracks
  in their folders and below (a script's helpers sit beside it; what a process imports cannot be
  seen from outside it).

The hash is git's blob hash of the file's current bytes (``git hash-object``), computed here, so an
uncommitted edit counts as well as a commit. ``cache.key`` still adds what no file shows (a model
behind an API the code calls, a data file read at run time)."""

from __future__ import annotations

import hashlib
import os
import sys
from collections.abc import Iterable
from pathlib import Path

from evals.common.gitinfo import git, repository_root


def blob_hash(data: bytes) -> str:
    """git's object name for a blob of these bytes (``git hash-object``)."""
    return hashlib.sha1(b"blob %d\0" % len(data) + data, usedforsecurity=False).hexdigest()


def _environments() -> list[Path]:
    """Folders of installed code: the interpreter's prefixes and every site-packages on the path."""
    places = {Path(sys.prefix), Path(sys.base_prefix), Path(__file__).resolve().parents[2]}
    places.update(Path(p) for p in sys.path if p.endswith(("site-packages", "dist-packages")))
    return [p.resolve() for p in places]


def _hashes(top: Path, files: Iterable[Path]) -> list[list[str]]:
    out = {}
    for path in files:
        try:
            out[path.relative_to(top).as_posix()] = blob_hash(path.read_bytes())
        except (OSError, ValueError):
            continue  # gone or unreadable: it cannot be the code that answers
    return [[name, digest] for name, digest in sorted(out.items())]


def python_code(root: Path) -> list[list[str]]:
    """``[path, blob hash]`` of every loaded module's file inside the repository holding ``root``
    and outside installed environments (our own package included)."""
    top = repository_root(root)
    outside = _environments()
    files = set()
    for module in list(sys.modules.values()):
        name = getattr(module, "__file__", None)
        if not name:
            continue
        path = Path(name).resolve()
        if path.is_relative_to(top) and not any(path.is_relative_to(env) for env in outside):
            files.add(path)
    return _hashes(top, files)


def command_code(argv: list[str], cwd: Path) -> list[list[str]]:
    """``[path, blob hash]`` of the repository files ``argv`` names (relative to ``cwd``) and of
    every tracked file in their folders and below."""
    top = repository_root(cwd)
    named = set()
    for arg in argv:
        candidate = (cwd / arg).resolve() if not os.path.isabs(arg) else Path(arg).resolve()
        if candidate.is_file() and candidate.is_relative_to(top):
            named.add(candidate)
    files = set(named)
    for folder in {path.parent for path in named}:
        done = git(folder, "ls-files", "-z", "--", ".")
        if done is not None and done.returncode == 0:
            files.update((folder / rel).resolve() for rel in done.stdout.split("\0") if rel)
    return _hashes(top, (f for f in files if f.is_file()))
