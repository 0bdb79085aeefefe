"""How an evalgate process ends: without the interpreter's teardown (docs/spec.md#performance-targets).

Once a command's ``main`` has returned its exit code, what CPython does next — freeing every module,
pydantic schema and object one at a time — took 75–95 ms at every exit (measured: from the end of
``main`` to the parent seeing the exit, for ``evalgate run`` and for a bare ``import evals.cli.run``),
nearly a tenth of a 2,000-case run's whole overhead over a bare client. The kernel frees a
process's memory at once. So the entry points end with ``leave``: it does first what an exit does
that anyone could see — the ``atexit`` handlers (coverage data, logging's flush, ``weakref.finalize``
callbacks) and the standard streams flushed — and then ``os._exit``. Files, databases and child
processes are closed by the commands themselves before they return; a thread still running (which a
normal exit would wait for) makes it a normal exit."""

from __future__ import annotations

import atexit
import os
import sys
import threading
from typing import NoReturn


def leave(code: int) -> NoReturn:
    """Exit with ``code``, skipping the interpreter's teardown where nothing still runs."""
    run_exit_handlers = getattr(atexit, "_run_exitfuncs", None)
    if threading.active_count() > 1 or run_exit_handlers is None:
        raise SystemExit(code)
    run_exit_handlers()
    for stream in (sys.stdout, sys.stderr, sys.__stdout__, sys.__stderr__):
        try:
            if stream is not None:
                stream.flush()
        except (OSError, ValueError):  # closed, or its reader gone: nothing more can reach it
            pass
    os._exit(code)
