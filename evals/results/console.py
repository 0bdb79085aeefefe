"""What evalgate says, all of it through here: diagnostics on stderr at a level, a command's product
on stdout (docs/architecture.md, "What evalgate says").

Levels: ``info`` (what happened), ``notice`` (nothing is wrong, but a user may want to act),
``warning`` (something is wrong; the command goes on), ``error`` (the command stops). Locally a
line reads ``evalgate[ SOURCE]: [LEVEL: ]MESSAGE``, ``SOURCE`` being the command that speaks
(``evalgate gate: warning: ...``). Inside GitHub Actions a notice, warning or error is a workflow
command instead (``::warning title=evalgate gate::MESSAGE``): the run page shows it as an
annotation, not only a log line. ``result`` is a command's product (the line a script reads),
on stdout as it is.

Everything is masked here (``evals.results.masking``), before it is escaped for a workflow
command: an escape next to a secret can hide it from a pattern (``%0Ask-...`` has no word
boundary before ``sk-``). That is why this module sits in ``results`` and not in ``common``.
The streams are looked up at each call, so the wrappers ``evals.cli.app`` installs apply too
(masking again, harmlessly, and the log guard, which this module's commands go past).

A gate relays its child ``evalgate run``'s output through the log guard, as untrusted text (the
suite's code writes to the same pipe), so a command the child meant would arrive defused and
unreadable. The gate starts it with :data:`RELAYED_ENV` set, and the child speaks plain lines."""

from __future__ import annotations

import os
import sys
from typing import Literal

from evals.common.escape import log_line, terminal_safe, workflow_data, workflow_property
from evals.common.logguard import command
from evals.results.masking import mask_text

Level = Literal["info", "notice", "warning", "error"]

# Set in the environment of a child whose output a parent evalgate relays (see the module docstring).
RELAYED_ENV = "EVALGATE_OUTPUT_RELAYED"

_LABEL: dict[Level, str] = {"info": "", "notice": "note: ", "warning": "warning: ", "error": "error: "}


def info(message: str, *, source: str = "") -> None:
    """What happened: ``evalgate[ source]: message``, a plain line in Actions too."""
    say("info", message, source=source)


def notice(message: str, *, source: str = "") -> None:
    """Nothing is wrong, but the user may want to act: ``... note: message``; ``::notice`` in Actions."""
    say("notice", message, source=source)


def warning(message: str, *, source: str = "") -> None:
    """Something is wrong and the command goes on: ``... warning: message``; ``::warning`` in Actions."""
    say("warning", message, source=source)


def error(message: str, *, source: str = "") -> None:
    """The command stops: ``... error: message``; ``::error`` in Actions."""
    say("error", message, source=source)


def result(text: str) -> None:
    """A command's product on stdout, as it is (a line that a script or a reader takes as the answer)."""
    sys.stdout.write(terminal_safe(mask_text(text)) + "\n")


def relayed(line: str) -> None:
    """A line of a child process's output, passed on to stderr: untrusted (the suite's code writes
    there too), so masked and defused, never a workflow command in our log."""
    sys.stderr.write(log_line(terminal_safe(mask_text(line))) + "\n")


def say(level: Level, message: str, *, source: str = "") -> None:
    """``message`` at ``level`` on stderr, masked; from ``source``, the evalgate command speaking."""
    speaker = f"evalgate {source}" if source else "evalgate"
    text = terminal_safe(mask_text(message))
    if level != "info" and in_actions():
        command(f"::{level} title={workflow_property(speaker)}::{workflow_data(text)}", sys.stderr)
        return
    sys.stderr.write(f"{speaker}: {_LABEL[level]}{text}\n")
    sys.stderr.flush()  # in order with what a relayed child or the suite writes to the same log


def in_actions() -> bool:
    """Inside GitHub Actions and not relayed by a parent evalgate: say notices, warnings and
    errors as workflow commands."""
    return os.environ.get("GITHUB_ACTIONS") == "true" and not os.environ.get(RELAYED_ENV)
