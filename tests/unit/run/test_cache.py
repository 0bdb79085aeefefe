"""The response cache (docs/spec.md#response-cache) against the local OpenAI-compatible server
(tests/fakes/openai_server.py), which counts every request it answers: a re-run of an unchanged gate (target and judge)
makes no request and gives the same verdict; a damaged entry (cut short, or garbled at the same length) is a miss that
is asked again and repaired; attempt numbers and --attempt-offset key apart; a changed request (system prompt, model,
temperature, tools) is a miss; errors are never stored; secrets are in no entry; two processes writing the same entries
leave whole ones; pruning keeps the table under its cap, least recently used first; python and command targets are
cached only with ``cache.key``; a run writes one table, not a file per answer, and a folder of the one-file format is
converted, every entry still served."""

from __future__ import annotations

import contextlib
import json
import os
import re
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from fakes.openai_server import OpenAIServer, status
from fakes.openai_server import openai_server as openai_server  # the fixture
from fakes.suites import echo_cases, write_suite

from evals.common.errors import InputFileError
from evals.results.files import load_results
from evals.run.cache import ATTEMPT, DB_NAME, STALE_TEMP_S, ResponseCache, _decode
from evals.run.execution import execute
from evals.suite.loading import load_config

RUBRIC = "The answer repeats the question."
NONCE = re.compile(r'\{"nonce": "(\w+)"')


def model_and_judge(body: dict[str, Any]) -> str:
    """The model echoes the user's message; asked as the judge (its prompt carries a nonce), it
    passes every answer that repeats the question."""
    text = body["messages"][-1]["content"]
    asked = NONCE.search(text)
    if asked is None:
        return text
    return json.dumps({"nonce": asked.group(1), "verdict": "pass", "score": 1, "reasoning": "repeats it"})


def openai_suite(folder: Path, server: OpenAIServer, n: int = 6, **config: Any) -> Path:
    openai = {"base_url": server.url, "model": "local:m", "api_key_env": None, **config.pop("openai", {})}
    settings = {"scorers": ["exact"], "retries": {"max": 0, "backoff_s": [0]}, "cache": {}, **config}
    return write_suite(folder, echo_cases(n), target={"openai": openai}, **settings)


