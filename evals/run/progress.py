"""Run progress on stderr: a redrawn bar on a terminal, a plain line every few seconds in CI logs
(a CI log keeps every byte, so redraws would flood it)."""

from __future__ import annotations

import sys
import time
from typing import TextIO

BAR_WIDTH = 30
BAR_REDRAW_S = 0.2
PLAIN_EVERY_S = 10.0


class Progress:
    def __init__(self, total: int, *, done: int = 0, bar: bool | None = None, stream: TextIO | None = None):
        self.stream = stream or sys.stderr
        self.bar = self.stream.isatty() if bar is None else bar
        self.total = total
        self.done = done
        self.errors = 0
        self.retries = 0
        self.resumed = done  # done before this run started: no part of its rate
        self.passed = 0.0  # sum of the per-case pass values seen so far
        self.scored = 0
        self.started = time.monotonic()
        self._last = 0.0

    def update(self, *, cases: int = 0, errors: int = 0, retries: int = 0, passed: float | None = None) -> None:
        self.done += cases
        self.errors += errors
        self.retries += retries
        if passed is not None:
            self.passed += passed
            self.scored += 1
        now = time.monotonic()
        if now - self._last >= (BAR_REDRAW_S if self.bar else PLAIN_EVERY_S):
            self._last = now
            self._emit()

    def _line(self) -> str:
        elapsed = time.monotonic() - self.started
        rate = f", pass {self.passed / self.scored:.0%}" if self.scored else ""
        retries = "1 infra retry" if self.retries == 1 else f"{self.retries} infra retries"
        line = f"{self.done}/{self.total} cases{rate}, {self.errors} with errors, {retries}"
        ran = self.done - self.resumed
        if ran > 0 and self.done < self.total:
            line += f", {elapsed:.0f}s, ETA {elapsed / ran * (self.total - self.done):.0f}s"
        else:
            line += f", {elapsed:.0f}s"
        return line

    def _emit(self) -> None:
        if self.bar:
            filled = int(BAR_WIDTH * self.done / self.total) if self.total else BAR_WIDTH
            self.stream.write(f"\r[{'#' * filled}{'.' * (BAR_WIDTH - filled)}] {self._line()}\x1b[K")
        else:
            self.stream.write(f"evalgate run: {self._line()}\n")
        self.stream.flush()

    def finish(self, status: str) -> None:
        if self.bar:
            self._emit()
            self.stream.write("\n")
        # "complete" counts crashed and wrong answers too: say how many ended in an error.
        errors = f", {self.errors} with errors" if self.errors else ""
        self.stream.write(f"evalgate run: {status}: {self.done}/{self.total} cases complete{errors}\n")
        self.stream.flush()
