"""The base of the wrappers evalgate puts around ``sys.stdout`` and ``sys.stderr``
(``evals.cli.closedpipe``, ``evals.common.logguard``): each changes how text is written and passes the rest
through to the stream it wraps, kept as ``inner``."""

from __future__ import annotations

import io
from typing import TextIO


class TextStreamWrapper(io.TextIOBase):
    def __init__(self, inner: TextIO):
        self.inner = inner

    def flush(self) -> None:
        self.inner.flush()

    def writable(self) -> bool:
        return True

    def fileno(self) -> int:
        return self.inner.fileno()

    def isatty(self) -> bool:
        return self.inner.isatty()

    # Read-only, as on io.TextIOWrapper; typeshed gives TextIOBase a writable attribute instead.
    @property
    def encoding(self) -> str:  # type: ignore[override]
        return getattr(self.inner, "encoding", "utf-8")
