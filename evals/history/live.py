"""``evalgate run``'s history recorded while the run runs, in a child process (docs/spec.md#history-writes).

Recording a 10,000-case run after it ended took ~0.55 s of wall (each case's JSON parsed, its rows
built, inserted, the digest), all after the last answer; a thread doing it during the run saved
half of that at most, the event loop holding the GIL. So ``evalgate run`` forks, before its event
loop or any thread starts, a child that owns the record:

- the parent sends each finished case's JSON (the bytes ``Recorder`` keeps, one line each) down a
  pipe, 256 cases at a time (``TAIL`` at a time in the run's last 256), never waiting:
  the pipe is non-blocking and what it cannot take now goes with the next batch;
- the child (in the background while the run runs, ``_background_policy``: it never runs ahead of
  the run on a shared core) parses each batch and makes its rows as ``Writer.written`` does (``LeanRows``,
  ``digest_parts``) into STAGING tables (``stage.*``: an in-memory database attached to its
  history connection, each table kept in its key's order), and keeps each case's part of the
  digest. A case's number there is its number in the file when the run's case order came first
  (``LiveRecord.order``: ``evalgate run`` sends it before any case), else its arrival's;
- at the end the parent sends the run's header and the file's case order; the child writes, in one
  transaction, the header and the staged rows (``INSERT ... SELECT``, in SQLite's C): copied as
  staged when the file holds every case of the order sent, else renumbered in the file's order (a
  run stopped early numbers only the cases it wrote), and answers the run's id. Same tables, rows
  and digest as ``record_written``.

What it does not cover falls back to ``record_written`` in the parent, which then records the run
as before (nothing lost): a PostgreSQL history (the staging is SQLite's ``ATTACH``), no fork, a
case sent twice, a child that died, could not stage a case or did not answer within ``ANSWER_S``, a
history file removed or replaced during the run, a run whose digest the history holds already
(``Writer.written`` knows what to do), the HTML page's path (it reads models: ``record_run``). A
history that refuses the final write is a warning, as any failed record (not tried again). Kept
cases of ``--resume`` are sent as the recorder keeps them, at its start. The child ignores SIGINT
and SIGTERM (the parent decides when a run ends) and never outlives the parent: at the end of its
input without the final line (the parent died or let go) it exits, its staging gone with it, the
history untouched.

Imported by ``evalgate run`` at start: the standard library only; the child, once forked, imports
the writer and what it stages with (``_WARM``) before the first case comes."""

from __future__ import annotations

import contextlib
import gc
import hashlib
import importlib
import json
import os
import select
import signal
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from evals.history.settings import history_url
from evals.history.url import is_postgres

if TYPE_CHECKING:
    from evals.history.engine import SQLiteEngine
    from evals.results.model import RunInfo
    from evals.suite.config import SuiteConfig

BATCH = 256  # cases per write to the child: a few hundred KB, one parse and one insert each there
# Cases per write once fewer than BATCH are yet to come (the run's order says how many): what the
# parent holds when the run ends is staged only then, after the last answer (N mod 256 cases, up to
# ~18 ms of the child's); so at most TAIL - 1. Sending more often all along (what the parent held
# once its last write was 20 ms old) cost the run more than it saved: 10,000 cases ~0.2 s later,
# the child ~0.15 s more CPU (a wake-up, and a parse and an insert, per write).
TAIL = 16
ANSWER_S = 90.0  # for the child's answer after the end: more than SQLite's 30 s wait for a lock
_PIPE_BYTES = 1 << 20  # F_SETPIPE_SZ: a batch or two in flight without the parent ever waiting
# The staged tables and their keys after the case's number: each is kept in the order the history's
# rows go in (WITHOUT ROWID: the table is its key's tree), whatever order the cases came in.
_STAGED = {"cases": (), "case_slices": ("slice_key",), "attempts": ("attempt_no",), "events": ("attempt_no", "seq")}
_END = b"!"  # the final line starts with it; a case's JSON starts with "{"
_ORDER = b"["  # the run's case ids in the file's order (a JSON list), the first line when it comes
# What staging and the final write import, imported by the child as soon as it starts: the parent
# is still starting up then (its imports, the suite, the first requests) and a core is idle. At the
# first batch and at the end instead (numpy with the first), a 1-case run waited ~0.1 s for them
# after its last answer.
_WARM = ("evals.compare.lazyload", "evals.history.rows", "evals.history.record", "evals.results.model")


