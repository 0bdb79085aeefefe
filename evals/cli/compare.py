"""``evalgate compare`` and ``python -m evals.compare`` (the seed workflow's flags): compare a
candidate results file with a baseline; the exit code is the gate verdict (docs/spec.md#exit-codes). The library
loads only when the command runs, so ``--help`` and a usage error answer at once, without numpy,
scipy and pydantic's models (~0.4 s)."""

from __future__ import annotations

import argparse
import shlex
from pathlib import Path

from evals.results import console


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--baseline", metavar="FILE", help="baseline results (omit on a first run: no-baseline)")
    parser.add_argument("--candidate", metavar="FILE", required=True, help="candidate results")
    parser.add_argument("--config", metavar="FILE", help="evalgate.yml (metrics, slices, gate settings)")
    parser.add_argument(
        "--tolerance",
        metavar="DELTA",
        help='tolerance of the rate metrics (pass_rate, score, error_rate, pass@k): 0.02 or "5%%"',
    )
    parser.add_argument("--blessed", metavar="FILE", help="last blessed baseline, for the drift guard")
    parser.add_argument("--inconclusive", choices=["warn", "fail"], help="exit code of an inconclusive gate")
    parser.add_argument("--report", metavar="FILE", help="write the markdown report (PR comment size)")
    parser.add_argument("--json", metavar="FILE", help="write comparison.json")
    parser.add_argument("--summary", metavar="FILE", help="write the step-summary markdown (e.g. $GITHUB_STEP_SUMMARY)")
    parser.add_argument("--junit", metavar="FILE", help="write JUnit XML: a test case per unit and metric")
    parser.add_argument("--template", metavar="FILE", help="a .md.j2 report template (overrides report.template)")


def main(args: argparse.Namespace) -> int:
    # The library (numpy, scipy, pydantic's models) loads here, not for --help or a usage error.
    from evals.common.errors import InputFileError
    from evals.compare.analysis import compare, load_runs
    from evals.compare.compatibility import reset_command
    from evals.report.files import write_outputs
    from evals.results.manifest import BaselineRef
    from evals.suite.loading import load_config
    from evals.suite.overrides import parse_tolerance

    # Checked before the (possibly large) files are read; compare() applies it.
    tolerance = None if args.tolerance is None else parse_tolerance(args.tolerance)
    config = load_config(args.config) if args.config else None
    if args.baseline and not Path(args.baseline).exists():
        raise InputFileError(args.baseline, "file not found", "omit --baseline on a first run: verdict no-baseline")
    candidate, baseline, blessed = load_runs(args.candidate, args.baseline, args.blessed)
    assert candidate is not None  # --candidate is required
    from evals.history.flaky import known_flaky

    ref = BaselineRef(source=str(args.baseline)) if args.baseline else None
    comparison = compare(
        baseline,
        candidate,
        config,
        tolerance=tolerance,
        blessed=blessed,
        baseline_ref=ref,
        blessed_ref=BaselineRef(source=str(args.blessed)) if args.blessed else None,
        inconclusive=args.inconclusive,
        reset_command=reset_command(args.candidate, config=args.config),
        flaky=known_flaky(config, candidate),  # never the candidate's own outcomes
    )
    from evals.history import record_comparison

    # The decision is recorded; runs the history has not seen only as their header (at
    # 100,000 cases their 400,000 rows took 2.4 s, longer than the whole comparison).
    recorded = record_comparison(comparison, candidate, baseline, config=config, action="compare", cases=False)
    if recorded.without_cases:
        files = [str(args.candidate if role == "candidate" else args.baseline) for role in recorded.without_cases]
        console.info(
            f"history: recorded the comparison; the cases of {' and '.join(files)} are not in "
            f"the history (compare records a run the history has not seen as its header only); "
            f"`evalgate history add {' '.join(shlex.quote(f) for f in files)}` adds them",
            source="compare",
        )
    write_outputs(
        comparison,
        config,
        report=args.report,
        json_path=args.json,
        summary=args.summary,
        template=args.template,
        junit=getattr(args, "junit", None),
    )
    print(f"evalgate compare: {comparison.verdict}: {comparison.reason}")
    return comparison.exit_code
