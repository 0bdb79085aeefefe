"""Setting up more evidence (docs/spec.md#more-evidence): the first look's α and where its batches come
from — the side jobs' files, both sides run in this job, or why neither can."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from evals.common.errors import UsageError
from evals.common.escape import log_value
from evals.github.activity import Activity
from evals.pipeline.baseline_side import prepare_baseline_side
from evals.pipeline.batch_source import LAYOUT, BatchSource, ReplaySource, RunningSource, check_digests
from evals.pipeline.candidate import out_dir_of
from evals.pipeline.evidence import first_look_only, imported, nothing_to_rerun
from evals.results import console
from evals.results.model import Results
from evals.suite.config import SuiteConfig
from evals.suite.options import GateOptions

if TYPE_CHECKING:
    from evals.store.baseline import LoadedBaseline


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