@dataclass
class Answer:
    """The child's answer: ``run_id`` recorded; or ``fallback`` (why the live path could not
    record it: the caller records the run as before); or ``error`` and ``problem`` (the history
    refused the write: reported as any failed record)."""

    run_id: int | None = None
    fallback: str | None = None
    error: str | None = None
    problem: str | None = None


class LiveRecord:
    """The parent's end: ``add`` each finished case's JSON, ``finish`` with the header, or ``close``."""

    def __init__(self, url: str, pid: int, to_child: int, from_child: int):
        self.url, self.pid = url, pid
        self._to, self._from = to_child, from_child
        self._pending: list[bytes] = []
        self._left = float("inf")  # cases yet to come, once the order says
        self._out = bytearray()
        self.dead: str | None = None  # why the child can no longer record the run
        self._until: float | None = None  # once the end is sent: how long its answer may take

    @classmethod
    def start(cls, url: str) -> LiveRecord | None:
        """Fork the child for a history at ``url``; None where the live path does not go."""
        if is_postgres(url) or not hasattr(os, "fork"):
            return None
        down_r, down_w = os.pipe()
        up_r, up_w = os.pipe()
        # Held back across the fork: a Ctrl-C that came before the child ignores it would stop it
        # in the parent's code.
        stops = {signal.SIGINT, signal.SIGTERM}
        held = signal.pthread_sigmask(signal.SIG_BLOCK, stops)
        try:
            pid = os.fork()
        except OSError:  # no process to spare: the run is recorded after it, as before
            signal.pthread_sigmask(signal.SIG_SETMASK, held)
            for fd in (down_r, down_w, up_r, up_w):
                os.close(fd)
            return None
        if pid == 0:  # the child: never returns
            try:
                for signum in stops:  # the parent decides when a run ends
                    signal.signal(signum, signal.SIG_IGN)
                _policy(_background_policy())
                signal.pthread_sigmask(signal.SIG_SETMASK, held)
                os.close(down_w)
                os.close(up_r)
                # It says nothing (the parent does), and holds none of the run's output open: a
                # gate reads the run's stderr to its end.
                quiet = os.open(os.devnull, os.O_RDWR)
                for fd in (0, 1, 2):
                    os.dup2(quiet, fd)
                _child(url, down_r, up_w)
            finally:
                os._exit(1)
        signal.pthread_sigmask(signal.SIG_SETMASK, held)
        os.close(down_r)
        os.close(up_w)
        with contextlib.suppress(OSError, AttributeError):  # Linux only; a smaller pipe works too
            import fcntl

            fcntl.fcntl(down_w, fcntl.F_SETPIPE_SZ, _PIPE_BYTES)
        os.set_blocking(down_w, False)
        return cls(url, pid, down_w, up_r)

    def order(self, ids: list[str]) -> None:
        """The run's cases in the file's order, before any case is added: the child then stages
        each case under its number in the file, and a run that wrote them all has its rows copied
        as they are at the end (not renumbered and sorted: ~30 ms of its wait at 10,000 cases)."""
        self._left = len(ids)
        self._pending.append(json.dumps(ids).encode())
        self._send()

    def add(self, data: bytes) -> None:
        """A finished case's JSON (one line: JSON escapes newlines)."""
        self._pending.append(data)
        self._left -= 1
        if len(self._pending) >= (BATCH if self._left >= BATCH else TAIL):
            self._send()

    def _send(self, end: bytes = b"", until: float | None = None) -> bool:
        """Write what is pending (and ``end``); without ``until`` only what the pipe takes now,
        else all of it by then. False when the child is gone or did not read it in time."""
        if self.dead is not None:
            self._pending.clear()
            return False
        if self._pending:
            self._out += b"\n".join(self._pending) + b"\n"
            self._pending.clear()
        self._out += end
        while self._out:
            try:
                written = os.write(self._to, self._out)
            except BlockingIOError:
                written = 0
            except OSError as exc:  # EPIPE: the child exited
                self._gone(f"the history's process stopped reading ({exc.strerror})")
                return False
            del self._out[:written]
            if until is None:
                return True
            if self._out:
                left = until - time.monotonic()
                if left <= 0 or not select.select([], [self._to], [], left)[1]:
                    self._gone(f"the history's process did not read the run within {ANSWER_S:g} s")
                    return False
        return True

    def end(self, run: RunInfo, ids: list[str]) -> None:
        """Send the header and the file's case order (``ids``): the child writes the run while the
        caller goes on (``evalgate run`` prints its summary meanwhile); ``finish`` takes the answer."""
        if self._until is not None:
            return
        self._until = time.monotonic() + ANSWER_S
        end = _END + json.dumps({"run": run.model_dump_json(), "ids": ids}).encode() + b"\n"
        if self._send(end, self._until):
            os.close(self._to)
            self._to = -1

    def finish(self, run: RunInfo, ids: list[str]) -> Answer:
        """The child's answer to the end (sent now with ``run`` and ``ids`` unless ``end`` sent it).
        The child is reaped either way."""
        self.end(run, ids)
        assert self._until is not None
        answer = Answer(fallback=self.dead) if self.dead is not None else self._answer(self._until)
        self.close()
        return answer

    def _answer(self, until: float) -> Answer:
        data = b""
        while not data.endswith(b"\n"):
            left = until - time.monotonic()
            if left <= 0 or not select.select([self._from], [], [], left)[0]:
                return Answer(fallback=f"the history's process did not answer within {ANSWER_S:g} s")
            chunk = os.read(self._from, 65536)
            if not chunk:
                return Answer(fallback="the history's process ended without answering")
            data += chunk
        return Answer(**json.loads(data))

    def _gone(self, why: str) -> None:
        self.dead = why
        self._out.clear()

    def close(self) -> None:
        """Let the child go, killed (a write it had begun is rolled back: SQLite's journal) and reaped."""
        for fd in (self._to, self._from):
            if fd >= 0:
                os.close(fd)
        self._to = self._from = -1
        if self.pid:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.pid, signal.SIGKILL)
            with contextlib.suppress(ChildProcessError):
                os.waitpid(self.pid, 0)
            self.pid = 0


