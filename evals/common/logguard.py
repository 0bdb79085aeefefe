"""The job log only carries the workflow commands evalgate means (docs/spec.md#security).

The Actions runner treats any output line starting with ``::`` (``::add-mask::``,
``::stop-commands::``, ``::warning::``...) as a command. Text evalgate prints can quote what it
does not control — slice names, case ids, a stored report's fields, error messages about a user's
file, the suite's own output — and one newline in such a value would start a line of its own. So
inside Actions, ``sys.stdout`` and ``sys.stderr`` are wrapped: every line that would start a
command gets a zero-width space in front (``evals.common.escape.log_line``). The commands evalgate does
mean go through ``command()``, which writes past the guard (``evals.results.console`` says
notices, warnings and errors with it). It sits in ``common`` so that the funnel, below
``github``, can reach it."""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from typing import TextIO

from evals.common.escape import ZWSP
from evals.common.textstream import TextStreamWrapper


class LogGuard(TextStreamWrapper):
    """A text stream that defuses workflow commands at every line start, across write() calls."""

    def __init__(self, inner: TextIO):
        super().__init__(inner)
        self._at_line_start = True
        self._hashes = 0  # "#" characters just written: "##[" anywhere in a line is a command too

    def write(self, text: str) -> int:
        out = []
        for char in text:
            # The runner splits lines at \r as well as \n and trims any Unicode whitespace
            # (.NET TrimStart) before looking for "::"; the legacy "##[" form counts anywhere.
            if char == "[" and self._hashes >= 2:
                out.append(ZWSP)
            if self._at_line_start and char == ":":
                out.append(ZWSP)
                self._at_line_start = False
            elif char in "\r\n":
                self._at_line_start = True
            elif not char.isspace():
                self._at_line_start = False
            self._hashes = self._hashes + 1 if char == "#" else 0
            out.append(char)
        self.inner.write("".join(out))
        return len(text)

    def command(self, line: str) -> None:
        """A workflow command evalgate means: written as is (``line`` must not contain a newline)."""
        assert "\n" not in line and "\r" not in line
        if not self._at_line_start:
            self.inner.write("\n")
        self.inner.write(line + "\n")
        self.inner.flush()
        self._at_line_start = True
        self._hashes = 0


def install(env: Mapping[str, str] = os.environ) -> None:
    """Inside GitHub Actions, guard ``sys.stdout`` and ``sys.stderr`` (once)."""
    if env.get("GITHUB_ACTIONS") != "true":
        return
    for name in ("stdout", "stderr"):
        stream = getattr(sys, name)
        if stream is not None and not isinstance(stream, LogGuard):
            setattr(sys, name, LogGuard(stream))


def command(line: str, stream: TextIO | None = None) -> None:
    """Print a workflow command evalgate means, past the guard if there is one."""
    out = stream or sys.stdout
    if isinstance(out, LogGuard):
        out.command(line)
    else:
        out.write(line + "\n")
        out.flush()
