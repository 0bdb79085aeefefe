"""``evalgate run`` / ``python -m evals.run``: run the suite on the candidate, write the results file
(the work is in ``evals.run.execution``).

The file is written at the start (``running``, nothing done), every few seconds while cases finish,
and at the end, each time atomically with a status and counts that are true at that moment
(a partial run must never read as a whole one).

Exit codes: 0 when every case completed (``success``); 3 when the run is incomplete (``error``
— infra failures left after retries —, ``cancelled`` by SIGINT/SIGTERM or by ``limits.max_cost_usd``
/ ``max_tokens``, or ``timeout`` by ``limits.max_duration_s``; ``run.limit`` says which limit),
docs/spec.md#exit-codes; 2 for bad flags, config or cases."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from evals.common.errors import EXIT_INFRA, EXIT_PASS, UsageError
from evals.results import console
from evals.run.execution import WrittenRun, execute
from evals.run.runner import DEFAULT_GRACE_S
from evals.run.shards import parse_shard
from evals.suite.config import load_config, replace_target
from evals.suite.limits import tighter_limits


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--config", default="evalgate.yml", help="suite config (default: ./evalgate.yml)")
    parser.add_argument(
        "--output", "-o", default="results.json", help="results file (default: ./results.json); .json.gz is gzipped"
    )
    parser.add_argument("--smoke", action="store_true", help="run only the smoke subset (config smoke:)")
    parser.add_argument("--shard", metavar="I/N", help="run only shard I of N (join them with `evalgate merge`)")
    parser.add_argument("--resume", action="store_true", help="keep complete cases already in --output, run the rest")
    parser.add_argument("--concurrency", type=int, metavar="N", help="override the config's concurrency")
    parser.add_argument(
        "--grace-s",
        type=float,
        default=DEFAULT_GRACE_S,
        metavar="S",
        help=f"on SIGINT/SIGTERM, how long in-flight attempts may finish (default {DEFAULT_GRACE_S:g})",
    )
    parser.add_argument(
        "--progress", choices=("auto", "bar", "lines"), default="auto", help="progress on stderr (auto: bar on a TTY)"
    )
    parser.add_argument(
        "--filter",
        dest="filters",
        action="append",
        metavar="PATTERN",
        help="development run: only cases whose id matches this glob, or whose tag KEY matches KEY=VALUE "
        "(repeatable; same key: either, different keys: both); the run is marked as a subset",
    )
    parser.add_argument(
        "--limit", type=int, metavar="N", help="development run: only the first N cases; the run is marked as a subset"
    )
    parser.add_argument(
        "--ids",
        metavar="FILE",
        help="only the cases whose ids are listed in FILE, one per line (what a more-evidence batch runs); "
        "the run is marked as a subset",
    )
    parser.add_argument("--attempts", type=int, metavar="N", help="override the config's attempts per case")
    parser.add_argument(
        "--target",
        metavar="FILE",
        help="run the target FILE defines (JSON: the config's target: mapping) instead of the config's; how more "
        "evidence re-runs a baseline from the openai target its results recorded",
    )
    parser.add_argument(
        "--attempt-offset",
        type=int,
        default=0,
        metavar="K",
        help="number this run's attempts from K (a more-evidence batch: its attempts are new ones, not a "
        "repeat of the first look's, for the response cache too)",
    )
    parser.add_argument(
        "--no-cache",
        action="store_true",
        help="pay for every answer again: do not read or write the response cache (config cache:; the same as "
        "EVALGATE_CACHE=off)",
    )
    for flag, kind, what in (
        ("--max-cost-usd", float, "USD"),
        ("--max-tokens", int, "tokens"),
        ("--max-duration-s", float, "seconds"),
    ):
        key = flag[2:].replace("-", "_")
        parser.add_argument(
            flag,
            type=kind,
            metavar=what.upper(),
            help=f"stop at this many {what} or at the config's limits.{key}, whichever comes first (a "
            "more-evidence batch runs with what is left of the gate's limits)",
        )
    parser.add_argument("--html", metavar="FILE", help="also write a self-contained HTML report of the run")
    parser.add_argument(
        "--summary",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="end with the summary table: pass rate with CI overall and per slice, errors, tokens, latency, cost "
        "(--no-summary: only the errors' most common messages, if any attempt errored; a run a limit stopped is "
        "named by its limit, and what it spent and how to finish it are left to the caller, as the gate says them "
        "with its verdict; evalgate show FILE prints them)",
    )


def read_ids(path: Path) -> list[str]:
    try:
        return [line.strip() for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    except OSError as exc:
        raise UsageError(f"--ids {path}: cannot read it ({exc.strerror or exc})") from None


def main(args: argparse.Namespace) -> int:
    config = load_config(args.config)
    if args.concurrency is not None:
        if args.concurrency < 1:
            raise UsageError(f"--concurrency must be at least 1, got {args.concurrency}")
        config.concurrency = args.concurrency
    if args.attempts is not None:
        if args.attempts < 1:
            raise UsageError(f"--attempts must be at least 1, got {args.attempts}")
        config.attempts = args.attempts
    if args.target:
        replace_target(config, Path(args.target))
    config.limits = tighter_limits(config.limits, args.max_cost_usd, args.max_tokens, args.max_duration_s)
    if args.attempt_offset < 0:
        raise UsageError(f"--attempt-offset must be >= 0, got {args.attempt_offset}")
    if args.grace_s < 0:
        raise UsageError(f"--grace-s must be >= 0, got {args.grace_s:g}")
    shard = parse_shard(args.shard) if args.shard else None
    progress = {"auto": None, "bar": True, "lines": False}[args.progress]
    history = None
    if args.smoke and config.smoke.select == "informative" and not config.smoke.tag:
        from evals.history.flaky import smoke_history

        history = smoke_history(config)
    results = execute(
        config,
        Path(args.output),
        smoke=args.smoke,
        shard=shard,
        resume=args.resume,
        progress=progress,
        grace_s=args.grace_s,
        filters=args.filters,
        limit=args.limit,
        lean=True,
        history=history,
        ids=read_ids(Path(args.ids)) if args.ids else None,
        attempt_offset=args.attempt_offset,
        cache=not args.no_cache,
    )
    assert isinstance(results, WrittenRun)  # lean=True
    # Without the table (the gate's run) what went wrong is still said; a clean run is not read back.
    if args.summary or args.html or results.errored_cases:
        from evals.history.settings import history_url
        from evals.results.summary import error_lines, render_text, summarize

        # The summary reads no trace: unless the HTML page or the history reads the cases after it,
        # they are read back without their traces (half the models' memory at 10,000 cases: the
        # peak RSS of the runner benchmark (docs/spec.md#performance-targets), whose history is off).
        later = args.html or history_url(config) is not None
        summary = summarize(results if later else results.without_traces(), config.slices or None)
        if args.summary:
            sys.stderr.write("\n" + render_text(summary))
        elif results.errored_cases:
            for line in error_lines(summary):
                console.info(line.strip(), source="run")
        if args.html:
            from evals.report.html import write_html

            write_html(Path(args.html), results=results, summary=summary)
            console.info(f"html report: {args.html}", source="run")
    from evals.history import record_run

    record_run(results, config=config)
    if results.run.is_complete:
        console.info(f"results written to {args.output}", source="run")
        return EXIT_PASS
    console.info(f"{args.output} is a partial run (status {results.run.status}): exit {EXIT_INFRA}", source="run")
    return EXIT_INFRA
