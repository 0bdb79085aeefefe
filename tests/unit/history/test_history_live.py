"""``evalgate run`` records its history while it runs, in a child process (``evals.history.live``):
the same rows and digest as ``record_written`` after the run, and wherever the live path cannot
record the run, ``record_written`` does (nothing lost); a parent that dies leaves no partial run."""

from __future__ import annotations

import contextlib
import os
import random
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from test_history_lean import TABLES, write_file

from evals.history import live, open_history, record_written
from evals.history.live import LiveRecord, _Staging
from evals.history.rows import LeanRows
from evals.results.files import load_results
from evals.results.model import CaseResult, Results
from evals.results.summary import SummaryCase, SummaryView
from evals.run.recorder import Recorder, WrittenRun
from evals.suite.cases import Case

RECORDED_AT = 22  # the runs column that differs by the clock only


@pytest.fixture
def run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Results:
    """An evalgate-made run of 11 cases with errors, traces, slices, 0 to 3 attempts; sent in
    batches of 3 and staged in chunks of 2 (the child is forked after these are set)."""
    monkeypatch.setattr(live, "BATCH", 3)
    monkeypatch.setattr(LeanRows, "CHUNK", 2)
    path = tmp_path / "run.json"
    write_file(path, "0.9.0")
    return load_results(path)


def case_json(results: Results) -> list[bytes]:
    return [c.model_dump_json().encode() for c in results.cases]  # as Recorder keeps them


def written(results: Results) -> WrittenRun:
    kept = SummaryView(results.run, [SummaryCase(c) for c in results.cases])
    return WrittenRun(results.run, case_json(results), 0, ids=[c.id for c in results.cases], summary=kept)


def tables(url: str) -> dict[str, list[tuple[Any, ...]]]:
    with sqlite3.connect(url) as db:
        found = {name: db.execute(sql).fetchall() for name, sql in TABLES.items()}
    found["runs"] = [row[:RECORDED_AT] + row[RECORDED_AT + 1 :] for row in found["runs"]]
    return found


def by_record_written(tmp_path: Path, results: Results, monkeypatch: pytest.MonkeyPatch) -> dict[str, list[Any]]:
    """The tables ``record_written`` makes of ``results`` (its cases as they are, in order)."""
    url = str(tmp_path / "after.sqlite")
    monkeypatch.setenv("EVALGATE_HISTORY_URL", url)
    done = record_written(written(results))
    assert not done.failures and done.run_ids["candidate"] == 1
    return tables(url)


