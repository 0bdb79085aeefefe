"""``evalgate gate``: the whole pipeline in one command, and what the GitHub Action runs.

config → baseline (the store's choice for this event, plus the blessed one for the drift guard;
read first, so a broken store costs no suite run) → candidate (run the suite — the smoke subset on
PRs — in a child process that never sees the GitHub token, or take ``--results``, importing it
first with ``--results-format``) → compare → reports in ``--out-dir`` → publish (inside GitHub Actions:
step summary, annotations, sticky PR comment, outputs) → promote (push to the default branch, or
``--promote``). The exit code is the verdict's (docs/spec.md#exit-codes). Publishing never changes it: a comment
that cannot be posted (a fork's read-only token) is a warning, and its body is kept in the out dir
(``comment.md`` + ``comment.json``) for the two-phase ``workflow_run`` flow (``evalgate comment``).

``--mode reset`` and ``--mode comment`` (or what ``auto`` picks for the event) run the reset and
the stored-report posting, so the action needs one command line for every mode. The work lives
in library modules (``evals.pipeline.flows``, ``evals.github.stored_report``); this module only reads options."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

from evals.cli.options import add_candidate_options
from evals.common.errors import EXIT_PASS, EvalgateError, GateVerdict, UsageError
from evals.common.escape import log_value
from evals.github.activity import MODES, detect, github_client
from evals.github.publish import report_failure
from evals.github.stored_report import post_stored
from evals.github.token_guard import isolate_token
from evals.pipeline.candidate import load_config_or_defaults, no_cache_for_suite_runs
from evals.pipeline.exposure import RUN_KINDS, guard_install, guard_pull_request_target
from evals.pipeline.flows import run_gate, run_only, run_reset
from evals.results import console

if TYPE_CHECKING:
    from evals.results.summary import UnitSummary


def configure(parser: argparse.ArgumentParser) -> None:
    add_candidate_options(parser)
    parser.add_argument(
        "--mode",
        choices=MODES,
        default="auto",
        help="auto: chosen from the GitHub event (PR → smoke, push to the default branch → full + promote, "
        "workflow_dispatch → reset); outside Actions a full gate against the local store. run: only run the "
        "suite and write results.json (the first job of the two-job layout; no token needed)",
    )
    parser.add_argument(
        "--tolerance",
        metavar="DELTA",
        help="tolerance for every rate metric (pass_rate, score, error_rate, pass@k), as in `evalgate compare`: "
        '0.02 or "5%%"',
    )
    parser.add_argument("--comment", choices=("on", "off"), default="on", help="post the sticky PR comment")
    parser.add_argument(
        "--promote",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="store the candidate as the new baseline when the gate allows it (default: on a push to the "
        "default branch only)",
    )
    parser.add_argument(
        "--seed",
        action="store_true",
        help="when the store has no baseline yet, store this complete run as the first (blessed) baseline: "
        "baseline.on_missing: seed for this gate (default: warn, and name the reset that stores it)",
    )
    parser.add_argument("--html", metavar="FILE", help="also write a self-contained HTML report")
    parser.add_argument("--reason", help="why the baseline is reset (mode reset)")
    parser.add_argument("--pr", type=int, metavar="N", help="pull request number (mode comment)")
    parser.add_argument("--report-dir", metavar="DIR", help="stored report to post (mode comment; default --out-dir)")
    parser.add_argument(
        "--preflight",
        action="store_true",
        help="only check that this job may install and run the suite (the event, the mode, a token that can "
        "write) and exit: the action runs it before installing the suite's own dependencies",
    )


def main(args: argparse.Namespace) -> int:
    isolate_token()
    no_cache_for_suite_runs(args)
    activity = detect(args.mode, reason=args.reason, pr_number=args.pr)
    console.info(log_value(activity.why), source="gate")
    try:
        runs_suite = activity.kind in RUN_KINDS and not args.results
        guard_pull_request_target(activity, runs_suite=runs_suite)
        if args.preflight:
            guard_install(activity, github_client(activity), runs_suite=runs_suite)
            return EXIT_PASS
    except EvalgateError as exc:
        report_failure(exc, activity)
        raise
    if activity.kind == "comment":
        return post_stored(Path(args.report_dir or args.out_dir), activity, pr_number=args.pr)
    if activity.kind == "reset":
        return run_reset(args, activity)
    if activity.kind == "run":
        return run_only(args, activity)
    if activity.kind == "compare" and not args.results:
        raise UsageError("mode compare gates a results file you bring: pass --results FILE (input `results`)")
    try:
        config, given = load_config_or_defaults(args)
        if args.tolerance and args.tolerance.strip():
            from evals.compare.analysis import apply_tolerance_override

            config = apply_tolerance_override(config, args.tolerance)
        outcome = run_gate(config, activity, args, given=given)
    except GateVerdict as exc:  # decided before the suite ran: said as a verdict, not as an error
        report_failure(exc, activity)
        print(f"evalgate gate: {log_value(str(exc), limit=None)}")
        if exc.report is not None:
            print(f"report: {exc.report}")
        return exc.exit_code
    except EvalgateError as exc:
        report_failure(exc, activity)
        raise
    print(f"evalgate gate: {outcome.comparison.verdict}: {log_value(outcome.comparison.reason, limit=None)}")
    if units := outcome.comparison.candidate_units:  # no baseline: what the run itself measured
        more = f"; … ({len(units)} units in the report)" if len(units) > 12 else ""
        shown = "; ".join(_own(u) for u in units[:12]) + more
        print(f"evalgate gate: candidate pass rate (95% CI): {log_value(shown, limit=None)}")
    print(f"report: {outcome.paths['report']}")
    if "html" in outcome.paths:
        print(f"html: {outcome.paths['html']}")
    return outcome.exit_code


def _own(u: UnitSummary) -> str:
    if u.pass_rate is None or u.ci_low is None or u.ci_high is None:
        return f"{u.unit} – ({u.cases} cases)"
    return f"{u.unit} {u.pass_rate:.1%} ({u.ci_low:.1%}–{u.ci_high:.1%}, {u.cases} cases)"
