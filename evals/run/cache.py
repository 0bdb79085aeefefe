"""The response cache (docs/spec.md#response-cache): answers of the ``openai`` target, the ``judge`` and — with an
explicit ``cache.key`` — python and command targets, stored on disk by the sha256 of the exact
request, so a re-run of an unchanged suite pays for nothing.

What a key covers is chosen by its caller (``key``): the request's non-secret parts (endpoint,
model, parameters, messages, tools), the attempt number (``ATTEMPT``: attempt 2 of a case, or a
more-evidence batch's new attempt, is another sample, never attempt 1's answer again), the
user's ``cache.key`` and this file format's version. API keys and header values are never in it,
and never stored: a model target's headers that can change an answer count by their digest
(``evals.run.targets.headers.headers_digest``).

The entries live in one SQLite file, ``<dir>/cache.sqlite`` (WAL), a row per entry: the folder can
be saved and restored whole (``actions/cache``), and several processes (shards, two runs at once)
read and write it at the same time, each write a transaction. A row's data is a header line
``evalgate-cache 1 <key> <length> <sha256>`` and the JSON payload; a reader takes it only if the
header names this key and the payload has that length and digest; anything else (a garbled byte, a
row copied under another key) is a miss, and the next answer replaces it. Only successful answers
are ever stored: errors, timeouts and infra failures are not answers.

Writes are off the hot path: answers are kept in memory and written ``FLUSH_ENTRIES`` (or
``FLUSH_S`` seconds' worth) at a time in one transaction, and at the end of the run. One file per
answer cost 2-3 s of CPU and 41 MB of files on a 10,000-case run that could never hit.

Lookups ask the table only when it may hold the key: a table of at most ``KNOWN_MAX`` entries has
its keys read when it is opened, so a miss is a set lookup (a SELECT a miss was 0.2 s of CPU on
10,000 misses). Rows other processes (shards, a second run on the same folder) commit meanwhile
are learnt at each batch this process writes: until then such an answer is a miss, asked again
and written again — a cost, never a wrong answer (a row is always read and checked before it is
served). A bigger table is asked at every lookup.

A folder of the first format — one file per entry, ``<dir>/<2 hex>/<64 hex>`` — is converted when
the cache is first opened: every whole entry becomes a row (keeping its last use), and the files go.

Entries carry their size (the row's data); a hit marks the row used, and after a run that wrote
entries the table is pruned to ``max_bytes``, least recently used first."""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import os
import re
import sqlite3
import threading
import time
from collections.abc import Iterable, Iterator, Mapping
from contextvars import ContextVar
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic_core import to_json

if TYPE_CHECKING:
    from evals.suite.config import SuiteConfig

FORMAT = 1
MAGIC = b"evalgate-cache"
DB_NAME = "cache.sqlite"
# Read by `evalgate run` (and set by `evalgate gate --no-cache` for every run it starts, the
# more-evidence batches included): "off", "0", "false" or "no" turn the cache off.
CACHE_ENV = "EVALGATE_CACHE"
OFF_VALUES = frozenset({"off", "0", "false", "no"})
# The folder to use instead of the config's ``cache.dir``: set by more evidence for the runs in the
# baseline's throwaway worktree, so they read and write the checkout's folder, which outlives it.
CACHE_DIR_ENV = "EVALGATE_CACHE_DIR"
# A temporary file of the first format older than this was left by a writer that died: removed.
STALE_TEMP_S = 3600.0
HEADER_LIMIT = 256
# Answers kept in memory before they are written in one transaction: a few milliseconds of the
# event loop's time per batch, instead of a file per answer; a run killed before its end loses at
# most this many (or FLUSH_S seconds' worth), which the next run asks again.
FLUSH_ENTRIES = 512
FLUSH_S = 2.0
# Another process holding the write lock (a shard's batch): wait for it rather than lose the batch.
BUSY_TIMEOUT_S = 30.0
# A table of at most this many entries has its keys read when it is opened (their hashes: ~80
# bytes and ~0.8 µs each, so 4 MB and 40 ms at most). Above, reading it whole would cost more
# than the SELECTs most runs' misses make (~20 µs of CPU each inside a run).
KNOWN_MAX = 50_000

# The attempt number the runner is on (its index plus --attempt-offset). A context variable, so
# that what users implement — a Target's ``call(case)``, a scorer's ``(output, case)`` — keeps its
# signature: the runner sets it in the task that makes the attempt's calls, which read it where
# they key a request.
ATTEMPT: ContextVar[int] = ContextVar("evalgate_attempt", default=0)

