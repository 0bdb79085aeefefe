"""A seal on a response cache folder (docs/spec.md#more-evidence, docs/github-action.md "More evidence
on pull requests"): proof that what the folder holds was written by a job that had the seal key.

The baseline side of more evidence must not read a cache that a pull request's code could have
written (docs/spec.md#security). In Actions, every cache a PR's workflow run can restore can be
saved by that PR's own jobs too: actions/cache looks in the PR's scope first, and code that runs
in a job can reach the runner's cache token. So the baseline side's job reads a restored folder
only if it carries a seal made with a key that only that job is given (a repository secret), and
seals the folder again once its batches are done. An answer is keyed by its request, which anyone
can compute: the seal, not the key, is what a forger lacks.

The seal is an HMAC-SHA256 (RFC 2104) over the name, size and SHA-256 of every file the cache
would read: the SQLite file with its journal files, and entries of the one-file format (which a
cache converts when it opens a folder). A folder whose seal is missing or does not match loses
those files, and only those (``cache.dir`` may hold anything else): its answers are asked again.
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import os
from collections.abc import MutableMapping
from pathlib import Path

from evals.run.cache import DB_NAME, legacy_entries

SEAL_NAME = "cache.seal"
MAGIC = b"evalgate-cache-seal 1"
# The secret a baseline side's job seals its response cache with (`cache-seal-key` of the action).
SEAL_KEY_ENV = "EVALGATE_CACHE_SEAL_KEY"


def cache_files(folder: Path) -> list[Path]:
    """What a response cache opened in ``folder`` would read, in a fixed order."""
    db = [folder / name for name in (DB_NAME, f"{DB_NAME}-wal", f"{DB_NAME}-shm", f"{DB_NAME}-journal")]
    found = [path for path in db if path.is_file() or path.is_symlink()]
    return found + sorted(path for path, _ in legacy_entries(folder))


def _mac(folder: Path, key: bytes) -> str:
    mac = hmac.new(key, MAGIC, hashlib.sha256)
    for path in cache_files(folder):
        digest = hashlib.sha256()
        with path.open("rb") as fh:
            while chunk := fh.read(1 << 20):
                digest.update(chunk)
        name = path.relative_to(folder).as_posix().encode()
        mac.update(b"\0%s\0%d\0%s" % (name, path.stat().st_size, digest.hexdigest().encode()))
    return mac.hexdigest()


def seal(folder: Path, key: bytes) -> bool:
    """Seal what ``folder`` holds now; False when it holds no cache file (nothing to seal)."""
    if not cache_files(folder):
        return False
    (folder / SEAL_NAME).write_text(f"{MAGIC.decode()} {_mac(folder, key)}\n", encoding="ascii")
    return True


def check(folder: Path, key: bytes | None) -> str | None:
    """None when ``folder`` holds no cache file or its seal matches; else why it cannot be trusted."""
    if not cache_files(folder):
        return None
    if not key:
        return f"no seal key ({SEAL_KEY_ENV}) to check it with"
    # Never read through a link or a device a restored folder put there (/dev/zero would never end).
    if any(path.is_symlink() or not path.is_file() for path in cache_files(folder)):
        return "it holds a link or a special file where the cache's files go"
    try:
        text = (folder / SEAL_NAME).read_text(encoding="ascii").strip()
    except (OSError, UnicodeDecodeError):
        return "it carries no seal"
    head, _, mac = text.rpartition(" ")
    if head.encode() != MAGIC or not hmac.compare_digest(mac, _mac(folder, key)):
        return "its seal does not match what it holds (it was written or changed by something else)"
    return None


def discard(folder: Path) -> int:
    """Remove the cache's files and its seal from ``folder`` (nothing else); how many went."""
    files = cache_files(folder)
    gone = 0
    for path in [*files, folder / SEAL_NAME]:
        with contextlib.suppress(FileNotFoundError):
            path.unlink()
            gone += path in files
    for sub in {path.parent for path in files} - {folder}:
        with contextlib.suppress(OSError):
            sub.rmdir()  # empty now, unless someone else's files are in it
    return gone


def seal_key(environ: MutableMapping[str, str] = os.environ) -> bytes | None:
    """The seal key, taken out of ``environ``: the runs the side starts do not inherit it. (This
    process's own environment block still holds it; only the base commit's code runs in that job,
    and no code of a pull request ever runs there: that job boundary is what keeps the key.)"""
    value = environ.pop(SEAL_KEY_ENV, "")
    return value.encode() if value else None
