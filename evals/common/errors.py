"""Typed errors. Each carries the process exit code it ends in (docs/spec.md#exit-codes), so the CLI can turn
any of them into one clear line and the right code, never a traceback."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pathlib import Path

EXIT_PASS = 0
EXIT_FAIL = 1
EXIT_USAGE = 2
EXIT_INFRA = 3


class EvalgateError(Exception):
    """Base class. ``str(err)`` is the message shown to the user."""

    exit_code = EXIT_USAGE


class UsageError(EvalgateError):
    """Bad flags, config, cases, results or baseline file. The message names the file and what is wrong."""

    exit_code = EXIT_USAGE


class InputFileError(UsageError):
    """A file that does not hold what it should. ``where`` is ``path`` or ``path:line``."""

    def __init__(self, where: object, problem: str, hint: str | None = None):
        self.where = str(where)
        self.problem = problem
        self.hint = hint
        text = f"{self.where}: {problem}"
        if hint:
            text += f" ({hint})"
        super().__init__(text)


class InfraError(EvalgateError):
    """Something outside the user's files failed after retries: the baseline store, GitHub, an
    incomplete run."""

    exit_code = EXIT_INFRA


class GateVerdict(EvalgateError):
    """A gate verdict known before the suite runs (the stored baseline is of another suite, or of
    other scorer/metric definitions: ``incompatible``). The gate stops with it — the message and
    exit code the comparison after a run would give — and spends nothing on running the cases."""

    exit_code = EXIT_FAIL

    def __init__(self, verdict: str, reason: str):
        self.verdict = verdict
        self.reason = reason
        self.report: Path | None = None  # the report.md saying this verdict, when one was written
        super().__init__(f"{verdict}: {reason}")
