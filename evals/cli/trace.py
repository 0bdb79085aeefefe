"""``evalgate trace CASE_ID [--results FILE | --history] [--attempt N]`` (docs/spec.md#trace-command): one case's
attempts and trace events as a timeline on the terminal (the work is in ``evals.report.timeline``
and, for the history, ``evals.history.traces``)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from evals.common.errors import EXIT_PASS, UsageError
from evals.common.escape import terminal_safe
from evals.results import console

if TYPE_CHECKING:
    from evals.results.model import CaseResult


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("case_id", metavar="CASE_ID", help="the case's id")
    source = parser.add_mutually_exclusive_group()
    source.add_argument(
        "--results",
        metavar="FILE",
        help="a results file (default: the newer of ./results.json, evalgate run's, and .evalgate/out/results.json, "
        "the last gate's; the one read is named)",
    )
    source.add_argument("--history", action="store_true", help="the newest run in the history that holds the case")
    parser.add_argument("--attempt", type=int, metavar="N", help="only attempt N (from 1)")
    parser.add_argument("--chars", type=int, default=400, metavar="N", help="characters shown per event (default 400)")
    parser.add_argument("--config", help="with --history: the suite config whose history to read")
    parser.add_argument("--url", help="with --history: the history database (postgresql://... or a SQLite file)")
    parser.add_argument("--suite", help="with --history: only runs of this suite")


def main(args: argparse.Namespace) -> int:
    from evals.report.timeline import find_case, render_timeline

    if args.chars < 20:
        raise UsageError(f"--chars must be at least 20, got {args.chars}")
    if not args.history and (args.url or args.suite):
        raise UsageError("--url and --suite read the history: add --history (or drop them to read --results)")
    if args.history:
        case, source = _from_history(args)
    else:
        from evals.results.files import load_results

        path = args.results or default_results()
        case, source = find_case(load_results(path).cases, args.case_id, path), path
    # The trace is the model's and the tools' text: no escape sequence of theirs reaches the terminal.
    sys.stdout.write(terminal_safe(render_timeline(case, source, attempt=args.attempt, chars=args.chars)))
    return EXIT_PASS


# Where a results file is without --results: `evalgate run`'s default output, and the gate's (its
# default --out-dir). A user who ran one and then the other has both, one of them stale.
RUN_OUTPUT = "results.json"
GATE_OUTPUT = ".evalgate/out/results.json"


def default_results() -> str:
    """The newer of the two default results files (by modification time), said on stderr when both
    exist: reading a stale ./results.json after a gate showed an old attempt with no hint why."""
    found = [p for p in (RUN_OUTPUT, GATE_OUTPUT) if Path(p).is_file()]
    if not found:
        raise UsageError(
            f"no results file here: neither ./{RUN_OUTPUT} (evalgate run's) nor {GATE_OUTPUT} (the last gate's); "
            "name one with --results FILE, or read the history with --history"
        )
    if len(found) == 1:
        return found[0]
    newer, older = sorted(found, key=lambda p: Path(p).stat().st_mtime, reverse=True)
    console.info(f"reading {newer}, newer than {older} (--results FILE reads another)", source="trace")
    return newer


def _from_history(args: argparse.Namespace) -> tuple[CaseResult, str]:
    from evals.history import open_history
    from evals.history.engine import sqlite_path
    from evals.history.settings import history_url, optional_config, why_no_history
    from evals.history.traces import case_from_history

    config = optional_config(args.config)
    url = args.url or history_url(config)
    if url is None:
        raise UsageError(why_no_history(config))
    path = sqlite_path(url)
    if path is not None and not path.exists():  # opening it would create an empty one
        raise UsageError(f"no history at {path}: runs record there as they run; another database: --url, --config")
    with open_history(url, migrate=False) as engine:
        if engine.version() == 0:
            raise UsageError(f"history {engine.where} has no schema yet: nothing was recorded there")
        return case_from_history(engine, args.case_id, args.suite or (config.suite if config else None))
