"""The cyclic garbage collector paused while many objects are made that all stay alive (cases
loaded, results files parsed, a run's history rows): each collection scans everything allocated
so far, and on such work they cost as much as the work itself, or more (a 100k-case YAML file:
30 s with them, 4 s without; the history's record of 10,000 cases: a fifth of its CPU)."""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterator


@contextlib.contextmanager
def gc_paused() -> Iterator[None]:
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()
