"""The seal on a response cache folder (evals.run.seal): what the baseline side of more evidence
reads in Actions only when the folder holds exactly what a job with the seal key left there."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from evals.run.cache import ResponseCache, encode
from evals.run.seal import SEAL_KEY_ENV, SEAL_NAME, cache_files, check, discard, seal, seal_key

KEY = b"the-baseline-side-job-s-secret"


def filled(folder: Path, answers: int = 3) -> ResponseCache:
    cache = ResponseCache(folder, max_bytes=1 << 20)
    for i in range(answers):
        cache.put(cache.key("python", {"case": i}), {"output": f"FINAL ANSWER: {i}"})
    cache.close()
    return cache


def test_a_sealed_folder_checks_and_any_change_of_what_the_cache_reads_breaks_the_seal(tmp_path):
    cache = filled(tmp_path / "cache")
    folder = cache.folder
    assert [p.name for p in cache_files(folder)] == ["cache.sqlite"]  # closed: the log folded in
    assert seal(folder, KEY) and check(folder, KEY) is None
    assert check(folder, b"another key") == (
        "its seal does not match what it holds (it was written or changed by something else)"
    )
    assert check(folder, None) == f"no seal key ({SEAL_KEY_ENV}) to check it with"
    # A forged answer, encoded as the cache would serve it, under a key anyone can compute.
    key = cache.key("python", {"case": 0})
    with sqlite3.connect(folder / "cache.sqlite") as db:
        db.execute("UPDATE entries SET data = ? WHERE key = ?", (encode(key, {"output": "FINAL ANSWER: nope"}), key))
    assert ResponseCache(folder, 1 << 20).get(key) == {"output": "FINAL ANSWER: nope"}  # it would be served
    assert check(folder, KEY) is not None


def test_files_added_beside_the_table_break_the_seal_and_only_cache_files_are_discarded(tmp_path):
    folder = filled(tmp_path / "cache").folder
    seal(folder, KEY)
    (folder / "notes.txt").write_text("the user's own file")
    assert check(folder, KEY) is None  # not something the cache reads
    # An entry of the one-file format: a cache opening the folder converts it into the table.
    planted = folder / "ab" / ("ab" + "0" * 62)
    planted.parent.mkdir()
    planted.write_bytes(encode(planted.name, {"output": "FINAL ANSWER: nope"}))
    (folder / "cache.sqlite-wal").write_bytes(b"\0" * 32)
    assert check(folder, KEY) is not None
    assert discard(folder) == 3
    assert sorted(p.name for p in folder.iterdir()) == [".gitignore", "notes.txt"]
    assert check(folder, KEY) is None and not seal(folder, KEY)  # nothing left to trust or to seal


def test_an_unsealed_folder_or_one_with_a_garbled_seal_is_not_trusted(tmp_path):
    folder = filled(tmp_path / "cache").folder
    assert check(folder, KEY) == "it carries no seal"
    (folder / SEAL_NAME).write_bytes(b"\xff\xfe not a seal")
    assert check(folder, KEY) == "it carries no seal"
    (folder / SEAL_NAME).write_text("evalgate-cache-seal 2 00")
    assert check(folder, KEY) is not None
    assert check(tmp_path / "absent", KEY) is None  # no cache at all: nothing to distrust


def test_a_link_where_the_table_goes_is_never_read_and_only_the_link_is_removed(tmp_path):
    folder = filled(tmp_path / "cache").folder
    seal(folder, KEY)
    outside = tmp_path / "elsewhere.sqlite"
    (folder / "cache.sqlite").rename(outside)
    (folder / "cache.sqlite").symlink_to("/dev/zero")  # read whole, it would never end
    assert check(folder, KEY) == "it holds a link or a special file where the cache's files go"
    (folder / "cache.sqlite").unlink()
    (folder / "cache.sqlite").symlink_to(outside)  # the very bytes the seal covers, behind a link
    assert check(folder, KEY) is not None
    assert discard(folder) == 1 and outside.exists() and not (folder / "cache.sqlite").is_symlink()


def test_the_seal_key_is_taken_out_of_the_environment():
    env = {SEAL_KEY_ENV: "s3cr3t", "PATH": "/bin"}
    assert seal_key(env) == b"s3cr3t" and env == {"PATH": "/bin"}
    assert seal_key(env) is None
    assert seal_key({SEAL_KEY_ENV: ""}) is None
