"""Output to a reader that went away ends quietly (``evalgate show --json | head``).

When the reader of our stdout (or stderr) closes its end, every later write raises
``BrokenPipeError``. That is no error of the command's: the reader has what it wanted. So the
standard streams are wrapped and a broken pipe only stops further output to that stream; the
command goes on. That matters most for the verdict commands: a ``gate`` piped into ``head`` still
publishes and promotes, and its exit code is still the verdict (docs/spec.md#exit-codes), never an internal error."""

from __future__ import annotations

import os
import sys
from typing import TextIO

from evals.common.textstream import TextStreamWrapper


class ClosedPipeSafe(TextStreamWrapper):
    """A text stream whose writes and flushes succeed silently once its reader has gone."""

    def __init__(self, inner: TextIO):
        super().__init__(inner)
        self.reader_gone = False

    def write(self, text: str) -> int:
        if not self.reader_gone:
            try:
                self.inner.write(text)
            except BrokenPipeError:
                self._drop_output()
        return len(text)

    def flush(self) -> None:
        if not self.reader_gone:
            try:
                self.inner.flush()
            except BrokenPipeError:
                self._drop_output()

    def _drop_output(self) -> None:
        self.reader_gone = True
        # The interpreter flushes the real stream once more at exit; what is still buffered there
        # would fail again ("Exception ignored ... BrokenPipeError", exit 120 instead of ours).
        # Pointing the descriptor at /dev/null lets that flush succeed (the Python docs' recipe).
        try:
            fd = self.inner.fileno()
        except (OSError, ValueError):  # not backed by a descriptor: nothing is flushed at exit
            return
        devnull = os.open(os.devnull, os.O_WRONLY)
        try:
            os.dup2(devnull, fd)
        finally:
            os.close(devnull)


def install() -> None:
    """Wrap ``sys.stdout`` and ``sys.stderr`` (once, even under another wrapper such as
    ``evals.common.logguard``'s, which keeps the one it wraps as ``inner``)."""
    for name in ("stdout", "stderr"):
        stream = getattr(sys, name)
        layer = stream
        while layer is not None and not isinstance(layer, ClosedPipeSafe):
            layer = getattr(layer, "inner", None)
        if stream is not None and layer is None:
            setattr(sys, name, ClosedPipeSafe(stream))


def flush() -> None:
    """Flush both streams now, while a broken pipe is still ours to ignore."""
    for stream in (sys.stdout, sys.stderr):
        if stream is not None:
            stream.flush()
