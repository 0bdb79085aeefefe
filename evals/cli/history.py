"""``evalgate history init|add|sync|show|plot`` (docs/spec.md#history-sync; docs/history.md)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

from evals.common.errors import EXIT_PASS, UsageError

if TYPE_CHECKING:
    from evals.history.engine import Engine
    from evals.suite.config import SuiteConfig


def configure(parser: argparse.ArgumentParser) -> None:
    from evals.cli.options import add_store_options

    common = argparse.ArgumentParser(add_help=False)
    common.add_argument(
        "--config", help="suite config: its history (default: ./evalgate.yml when there is one; optional)"
    )
    common.add_argument(
        "--url",
        help="history database: postgresql://... or a SQLite file (default: EVALGATE_HISTORY_URL, history.url, "
        "else history.path)",
    )
    view = argparse.ArgumentParser(add_help=False)
    view.add_argument("--suite", help="suite to show (default: the config's, else the latest recorded)")
    view.add_argument(
        "--slice",
        dest="units",
        action="append",
        metavar="UNIT",
        help="overall, a slice value (language=ko) or a slice key (language: all its values); repeatable",
    )
    view.add_argument(
        "--metric", default="pass_rate", help="pass_rate (default), pass@k, error_rate, latency_p95_ms, ..."
    )
    view.add_argument("--last", type=int, default=20, metavar="N", help="the last N runs (default 20)")
    view.add_argument(
        "--baselines",
        action="store_true",
        help="only runs that became a baseline (promote, seed, reset; a gate's baseline; sync)",
    )
    view.add_argument(
        "--include-subsets", action="store_true", help="also smoke/subset, shard and partial (cancelled, failed) runs"
    )
    sub = parser.add_subparsers(dest="action", metavar="ACTION", required=True)
    sub.add_parser("init", parents=[common], help="create or upgrade the schema (idempotent)")
    add = sub.add_parser(
        "add", parents=[common], help="record results files: their runs with every case, attempt and trace"
    )
    add.add_argument("files", nargs="+", type=Path, metavar="RESULTS", help="results files (.json, .json.gz)")
    sync = sub.add_parser("sync", parents=[common], help="load every snapshot of the baseline store")
    add_store_options(sync)
    sub.add_parser("show", parents=[common, view], help="the trend as a table")
    plot = sub.add_parser("plot", parents=[common, view], help="the trend as an image (needs evalgate-action[plot])")
    plot.add_argument("--out", required=True, metavar="FILE", help="trend.svg or trend.png")


def main(args: argparse.Namespace) -> int:
    from evals.history import open_history
    from evals.history.engine import sqlite_path
    from evals.history.settings import history_url, optional_config, why_no_history
    from evals.history.url import redact_url

    config = optional_config(args.config, required=args.action == "sync")
    url = args.url or history_url(config)
    if url is None:
        raise UsageError(why_no_history(config))
    if args.action in ("show", "plot"):
        if args.last < 1:
            raise UsageError(f"--last must be at least 1, got {args.last}")
        path = sqlite_path(url)
        if path is not None and not path.exists():
            elsewhere = (
                "; no evalgate.yml here: a suite's history is next to its config (--config PATH)"
                if config is None and not args.url
                else ""
            )
            raise UsageError(
                f"no history at {path} yet: commands record there as they run (or `evalgate history sync` "
                f"loads the baseline store); another database: --url{elsewhere}"
            )
    if args.action == "add":
        return _add(url, args.files)
    with open_history(url, migrate=args.action == "sync") as engine:
        if args.action == "init":
            before = engine.version()
            applied = engine.migrate()
            if applied:
                names = ", ".join(f"{m.version:04d}_{m.name}" for m in applied)
                print(f"history {redact_url(url)}: applied {names} (schema version {engine.version()})")
            else:
                print(f"history {redact_url(url)}: up to date (schema version {before})")
            return EXIT_PASS
        if args.action == "sync":
            return _sync(engine, config, args, redact_url(url))
        if engine.version() == 0:
            raise UsageError(f"history {redact_url(url)} has no schema yet: run `evalgate history init`")
        from evals.history.trends import load_trends

        trends = load_trends(
            engine,
            suite=args.suite or (config.suite if config else None),
            metric=args.metric,
            units=args.units,
            last=args.last,
            baselines_only=args.baselines,
            include_subsets=args.include_subsets,
        )
    if args.action == "show":
        from evals.history.table import render

        print(render(trends), end="")
        return EXIT_PASS
    from evals.history.plot import plot

    out = plot(trends, Path(args.out))
    print(f"wrote {out} ({len(trends.runs)} runs, {len(trends.units)} units)")
    return EXIT_PASS


def _sync(engine: Engine, config: SuiteConfig | None, args: argparse.Namespace, where: str) -> int:
    from evals.cli.options import store_options
    from evals.common.errors import EXIT_INFRA
    from evals.history.record import Writer
    from evals.history.sync import sync_store
    from evals.store.selection import open_store_for
    from evals.suite.overrides import with_overrides

    assert config is not None  # read with required=True for sync
    store = open_store_for(with_overrides(config, store_options(args)))
    report = sync_store(Writer(engine), store)
    print(
        f"history {where}: {report.snapshots} snapshot(s) in {store.source}; added {report.added_runs} run(s) and "
        f"{report.added_actions} promotion/reset record(s)"
    )
    for problem in report.problems:
        print(f"evalgate history sync: skipped: {problem}")
    return EXIT_INFRA if report.problems else EXIT_PASS


def _add(url: str, files: list[Path]) -> int:
    """Each file read, checked and recorded in its own transaction, in the order given; a run
    ``compare`` recorded by its header gets its cases. A bad file stops the command (exit 2),
    saying which files before it were recorded: adding those again changes nothing, so the fix is
    to run the same command once the file is right. (Checking every file before writing any would
    read each twice: at 100,000 cases a file, a second more per file.)"""
    from evals.common.errors import EvalgateError, InfraError
    from evals.compare.lazyload import load_lazy
    from evals.history import open_history
    from evals.history.record import Writer
    from evals.history.rows import run_digest
    from evals.history.url import redact_url

    where = redact_url(url)
    done: list[str] = []
    with open_history(url) as engine:
        writer = Writer(engine)
        for path in files:
            try:
                results = load_lazy(path)
            except EvalgateError as exc:
                if done:
                    exc.args = (f"{exc} (recorded before it: {', '.join(done)}; adding them again changes nothing)",)
                raise
            digest = run_digest(results)
            known = writer.run_id(digest)
            had_cases = known is not None and writer.has_cases(known)
            try:
                run_id = writer.run(results, recorded_by="history add", digest=digest)
            except Exception as exc:  # the engine's own errors (sqlite3, psycopg): the history is the point here
                raise InfraError(f"history {where}: could not record {path}: {type(exc).__name__}: {exc}") from None
            n = len(results.cases)
            info = results.run
            if known is None:
                state = f"added as run {run_id} of suite {info.suite} with {n} case{'s' if n != 1 else ''}"
                if info.status != "success" or info.completed_cases < info.total_cases:
                    state += (
                        f" (a partial run: {info.status}, {info.completed_cases}/{info.total_cases} cases; "
                        "`history show` leaves it out unless --include-subsets)"
                    )
                elif info.subset or info.shard:
                    state += " (a subset or shard run; `history show` leaves it out unless --include-subsets)"
            elif had_cases or not n:
                state = f"already there (run {run_id}); nothing to add"
            else:
                state = f"added its {n} case{'s' if n != 1 else ''} to run {run_id} (recorded before by its header)"
            print(f"history {where}: {path}: {state}")
            done.append(str(path))
    return EXIT_PASS
