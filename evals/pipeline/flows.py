"""The gate after the event is known (docs/spec.md#data-flow): config → baselines (read first, so
a broken store costs no suite run) → candidate → compare → report files → publish → promote, each a
named step of :func:`run_gate`; and mode run (:func:`run_only`). ``evalgate gate`` is a thin
command over them; the reset is ``evals.pipeline.reset``."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from evals.common.errors import EXIT_PASS, EvalgateError, GateVerdict, UsageError
from evals.common.escape import log_value
from evals.compare.plan import fixed_rule_alpha
from evals.github.activity import Activity, actor_name, github_client
from evals.github.publish import publish_result, report_failure, set_outputs_safely
from evals.pipeline.baseline_side import prepare_baseline_side
from evals.pipeline.batch_source import LAYOUT, BatchSource, ReplaySource, RunningSource, check_digests
from evals.pipeline.candidate import (
    candidate_sha,
    gate_again_command,
    gate_reset_command,
    gate_resume_command,
    obtain_candidate,
    out_dir_of,
    run_suite,
)
from evals.pipeline.evidence import first_look_only, gather, imported, not_run, nothing_to_rerun
from evals.pipeline.exposure import confine_pr_history
from evals.pipeline.failfast import fail_fast_applies, fail_fast_baseline
from evals.pipeline.rejudge import Bridge, bridge_judge, judge_only_change
from evals.pipeline.rules import rules_for
from evals.report.files import write_report_files
from evals.results import console
from evals.results.model import Results, RunInfo
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


def nothing_measured(results: Results) -> str | None:
    """Why ``results`` measured nothing, when every attempt of every case ended in an error (a
    command that cannot start, a target that raises on every call), else None. Such a run is no
    baseline: every later gate would pass against it."""
    attempts = [a for case in results.cases for a in case.attempts]
    if not attempts or any(a.error is None for a in attempts):
        return None
    kinds = Counter(a.error.kind for a in attempts if a.error)
    first = next(a.error for a in attempts if a.error)
    by_kind = ", ".join(f"{kind} {n}" for kind, n in kinds.most_common())
    return (
        f"every one of its {len(attempts)} attempts ended in an error ({by_kind}; the first: "
        f"{log_value(first.message or first.kind, limit=200)})"
    )


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
    if _wants_promotion(comparison, config, activity, options):
        promoted = _promote(comparison, results, store, baselines, config, activity, options)
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


def _wants_promotion(comparison: Comparison, config: SuiteConfig, activity: Activity, options: GateOptions) -> bool:
    if options.promote is not None:
        return options.promote
    # Locally, `on_missing: seed` means what it says: the first full run becomes the baseline. In
    # Actions only the default branch's runs may (activity.promote), never a PR's or a side branch's.
    seeding = not activity.in_actions and comparison.verdict == "no-baseline" and config.baseline.on_missing == "seed"
    return activity.promote or seeding


def _promote(
    comparison: Comparison,
    candidate: Results,
    store: BaselineStore,
    baselines: Baselines,
    config: SuiteConfig,
    activity: Activity,
    options: GateOptions,
) -> bool | None:
    """Store the candidate as the new baseline if the promotion rule allows it; whether it did,
    or None when this gate may not promote at all (said why)."""
    from evals.history import record_promotion
    from evals.store.promotion import promote_candidate

    if failed := nothing_measured(candidate):
        console.info(f"not promoting: {failed}", source="gate")
        return None
    if baselines.drift_unchecked:
        console.info("not promoting: the drift guard could not be checked", source="gate")
        return None
    if activity.is_pr:
        console.info("not promoting: a pull request's candidate never becomes the baseline", source="gate")
        return None
    done = promote_candidate(
        store,
        candidate,
        comparison,
        config=config,
        sha=candidate_sha(candidate, event_sha=activity.candidate_sha, explicit=options.sha),
        actor=actor_name(activity.actor),
        on_missing=config.baseline.on_missing,
    )
    console.info(log_value(done.message, limit=None), source="gate")
    record_promotion(
        candidate, done.result.snapshot if done.result else None, config=config, comparison=done.comparison
    )
    return done.promoted


def report_not_run(
    stop: GateVerdict,
    config: SuiteConfig,
    baselines: Baselines,
    options: GateOptions,
    activity: Activity,
    out_dir: Path,
) -> Path | None:
    """The out dir of a gate stopped before running the suite says that verdict, as the gate of a
    results file does: left alone, the previous gate's report.md, comment.md and comparison.json
    would be read as this gate's. The candidate is the config as it is now, with no case run.
    Where the baseline and the config cannot even be compared (a slice key or named score the
    baseline lacks), the stale files are removed instead. Returns the report written, if one was."""
    from evals.common.gitinfo import current_sha
    from evals.compare.analysis import compare
    from evals.compare.case_changes import CaseDiff

    loaded = baselines.baseline
    run = RunInfo(
        suite=config.suite,
        status="pending",
        total_cases=0,
        completed_cases=0,
        git_sha=options.sha or activity.candidate_sha or current_sha(),
        config_hash=config.config_hash(),
        definitions=config.definitions(),
        gate_settings=config.gate_settings(),
        message="not run: the gate stopped before running the suite",
    )
    stale = [out_dir / name for name in ("report.md", "comment.md", "comparison.json")]
    if options.html:
        stale.append(Path(options.html))
    try:
        assert loaded is not None
        found = compare(loaded.results, Results(run=run), config, baseline_ref=loaded.ref)
        comparison = found.model_copy(
            update={
                "verdict": stop.verdict,
                "reason": stop.reason,
                "exit_code": stop.exit_code,
                "units": [],
                "floors": [],
                "case_diff": CaseDiff(limit=found.case_diff.limit),
                "warnings": [],
                # Not "partial": nothing was started. What the config does not say is unknown, not changed.
                "candidate_run": found.candidate_run.model_copy(update={"status": "not run", "complete": True}),
                "provenance": [p for p in found.provenance if p.candidate is not None],
            }
        )
        report = write_report_files(comparison, config, out_dir)["report"]
        for path in stale[3:]:  # no HTML page is written without a run: an old one would be read as this
            path.unlink(missing_ok=True)
        return report
    except (EvalgateError, OSError) as exc:
        console.warning(f"no report of this verdict: {log_value(exc, limit=300)}", source="gate")
        for path in stale:
            path.unlink(missing_ok=True)
        return None


def more_evidence_setup(
    config: SuiteConfig,
    options: GateOptions,
    candidate: Results,
    baseline: LoadedBaseline,
    activity: Activity,
    ran_suite: bool,
    *,
    refused: str | None = None,
) -> tuple[SuiteConfig, BatchSource | str, Results]:
    """The config of the first look and where its batches come from: the side jobs' files
    (``--evidence``), else run here (or why they cannot, ``refused`` among them: the first look
    then keeps its whole α).
    Imported results have nothing to re-run: an error."""
    if fmt := imported(candidate):
        raise UsageError(nothing_to_rerun(config, fmt))
    first = first_look_only(candidate)
    side = (
        refused
        or replayed(options, activity)
        or batches_refused(activity, ran_suite)
        or running(config, options, baseline, first)
    )
    if isinstance(side, str):
        console.info(f"more evidence cannot run: {log_value(side, limit=None)}", source="gate")
        return config, side, candidate
    from evals.compare.plan import first_look_alpha

    return with_alpha(config, first_look_alpha(config.gate)), side, first


def with_alpha(config: SuiteConfig, alpha: float) -> SuiteConfig:
    return config.model_copy(update={"gate": config.gate.model_copy(update={"alpha": alpha})})


def replayed(options: GateOptions, activity: Activity) -> ReplaySource | None:
    """The side jobs' batch files (``--evidence``), their baseline side checked against the digests
    its job gave (required in Actions, where an artifact can be replaced by another job)."""
    if not options.evidence:
        return None
    folder = Path(options.evidence)
    if not folder.is_dir():
        raise UsageError(f"--evidence {folder}: no such folder; give the folder the side jobs' batch files were put in")
    if options.evidence_digest is None and activity.in_actions:
        raise UsageError(
            "--evidence without --evidence-digest (input `evidence-digest`): in Actions the baseline side's files "
            "are gated only against the digests its job gave as its output (needs.<job>.outputs.evidence-digest)"
        )
    if options.evidence_digest is not None:
        check_digests(folder, options.evidence_digest)
    return ReplaySource(folder, "re-run by the baseline side's own job, on a fresh checkout of the base commit")


def running(
    config: SuiteConfig, options: GateOptions, baseline: LoadedBaseline, candidate: Results
) -> RunningSource | str:
    """Both sides run in this job: the baseline's in a worktree of its commit, or from its recorded
    openai target (or why neither can)."""
    side = prepare_baseline_side(config, Path(options.config), baseline)
    if isinstance(side, str):
        return side
    return RunningSource(side, Path(options.config), out_dir_of(options), candidate)


def batches_refused(activity: Activity, ran_suite: bool) -> str | None:
    """Why batches cannot run in this job, else None. Batches run the suite's code (on a pull
    request, its author's). In Actions, a job that gates a results file (the second job of the
    two-job layout) holds a token that can write and runs no code of the repository: that promise
    is kept. And the baseline's side never runs where a PR's code ran (docs/spec.md#more-evidence): that code could
    have planted a git hook, or changed the virtualenv or the cache the baseline side would use.
    Either way the first look decides alone; outside Actions (the developer's own code), or on a
    push, both sides run here."""
    if not activity.in_actions:
        return None
    if not ran_suite:
        return (
            'this job gates a results file and runs no code of the repository (docs/github-action.md, "Threat '
            f"model\"); batches run the suite's code: use {LAYOUT}"
        )
    if activity.is_pr:
        return (
            "the pull request's code ran in this job, so the baseline's side cannot run here untouched by it (a git "
            f"hook, the virtualenv or the cache it could have changed): use {LAYOUT}"
        )
    return None


def _baseline_sha(baseline: LoadedBaseline | None) -> str:
    """The commit of the baseline used: its snapshot's, or the run's own for a legacy baseline.json."""
    if baseline is None:
        return ""
    if baseline.ref.snapshot is not None:
        return baseline.ref.snapshot.sha
    return baseline.results.run.git_sha or ""


def guard_suite_job(activity: Activity, config: SuiteConfig, client: GitHubClient | None) -> None:
    """Inside Actions, before the suite runs: refuse a token that can write unless the workflow
    accepted it, warn about a persisted git credential."""
    if activity.in_actions:
        from evals.pipeline.exposure import guard_exposed

        guard_exposed(activity, config, client)


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