SCHEMA = (
    """CREATE TABLE IF NOT EXISTS entries (
        key TEXT PRIMARY KEY,
        size INTEGER NOT NULL,
        used REAL NOT NULL,
        data BLOB NOT NULL
    )""",
    # The folder's total and the least recently used, read after every run that wrote, from this
    # index alone: not from the table, whose pages hold the answers (up to cache.max_bytes of them).
    "CREATE INDEX IF NOT EXISTS entries_by_use ON entries (used, size)",
)


def cache_disabled(env: Mapping[str, str] = os.environ) -> bool:
    return env.get(CACHE_ENV, "").strip().lower() in OFF_VALUES


def open_cache(config: SuiteConfig, *, use: bool = True, env: Mapping[str, str] = os.environ) -> ResponseCache | None:
    """The config's response cache, or None: no ``cache:`` block, ``--no-cache`` (``use``), or
    EVALGATE_CACHE=off. Its folder is relative to the config file's folder, like every path in it,
    unless EVALGATE_CACHE_DIR names another."""
    spec = config.cache
    if spec is None or not use or cache_disabled(env):
        return None
    folder = Path(env[CACHE_DIR_ENV]) if env.get(CACHE_DIR_ENV) else config.resolve(spec.dir)
    return ResponseCache(folder, spec.max_bytes, spec.key)


# json.dumps with options builds an encoder per call: one made once encodes the same bytes.
_CANONICAL = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def canonical(value: Any) -> bytes:
    """The JSON a key is made of: sorted keys, no spaces, UTF-8."""
    return _CANONICAL.encode(value).encode("utf-8")


def payload(value: Any) -> bytes:
    """An entry's payload: ``value`` as compact UTF-8 JSON in the order it was built. Only a key
    must be canonical; a payload is checked against its own digest, so pydantic-core's encoder
    (a quarter of the json module's CPU) writes it: the same JSON, read back by ``json.loads``."""
    return to_json({"value": value})


def encode(key: str, value: Any) -> bytes:
    """An entry's data: the header naming ``key``, the payload's length and digest, the payload."""
    return _entry(key, payload(value))


def _entry(key: str, body: bytes) -> bytes:
    header = b"%s %d %s %d %s\n" % (
        MAGIC,
        FORMAT,
        key.encode("ascii"),
        len(body),
        hashlib.sha256(body).hexdigest().encode("ascii"),
    )
    return header + body


@functools.lru_cache(maxsize=64)
def _stored_forms(secret: str) -> tuple[bytes, ...]:
    """``secret`` as a payload would hold it: as it is, and JSON-escaped by the payload's encoder
    (a quote, a backslash). Kept: a target sends the same few secrets with every request."""
    return tuple({secret.encode("utf-8"), to_json(secret)[1:-1]})


@dataclass
class CacheStats:
    hits: int = 0
    misses: int = 0
    written: int = 0
    bad: int = 0  # entries that failed their check (cut short, garbled): read as misses
    pruned: int = 0
    converted: int = 0  # entries of the one-file format moved into the table

    def line(self) -> str:
        bad = f", {self.bad} damaged entr{'y' if self.bad == 1 else 'ies'} ignored" if self.bad else ""
        pruned = f", {self.pruned} pruned" if self.pruned else ""
        converted = f", {self.converted} converted from one file each" if self.converted else ""
        return f"{self.hits} hits, {self.misses} misses, {self.written} written{bad}{pruned}{converted}"


