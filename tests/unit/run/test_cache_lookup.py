"""The response cache's lookups (evals/run/cache.py, docs/spec.md#response-cache): a miss on a table
small enough to know its keys asks SQLite nothing; what another process writes is still served —
at open, after this process's next batch, and at once on a table too big to know; a known key
whose row changed is read, never assumed; an answer echoing a secret, escaped or not, is refused;
a process killed while it writes loses less than one batch."""

from __future__ import annotations

import contextlib
import signal
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from evals.run import cache as cache_module
from evals.run.cache import DB_NAME, FLUSH_ENTRIES, ResponseCache

WRITER = """
import sys
from pathlib import Path
from evals.run.cache import ResponseCache

cache = ResponseCache(Path(sys.argv[1]), 1 << 30)
cache.put(sys.argv[2], {"by": "the other process"})
cache.close()
"""


def key(i: int) -> str:
    return format(i, "064x")


def other_process_writes(folder: Path, entry_key: str) -> None:
    subprocess.run([sys.executable, "-c", WRITER, str(folder), entry_key], check=True)


def seeded(folder: Path, n: int) -> None:
    cache = ResponseCache(folder, 1 << 30)
    for i in range(n):
        cache.put(key(i), {"i": i})
    cache.close()


def test_a_miss_on_a_table_of_known_keys_asks_sqlite_nothing(tmp_path):
    seeded(tmp_path, 20)
    cache = ResponseCache(tmp_path, 1 << 30)
    assert cache.get(key(3)) == {"i": 3}  # opens the table, reading its keys
    statements: list[str] = []
    assert cache._conn is not None
    cache._conn.set_trace_callback(statements.append)
    assert [cache.get(key(i)) for i in range(100, 150)] == [None] * 50
    assert statements == []
    assert cache.get(key(4)) == {"i": 4}  # a known key is read from the table
    assert len(statements) == 1 and statements[0].startswith("SELECT data FROM entries")


def test_what_another_process_writes_is_served_after_this_ones_next_batch(tmp_path):
    cache = ResponseCache(tmp_path, 1 << 30)
    assert cache.get(key(1)) is None  # open: the table is empty
    other_process_writes(tmp_path, key(1))
    cache.put(key(2), {"by": "this process"})
    cache.flush()  # a batch written: the rows others committed since are learnt
    assert cache.get(key(1)) == {"by": "the other process"}
    assert ResponseCache(tmp_path, 1 << 30).get(key(1)) == {"by": "the other process"}  # and at open


def test_a_table_too_big_to_know_is_asked_at_every_lookup(tmp_path, monkeypatch):
    monkeypatch.setattr(cache_module, "KNOWN_MAX", 3)
    seeded(tmp_path, 5)
    cache = ResponseCache(tmp_path, 1 << 30)
    assert cache.get(key(0)) == {"i": 0}
    other_process_writes(tmp_path, key(9))
    assert cache.get(key(9)) == {"by": "the other process"}  # no batch needed: nothing is assumed absent


def test_a_known_key_whose_row_changed_is_read_not_assumed(tmp_path):
    seeded(tmp_path, 3)
    cache = ResponseCache(tmp_path, 1 << 30)
    assert cache.get(key(0)) == {"i": 0}  # every key known from here on
    with contextlib.closing(sqlite3.connect(tmp_path / DB_NAME)) as db, db:
        db.execute("DELETE FROM entries WHERE key = ?", (key(1),))  # pruned by another process
        bad = db.execute("SELECT data FROM entries WHERE key = ?", (key(0),)).fetchone()[0]
        db.execute("UPDATE entries SET data = ? WHERE key = ?", (bad, key(2)))  # a row copied under another key
    assert cache.get(key(1)) is None and cache.get(key(2)) is None
    assert cache.stats.bad == 1
    cache.put(key(1), {"i": "again"})
    cache.close()
    assert ResponseCache(tmp_path, 1 << 30).get(key(1)) == {"i": "again"}


@pytest.mark.parametrize("secret", ["sk-plain-0123456789", 'sk-"quoted"-0123', "sk-back\\slash-0123", "sk-é-ünï-0123"])
def test_an_answer_echoing_a_secret_as_json_writes_it_is_refused(tmp_path, secret):
    cache = ResponseCache(tmp_path, 1 << 30)
    assert not cache.put(key(0), {"content": f"you sent {secret}"}, secrets=[secret])
    assert cache.put(key(1), {"content": "nothing of it"}, secrets=[secret])
    cache.close()
    with contextlib.closing(sqlite3.connect(tmp_path / DB_NAME)) as db:
        assert [k for (k,) in db.execute("SELECT key FROM entries")] == [key(1)]


KILLED = """
import os, signal, sys
from pathlib import Path
from evals.run.cache import ResponseCache

cache = ResponseCache(Path(sys.argv[1]), 1 << 30)
for i in range(int(sys.argv[2])):
    cache.put(format(i, "064x"), {"i": i})
os.kill(os.getpid(), signal.SIGKILL)  # no close: the answers not yet in a batch are lost
"""


def test_a_process_killed_while_it_writes_loses_less_than_one_batch(tmp_path):
    answered = FLUSH_ENTRIES + 100
    done = subprocess.run([sys.executable, "-c", KILLED, str(tmp_path), str(answered)], check=False)
    assert done.returncode == -signal.SIGKILL
    with contextlib.closing(sqlite3.connect(tmp_path / DB_NAME)) as db:
        kept = {k for (k,) in db.execute("SELECT key FROM entries")}
    assert len(kept) >= FLUSH_ENTRIES and answered - len(kept) < FLUSH_ENTRIES  # FLUSH_S may have written more
    cache = ResponseCache(tmp_path, 1 << 30)
    assert all(cache.get(k) is not None for k in kept) and cache.stats.bad == 0
