"""``evalgate trace CASE_ID [--results FILE | --history] [--attempt N]`` (SPEC §13): one case's
attempts and trace events as a timeline on the terminal (the work is in ``evals.report.timeline``
and, for the history, ``evals.history.traces``)."""

from __future__ import annotations

import argparse
import sys

from evals.common.errors import EXIT_PASS, UsageError


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("case_id", metavar="CASE_ID", help="the case's id")
    source = parser.add_mutually_exclusive_group()
    source.add_argument("--results", metavar="FILE", help="a results file (default: ./results.json)")
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
        from evals.results.model import load_results

        path = args.results or "results.json"
        case, source = find_case(load_results(path).cases, args.case_id, path), path
    sys.stdout.write(render_timeline(case, source, attempt=args.attempt, chars=args.chars))
    return EXIT_PASS


def _from_history(args: argparse.Namespace):  # -> tuple[CaseResult, str]
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