def evalgate(*args: str, cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    environ = {k: v for k, v in os.environ.items() if not k.startswith("GITHUB_") and k != "EVALGATE_CACHE"}
    return subprocess.run(
        [sys.executable, "-m", "evals", *args],
        cwd=cwd,
        env={**environ, **(env or {})},
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def run(folder: Path, *args: str, output: str = "r.json") -> subprocess.CompletedProcess[str]:
    done = evalgate("run", "--config", "evalgate.yml", "-o", output, *args, cwd=folder)
    assert done.returncode in (0, 3), done.stderr
    return done


def rows(folder: Path) -> dict[str, bytes]:
    """The cache table's entries in ``folder``: key -> data."""
    if not (folder / DB_NAME).exists():
        return {}
    with contextlib.closing(sqlite3.connect(folder / DB_NAME)) as conn:
        return {key: bytes(data) for key, data in conn.execute("SELECT key, data FROM entries ORDER BY key")}


def sql(folder: Path, statement: str, *params: Any) -> None:
    with contextlib.closing(sqlite3.connect(folder / DB_NAME)) as conn, conn:
        conn.execute(statement, params)


def entries(folder: Path) -> dict[str, bytes]:
    return rows(folder / ".evalgate" / "cache")


def attempts(path: Path) -> list[Any]:
    return [a for c in load_results(path).cases for a in c.attempts]


# ------------------------------------------------------------------------------ the whole gate


@pytest.mark.e2e
def test_a_rerun_of_an_unchanged_gate_makes_no_request_and_gives_the_same_verdict(tmp_path):
    with OpenAIServer(responder=model_and_judge) as server:
        judge = {"judge": {"model": "local:judge", "base_url": server.url, "api_key_env": None, "rubric": RUBRIC}}
        openai_suite(tmp_path, server, n=12, scorers=["exact", judge], attempts=2, slices=[])
        store = ["--config", "evalgate.yml", "--store", "local", "--baseline-dir", str(tmp_path / "store")]

        first = evalgate("gate", *store, "--seed", "--out-dir", "out1", cwd=tmp_path)
        assert first.returncode == 0, first.stderr
        assert len(server.requests) == 12 * 2 * 2  # every attempt: the target, then the judge

        second = evalgate("gate", *store, "--out-dir", "out2", cwd=tmp_path)
        assert len(server.requests) == 48, "the re-run asked the server again"
        assert "response cache: 48 hits, 0 misses, 0 written" in second.stderr

        third = evalgate("gate", *store, "--no-cache", "--out-dir", "out3", cwd=tmp_path)
        assert len(server.requests) == 96  # --no-cache pays for every answer again

    verdicts = [json.loads((tmp_path / out / "comparison.json").read_text())["verdict"] for out in ("out2", "out3")]
    assert second.returncode == third.returncode and verdicts[0] == verdicts[1]
    warm, cold = attempts(tmp_path / "out2" / "results.json"), attempts(tmp_path / "out3" / "results.json")
    assert len(warm) == 24 and all(a.cached and a.metadata["judge"]["cached"] for a in warm)
    assert not any(a.cached or a.metadata["judge"].get("cached") for a in cold)

    # A cached attempt keeps what its first run reported, so tokens and cost compare like with like.
    def seen(got: list[Any]) -> list[tuple[Any, ...]]:
        return [(a.tokens_in, a.tokens_out, a.passed) for a in got]

    assert seen(warm) == seen(cold)
    assert all(a.latency_ms > 0 for a in warm)
    report = (tmp_path / "out2" / "report.md").read_text()
    assert "Cache hits: 24 of 24 attempts (baseline: 0 of 24)" in report
    comparison = json.loads((tmp_path / "out2" / "comparison.json").read_text())
    assert comparison["candidate_run"]["cache_hits"] == 24


@pytest.mark.e2e
def test_run_summary_and_html_count_the_hits(tmp_path, openai_server):
    openai_suite(tmp_path, openai_server, openai={"price_in_per_mtok": 1, "price_out_per_mtok": 1})
    run(tmp_path)
    warm = run(tmp_path, "--html", "page.html", output="r2.json")
    assert "cache:   6 of 6 attempts from the response cache; paid this run $0" in warm.stderr
    assert "Cache hits: 6 of 6 attempts (paid this run: $0" in (tmp_path / "page.html").read_text()
    shown = evalgate("show", "r2.json", "--json", cwd=tmp_path)
    summary = json.loads(shown.stdout)
    assert summary["cache_hits"] == 6 and summary["cost_usd_paid"] == 0 and summary["cost_usd"] > 0


# ------------------------------------------------------------------------------- damaged entries


@pytest.mark.e2e
def test_a_truncated_entry_is_a_miss_asked_again_and_repaired(tmp_path, openai_server):
    openai_suite(tmp_path, openai_server, n=3)
    run(tmp_path)
    assert len(openai_server.requests) == 3
    folder = tmp_path / ".evalgate" / "cache"
    cut, data = next(iter(entries(tmp_path).items()))
    sql(folder, "UPDATE entries SET data = ? WHERE key = ?", data[: len(data) // 2], cut)

    again = run(tmp_path, output="r2.json")
    assert len(openai_server.requests) == 4  # only the damaged one
    assert "2 hits, 1 misses, 1 written, 1 damaged entry ignored" in again.stderr
    got = attempts(tmp_path / "r2.json")
    assert all(a.passed for a in got) and sum(a.cached for a in got) == 2
    assert _decode(entries(tmp_path)[cut], cut) is not None  # repaired: whole again
    run(tmp_path, output="r3.json")
    assert len(openai_server.requests) == 4


def test_a_garbled_entry_of_the_right_length_is_a_miss(tmp_path, openai_server):
    openai_suite(tmp_path, openai_server, n=3)
    run(tmp_path)
    garbled, whole = next(iter(entries(tmp_path).items()))
    data = bytearray(whole)
    # The echoed answer "qN" becomes "qX": a valid length, valid JSON, and the wrong answer.
    at = data.rindex(b'"content":"q') + len(b'"content":"q')
    data[at] = ord("X")
    sql(tmp_path / ".evalgate" / "cache", "UPDATE entries SET data = ? WHERE key = ?", bytes(data), garbled)

    run(tmp_path, output="r2.json")
    assert len(openai_server.requests) == 4
    assert all(a.passed for a in attempts(tmp_path / "r2.json"))  # never the garbled answer


def test_a_hand_made_entry_of_another_shape_is_a_miss_not_a_crash(tmp_path, openai_server):
    openai_suite(tmp_path, openai_server, n=1)
    run(tmp_path)
    (key,) = entries(tmp_path)
    cache = ResponseCache(tmp_path / ".evalgate" / "cache", 1 << 20)
    cache.put(key, {"choice": "not a completion"})
    cache.close()
    run(tmp_path, output="r2.json")
    assert len(openai_server.requests) == 2 and all(a.passed for a in attempts(tmp_path / "r2.json"))


# -------------------------------------------------------------------------- what is in the key


def test_a_run_writes_one_table_not_a_file_per_answer(tmp_path, openai_server):
    """A file per answer cost 2-3 s of CPU and 41 MB on a 10,000-case run that could never hit."""
    openai_suite(tmp_path, openai_server, n=6)
    run(tmp_path)
    folder = tmp_path / ".evalgate" / "cache"
    # Closed: the write-ahead log folded in; the folder ignores itself, so `git add -A` never commits
    # a table that changes on every run.
    assert sorted(p.name for p in folder.iterdir()) == [".gitignore", DB_NAME]
    assert (folder / ".gitignore").read_text(encoding="utf-8").splitlines()[-1] == "*"
    assert len(entries(tmp_path)) == 6


def test_a_folder_of_one_file_entries_is_converted_and_served(tmp_path, openai_server):
    """A cache restored from before the table (``<2 hex>/<64 hex>`` files) is never dropped: its
    entries become rows, keeping their last use, and the run pays for nothing."""
    openai_suite(tmp_path, openai_server, n=4)
    run(tmp_path)
    folder = tmp_path / ".evalgate" / "cache"
    written = entries(tmp_path)
    (folder / DB_NAME).unlink()
    for key, data in written.items():  # the same entries, as the first format stored them
        (folder / key[:2]).mkdir(exist_ok=True)
        (folder / key[:2] / key).write_bytes(data)
    mine = folder / "notes.txt"
    mine.write_text("not the cache's")

    again = run(tmp_path, output="r2.json")
    assert len(openai_server.requests) == 4 and all(a.cached for a in attempts(tmp_path / "r2.json"))
    assert "4 hits, 0 misses, 0 written, 4 converted from one file each" in again.stderr
    assert entries(tmp_path) == written
    assert sorted(p.name for p in folder.iterdir()) == sorted([".gitignore", DB_NAME, "notes.txt"])


@pytest.mark.e2e
def test_attempts_and_the_attempt_offset_key_apart(tmp_path, openai_server):
    openai_suite(tmp_path, openai_server, n=4, attempts=2)
    run(tmp_path)
    assert len(openai_server.requests) == 8  # attempt 2 of a case never gets attempt 1's answer
    assert len(entries(tmp_path)) == 8
    run(tmp_path, "--attempts", "1", "--attempt-offset", "2", output="batch.json")
    assert len(openai_server.requests) == 12  # a more-evidence batch's attempts are new samples
    assert not any(a.cached for a in attempts(tmp_path / "batch.json"))
    run(tmp_path, "--attempts", "1", "--attempt-offset", "1", output="again.json")
    assert len(openai_server.requests) == 12  # attempt 1 (0-based) was stored by the first run
    assert all(a.cached for a in attempts(tmp_path / "again.json"))


@pytest.mark.parametrize(
    "change",
    [
        {"openai": {"model": "local:other"}},
        {"openai": {"temperature": 0.7}},
        {"openai": {"system_prompt": "prompt.md"}, "prompt": "Be brief."},
        {"openai": {"tools": {"lookup": "cache_test_tools:lookup"}}},
        {"openai": {"seed": 7}},
    ],
    ids=["model", "temperature", "system-prompt", "tools", "seed"],
)
def test_a_changed_request_is_a_miss(tmp_path, openai_server, change):
    (tmp_path / "prompt.md").write_text("Be helpful.", encoding="utf-8")
    (tmp_path / "cache_test_tools.py").write_text("def lookup(q: str) -> str:\n    return q\n", encoding="utf-8")
    base = {"system_prompt": "prompt.md"} if "prompt" in change else {}
    config = openai_suite(tmp_path, openai_server, n=3, openai=base)
    execute(load_config(config), tmp_path / "r.json", progress=False)
    execute(load_config(config), tmp_path / "r.json", progress=False)
    assert len(openai_server.requests) == 3
    if "prompt" in change:
        (tmp_path / "prompt.md").write_text(change["prompt"], encoding="utf-8")
    else:
        openai_suite(tmp_path, openai_server, n=3, openai=change["openai"])
    results = execute(load_config(config), tmp_path / "r.json", progress=False)
    assert len(openai_server.requests) == 6
    assert not any(a.cached for c in results.cases for a in c.attempts)


def test_errors_are_never_stored(tmp_path, openai_server):
    openai_suite(tmp_path, openai_server, n=3)
    openai_server.script("q0", status(500))
    openai_server.script("q1", status(400))
    first = execute(load_config(tmp_path / "evalgate.yml"), tmp_path / "r.json", progress=False)
    kinds = {c.id: c.attempts[0].error.kind if c.attempts[0].error else None for c in first.cases}
    assert kinds == {"c000": "infra", "c001": "target", "c002": None}
    assert len(entries(tmp_path)) == 1
    second = execute(load_config(tmp_path / "evalgate.yml"), tmp_path / "r.json", progress=False)
    assert len(openai_server.requests) == 5  # both failed cases asked again, the answered one not
    assert [a.cached for c in second.cases for a in c.attempts] == [False, False, True]


def test_no_secret_is_in_an_entry_or_its_key(tmp_path, openai_server, monkeypatch):
    secret, header = "sk-test-" + "7" * 40, "hdr-secret-" + "9" * 20
    monkeypatch.setenv("CACHE_TEST_KEY", secret)
    openai = {"api_key_env": "CACHE_TEST_KEY", "headers": {"X-Org": header}}
    config = openai_suite(tmp_path, openai_server, n=2, openai=openai)
    execute(load_config(config), tmp_path / "r.json", progress=False)
    assert openai_server.headers[0]["Authorization"] == f"Bearer {secret}"  # it was sent
    assert len(entries(tmp_path)) == 2
    for data in entries(tmp_path).values():
        assert secret.encode() not in data and header.encode() not in data
    monkeypatch.setenv("CACHE_TEST_KEY", "sk-test-" + "8" * 40)  # a rotated key is the same request
    execute(load_config(config), tmp_path / "r.json", progress=False)
    assert len(openai_server.requests) == 2


def test_the_folder_is_relative_to_the_config_and_env_turns_it_off(tmp_path, openai_server, monkeypatch):
    suite = tmp_path / "suite"
    openai_suite(suite, openai_server, n=2, cache={"dir": "cache-here"})
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    evalgate("run", "--config", str(suite / "evalgate.yml"), "-o", "r.json", cwd=elsewhere)
    assert len(rows(suite / "cache-here")) == 2
    done = evalgate("run", "--config", str(suite / "evalgate.yml"), "-o", "r.json", cwd=elsewhere,
                    env={"EVALGATE_CACHE": "off"})  # fmt: skip
    assert done.returncode == 0 and len(openai_server.requests) == 4
    assert "response cache" not in done.stderr


def test_the_cache_is_on_without_a_block_and_cache_false_turns_it_off(tmp_path, openai_server):
    default = tmp_path / "default"
    config = openai_suite(default, openai_server, n=2)
    text = config.read_text()
    config.write_text("\n".join(line for line in text.splitlines() if not line.startswith("cache:")) + "\n")
    assert "cache" not in load_config(config).model_fields_set
    execute(load_config(config), default / "r.json", progress=False)
    execute(load_config(config), default / "r.json", progress=False)
    assert len(openai_server.requests) == 2 and all(a.cached for a in attempts(default / "r.json"))

    off = tmp_path / "off"
    config = openai_suite(off, openai_server, n=2, cache=False)
    execute(load_config(config), off / "r.json", progress=False)
    execute(load_config(config), off / "r.json", progress=False)
    assert len(openai_server.requests) == 2 + 4 and not (off / ".evalgate" / "cache").exists()


# ------------------------------------------------------------------------- python and command

COUNTING_BOT = """
from pathlib import Path

def answer(text):
    with open(Path(__file__).with_name("calls.log"), "a") as fh:
        fh.write(text + "\\n")
    return {"output": text, "tokens_in": 3, "tokens_out": 1, "cost_usd": 0.5}
"""


def _calls(folder: Path) -> int:
    log = folder / "calls.log"
    return len(log.read_text().splitlines()) if log.exists() else 0


@pytest.mark.e2e
def test_a_python_target_is_cached_only_with_a_key(tmp_path):
    (tmp_path / "bot.py").write_text(COUNTING_BOT, encoding="utf-8")
    target = {"python": "bot:answer", "path": ["."]}
    write_suite(tmp_path, echo_cases(3), target=target, cache={})  # default targets: openai only
    run(tmp_path)
    uncached = run(tmp_path, output="r2.json")
    assert _calls(tmp_path) == 6 and not entries(tmp_path)
    assert "response cache:" not in uncached.stderr  # nothing could be cached: nothing to say of it

    write_suite(tmp_path, echo_cases(3), target=target, cache={"targets": ["openai", "python"]})
    with pytest.raises(InputFileError) as err:
        load_config(tmp_path / "evalgate.yml")
    assert "cache.key is not set" in str(err.value) and 'cache: {key: "v1"}' in str(err.value)
    assert str(err.value).startswith(f"{tmp_path / 'evalgate.yml'}:")

    write_suite(tmp_path, echo_cases(3), target=target, cache={"targets": "python", "key": "v1"})
    run(tmp_path)
    warm = run(tmp_path, output="r2.json")
    assert _calls(tmp_path) == 9, warm.stderr  # three more, then none
    got = attempts(tmp_path / "r2.json")
    assert all(a.cached and a.passed and a.cost_usd == 0.5 for a in got)

    write_suite(tmp_path, echo_cases(3), target=target, cache={"targets": "python", "key": "v2"})
    run(tmp_path)
    assert _calls(tmp_path) == 12  # a new key: every answer again


def test_a_command_target_is_cached_with_a_key(tmp_path):
    (tmp_path / "bot.py").write_text(
        COUNTING_BOT + "\nimport json, sys\nprint(json.dumps(answer(json.load(sys.stdin)['input'])))\n",
        encoding="utf-8",
    )
    target = {"command": [sys.executable, "bot.py"]}
    write_suite(tmp_path, echo_cases(3), target=target, cache={"targets": ["command"], "key": "bot-1"})
    run(tmp_path)
    run(tmp_path, output="r2.json")
    assert _calls(tmp_path) == 3
    assert all(a.cached and a.passed for a in attempts(tmp_path / "r2.json"))


HELPED_BOT = """
from pathlib import Path
from helpers import shout

def answer(text):
    with open(Path(__file__).with_name("calls.log"), "a") as fh:
        fh.write(text + "\\n")
    return {"output": shout(text)}
"""


def _git_repo(folder: Path) -> None:
    subprocess.run(["git", "-C", str(folder), "init", "-q"], check=True)


@pytest.mark.e2e
@pytest.mark.parametrize("kind", ["python", "command"])
def test_changed_code_is_never_served_old_answers(tmp_path, kind):
    """cache.key left at v1 while the code regressed served 10 of 10 old answers ("no change
    seen", and on main a promotion): the code the target imports is in the key."""
    _git_repo(tmp_path)
    (tmp_path / "helpers.py").write_text("def shout(text):\n    return text\n", encoding="utf-8")
    bot = HELPED_BOT
    if kind == "command":
        bot += "\nimport json, sys\nprint(json.dumps(answer(json.load(sys.stdin)['input'])))\n"
        target: dict[str, Any] = {"command": [sys.executable, "bot.py"]}
    else:
        target = {"python": "bot:answer", "path": ["."]}
    (tmp_path / "bot.py").write_text(bot, encoding="utf-8")
    subprocess.run(["git", "-C", str(tmp_path), "add", "helpers.py", "bot.py"], check=True)
    write_suite(tmp_path, echo_cases(3), target=target, cache={"targets": [kind], "key": "v1"})
    run(tmp_path)
    run(tmp_path, output="r2.json")
    assert _calls(tmp_path) == 3  # unchanged code: served from the cache

    (tmp_path / "helpers.py").write_text("def shout(text):\n    return text.upper()\n", encoding="utf-8")
    run(tmp_path, output="r3.json")
    assert _calls(tmp_path) == 6  # the helper changed (uncommitted): every case asked again
    got = attempts(tmp_path / "r3.json")
    assert not any(a.cached for a in got) and all(a.output == a.output.upper() for a in got)


# -------------------------------------------------------------------------------- concurrency

WRITER = """
import sys
from pathlib import Path
from evals.run.cache import ResponseCache

cache = ResponseCache(Path(sys.argv[1]), 1 << 30)
tag = sys.argv[2]
for round in range(60):
    for k in range(40):
        key = format(k, "064x")
        # Each writer's value has its own size: a mixed-up entry could not pass for either.
        cache.put(key, {"writer": tag, "k": k, "pad": tag * (100 + 50 * int(tag == "b"))})
    cache.flush()  # a transaction a round: the two writers' transactions interleave
cache.close()
"""


@pytest.mark.e2e
def test_two_processes_writing_the_same_entries_leave_whole_ones(tmp_path):
    folder = tmp_path / "cache"
    writers = [subprocess.Popen([sys.executable, "-c", WRITER, str(folder), tag]) for tag in ("a", "b")]
    reader = ResponseCache(folder, 1 << 30)
    seen = 0
    while any(w.poll() is None for w in writers):  # read while they write: never half an entry
        reader.flush()  # learns the keys they committed since (a miss of an unknown key reads nothing)
        for k in range(40):
            value = reader.get(format(k, "064x"))
            if value is not None:
                seen += 1
                assert value["k"] == k and value["pad"] == value["writer"] * (100 + 50 * (value["writer"] == "b"))
    assert [w.wait(timeout=120) for w in writers] == [0, 0]
    assert seen and reader.stats.bad == 0  # entries were read while they were written, all whole
    final = ResponseCache(folder, 1 << 30)
    assert all(final.get(format(k, "064x")) is not None for k in range(40)) and final.stats.bad == 0


@pytest.mark.e2e
def test_two_runs_at_once_share_the_folder(tmp_path):
    with OpenAIServer(latency=0.02) as server:
        openai_suite(tmp_path, server, n=30)
        command = [sys.executable, "-m", "evals", "run", "--config", "evalgate.yml"]
        quiet = {"cwd": tmp_path, "stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL}
        runs = [subprocess.Popen([*command, "-o", f"r{i}.json"], **quiet) for i in range(2)]
        assert [r.wait(timeout=120) for r in runs] == [0, 0]
        asked = len(server.requests)
        assert 30 <= asked <= 60
        run(tmp_path, output="r3.json")
        assert len(server.requests) == asked  # every entry either wrote is whole and served
    assert all(_decode(data, key) is not None for key, data in entries(tmp_path).items())


# ---------------------------------------------------------------------------------- pruning


def test_pruning_removes_the_least_recently_used_down_to_the_cap(tmp_path):
    cache = ResponseCache(tmp_path / "c", max_bytes=1 << 20)
    keys = [format(i, "064x") for i in range(40)]
    for key in keys:
        cache.put(key, {"pad": "x" * 1000})
    cache.flush()
    size = len(rows(tmp_path / "c")[keys[0]])
    now = time.time()
    for i, key in enumerate(keys):  # written in order, an hour apart … and key 0 read last
        sql(tmp_path / "c", "UPDATE entries SET used = ? WHERE key = ?", now - 3600 * (40 - i), key)
    assert cache.get(keys[0]) is not None  # a hit marks it used

    removed = cache.prune(max_bytes=10 * size)
    assert removed == 30 and cache.size() <= 10 * size
    assert set(rows(tmp_path / "c")) == {keys[0], *keys[31:]}


def test_pruning_a_folder_of_other_files_deletes_none_of_them(tmp_path):
    """cache.dir pointed at .git/objects: its 2-hex folders of 38-hex blobs look like the layout,
    and pruning deleted 28 of 35 of them. Only files with this cache's name and header are entries."""
    repo = tmp_path / "repo"
    repo.mkdir()
    git = ["git", "-C", str(repo), "-c", "user.email=t@t", "-c", "user.name=t"]
    subprocess.run([*git, "init", "-q"], check=True)
    for i in range(30):
        (repo / f"f{i}.txt").write_text(f"content {i}\n" * 50)
    subprocess.run([*git, "add", "."], check=True)
    subprocess.run([*git, "commit", "-qm", "x"], check=True)
    objects = repo / ".git" / "objects"
    before = sorted(p for p in objects.rglob("*") if p.is_file())
    # A look-alike: a 64-hex name in its 2-hex folder, but not this cache's header; and an old
    # ".tmp-" file of someone else's.
    lookalike = objects / "ab" / ("ab" + "0" * 62)
    lookalike.parent.mkdir(exist_ok=True)
    lookalike.write_bytes(b"not a cache entry\n" * 100)
    stranger = objects / "ab" / ".tmp-notes"
    stranger.write_bytes(b"keep me")
    old = time.time() - 10 * STALE_TEMP_S
    os.utime(stranger, (old, old))

    cache = ResponseCache(objects, max_bytes=0)
    key = cache.key("openai", {"body": 1})
    cache.put(key, {"pad": "z"})
    assert cache.prune() == 1  # the one real entry, nothing else
    cache.close()
    after = sorted(p for p in objects.rglob("*") if p.is_file() and not p.name.startswith(DB_NAME))
    assert after == sorted([*before, lookalike, stranger])
    assert subprocess.run([*git, "fsck", "--full"], capture_output=True).returncode == 0


@pytest.mark.e2e
def test_a_run_that_wrote_prunes_to_the_configured_cap(tmp_path, openai_server):
    openai_suite(tmp_path, openai_server, n=5)
    cache = ResponseCache(tmp_path / ".evalgate" / "cache", 1 << 30)
    for i in range(1200):  # ~1.2 MiB of old entries, not used for a day
        cache.put(format(i, "064x"), {"pad": "y" * 1000})
    cache.close()
    sql(tmp_path / ".evalgate" / "cache", "UPDATE entries SET used = ?", time.time() - 86400)
    openai_suite(tmp_path, openai_server, n=5, cache={"max_bytes": 1 << 20})
    done = run(tmp_path)
    assert "pruned" in done.stderr
    assert ResponseCache(tmp_path / ".evalgate" / "cache", 1 << 20).size() <= 1 << 20
    run(tmp_path, output="r2.json")
    assert len(openai_server.requests) == 5  # this run's own entries were the most recent: kept


def test_the_attempt_number_is_in_the_key(tmp_path):
    cache = ResponseCache(tmp_path, 1 << 20)
    first = cache.key("openai", {"body": 1})
    token = ATTEMPT.set(1)
    try:
        assert cache.key("openai", {"body": 1}) != first
    finally:
        ATTEMPT.reset(token)
    assert ResponseCache(tmp_path, 1 << 20, namespace="v2").key("openai", {"body": 1}) != first


@pytest.mark.e2e
def test_an_answer_that_would_not_survive_json_is_not_stored(tmp_path):
    (tmp_path / "bot.py").write_text(
        COUNTING_BOT.replace('return {"output": text,', 'return {"output": (text, 1),'), encoding="utf-8"
    )
    target = {"python": "bot:answer", "path": ["."]}
    cache = {"targets": "python", "key": "v1"}
    write_suite(tmp_path, echo_cases(2), target=target, scorers=["json_valid"], cache=cache)
    run(tmp_path)
    run(tmp_path, output="r2.json")
    assert _calls(tmp_path) == 4 and not entries(tmp_path)  # a tuple would come back as a list: asked again


SLOW_BOT = """
import time
from pathlib import Path

def answer(text):
    with open(Path(__file__).with_name("calls.log"), "a") as fh:
        fh.write(text + "\\n")
    time.sleep(1.5)
    return {"output": text}
"""


@pytest.mark.e2e
def test_an_answer_slower_than_the_current_timeout_is_not_replayed(tmp_path, openai_server):
    """An answer cached under timeout_s: 10 that took 1.5 s was replayed under timeout_s: 1, where a
    live call times out: the cache made a slow candidate look fine. Now it is asked again."""
    (tmp_path / "bot.py").write_text(SLOW_BOT, encoding="utf-8")
    target = {"python": "bot:answer", "path": ["."]}
    cache = {"targets": "python", "key": "v1"}
    write_suite(tmp_path, echo_cases(2), target=target, cache=cache, timeout_s=10, retries={"max": 0})
    run(tmp_path)
    run(tmp_path, output="r2.json")
    assert _calls(tmp_path) == 2  # replayed under the timeout it was made under
    write_suite(tmp_path, echo_cases(2), target=target, cache=cache, timeout_s=1, retries={"max": 0})
    run(tmp_path, output="r3.json")
    assert _calls(tmp_path) == 4
    got = attempts(tmp_path / "r3.json")
    assert not any(a.cached for a in got) and all(a.error is not None for a in got)

    openai_server.latency = 1.5
    openai_suite(tmp_path, openai_server, n=2, timeout_s=10, retries={"max": 0, "backoff_s": [0]})
    run(tmp_path, output="o1.json")
    openai_suite(tmp_path, openai_server, n=2, timeout_s=1, retries={"max": 0, "backoff_s": [0]})
    run(tmp_path, output="o2.json")
    assert len(openai_server.requests) == 4
    assert not any(a.cached for a in attempts(tmp_path / "o2.json"))
