"""The reset (docs/spec.md#reset): run the full suite (or take ``--results``) and bless it as the baseline,
recording the reason and who did it. ``evalgate reset`` and the gate's mode reset are thin
commands over :func:`run_reset`."""

from __future__ import annotations

from evals.common.errors import EXIT_PASS, EvalgateError, InfraError, UsageError
from evals.common.escape import inline, log_value
from evals.github.activity import Activity, actor_name, github_client, guard_reset_branch
from evals.github.publish import publish_result, report_failure, set_outputs_safely
from evals.pipeline.candidate import candidate_sha, load_config_or_defaults, obtain_candidate, out_dir_of
from evals.pipeline.exposure import guard_suite_job
from evals.pipeline.promotion import nothing_measured
from evals.report.files import write_report_files
from evals.results import console
from evals.store.selection import Baselines, load_baselines, open_store_for
from evals.suite.options import CandidateOptions


def run_reset(options: CandidateOptions, activity: Activity, *, actor: str | None = None) -> int:
    """Run the full suite (or take ``--results``) and bless it as the baseline, recording the reason
    and who did it. The comparison with the previous baseline is reported, not gated."""
    from evals.store.baseline import StoreCorrupt

    out_dir = out_dir_of(options)
    try:
        guard_reset_branch(activity)
        config, given = load_config_or_defaults(options)
        client = github_client(activity)
        if given is None and not options.results:
            guard_suite_job(activity, config, client)
        store = open_store_for(config, client=client)
        # Read before the run, so a broken store costs no run; the reset is compared with it for the
        # record, without the drift guard (a reset is what re-blesses).
        try:
            previous = load_baselines(store, config, drift=False)
        except StoreCorrupt as exc:  # what a reset is for: store a fresh baseline
            console.warning(
                f"the previous baseline is unreadable, not compared: {log_value(exc, limit=None)}", source="reset"
            )
            previous = Baselines(None, None)
        candidate, results_path = given or obtain_candidate(config, options, out_dir, smoke=False)
        run = candidate.run
        if run.subset or run.shard:
            raise UsageError(f"{results_path}: a reset blesses the whole suite; this is {run.subset or run.shard}")
        if not run.is_complete:
            raise InfraError(
                f"{results_path}: the run is not complete ({run.status}, {run.completed_cases}/{run.total_cases} "
                f"cases{': ' + run.message if run.message else ''}); nothing was blessed"
            )
        if not candidate.cases:
            raise UsageError(
                f"{results_path}: the run holds no case; a baseline of nothing gates nothing, nothing was blessed"
            )
        if failed := nothing_measured(candidate):
            raise UsageError(f"{results_path}: {failed}; a baseline of errors gates nothing, nothing was blessed")
        if run.suite != config.suite:
            # Blessed, it would be a baseline the suite's own runs can never be compared with.
            raise UsageError(
                f"{results_path}: the run is of suite {run.suite!r} but {options.config} is suite {config.suite!r}; "
                f"nothing was blessed (name the run after the suite: `evalgate import --suite {config.suite} ...`, "
                "or correct `suite:`)"
            )
        comparison = previous.compare(candidate, config)
        paths = write_report_files(comparison, config, out_dir)
        sha = candidate_sha(candidate, event_sha=activity.candidate_sha, explicit=options.sha)
        actor = actor_name(actor or activity.actor)
        result = store.promote(candidate, sha=sha, verdict="reset", reason=activity.reason, actor=actor, blessed=True)
        for line in result.warnings:
            console.warning(log_value(line, limit=None))
        if not result.promoted:
            raise UsageError(f"not reset: {result.reason}")
        from evals.history import record_reset

        record_reset(
            candidate,
            result.snapshot,
            comparison,
            previous.baseline.results if previous.baseline else None,
            config=config,
        )
    except EvalgateError as exc:
        report_failure(exc, activity)
        raise
    headline = (
        f"## evalgate reset: {sha[:12]} is the blessed baseline\n\n"
        f"Reason: {inline(activity.reason)} — by {inline(actor or 'unknown')}. "
        f"Compared with the previous baseline for the record (not gated): {comparison.verdict}.\n\n"
    )
    outputs = {
        "verdict": "reset",
        "report-path": str(paths["report"]),
        "comparison-path": str(paths["comparison"]),
        "results-path": str(results_path),
        "baseline-sha": sha,
        "comment-url": "",
        "promoted": "true",
    }
    if activity.in_actions:
        publish_result(comparison, config, activity, None, comment=False, out_dir=out_dir, headline=headline)
        set_outputs_safely(outputs)
    console.result(
        f"evalgate reset: blessed {sha[:12]} in {store.source} (reason: {log_value(activity.reason)}; "
        f"actor: {log_value(actor)})\n"
        f"report: {paths['report']}\n"
        "what this suite can certify, per slice, before the next paid run: `evalgate plan`"
    )
    return EXIT_PASS
