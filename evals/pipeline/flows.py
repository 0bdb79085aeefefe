"""The gate after the event is known (docs/spec.md#data-flow): config → baselines (read first, so
a broken store costs no suite run) → candidate → compare → report files → publish → promote, each a
named step of :func:`run_gate`; and mode run (:func:`run_only`). ``evalgate gate`` is a thin
command over them; the reset is ``evals.pipeline.reset``. The steps' larger parts have modules of
their own: ``promotion``, ``first_look`` (more evidence's first look) and ``stopped_gate`` (the
report of a gate stopped before its suite ran)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from evals.common.errors import EXIT_PASS, EvalgateError, GateVerdict, UsageError
from evals.common.escape import log_value
from evals.compare.plan import fixed_rule_alpha
from evals.github.activity import Activity, github_client
from evals.github.publish import publish_result, report_failure, set_outputs_safely
from evals.pipeline.candidate import (
    gate_again_command,
    gate_reset_command,
    gate_resume_command,
    obtain_candidate,
    out_dir_of,
    run_suite,
)
from evals.pipeline.evidence import gather, not_run, nothing_to_rerun
from evals.pipeline.exposure import confine_pr_history, guard_suite_job
from evals.pipeline.failfast import fail_fast_applies, fail_fast_baseline
from evals.pipeline.first_look import more_evidence_setup, with_alpha
from evals.pipeline.promotion import promote, wants_promotion
from evals.pipeline.rejudge import Bridge, bridge_judge, judge_only_change
from evals.pipeline.rules import rules_for
from evals.pipeline.stopped_gate import report_not_run
from evals.report.files import write_report_files
from evals.results import console
from evals.results.model import Results
from evals.store.selection import Baselines, load_baselines, open_store_for
from evals.suite.config import SuiteConfig
from evals.suite.loading import load_config
from evals.suite.options import CandidateOptions, GateOptions, RunOptions

if TYPE_CHECKING:
    from evals.compare.model import Comparison
    from evals.github.client import GitHubClient
    from evals.store.baseline import BaselineStore, LoadedBaseline


@dataclass
class GateOutcome:
    comparison: Comparison
    exit_code: int
    paths: dict[str, Path]
    baseline: LoadedBaseline | None
    outputs: dict[str, str] = field(default_factory=dict)


def run_gate(
    config: SuiteConfig,
    activity: Activity,
    options: GateOptions,
    *,
    given: tuple[Results, Path] | None = None,
) -> GateOutcome:
    """The gate after the config is known; ``given``: the candidate and its file, when the caller
    already has them. The steps,
    in order: read the baselines (first: a corrupt or unreachable store, or definitions that
    changed, fail before a costly suite run), obtain the candidate, compare (with more evidence
    when the first look is inconclusive), record it in the history, write the report files,
    publish (inside Actions), promote when the gate allows it."""
    out_dir = out_dir_of(options)
    client = github_client(activity)
    runs_suite = given is None and not options.results
    if not runs_suite:
        confine_pr_history(activity, config, client)
    store, baselines = _read_baselines(config, activity, options, client, out_dir, runs_suite=runs_suite)
    rules = rules_for(config, activity, baselines.baseline, options)
    config = fail_fast_applies(rules.config, activity, baselines.baseline, runs_suite=runs_suite)
    against = fail_fast_baseline(config, baselines.baseline, out_dir)
    smoke = activity.kind == "smoke"
    results, results_path = given or obtain_candidate(config, options, out_dir, smoke=smoke, fail_fast=against)
    if options.results:
        _say_brought_errors(results, config)
    bridge = bridge_judge(config, baselines, results, runs_code=not activity.in_actions or runs_suite)
    comparison, results = _compare(config, activity, options, bridge, results, results_path, runs_suite)
    bridge.annotate(comparison)
    rules.annotate(comparison)
    _record(comparison, results, baselines.baseline, store, config, activity, options)
    paths = _write_files(comparison, results, results_path, config, activity, options, out_dir)
    exit_code = comparison.exit_code  # the verdict's: a promotion never changes it
    outputs = {
        "verdict": comparison.verdict,
        "report-path": str(paths["report"]),
        "comparison-path": str(paths["comparison"]),
        "results-path": str(results_path),
        "baseline-sha": _baseline_sha(baselines.baseline),
        "comment-url": "",
        "promoted": "false",
    }
    if activity.in_actions:
        comment = options.comment == "on"
        published = publish_result(comparison, config, activity, client, comment=comment, out_dir=out_dir)
        outputs.update(published)
        set_outputs_safely(outputs)  # before promoting: a failed promotion then only changes `verdict`
    if wants_promotion(comparison, config, activity, options):
        promoted = promote(comparison, results, store, baselines, config, activity, options)
        if promoted is not None:
            outputs["promoted"] = "true" if promoted else "false"
            if activity.in_actions:
                set_outputs_safely({"promoted": outputs["promoted"]})
    return GateOutcome(comparison, exit_code, paths, baselines.baseline, outputs)


def _read_baselines(
    config: SuiteConfig,
    activity: Activity,
    options: GateOptions,
    client: GitHubClient | None,
    out_dir: Path,
    *,
    runs_suite: bool,
) -> tuple[BaselineStore, Baselines]:
    """The store and its baselines, before any candidate is run; a suite whose definitions changed
    since the baseline stops here (``incompatible``), before a case is run."""
    if runs_suite:
        guard_suite_job(activity, config, client)
    if config.gate.more_evidence.enabled and options.results_format:
        raise UsageError(nothing_to_rerun(config, options.results_format))
    store = open_store_for(config, client=client)
    baselines = load_baselines(store, config, pr_base_sha=activity.base_sha, is_pr=activity.is_pr)
    baseline = baselines.baseline
    if runs_suite and baseline is not None:
        from evals.compare.compatibility import definitions_incompatibility

        why = definitions_incompatibility(
            baseline.results.run, config.suite, config.config_hash(), config.definitions()
        )
        changes, refused = judge_only_change(baseline.results, config)
        if why and changes is not None and refused is None:
            why = None  # only the judge changed: the baseline is re-judged once the candidate has run
        elif why and refused:
            why += f" The judge alone changed, but the baseline cannot be re-judged: {refused}."
        if why:
            stop = GateVerdict("incompatible", f"{why} (checked before running the suite: no case was run)")
            stop.report = report_not_run(stop, config, baselines, options, activity, out_dir)
            raise stop
    return store, baselines


def _say_brought_errors(candidate: Results, config: SuiteConfig) -> None:
    """A suite run prints its errors' most common messages itself; brought results would otherwise
    show only counts."""
    if not any(a.error for case in candidate.cases for a in case.attempts):
        return
    from evals.results.summary import error_lines, summarize

    for line in error_lines(summarize(candidate, config.slices)):
        console.info(log_value(line.strip(), limit=None), source="gate")


def _compare(
    config: SuiteConfig,
    activity: Activity,
    options: GateOptions,
    bridge: Bridge,
    candidate: Results,
    results_path: Path,
    ran_suite: bool,
) -> tuple[Comparison, Results]:
    """The comparison, and the candidate it judged (with the batches of more evidence, if any ran)."""
    from evals.history.flaky import known_flaky

    baselines = bridge.baselines  # the baseline re-judged, when only the judge changed
    baseline = baselines.baseline
    # Read before more evidence can change the candidate: the run left out of its own flip rates
    # is the one the history holds (the suite run recorded it), found by its digest.
    flaky = known_flaky(config, candidate)
    look_config, side = config, None
    if config.gate.more_evidence.enabled and baseline is not None:
        look_config, side, candidate = more_evidence_setup(
            config, options, candidate, baseline, activity, ran_suite, refused=bridge.no_batches
        )
    if look_config is config and config.gate.fail_fast:  # the fixed-sample rule keeps what fail fast left
        look_config = with_alpha(config, fixed_rule_alpha(config.gate))
    try:
        comparison = baselines.compare(
            candidate,
            look_config,
            flaky=flaky,
            reset_command=gate_reset_command(options, results_path),
            resume_command=gate_resume_command(options, results_path, candidate),
            gate_command=gate_again_command(options, results_path),
        )
        if side is not None and not isinstance(side, str) and comparison.verdict == "inconclusive":
            assert baseline is not None  # a side is prepared only against one
            comparison = gather(
                comparison,
                candidate=candidate,
                candidate_path=results_path,
                baseline=baseline.results,
                config=config,
                source=side,
                alpha=fixed_rule_alpha(config.gate),
                flaky=flaky,
            )
        elif side is not None:
            comparison.more_evidence = not_run(config, comparison, side)
    finally:
        if side is not None and not isinstance(side, str):
            side.close()
    return comparison, candidate


def _record(
    comparison: Comparison,
    candidate: Results,
    baseline: LoadedBaseline | None,
    store: BaselineStore,
    config: SuiteConfig,
    activity: Activity,
    options: GateOptions,
) -> None:
    from evals.history import record_comparison, store_trends

    record_comparison(
        comparison,
        candidate,
        baseline.results if baseline else None,
        config=config,
        actor=activity.actor,
        candidate_sha=options.sha,  # outside git, what names the run in `history show`
        baseline_snapshot=baseline.ref.snapshot if baseline else None,  # the history learns it is a baseline
    )
    store_trends(comparison, candidate, store, config=config)


def _write_files(
    comparison: Comparison,
    candidate: Results,
    results_path: Path,
    config: SuiteConfig,
    activity: Activity,
    options: GateOptions,
    out_dir: Path,
) -> dict[str, Path]:
    """The report files in the out dir (and ``--html``), by name."""
    from evals.github.stored_report import write_comment_meta

    paths = write_report_files(comparison, config, out_dir)
    paths["results"] = results_path
    if options.html:
        from evals.report.html import write_html
        from evals.results.summary import summarize

        paths["html"] = Path(options.html)
        write_html(paths["html"], results=candidate, summary=summarize(candidate, config.slices), comparison=comparison)
    if activity.is_pr:
        write_comment_meta(comparison, config, activity, out_dir)
        paths["comment-meta"] = out_dir / "comment.json"
    return paths


def _baseline_sha(baseline: LoadedBaseline | None) -> str:
    """The commit of the baseline used: its snapshot's, or the run's own for a legacy baseline.json."""
    if baseline is None:
        return ""
    if baseline.ref.snapshot is not None:
        return baseline.ref.snapshot.sha
    return baseline.results.run.git_sha or ""


def run_only(options: CandidateOptions, activity: Activity) -> int:
    """Mode run: run the suite and write ``results.json`` to the out dir, nothing else (no store,
    no comment): the first job of the two-job layout, which needs no token. Exit 0 whenever a
    results file was written, a partial one included: the gate job says ``incomplete``."""
    out_dir = out_dir_of(options)
    path = out_dir / "results.json"
    try:
        if options.results:
            raise UsageError("mode run runs the suite; a results file is gated with mode compare (or auto)")
        config = load_config(options.config)
        guard_suite_job(activity, config, github_client(activity))
        results = run_suite(RunOptions(config=options.config, output=str(path), smoke=activity.smoke))
    except EvalgateError as exc:
        report_failure(exc, activity)
        raise
    if activity.in_actions:
        set_outputs_safely({"results-path": str(path), "verdict": "", "promoted": "false"})
    run = results.run
    console.result(f"evalgate run: {run.status}, {run.completed_cases}/{run.total_cases} cases: {path}")
    return EXIT_PASS
