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

from evals.cli.options import add_options, options_of
from evals.common.errors import EXIT_PASS, EvalgateError, GateVerdict, UsageError
from evals.common.escape import log_value
from evals.github.activity import detect, github_client
from evals.github.publish import report_failure
from evals.github.stored_report import post_stored
from evals.github.token_guard import isolate_token
from evals.pipeline.candidate import load_config_or_defaults, no_cache_for_suite_runs
from evals.pipeline.exposure import RUN_KINDS, guard_install, guard_secret_events
from evals.pipeline.flows import run_gate, run_only
from evals.pipeline.reset import run_reset
from evals.pipeline.side_job import run_side
from evals.results import console
from evals.suite.options import GateOptions

if TYPE_CHECKING:
    from evals.results.summary import UnitSummary


def configure(parser: argparse.ArgumentParser) -> None:
    add_options(parser, GateOptions)


def main(args: argparse.Namespace) -> int:
    options = options_of(GateOptions, args)
    isolate_token()
    no_cache_for_suite_runs(options)
    activity = detect(options.mode, reason=options.reason, pr_number=options.pr)
    console.info(log_value(activity.why), source="gate")
    try:
        # A side of more evidence runs the suite's code (batches) on a results file: the suite's guards.
        runs_suite = (activity.kind in RUN_KINDS and not options.results) or options.evidence_side is not None
        guard_secret_events(activity, runs_suite=runs_suite)
        if options.preflight:
            guard_install(activity, github_client(activity), runs_suite=runs_suite)
            return EXIT_PASS
    except EvalgateError as exc:
        report_failure(exc, activity)
        raise
    if activity.kind == "comment":
        report_dir = Path(options.report_dir or options.out_dir)
        return post_stored(report_dir, activity, pr_number=options.pr, gate_id=options.gate_id)
    if activity.kind == "reset":
        return run_reset(options, activity)
    if activity.kind == "run":
        return run_only(options, activity)
    if activity.kind == "compare" and not options.results:
        raise UsageError("mode compare gates a results file you bring: pass --results FILE (input `results`)")
    try:
        config, given = load_config_or_defaults(options)
        if options.evidence_side:
            return run_side(config, activity, options)
        outcome = run_gate(config, activity, options, given=given)
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
