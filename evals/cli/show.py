"""``evalgate show FILE``: the summary of any results file (docs/spec.md#run-summary) — pass rate with its CI
overall and per slice, errors by kind, tokens, latency p50/p95, cost — without a baseline.
``--from FORMAT`` reads another harness's output directly (imported in memory, nothing written)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from evals.common.errors import EXIT_INFRA, EXIT_PASS


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("file", type=Path, metavar="FILE", help="results file (evalgate's, or another's with --from)")
    parser.add_argument(
        "--from",
        dest="fmt",
        default="evalgate",
        metavar="FORMAT",
        help="FILE is another harness's output: a format of `evalgate import`, or auto (default: evalgate)",
    )
    parser.add_argument(
        "--slice-key",
        dest="slice_keys",
        action="append",
        metavar="KEY",
        help="slice keys to show (repeatable; default: every key a case carries)",
    )
    parser.add_argument("--json", action="store_true", help="print the summary as JSON")
    parser.add_argument("--html", type=Path, metavar="FILE", help="also write a self-contained HTML report")


def main(args: argparse.Namespace) -> int:
    from evals.importers import import_results
    from evals.results.summary import render_text, summarize

    # One path for every format: `--slice-key` slices another harness's output exactly as
    # `evalgate import --slice-key` does, and picks among an evalgate file's slices.
    results = import_results(args.fmt, [args.file], slice_keys=args.slice_keys)
    summary = summarize(results, args.slice_keys)
    if args.json:
        print(summary.model_dump_json(indent=2))
    else:
        sys.stdout.write(render_text(summary))
    if args.html:
        from evals.report.html import write_html

        write_html(args.html, results=results, summary=summary)
        print(f"html: {args.html}", file=sys.stderr)
    # A partial run shown is still a partial run: scripts can tell from the exit code.
    return EXIT_PASS if summary.complete else EXIT_INFRA
