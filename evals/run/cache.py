"""The response cache (docs/spec.md#response-cache): answers of the ``openai`` target, the ``judge`` and — with an
explicit ``cache.key`` — python and command targets, stored on disk by the sha256 of the exact
request, so a re-run of an unchanged suite pays for nothing.

What a key covers is chosen by its caller (``key``): the request's non-secret parts (endpoint,
model, parameters, messages, tools), the attempt number (``ATTEMPT``: attempt 2 of a case, or a
more-evidence batch's new attempt, is another sample, never attempt 1's answer again), the
user's ``cache.key`` and this file format's version. API keys and header values are never in it,
and never stored: a model target's headers that can change an answer count by their digest
(``evals.run.targets.headers.headers_digest``).

An entry is one file, ``<dir>/<2 hex>/<64 hex>``: a header line ``evalgate-cache 1 <key>
<length> <sha256>`` and the JSON payload. A reader takes the entry only if the header names this
key and the payload has that length and digest; anything else (a file cut short by a full disk, a
garbled byte, a file copied under another name) is a miss, and the next answer overwrites it.
Writers write a temporary file in the same folder and ``os.replace`` it, so two shards writing the
same entry leave one whole file and a reader never sees half of one. Only successful answers are
ever stored: errors, timeouts and infra failures are not answers.

Entries carry their size (the file's); a hit refreshes the file's mtime, and after a run that
wrote entries the folder is pruned to ``max_bytes``, least recently used first."""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import tempfile
import time
from collections.abc import Mapping
from contextvars import ContextVar
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from evals.suite.config import SuiteConfig

FORMAT = 1
MAGIC = b"evalgate-cache"
# Read by `evalgate run` (and set by `evalgate gate --no-cache` for every run it starts, the
# more-evidence batches included): "off", "0", "false" or "no" turn the cache off.
CACHE_ENV = "EVALGATE_CACHE"
OFF_VALUES = frozenset({"off", "0", "false", "no"})
# A temporary file older than this was left by a writer that died: pruning removes it.
STALE_TEMP_S = 3600.0
HEADER_LIMIT = 256

# The attempt number the runner is on (its index plus --attempt-offset). A context variable, so
# that what users implement — a Target's ``call(case)``, a scorer's ``(output, case)`` — keeps its
# signature: the runner sets it in the task that makes the attempt's calls, which read it where
# they key a request.
ATTEMPT: ContextVar[int] = ContextVar("evalgate_attempt", default=0)


def cache_disabled(env: Mapping[str, str] = os.environ) -> bool:
    return env.get(CACHE_ENV, "").strip().lower() in OFF_VALUES


def open_cache(config: SuiteConfig, *, use: bool = True) -> ResponseCache | None:
    """The config's response cache, or None: no ``cache:`` block, ``--no-cache`` (``use``), or
    EVALGATE_CACHE=off. Its folder is relative to the config file's folder, like every path in it."""
    spec = config.cache
    if spec is None or not use or cache_disabled():
        return None
    return ResponseCache(config.resolve(spec.dir), spec.max_bytes, spec.key)