class ResponseCache:
    """The entries in ``folder``'s table. Safe across processes (SQLite transactions, WAL) and
    within one process (a lock: python targets may call from threads). Opened on first use, so a
    run that caches nothing creates nothing."""

    def __init__(self, folder: Path, max_bytes: int, namespace: str | None = None):
        self.folder = Path(folder)
        self.max_bytes = max_bytes
        self.namespace = namespace
        self.stats = CacheStats()
        self._conn: sqlite3.Connection | None = None
        self._broken = False  # the table could not be opened: every call a miss, nothing stored
        self._pending: dict[str, bytes] = {}
        self._touched: set[str] = set()
        self._flushed_at = time.monotonic()
        self._lock = threading.RLock()
        # The hashes of the keys the table may hold, or None: ask it (the module's docstring). A
        # hash whose row is gone, or a collision, costs a SELECT that misses; never a wrong answer.
        self._known: set[int] | None = None
        self._last_rowid = 0
        self._data_version = -1

    # ---------------------------------------------------------------------------------- keys

    def key(self, kind: str, request: Mapping[str, Any]) -> str:
        """The entry's name: sha256 of the request's canonical JSON, with the attempt number the
        runner is on, the user's ``cache.key`` and the format's version. ``request`` must hold no
        secret: a key is a name anyone with the folder can read."""
        material = {
            "format": FORMAT,
            "kind": kind,
            "namespace": self.namespace,
            "attempt": ATTEMPT.get(),
            "request": request,
        }
        return hashlib.sha256(canonical(material)).hexdigest()

    # ------------------------------------------------------------------------------ entries

    def get(self, key: str) -> Any | None:
        """The stored value, or None (a miss: none stored, or one that fails its check)."""
        with self._lock:
            data = self._pending.get(key)
            conn = self._open()
            if data is None and conn is not None and (self._known is None or hash(key) in self._known):
                try:
                    row = conn.execute("SELECT data FROM entries WHERE key = ?", (key,)).fetchone()
                except sqlite3.Error:  # locked past the timeout, or damaged: as good as absent
                    row = None
                    self.stats.bad += 1
                data = row[0] if row is not None else None
            if data is None:
                self.stats.misses += 1
                return None
            value = _decode(bytes(data), key)
            if value is None:
                self.stats.misses += 1
                self.stats.bad += 1
                return None
            self._touched.add(key)  # "recently used", for pruning: written with the next batch
            self.stats.hits += 1
            return value["value"]

    def put(self, key: str, value: Any, secrets: Iterable[str] = ()) -> bool:
        """Store ``value`` (JSON) under ``key``: kept until the next batch is written. False when
        the cache cannot be opened (a read-only folder, a full disk): the cache is an optimisation,
        never a reason for a run to fail. Nor when ``value`` holds one of ``secrets`` (a key or
        header value the request was sent with, echoed in the answer): the folder is restored by
        ``actions/cache`` into other jobs, a fork's pull request's among them, so such an answer
        is asked again rather than kept."""
        body = payload(value)
        if any(form in body for secret in secrets if secret for form in _stored_forms(secret)):
            return False
        with self._lock:
            if self._open() is None:
                return False
            self._pending[key] = _entry(key, body)
            if self._known is not None:
                self._known.add(hash(key))
            if len(self._pending) >= FLUSH_ENTRIES or time.monotonic() - self._flushed_at >= FLUSH_S:
                self.flush()
            return True

    def flush(self) -> None:
        """Write the kept answers and the hits' last use, in one transaction."""
        with self._lock:
            self._flushed_at = time.monotonic()
            pending, touched = self._pending, self._touched
            self._pending, self._touched = {}, set()
            conn = self._open()
            if conn is None:
                return
            with contextlib.suppress(sqlite3.Error):  # unread: those rows are misses, a cost only
                self._learn(conn)
            if not (pending or touched):
                return
            now = time.time()
            try:
                with _write(conn):
                    conn.executemany(
                        "INSERT OR REPLACE INTO entries (key, size, used, data) VALUES (?, ?, ?, ?)",
                        ((k, len(d), now, d) for k, d in pending.items()),
                    )
                    conn.executemany("UPDATE entries SET used = ? WHERE key = ?", ((now, k) for k in touched))
            except sqlite3.Error:  # a full disk, a read-only file: these answers are asked again next time
                return
            self.stats.written += len(pending)

    # ------------------------------------------------------------------------------- pruning

    def size(self) -> int:
        with self._lock:
            self.flush()
            conn = self._open()
            return int(conn.execute("SELECT total(size) FROM entries").fetchone()[0]) if conn else 0

    def prune(self, max_bytes: int | None = None) -> int:
        """Remove the least recently used entries until the table holds at most ``max_bytes``
        (default: the cap); returns how many were removed. Only rows of the table go: nothing
        else in ``cache.dir``, which is the user's to choose, is touched."""
        cap = self.max_bytes if max_bytes is None else max_bytes
        with self._lock:
            self.flush()
            conn = self._open()
            if conn is None:
                return 0
            with _write(conn):
                total = conn.execute("SELECT total(size) FROM entries").fetchone()[0]
                doomed = []
                if total > cap:
                    for key, size in conn.execute("SELECT key, size FROM entries ORDER BY used, key"):
                        if total <= cap:
                            break
                        doomed.append((key,))
                        total -= size
                    conn.executemany("DELETE FROM entries WHERE key = ?", doomed)
            if doomed:  # give the freed pages back, so the folder a CI cache saves shrinks too
                with contextlib.suppress(sqlite3.Error):
                    conn.execute("PRAGMA incremental_vacuum")
            self.stats.pruned += len(doomed)
            return len(doomed)

    def close(self) -> None:
        """After a run: write what is kept, prune to the cap if this run added anything, and close
        the file (SQLite then folds its write-ahead log into it: the folder is one file again)."""
        with self._lock:
            self.flush()
            if self.stats.written:
                with contextlib.suppress(sqlite3.Error, OSError):
                    self.prune()
            if self._conn is not None:
                with contextlib.suppress(sqlite3.Error):
                    self._conn.close()
                self._conn = None
            # Another connection's data_version counts from its own start: opened again, read anew.
            self._known, self._data_version = None, -1

    # ------------------------------------------------------------------------------ the file

    def _open(self) -> sqlite3.Connection | None:
        if self._conn is not None or self._broken:
            return self._conn
        try:
            if not self.folder.exists():
                # A folder of ours ignores itself: a table that changes on every run is never committed
                # (`git add -A`), or every later promotion would name the tree as one with uncommitted
                # changes. A folder that was there is left as it was (it may be anything: .git/objects).
                self.folder.mkdir(parents=True)
                (self.folder / ".gitignore").write_text("# evalgate's response cache (docs/running.md)\n*\n")
            conn = sqlite3.connect(
                self.folder / DB_NAME, timeout=BUSY_TIMEOUT_S, isolation_level=None, check_same_thread=False
            )
            # Before the table exists: freed pages can be given back after pruning.
            conn.execute("PRAGMA auto_vacuum = INCREMENTAL")
            conn.execute("PRAGMA journal_mode = WAL")
            # NORMAL under WAL: no fsync per batch; a power cut may lose the last batch, never the file.
            conn.execute("PRAGMA synchronous = NORMAL")
            for statement in SCHEMA:
                conn.execute(statement)
        except (sqlite3.Error, OSError):
            self._broken = True
            return None
        self._conn = conn
        with contextlib.suppress(sqlite3.Error, OSError):
            self._convert(conn)
        with contextlib.suppress(sqlite3.Error):  # unread: every lookup asks the table
            self._learn(conn)
        return conn

    def _learn(self, conn: sqlite3.Connection) -> None:
        """Read the keys of the rows committed since the last call, into ``_known``: at the first
        call all of them (none if there are more than ``KNOWN_MAX``); later only when another
        connection has written since (SQLite's ``data_version``), those with a larger rowid (a row
        replaced gets a new one)."""
        version = conn.execute("PRAGMA data_version").fetchone()[0]  # first: a commit after it is read next time
        if version == self._data_version:
            return
        first = self._data_version < 0
        self._data_version = version
        if first:
            # The key's index holds the rowids too: this reads it, not the table's pages of answers.
            rows = conn.execute("SELECT rowid, key FROM entries LIMIT ?", (KNOWN_MAX + 1,))
            known: set[int] = set()
        elif self._known is None:
            return
        else:
            rows = conn.execute("SELECT rowid, key FROM entries WHERE rowid > ?", (self._last_rowid,))
            known = self._known
        last = self._last_rowid
        for rowid, key in rows:
            known.add(hash(key))
            last = max(last, rowid)
        if first and len(known) > KNOWN_MAX:
            return
        self._known, self._last_rowid = known, last

    def _convert(self, conn: sqlite3.Connection) -> None:
        """Move the entries of the one-file format into the table (each whole one keeps its last
        use; a damaged one was a miss already), then delete their files."""
        rows, done = [], []
        for path, used in legacy_entries(self.folder):
            try:
                data = path.read_bytes()
            except OSError:
                continue
            if _decode(data, path.name) is not None:
                rows.append((path.name, len(data), used, data))
            done.append(path)
        if not done:
            return
        with _write(conn):
            conn.executemany("INSERT OR IGNORE INTO entries (key, size, used, data) VALUES (?, ?, ?, ?)", rows)
        for path in done:  # only once the rows are committed: a failed conversion loses nothing
            with contextlib.suppress(OSError):
                path.unlink()
        for sub in {path.parent for path in done}:
            with contextlib.suppress(OSError):
                sub.rmdir()  # empty now, unless someone else's files are in it
        self.stats.converted += len(rows)


@contextlib.contextmanager
def _write(conn: sqlite3.Connection) -> Iterator[None]:
    """One write transaction, taken at its start (IMMEDIATE): two processes never both read and
    then both try to write, which SQLite would refuse one of without waiting."""
    conn.execute("BEGIN IMMEDIATE")
    try:
        yield
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    conn.execute("COMMIT")


_HEX2 = re.compile(r"[0-9a-f]{2}")
_HEX64 = re.compile(r"[0-9a-f]{64}")


def legacy_entries(folder: Path) -> list[tuple[Path, float]]:
    """(path, last used) of every entry of the one-file format; stale temporary files are removed.

    Only what this cache wrote counts: a ``<2 hex>/<64 hex>`` file whose name starts with its
    folder's and whose first bytes are this format's header, and ``.tmp-`` files in such a
    folder. ``cache.dir`` is the user's to choose — pointed at ``.git/objects`` or a folder of
    their own files, nothing that only looks like the layout is touched."""
    found = []
    now = time.time()
    try:
        with os.scandir(folder) as top:
            subdirs = [d for d in top if _HEX2.fullmatch(d.name) and d.is_dir(follow_symlinks=False)]
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
                    found.append((Path(entry.path), st.st_mtime))
    return found


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
