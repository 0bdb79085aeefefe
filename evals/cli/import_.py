"""``evalgate import --from FORMAT|auto INPUT... -o results.json``: convert another harness's
results to evalgate's results file."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from evals.common.errors import EXIT_PASS, UsageError
from evals.importers import ALIASES, FORMATS, import_results
from evals.results.files import save_results


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--from",
        dest="fmt",
        required=True,
        metavar="FORMAT",
        help=f"source format: auto (detect from content), {', '.join(FORMATS)} (aliases: {', '.join(ALIASES)})",
    )
    parser.add_argument("inputs", nargs="+", type=Path, metavar="INPUT", help="result files or directories")
    parser.add_argument("-o", "--output", type=Path, required=True, help="results file to write (.gz to compress)")
    parser.add_argument(
        "--slice-key",
        dest="slice_keys",
        action="append",
        metavar="KEY",
        help="metadata/property/var key to slice by (repeatable); default: the format's label-like keys",
    )
    parser.add_argument("--no-slices", action="store_true", help="import no metadata slices")
    parser.add_argument("--suite", help="suite name for run.suite (default: derived from the source)")
    parser.add_argument(
        "--metric",
        help="the value deciding passed/score: lm-eval metric, inspect_ai scorer, Harbor reward key, DeepEval metric,"
        " Braintrust score",
    )
    parser.add_argument(
        "--filter",
        dest="filters",
        action="append",
        metavar="[TASK=]FILTER",
        help="lm-eval filter to import (per task with TASK=; default: each task's first filter)",
    )


def _filters(values: list[str] | None) -> dict[str, str]:
    out: dict[str, str] = {}
    for value in values or []:
        task, sep, name = value.partition("=")
        if not sep:
            task, name = "*", value
        if not task or not name:
            raise UsageError(f"--filter {value!r}: expected FILTER or TASK=FILTER")
        out[task] = name
    return out


def main(args: argparse.Namespace) -> int:
    if args.no_slices and args.slice_keys:
        raise UsageError("--no-slices and --slice-key exclude each other")
    results = import_results(
        args.fmt,
        args.inputs,
        slice_keys=[] if args.no_slices else args.slice_keys,
        suite=args.suite,
        metric=args.metric,
        filters=_filters(args.filters),
    )
    save_results(results, args.output)
    from evals.history import record_run

    record_run(results, command="import")
    run = results.run
    attempts = sum(len(c.attempts) for c in results.cases)
    state = "" if run.is_complete else f": PARTIAL ({run.status}: {run.message or 'incomplete'})"
    print(
        f"imported {len(results.cases)} cases ({attempts} attempts) from {run.source.get('format') or 'evalgate'} "
        f"into {args.output}: {run.completed_cases}/{run.total_cases} complete{state}",
        file=sys.stderr,
    )
    return EXIT_PASS