def canonical(value: Any) -> bytes:
    """The JSON a key and a payload are made of: sorted keys, no spaces, UTF-8."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


@dataclass
class CacheStats:
    hits: int = 0
    misses: int = 0
    written: int = 0
    bad: int = 0  # entries that failed their check (cut short, garbled): read as misses
    pruned: int = 0

    def line(self) -> str:
        bad = f", {self.bad} damaged entr{'y' if self.bad == 1 else 'ies'} ignored" if self.bad else ""
        pruned = f", {self.pruned} pruned" if self.pruned else ""
        return f"{self.hits} hits, {self.misses} misses, {self.written} written{bad}{pruned}"


class ResponseCache:
    """The entries under ``folder``. Safe across processes (atomic replace) and within one event
    loop (each call is synchronous; entries are small, a hit is one read)."""

    def __init__(self, folder: Path, max_bytes: int, namespace: str | None = None):
        self.folder = Path(folder)
        self.max_bytes = max_bytes
        self.namespace = namespace
        self.stats = CacheStats()

    # ---------------------------------------------------------------------------------- keys

    def key(self, kind: str, request: Mapping[str, Any]) -> str:
        """The entry's name: sha256 of the request's canonical JSON, with the attempt number the
        runner is on, the user's ``cache.key`` and the format's version. ``request`` must hold no
        secret: a key is a file name anyone with the folder can read."""
        material = {
            "format": FORMAT,
            "kind": kind,
            "namespace": self.namespace,
            "attempt": ATTEMPT.get(),
            "request": request,
        }
        return hashlib.sha256(canonical(material)).hexdigest()

    def path(self, key: str) -> Path:
        return self.folder / key[:2] / key

    # ------------------------------------------------------------------------------ entries

    def get(self, key: str) -> Any | None:
        """The stored value, or None (a miss: none stored, or one that fails its check)."""
        path = self.path(key)
        try:
            data = path.read_bytes()
        except FileNotFoundError:
            self.stats.misses += 1
            return None
        except OSError:  # unreadable (permissions, a folder in its place): as good as absent
            self.stats.misses += 1
            self.stats.bad += 1
            return None
        value = _decode(data, key)
        if value is None:
            self.stats.misses += 1
            self.stats.bad += 1
            return None
        with contextlib.suppress(OSError):  # "recently used", for pruning; a read-only cache still serves
            os.utime(path)
        self.stats.hits += 1
        return value["value"]

    def put(self, key: str, value: Any) -> bool:
        """Store ``value`` (JSON) under ``key``; False when it could not be written (a full disk, a
        read-only folder): the cache is an optimisation, never a reason for a run to fail."""
        payload = canonical({"value": value})
        header = b"%s %d %s %d %s\n" % (
            MAGIC,
            FORMAT,
            key.encode("ascii"),
            len(payload),
            hashlib.sha256(payload).hexdigest().encode("ascii"),
        )
        path = self.path(key)
        tmp = None
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-")
            with os.fdopen(fd, "wb") as fh:
                fh.write(header + payload)
            os.replace(tmp, path)
        except OSError:
            if tmp is not None:
                with contextlib.suppress(OSError):
                    os.unlink(tmp)
            return False
        self.stats.written += 1
        return True

    # ------------------------------------------------------------------------------- pruning

    def size(self) -> int:
        return sum(size for _path, size, _used in self._entries())

    def prune(self, max_bytes: int | None = None) -> int:
        """Remove the least recently used entries until the folder holds at most ``max_bytes``
        (default: the cap); returns how many were removed. Another process pruning or writing at
        the same time is harmless: a file already gone is skipped."""
        cap = self.max_bytes if max_bytes is None else max_bytes
        entries = sorted(self._entries(), key=lambda e: e[2])
        total = sum(size for _path, size, _used in entries)
        removed = 0
        for path, size, _used in entries:
            if total <= cap:
                break
            with contextlib.suppress(FileNotFoundError):
                path.unlink()
                removed += 1
            total -= size
        self.stats.pruned += removed
        return removed

    def _entries(self) -> list[tuple[Path, int, float]]:
        """(path, size, last used) of every entry; stale temporary files are removed on the way.

        Only what this cache wrote counts: a ``<2 hex>/<64 hex>`` file whose name starts with its
        folder's and whose first bytes are this format's header, and ``.tmp-`` files in such a
        folder. ``cache.dir`` is the user's to choose — pointed at ``.git/objects`` or a folder of
        their own files, pruning must not delete what only looks like the layout."""
        found = []
        now = time.time()
        try:
            found_dirs = os.scandir(self.folder)
            subdirs = [d for d in found_dirs if _HEX2.fullmatch(d.name) and d.is_dir(follow_symlinks=False)]
        except (FileNotFoundError, NotADirectoryError):
            return []
        for sub in subdirs:
            with contextlib.suppress(FileNotFoundError), os.scandir(sub.path) as it:
                for entry in it:
                    try:
                        st = entry.stat(follow_symlinks=False)
                    except FileNotFoundError:
                        continue
                    if not entry.is_file(follow_symlinks=False):
                        continue
                    if entry.name.startswith(".tmp-"):
                        if now - st.st_mtime > STALE_TEMP_S and _ours(entry.path, partial=True):
                            with contextlib.suppress(FileNotFoundError):
                                os.unlink(entry.path)
                        continue
                    if _HEX64.fullmatch(entry.name) and entry.name[:2] == sub.name and _ours(entry.path):
                        found.append((Path(entry.path), st.st_size, st.st_mtime))
        return found

    def close(self) -> None:
        """After a run: prune to the cap if this run added anything."""
        if self.stats.written:
            with contextlib.suppress(OSError):
                self.prune()


_HEX2 = re.compile(r"[0-9a-f]{2}")
_HEX64 = re.compile(r"[0-9a-f]{64}")


def _ours(path: str, *, partial: bool = False) -> bool:
    """Whether the file at ``path`` starts as an entry of this cache does: its magic and format.
    A temporary file (``partial``) may still be empty: a writer died before its first byte."""
    head = MAGIC + b" %d " % FORMAT
    try:
        with open(path, "rb") as fh:
            start = fh.read(len(head))
    except OSError:
        return False
    return start == head or (partial and start == b"")


def _decode(data: bytes, key: str) -> dict[str, Any] | None:
    """The entry's payload if its header names ``key`` and the payload has the stated length and
    digest; None for anything else."""
    end = data.find(b"\n", 0, HEADER_LIMIT)
    if end < 0:
        return None
    parts = data[:end].split(b" ")
    if len(parts) != 5 or parts[0] != MAGIC or parts[1] != str(FORMAT).encode() or parts[2] != key.encode("ascii"):
        return None
    payload = data[end + 1 :]
    try:
        length = int(parts[3])
    except ValueError:
        return None
    if length != len(payload) or hashlib.sha256(payload).hexdigest().encode("ascii") != parts[4]:
        return None
    try:
        value = json.loads(payload)
    except ValueError:
        return None
    return value if isinstance(value, dict) and "value" in value else None