@contextlib.contextmanager
def live_history(config: SuiteConfig, *, wanted: bool = True) -> Iterator[LiveRecord | None]:
    """For ``evalgate run``: the live record of this config's history (None where there is none,
    it does not go there, or not ``wanted``), let go of at the end whatever happened. Entered
    before the run starts its event loop or any thread: the child forked then holds no lock
    another thread held (it touches none of the parent's but the import machinery's, which fork
    resets)."""
    url = history_url(config)
    live = LiveRecord.start(url) if url is not None and wanted else None
    try:
        yield live
    finally:
        if live is not None:
            live.close()


# ------------------------------------------------------------------------------ the child


def _child(url: str, down: int, up: int) -> None:
    """The child's whole life: stage what comes, write at the end, answer, exit (``os._exit``:
    nothing of the parent's — its buffered output, its exit handlers — runs twice)."""
    code = 0
    try:
        answer = _Staging(url).serve(down)
        if answer is not None:
            with contextlib.suppress(OSError):  # the parent gave up meanwhile
                os.write(up, json.dumps(answer.__dict__).encode() + b"\n")
    except BaseException:
        code = 1
    finally:
        os._exit(code)


class _Staging:
    """The child's staging tables and each staged case's id, hash and part of the digest."""

    def __init__(self, url: str):
        self.url = url
        self.engine: SQLiteEngine | None = None
        self.inode: int | None = None  # of the history's file as the child opened it
        self.problem: str | None = None  # why the live path gives up (the parent records as before)
        self.order: list[str] | None = None  # the run's case ids in the file's order, when sent
        self.numbers: dict[str, int] = {}  # of those: case id → its number in the file
        self.staged: dict[str, int] = {}  # case id → its number in staging (in the file, else arrival order)
        self.hashes: dict[int, str | None] = {}  # by number in staging
        self.parts: dict[int, str] = {}

    def serve(self, down: int) -> Answer | None:
        """Stage each batch as it comes; the answer once the end comes, None at the end of input
        without it (the run's parent is gone: nothing is written)."""
        gc.disable()  # a short-lived process, and nothing it makes is a cycle (as Writer.written)
        try:
            for module in _WARM:
                importlib.import_module(module)
            self._open()
        except Exception as exc:
            self.problem = f"{type(exc).__name__}: {exc}"
        tail = b""
        while True:
            data = os.read(down, _PIPE_BYTES)
            if not data:
                return None
            lines = (tail + data).split(b"\n")
            tail = lines.pop()
            if lines and lines[0].startswith(_ORDER) and not self.staged:
                self.order = json.loads(lines.pop(0))
                self.numbers = {case_id: no for no, case_id in enumerate(self.order)}
            if lines and lines[-1].startswith(_END):
                _policy(_OTHER_POLICY)  # the run waits for what is left: no longer in the background
                self._stage(lines[:-1])
                return self._finish(json.loads(lines[-1][len(_END) :]))
            self._stage(lines)

    def _open(self) -> None:
        from evals.history.engine import SQLiteEngine, open_engine

        engine = open_engine(self.url)  # closed with the process
        assert isinstance(engine, SQLiteEngine)  # LiveRecord.start forks for no other
        engine.migrate()
        engine.conn.execute("ATTACH DATABASE ':memory:' AS stage")
        for table, key in _STAGED.items():  # the history's columns, without its checks (they apply at the move)
            columns = engine.conn.execute(f"PRAGMA main.table_info({table})").fetchall()
            declared = ", ".join(f"{name} {kind}" for _, name, kind, *_ in columns)
            engine.conn.execute(
                f"CREATE TABLE stage.{table} ({declared}, PRIMARY KEY ({', '.join(('case_no', *key))})) WITHOUT ROWID"
            )
        engine.conn.execute("CREATE TABLE stage.file_order (staged INTEGER PRIMARY KEY, case_no INTEGER NOT NULL)")
        self.engine = engine
        self.inode = _inode(engine.path)

    def _stage(self, lines: list[bytes]) -> None:
        if not lines or self.problem is not None or self.engine is None:
            return
        from evals.compare.lazyload import CaseList
        from evals.history.rows import LeanRows, digest_parts

        engine = self.engine

        def rows(first: int, parsed: list[dict[str, Any]], chunk: CaseList) -> None:
            numbers = []
            for case_id in chunk.ids:
                if case_id in self.staged:
                    raise _Refused(f"case {case_id!r} was written twice")
                if self.order is not None and case_id not in self.numbers:
                    raise _Refused(f"case {case_id!r} is not one of the run's")
                numbers.append(self.numbers[case_id] if self.order is not None else len(self.staged))
                self.staged[case_id] = numbers[-1]
            self.hashes.update(zip(numbers, chunk.hashes, strict=True))
            self.parts.update(zip(numbers, digest_parts(chunk), strict=True))
            # Unmasked, as a run evalgate made is recorded (its runner masked what it wrote).
            LeanRows(0, chunk, False, numbers=numbers).insert(engine, parsed, into="stage.")

        try:
            engine.conn.execute("BEGIN")  # deferred: the staging alone, the history is not locked
            CaseList.from_json(lines, chunk=LeanRows.CHUNK, each=rows)
            engine.conn.execute("COMMIT")
        except _Refused as refused:
            self.problem = str(refused)
        except Exception as exc:
            self.problem = f"staging: {type(exc).__name__}: {exc}"

    def _finish(self, end: dict[str, Any]) -> Answer:
        if self.problem is not None or self.engine is None:
            return Answer(fallback=self.problem or "no staging")
        # Removed (rm -rf .evalgate) or replaced: its connection would write to a file no one sees.
        if self.inode is None or _inode(self.engine.path) != self.inode:
            return Answer(fallback="the history's file was removed or replaced while the run ran")
        from evals.history.record import Writer
        from evals.history.rows import ATTEMPT_COLUMNS, CASE_COLUMNS, EVENT_COLUMNS, SLICE_COLUMNS, case_set
        from evals.results.model import RunInfo

        info = RunInfo.model_validate_json(end["run"])
        ids: list[str] = end["ids"]
        if not info.evalgate_version:
            return Answer(fallback="a run evalgate did not make (its texts are masked when recorded)")
        try:
            order = [self.staged[i] for i in ids]
        except KeyError as missing:
            return Answer(fallback=f"case {missing.args[0]!r} of the file was never sent")
        if len(order) != len(self.staged):
            return Answer(fallback=f"{len(self.staged) - len(order)} case(s) sent are not in the file")
        h = hashlib.sha256(end["run"].encode("utf-8"))  # as run_digest: the header's JSON, then each case's part
        h.update("".join(self.parts[s] for s in order).encode())
        digest = "sha256:" + h.hexdigest()
        identity = case_set(ids, (self.hashes[s] for s in order))
        engine = self.engine
        # Every case of the run written, each staged under its number in the file: its rows are
        # copied as the staging holds them. Else (the order never came; a run stopped early, whose
        # file numbers only the cases it wrote) they are renumbered: joined to the file's numbers.
        if ids == self.order:
            source, number = "", "s.case_no"
        else:
            engine.insert_rows("stage.file_order", ("staged", "case_no"), ((s, no) for no, s in enumerate(order)))
            source, number = " JOIN stage.file_order o ON o.staged = s.case_no", "o.case_no"
        columns = {
            "cases": CASE_COLUMNS,
            "case_slices": SLICE_COLUMNS,
            "attempts": ATTEMPT_COLUMNS,
            "events": EVENT_COLUMNS,
        }

        def move(run_id: int) -> None:
            for table, key in _STAGED.items():
                # In the order Writer.written inserts them: by case number, then as each case has
                # them; copied as staged, the staged table's own order (no sort).
                names, rest = ", ".join(columns[table]), ", ".join(f"s.{c}" for c in columns[table][2:])
                then = "".join(f", s.{k}" for k in key)
                engine.execute(
                    f"INSERT INTO main.{table} ({names}) SELECT ?, {number}, {rest} "
                    f"FROM stage.{table} s{source} ORDER BY {number}{then}",
                    (run_id,),
                )

        try:
            run_id = Writer(engine).staged(info, digest, identity, move, recorded_by="run")
        except Exception as exc:
            return Answer(error=type(exc).__name__, problem=str(exc))
        # Closed as record_written closes it: its write-ahead log folded into the file, so the file
        # alone holds the run (a copy of it, an upload). The run is committed whatever this says.
        with contextlib.suppress(Exception):
            engine.close()
        if run_id is None:
            return Answer(fallback="the history holds this run already")
        return Answer(run_id=run_id)


