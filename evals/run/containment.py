"""Keeping what a target starts from outliving its attempt or the run, without cgroups.

- Every process a target starts carries a mark in its environment (``EVALGATE_RUN`` for the run,
  ``EVALGATE_ATTEMPT`` for one command attempt), inherited by whatever it starts in turn.
- While a run lasts, its process is a child subreaper (Linux ``PR_SET_CHILD_SUBREAPER``): a
  process whose parent exits is re-parented to the run, not to init, so even a grandchild that
  left its session (``setsid``) stays among the run's descendants.
- To stop an attempt (or the run): SIGKILL every descendant carrying the mark, each with its
  process group, in rounds until none is left; reap those that were re-parented to us.

Where /proc or prctl is missing (not Linux), what is left is the command target's own process
group (``start_new_session``), as before.

Sync python targets run on ``DaemonThreads``: a call that overruns its timeout cannot be
interrupted, and ``concurrent.futures`` joins its workers when the interpreter exits — the run
would write its results and then never end."""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import itertools
import os
import queue
import signal
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

RUN_ENV = "EVALGATE_RUN"
ATTEMPT_ENV = "EVALGATE_ATTEMPT"
_PR_SET_CHILD_SUBREAPER = 36
_KILL_ROUNDS = 20
_attempts = itertools.count(1)


def attempt_mark() -> str:
    """A mark unique to one attempt of this run."""
    return f"{os.getpid()}-{next(_attempts)}"


