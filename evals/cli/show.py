"""``evalgate show FILE``: the summary of any results file (SPEC §13) — pass rate with its CI
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
    from evals.results.model import load_results
    from evals.results.summary import render_text, summarize

    if args.fmt == "evalgate":
        results = load_results(args.file)
    else:
        from evals.importers import import_results

        # Sliced exactly as `import --slice-key` would (SPEC §11): the keys name the source's tags.
        results = import_results(args.fmt, [args.file], slice_keys=args.slice_keys or None)
    if args.slice_keys:
        from evals.suite.slices import require_slice_keys

        carried = {k for c in results.cases for k in c.slices}
        missing = [k for k in args.slice_keys if k not in carried]
        if missing:
            # An import keeps only the keys asked for: list what its source offered instead.
            offered = carried | set(results.run.source.get("tag_keys") or [])
            require_slice_keys(missing, offered - set(missing), where=str(args.file), asked_in="--slice-key")
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