# While the run runs the child is in the background: on a core it shares with the run (a busy
# machine, or a local model server beside it) it would otherwise run ahead of the run there, which
# then waits for its staging, instead of staging while the run waits for its answers. SCHED_IDLE
# (it runs only where a core is otherwise idle) where it may leave that policy again at the end,
# which Linux allows only with CAP_SYS_NICE or an RLIMIT_NICE that permits its nice value; else
# SCHED_BATCH (no wake-up preemption), which any process may leave. Measured, the runner benchmark's
# suites on 2 cores, alternated: 2,000 cases 1.32 s with SCHED_BATCH, 1.28 s with SCHED_IDLE (medians
# of 8); 10,000 cases 5.28 s, 5.27 s (4); pinned to one core, SCHED_BATCH against none: the run ~50 ms
# sooner at 10,000 cases.
_IDLE_POLICY = getattr(os, "SCHED_IDLE", None)
_BATCH_POLICY = getattr(os, "SCHED_BATCH", None)
_OTHER_POLICY = getattr(os, "SCHED_OTHER", None)
_CAP_SYS_NICE = 23


def _background_policy() -> int | None:
    """SCHED_IDLE where ``_policy(_OTHER_POLICY)`` can undo it, else SCHED_BATCH (or None)."""
    if _IDLE_POLICY is None:
        return _BATCH_POLICY
    try:
        import resource

        status = Path("/proc/self/status").read_text()
        effective = int(next(line.split()[1] for line in status.splitlines() if line.startswith("CapEff:")), 16)
        limit = resource.getrlimit(resource.RLIMIT_NICE)[0]
    except (OSError, ValueError, StopIteration, ImportError):
        return _BATCH_POLICY
    return _IDLE_POLICY if may_leave_idle(effective, limit, os.nice(0)) else _BATCH_POLICY


def may_leave_idle(capabilities: int, rlimit_nice: int, nice: int) -> bool:
    """Whether Linux lets a process leave SCHED_IDLE for SCHED_OTHER (sched(7)): with CAP_SYS_NICE
    among its effective ``capabilities`` (root in a container usually lacks it), or an RLIMIT_NICE
    under which its ``nice`` value may be set (the floor is 20 - the limit)."""
    return bool(capabilities >> _CAP_SYS_NICE & 1) or 20 - rlimit_nice <= nice


def _policy(policy: int | None) -> None:
    if policy is not None:
        with contextlib.suppress(OSError):
            os.sched_setscheduler(0, policy, os.sched_param(0))


def _inode(path: Path) -> int | None:
    try:
        return os.stat(path).st_ino
    except OSError:
        return None


class _Refused(Exception):
    """A case that cannot be staged: sent twice, or not one of the run's."""