def set_subreaper(on: bool) -> bool:
    """Make this process a child subreaper (or stop); False where the OS has no such thing."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl(_PR_SET_CHILD_SUBREAPER, int(on), 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


def _children(pid: int) -> list[int]:
    try:
        tasks = list(Path(f"/proc/{pid}/task").iterdir())
    except OSError:
        return []
    out: list[int] = []
    for task in tasks:
        with contextlib.suppress(OSError, ValueError):
            out.extend(int(c) for c in (task / "children").read_text().split())
    return out


def descendants(pid: int | None = None) -> list[int]:
    """Every live descendant of ``pid`` (this process by default), parents before children."""
    found: list[int] = []
    todo = _children(os.getpid() if pid is None else pid)
    while todo:
        child = todo.pop()
        found.append(child)
        todo.extend(_children(child))
    return found


def carries(pid: int, name: str, value: str) -> bool:
    """Whether process ``pid`` has ``name=value`` in its environment (as it was started)."""
    try:
        environ = Path(f"/proc/{pid}/environ").read_bytes()
    except OSError:
        return False
    return f"{name}={value}".encode() in environ.split(b"\0")


def _kill(pid: int) -> None:
    with contextlib.suppress(OSError):
        group = os.getpgid(pid)
        if group != os.getpgrp():
            os.killpg(group, signal.SIGKILL)
    with contextlib.suppress(OSError):
        os.kill(pid, signal.SIGKILL)


def _reap(pids: list[int], within: float = 0.5) -> None:
    """Collect the exit of those killed processes that became our children (re-parented orphans,
    which nobody else waits for); for the others, waitpid fails at once."""
    todo, deadline = list(pids), time.monotonic() + within
    while todo:
        for pid in list(todo):
            try:
                if os.waitpid(pid, os.WNOHANG)[0] == 0:
                    continue  # the SIGKILL has not landed yet
            except OSError:  # not our child: its own parent reaps it
                pass
            todo.remove(pid)
        if not todo or time.monotonic() > deadline:
            return
        time.sleep(0.005)


def kill_marked(name: str, value: str, *, spare: frozenset[int] = frozenset(), confirm: bool = False) -> int:
    """SIGKILL every descendant of this process marked ``name=value`` (but not ``spare``, processes
    someone else waits for), with its process group, until none is left. Returns how many.
    ``confirm``: a round that finds none is repeated once after a pause before it counts: a child of
    a thread that exits during the scan moves to another thread's list, which may have been read
    already (at the end of a run, when the targets' threads end)."""
    killed: set[int] = set()
    unconfirmed = confirm
    for _ in range(_KILL_ROUNDS):
        victims = [p for p in descendants() if p not in killed and p not in spare and carries(p, name, value)]
        if not victims and unconfirmed:
            unconfirmed = False
            time.sleep(0.001)  # a thread's exit moves its children at once: a short pause is enough
            continue
        if not victims:
            break
        for pid in victims:
            _kill(pid)
        killed.update(victims)
        time.sleep(0.005)  # let the kills land, so the victims' children show up re-parented
    _reap(sorted(killed))
    return len(killed)


def kill_session(pid: int) -> None:
    """SIGKILL the process group ``pid`` leads (a process started with ``start_new_session``)."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)


class RunContainment:
    """For the length of a run: the subreaper, and ``RUN_ENV`` in the environment that targets'
    processes inherit; at the end, every process still carrying it is killed."""

    def __init__(self) -> None:
        self.mark = attempt_mark()
        self._previous: str | None = None
        self._subreaper = False

    def __enter__(self) -> RunContainment:
        self._previous = os.environ.get(RUN_ENV)
        os.environ[RUN_ENV] = self.mark
        self._subreaper = set_subreaper(True)
        return self

    def __exit__(self, *exc: object) -> None:
        kill_marked(RUN_ENV, self.mark, confirm=True)
        if self._subreaper:
            set_subreaper(False)
        if self._previous is None:
            os.environ.pop(RUN_ENV, None)
        else:
            os.environ[RUN_ENV] = self._previous


class DaemonThreads:
    """Up to ``size`` sync calls at once, on daemon threads. A call abandoned while it runs (its
    attempt timed out) keeps its thread until it returns, and a new thread takes its place."""

    def __init__(self, size: int, name: str = "target"):
        self._jobs: queue.SimpleQueue[_Job | None] = queue.SimpleQueue()
        self._name = name
        self._size = size
        for _ in range(size):
            self._spawn()

    def _spawn(self) -> None:
        threading.Thread(target=self._work, name=self._name, daemon=True).start()

    def _work(self) -> None:
        while True:
            job = self._jobs.get()
            if job is None:
                return
            if not job.run():
                return  # abandoned while running: a replacement thread has taken this one's place

    async def call(self, fn: Callable[[], Any]) -> Any:
        loop = asyncio.get_running_loop()
        job = _Job(loop, loop.create_future(), fn)
        self._jobs.put(job)
        try:
            return await job.future
        except asyncio.CancelledError:
            if job.abandon():
                self._spawn()
            raise

    def close(self) -> None:
        for _ in range(self._size):
            self._jobs.put(None)


class _Job:
    def __init__(self, loop: asyncio.AbstractEventLoop, future: asyncio.Future[Any], fn: Callable[[], Any]):
        self.loop, self.future, self.fn = loop, future, fn
        self._lock = threading.Lock()
        self._state = "queued"  # -> running -> done, or -> abandoned

    def run(self) -> bool:
        """Run on a pool thread; False when the job was abandoned while it ran."""
        with self._lock:
            if self._state != "queued":
                return True  # abandoned before it started: nothing to do, the thread stays
            self._state = "running"
        try:
            result, error = self.fn(), None
        except BaseException as exc:  # handed to the awaiting coroutine, which classifies it
            result, error = None, exc
        with self._lock:
            abandoned = self._state == "abandoned"
            self._state = "done"
        if not abandoned:
            with contextlib.suppress(RuntimeError):  # the loop is closed: nobody waits any more
                self.loop.call_soon_threadsafe(_settle, self.future, result, error)
        return not abandoned

    def abandon(self) -> bool:
        """The awaiting side gave up. True when the call is running (its thread is lost for now)."""
        with self._lock:
            running = self._state == "running"
            if self._state in ("queued", "running"):
                self._state = "abandoned"
        return running


def _settle(future: asyncio.Future[Any], result: Any, error: BaseException | None) -> None:
    if future.done():
        return
    if error is not None:
        future.set_exception(error)
    else:
        future.set_result(result)