@pytest.fixture
def history(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """The history the live path records into; ``record_written``'s fallback finds it too."""
    url = str(tmp_path / "live.sqlite")
    monkeypatch.setenv("EVALGATE_HISTORY", "on")
    monkeypatch.setenv("EVALGATE_HISTORY_URL", url)
    return url


def started(url: str) -> LiveRecord:
    record = LiveRecord.start(url)
    assert record is not None
    return record


@pytest.mark.parametrize("order", [True, False], ids=["order-sent", "no-order"])
def test_the_live_record_writes_the_rows_and_digest_record_written_writes(
    tmp_path: Path, run: Results, history: str, monkeypatch: pytest.MonkeyPatch, order: bool
) -> None:
    """Cases finish out of the file's order and reach the child a batch at a time; at the end it
    writes them in the file's order under the same digest, as one run: staged under their numbers
    in the file when the order came first (as ``evalgate run`` sends it), else renumbered."""
    record = started(history)
    if order:
        record.order([c.id for c in run.cases])
    shuffled = case_json(run)
    random.Random(7).shuffle(shuffled)
    for data in shuffled:
        record.add(data)
    done = record_written(written(run), live=record)
    assert not done.failures and done.run_ids == {"candidate": 1}
    assert record.pid == 0  # reaped
    live_tables = tables(history)
    assert {name: len(rows) for name, rows in live_tables.items()} == {
        "runs": 1, "cases": 11, "case_slices": 14, "attempts": 15, "events": 24,
    }  # fmt: skip
    assert live_tables == by_record_written(tmp_path, run, monkeypatch)


def test_the_history_file_alone_holds_the_run(run: Results, history: str) -> None:
    """The child closes the history as record_written did: its write-ahead log folded into the
    file, which a copy or an upload then holds whole."""
    record = started(history)
    for data in case_json(run):
        record.add(data)
    assert record.finish(run.run, [c.id for c in run.cases]).run_id == 1
    assert not Path(history + "-wal").exists()


def test_the_child_writes_the_run_once_the_end_is_sent_before_its_answer_is_asked(run: Results, history: str) -> None:
    """``end`` lets the child write while evalgate run prints its summary; ``finish`` only waits."""
    record = started(history)
    for data in case_json(run):
        record.add(data)
    record.end(run.run, [c.id for c in run.cases])
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:  # written with no one waiting for it
        with contextlib.suppress(sqlite3.OperationalError):  # the child may not have made the tables yet
            if tables(history)["runs"]:
                break
        time.sleep(0.01)
    assert len(tables(history)["cases"]) == 11
    assert record.finish(run.run, []).run_id == 1  # the end went already: these are not sent
    assert record.pid == 0


def test_a_resumed_run_sends_its_kept_cases_first_and_records_them_too(
    tmp_path: Path, run: Results, history: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    record = started(history)
    cases = [Case(id=c.id) for c in run.cases]
    kept = {c.id: c for c in run.cases[:4]}  # the recorder sends the order first, then these
    recorder = Recorder(tmp_path / "out.json", cases, run.run.model_copy(), kept, sink=record)
    for result in reversed(run.cases[4:]):
        recorder.add(CaseResult.model_validate(result.model_dump()))
    recorder.run = run.run  # the header as the run ends
    recorder.end()  # as execute ends it, before its last write
    done = record_written(recorder.written(), live=record)
    assert done.run_ids == {"candidate": 1}
    assert tables(history) == by_record_written(tmp_path, run, monkeypatch)


def test_a_run_that_stopped_early_is_renumbered_over_the_cases_it_wrote(
    tmp_path: Path, run: Results, history: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The order sent at the start is the suite's; the file of a cancelled run holds only the cases
    that finished, numbered among themselves: the staged numbers have gaps, the history's none."""
    record = started(history)
    record.order([c.id for c in run.cases])
    written_cases = [c for no, c in enumerate(run.cases) if no % 3 != 1]
    partial = run.model_copy(update={"cases": written_cases})
    for data in reversed(case_json(partial)):
        record.add(data)
    done = record_written(written(partial), live=record)
    assert not done.failures and done.run_ids == {"candidate": 1}
    assert [row[1] for row in tables(history)["cases"]] == list(range(len(written_cases)))
    assert tables(history) == by_record_written(tmp_path, partial, monkeypatch)


def test_a_case_not_in_the_order_sent_falls_back(
    tmp_path: Path, run: Results, history: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    record = started(history)
    record.order([c.id for c in run.cases if c.id != "c4"])
    for data in case_json(run):
        record.add(data)
    assert "case 'c4' is not one of the run's" in fell_back(record, run, history, tmp_path, monkeypatch)


def test_the_runs_last_cases_reach_the_child_a_few_at_a_time(
    tmp_path: Path, run: Results, history: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What the parent holds when the run ends is staged only after it: once fewer than a batch
    of the order's cases are yet to come, they go TAIL at a time."""
    monkeypatch.setattr(live, "BATCH", 8)
    monkeypatch.setattr(live, "TAIL", 2)
    record = started(history)
    record.order([c.id for c in run.cases])
    *first, last = case_json(run)
    for data in first:  # 4 (then fewer than 8 are to come), then 2 at a time
        record.add(data)
    assert not record._pending
    record.add(last)  # held: it goes with the end
    assert record.finish(run.run, [c.id for c in run.cases]).run_id == 1
    assert tables(history) == by_record_written(tmp_path, run, monkeypatch)


@pytest.mark.skipif(not hasattr(os, "sched_getscheduler"), reason="Linux's scheduling policies")
def test_the_child_stages_in_the_background(run: Results, history: str) -> None:
    """A case sent wakes the child: on a core it shares with the run, it must not run ahead of it."""
    expected = live._background_policy()
    assert expected in (os.SCHED_IDLE, os.SCHED_BATCH)
    record = started(history)
    try:
        deadline = time.monotonic() + 10  # the child sets it once forked
        while os.sched_getscheduler(record.pid) != expected and time.monotonic() < deadline:
            time.sleep(0.005)
        assert os.sched_getscheduler(record.pid) == expected
    finally:
        record.close()


def test_the_child_idles_only_where_it_may_leave_that_for_its_last_write() -> None:
    sys_nice = 1 << 23
    assert live.may_leave_idle(sys_nice | 0b1, 0, 0)  # root with CAP_SYS_NICE
    assert not live.may_leave_idle(0xA80425FB, 0, 0)  # root in a default Docker container: no CAP_SYS_NICE
    assert not live.may_leave_idle(0, 0, 0)  # a user, the default RLIMIT_NICE
    assert live.may_leave_idle(0, 20, 0) and live.may_leave_idle(0, 1, 19) and not live.may_leave_idle(0, 19, 0)


def fell_back(record: LiveRecord, run: Results, history: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """What the live record said it could not do; the run is recorded all the same (by
    ``record_written``), once."""
    answer = record.finish(run.run, [c.id for c in run.cases])
    assert answer.fallback is not None and answer.run_id is None
    assert record.pid == 0
    done = record_written(written(run))  # the fallback, as record_written(..., live=record) takes it
    assert not done.failures
    assert tables(history) == by_record_written(tmp_path, run, monkeypatch)
    return answer.fallback


def test_a_case_written_twice_falls_back(
    tmp_path: Path, run: Results, history: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    record = started(history)
    for data in [*case_json(run), case_json(run)[5]]:
        record.add(data)
    assert "'c5' was written twice" in fell_back(record, run, history, tmp_path, monkeypatch)


def test_a_child_that_died_falls_back_and_record_written_records_the_run(
    tmp_path: Path, run: Results, history: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    record = started(history)
    for data in case_json(run)[:4]:
        record.add(data)
    os.kill(record.pid, signal.SIGKILL)
    for data in case_json(run)[4:]:
        record.add(data)
    done = record_written(written(run), live=record)
    assert not done.failures and done.run_ids == {"candidate": 1}
    assert tables(history) == by_record_written(tmp_path, run, monkeypatch)


def test_a_history_file_removed_while_the_run_ran_falls_back(run: Results, history: str) -> None:
    """The child's connection would write to the removed file, which no one sees any more (say
    ``rm -rf .evalgate`` during a run). The child's staging, in this process: staged, then the
    files go, then the end."""
    staging = _Staging(history)
    staging._open()
    staging._stage(case_json(run))
    for suffix in ("", "-wal", "-shm"):
        Path(history + suffix).unlink()
    answer = staging._finish({"run": run.run.model_dump_json(), "ids": [c.id for c in run.cases]})
    assert answer == live.Answer(fallback="the history's file was removed or replaced while the run ran")


def test_a_child_that_does_not_answer_in_time_is_killed_and_falls_back(
    tmp_path: Path, run: Results, history: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(live, "ANSWER_S", 0.2)
    record = started(history)
    for data in case_json(run):
        record.add(data)
    os.kill(record.pid, signal.SIGSTOP)  # alive, never answering
    assert "did not answer within 0.2 s" in fell_back(record, run, history, tmp_path, monkeypatch)


def test_a_run_the_history_holds_already_is_recorded_once(
    run: Results, history: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    first = record_written(written(run))
    record = started(history)
    for data in case_json(run):
        record.add(data)
    again = record_written(written(run), live=record)
    assert again.run_ids == first.run_ids == {"candidate": 1}
    assert tables(history)["runs"] == [tables(history)["runs"][0]]


def test_the_child_ignores_sigint_and_sigterm(run: Results, history: str) -> None:
    """Ctrl-C reaches the whole process group: the parent decides when the run ends."""
    record = started(history)
    for data in case_json(run):
        record.add(data)
    os.kill(record.pid, signal.SIGINT)
    os.kill(record.pid, signal.SIGTERM)
    assert record.finish(run.run, [c.id for c in run.cases]).run_id == 1


def test_a_write_the_history_refuses_is_a_warning_and_not_tried_again(
    run: Results, history: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with open_history(history) as db:
        db.execute("CREATE TRIGGER refuse BEFORE INSERT ON cases BEGIN SELECT RAISE(ABORT, 'refused here'); END")
    ids = [c.id for c in run.cases]
    for said in (False, True):
        record = started(history)
        for data in case_json(run):
            record.add(data)
        if not said:  # the child's own answer: no fallback to record_written, which would fail alike
            assert record.finish(run.run, ids) == live.Answer(error="IntegrityError", problem="refused here")
            continue
        done = record_written(written(run), live=record)
        assert done.failures == 1 and done.messages == ["the run results: IntegrityError: refused here"]
        assert "could not record the run results: refused here" in capsys.readouterr().err  # the URL is masked
    assert tables(history)["runs"] == []  # one transaction: the header went with the cases


def test_no_live_record_for_postgresql() -> None:
    """Its staging is SQLite's (ATTACH): a PostgreSQL history is recorded after the run."""
    assert LiveRecord.start("postgresql://evals@localhost/evals") is None


def parent_process(tmp_path: Path, lines: list[bytes], url: str) -> tuple[subprocess.Popen[str], int]:
    """A process that starts a live record, sends it these cases' JSON and waits; and its child."""
    (tmp_path / "cases.jsonl").write_bytes(b"\n".join(lines))
    parent = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys; from pathlib import Path; from evals.history.live import LiveRecord\n"
            f"record = LiveRecord.start({url!r})\n"
            f"for line in Path({str(tmp_path / 'cases.jsonl')!r}).read_bytes().splitlines(): record.add(line)\n"
            "record._send()\n"
            "print(record.pid, flush=True)\n"
            "sys.stdin.read()\n",
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert parent.stdout is not None
    return parent, int(parent.stdout.readline())


def test_the_child_imports_what_it_stages_with_before_the_first_case(tmp_path: Path) -> None:
    """While the run starts up, not after its first batch (or, for a short run, after its end):
    numpy, which staging reads the cases with, is in the child of a parent that never imported it
    and sent it nothing."""
    parent, child = parent_process(tmp_path, [], str(tmp_path / "h.sqlite"))
    try:
        deadline = time.monotonic() + 10
        while "numpy" not in Path(f"/proc/{child}/maps").read_text() and time.monotonic() < deadline:
            time.sleep(0.01)
        assert "numpy" in Path(f"/proc/{child}/maps").read_text()
    finally:
        parent.kill()
        parent.wait()


def test_a_killed_parent_leaves_no_run_and_its_child_exits(tmp_path: Path, run: Results) -> None:
    url = str(tmp_path / "killed.sqlite")
    parent, child = parent_process(tmp_path, case_json(run), url)
    parent.kill()
    parent.wait()
    deadline = time.monotonic() + 10
    while alive(child) and time.monotonic() < deadline:
        time.sleep(0.01)
    assert not alive(child)
    with sqlite3.connect(url) as db:
        assert db.execute("SELECT count(*) FROM runs").fetchone() == (0,)
        assert db.execute("SELECT count(*) FROM cases").fetchone() == (0,)


def test_the_child_holds_none_of_the_runs_output_open(tmp_path: Path, run: Results) -> None:
    """A gate reads its run's stderr to the end: a child holding it would keep the gate waiting."""
    parent, child = parent_process(tmp_path, case_json(run), str(tmp_path / "h.sqlite"))
    deadline = time.monotonic() + 10
    while not stderr_quiet(child) and time.monotonic() < deadline:
        time.sleep(0.005)  # its stderr is redirected last
    os.kill(child, signal.SIGSTOP)  # whatever the child does, it does not end here
    try:
        parent.kill()
        parent.communicate(timeout=10)  # the end of the parent's stdout and stderr
    finally:
        os.kill(child, signal.SIGKILL)


def stderr_quiet(pid: int) -> bool:
    with contextlib.suppress(OSError):
        return os.readlink(f"/proc/{pid}/fd/2") == os.devnull
    return False


def alive(pid: int) -> bool:
    """Running (a zombie has exited: its new parent reaps it when it will)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"
