"""No text evalgate prints in Actions can issue a workflow command (SPEC §10 security), judged the
way the runner reads a log: lines end at ``\\r`` or ``\\n``; a line is a command when it starts
with ``::`` after .NET ``TrimStart()`` (any Unicode whitespace), or when it holds ``##[`` anywhere
(``ActionCommand.TryParse``, the legacy form, looks the prefix up with ``IndexOf``)."""

from __future__ import annotations

import io
import re

import pytest

from evals.escape import log_line, log_value
from evals.logguard import LogGuard

HOSTILE = [
    "::add-mask::leak",
    "  ::warning::indented",
    "\u00a0::stop-commands::nbsp",
    "\f::add-mask::formfeed",
    "\v::add-mask::vtab",
    "\u3000::warning::ideographic space",
    "\u2003::error::em space",
    "ok\r::add-mask::carriage return",
    "##[add-mask]legacy at the start",
    "a line with ##[stop-commands]token in the middle",
    "text ###[warning]three hashes",
]


def runner_commands(log: str) -> list[str]:
    return [line for line in re.split(r"\r\n|\r|\n", log) if line.lstrip().startswith("::") or "##[" in line]


@pytest.mark.parametrize("text", HOSTILE)
def test_the_guard_defuses_every_form_the_runner_reads(text: str) -> None:
    out = io.StringIO()
    guard = LogGuard(out)
    guard.write("before\n" + text + "\n")
    assert runner_commands(out.getvalue()) == []
    assert out.getvalue().replace("\u200b", "") == "before\n" + text + "\n"  # the text itself is kept


@pytest.mark.parametrize("text", HOSTILE)
def test_the_guard_holds_across_write_calls(text: str) -> None:
    out = io.StringIO()
    guard = LogGuard(out)
    for char in "x\n" + text:
        guard.write(char)
    assert runner_commands(out.getvalue()) == []


@pytest.mark.parametrize("text", HOSTILE)
def test_log_line_and_log_value_defuse_every_form(text: str) -> None:
    assert runner_commands(log_line(text)) == []
    assert runner_commands(log_value(text)) == []


def test_the_commands_evalgate_means_still_go_through() -> None:
    out = io.StringIO()
    guard = LogGuard(out)
    guard.write("partial")
    guard.command("::warning title=evalgate::real")
    assert out.getvalue() == "partial\n::warning title=evalgate::real\n"
