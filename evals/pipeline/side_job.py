"""One side of more evidence, in a job of its own (``evalgate gate --evidence-side``; docs/spec.md#more-evidence,
docs/github-action.md "More evidence on pull requests").

On a pull request the baseline's side must not run where the PR's code ran (docs/spec.md#more-evidence): that code
could plant a git hook the baseline's worktree runs, or change the virtualenv or the cache the
baseline side reads. So the more-evidence workflow runs each side in its own job, from the run
job's results file: the candidate's from the PR's checkout, the baseline's from a fresh checkout
of the base commit (a worktree of the baseline's commit made there). Each side takes the first
look exactly as the gate will (the same library code, the same store) and, if it is inconclusive,
runs up to ``max_batches`` batches of one more attempt of the first look's selected cases: it
cannot see the other side's attempts, so it cannot take the later looks; the gate job replays the
loop over both sides' files (``evals.pipeline.batch_source.ReplaySource``), which stops where a
side ran less. Each side runs with half of what the limits leave (``evals.pipeline.batch_budget``).
The baseline side's files' sha256 digests are printed and set as the step output
``evidence-digest``, which the gate job checks its files against."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

from evals.common.errors import EXIT_PASS, UsageError
from evals.common.escape import log_value
from evals.compare.sequential import Evidence
from evals.github.activity import Activity, github_client
from evals.github.publish import set_outputs_safely
from evals.pipeline.baseline_side import prepare_baseline_side, remove_baseline_side
from evals.pipeline.batch_budget import BatchBudget
from evals.pipeline.batch_source import FOLDER, SIDES, SideName, run_batch_side, side_digests, start_folder
from evals.pipeline.candidate import content_digest, out_dir_of
from evals.pipeline.evidence import first_look_only, imported, nothing_to_rerun
from evals.pipeline.exposure import guard_suite_job
from evals.results import console
from evals.results.files import load_results
from evals.run.cache import CACHE_DIR_ENV, cache_disabled
from evals.run.seal import cache_files, check, discard, seal, seal_key
from evals.store.selection import load_baselines, open_store_for

if TYPE_CHECKING:
    from evals.github.client import GitHubClient
    from evals.suite.config import SuiteConfig
    from evals.suite.options import GateOptions


def run_side(config: SuiteConfig, activity: Activity, options: GateOptions) -> int:
    """Run ``options.evidence_side``'s batches into ``<out-dir>/more-evidence``; exit 0 whenever the
    side did what it could (the gate says what was missing)."""
    side: SideName | None = options.evidence_side
    assert side is not None  # the command dispatches here only with a side
    if not options.results:
        raise UsageError(
            "--evidence-side runs one side's batches for the gate of a results file: pass --results FILE (the run "
            "job's results.json)"
        )
    key = seal_key()  # out of the environment before any run starts: the batches' runs do not inherit it
    client = github_client(activity)
    guard_suite_job(activity, config, client)  # batches run the suite's code: the suite job's guards
    folder = out_dir_of(options) / FOLDER
    folder.mkdir(parents=True, exist_ok=True)
    cache = _baseline_cache(config, activity, key) if side == "baseline" else None
    why = _batches(config, activity, options, side, client)
    if why is not None:
        console.info(f"more evidence, {side} side: {log_value(why, limit=None)}", source="gate")
    if cache is not None and activity.in_actions and not key:
        console.info(
            "more evidence, baseline side: the response cache is not sealed (no cache-seal-key): a later run of "
            "this side asks its answers again",
            source="gate",
        )
    elif cache is not None and key and seal(cache, key):
        console.info(
            f"more evidence, baseline side: sealed the response cache in {log_value(str(cache))}", source="gate"
        )
    digests = side_digests(folder, side)
    # Never an empty folder: its artifact is then uploaded even when no batch ran, and the gate job's
    # download of both sides finds something.
    (folder / f"{side}-digests.txt").write_text(digests + "\n", encoding="utf-8")
    console.result(f"evidence-digest: {digests}")
    if activity.in_actions:
        set_outputs_safely({"evidence-digest": digests, "verdict": "", "promoted": "false"})
    return EXIT_PASS


def _baseline_cache(config: SuiteConfig, activity: Activity, key: bytes | None) -> Path | None:
    """The response cache folder the baseline side's runs use, once it is one they may read: in
    Actions (or with a seal key) a restored folder must carry the seal of an earlier baseline-side
    job (evals.run.seal), or its cache files go before any batch runs. None: no cache."""
    if config.cache is None or cache_disabled():
        return None
    # The config's folder, for every run of this side (the worktree's are pointed at it too): the
    # one the workflow restores, checks and saves.
    os.environ.pop(CACHE_DIR_ENV, None)
    folder = config.resolve(config.cache.dir)
    if not (activity.in_actions or key):
        return folder  # a developer's own machine: the local flow trusts its checkout's cache too
    shown = log_value(str(folder))
    why = check(folder, key)
    if why is None:
        if cache_files(folder):
            said = "is sealed by an earlier baseline-side job: its answers are not asked again"
            console.info(f"more evidence, baseline side: the response cache in {shown} {said}", source="gate")
        return folder
    gone = discard(folder)
    console.warning(
        f"more evidence, baseline side: the response cache in {shown} was not used ({why}); its {gone} "
        f"file{'s' if gone != 1 else ''} removed, every answer is asked again. Only a folder sealed by the "
        f"baseline side's own job is read there: give that job the action's cache-seal-key (a repository secret "
        'no other job gets; docs/github-action.md, "More evidence on pull requests")',
        source="gate",
    )
    return folder


def _batches(
    config: SuiteConfig, activity: Activity, options: GateOptions, side: SideName, client: GitHubClient | None
) -> str | None:
    """Run the side's batches; why it stopped before ``max_batches``, else None."""
    spec = config.gate.more_evidence
    out_dir = out_dir_of(options)
    if not spec.enabled:
        return _forget(out_dir, side, f"no batch: gate.more_evidence is off in {options.config}")
    store = open_store_for(config, client=client)
    baselines = load_baselines(store, config, pr_base_sha=activity.base_sha, is_pr=activity.is_pr)
    baseline = baselines.baseline
    if baseline is None:
        return _forget(out_dir, side, "no batch: no baseline to compare with")
    candidate = load_results(options.results or "")
    if fmt := imported(candidate):
        raise UsageError(nothing_to_rerun(config, fmt))
    candidate = first_look_only(candidate)
    # The files of another first look go (this one's are kept, to be reused by a side run again).
    folder = start_folder(out_dir, candidate, content_digest(baseline.results))
    from evals.compare.plan import first_look_alpha

    look_config = config.model_copy(
        update={"gate": config.gate.model_copy(update={"alpha": first_look_alpha(config.gate)})}
    )
    comparison = baselines.compare(candidate, look_config)
    if comparison.verdict != "inconclusive":
        return f"no batch: the first look decided ({comparison.verdict})"
    evidence = Evidence.first_look(comparison, baseline.results, candidate, config, config.gate.alpha)
    units, ids = evidence.select(comparison)
    if not ids:
        return "no batch: the first look selected no case to re-run"
    config_path, cwd, target, prepared = Path(options.config).resolve(), Path.cwd(), None, None
    cache_dir = None
    if side == "baseline":
        prepared = prepare_baseline_side(config, Path(options.config), baseline)
        if isinstance(prepared, str):
            return f"no batch: {prepared}"
        config_path, cwd, target, cache_dir = prepared.config_path, prepared.cwd, prepared.target, prepared.cache_dir
    budget = BatchBudget(config.limits, candidate, baseline.results, side=SIDES.index(side))
    offset = max((len(c.attempts) for c in candidate.cases), default=config.attempts)
    of = log_value(", ".join(units), limit=None)
    try:
        for number in range(1, spec.max_batches + 1):
            spent = budget.batches.cost_usd
            if spec.max_cost_usd is not None and spent is not None and spent >= spec.max_cost_usd * budget.share:
                return f"stopped after {number - 1} batches: its half of max_cost_usd {spec.max_cost_usd:g} reached"
            if (refused := budget.refusal(len(ids))) is not None:
                return f"stopped after {number - 1} batches: {refused}"
            console.info(f"more evidence, {side} side: batch {number}: {len(ids)} cases of {of}", source="gate")
            ran = run_batch_side(
                side, config_path, folder, number, ids, offset + number - 1, cwd,
                target=target, caps=budget.caps(), cache_dir=cache_dir,
            )  # fmt: skip
            budget.add(ran)
            if not ran.run.is_complete:
                return f"stopped: batch {number} did not complete ({ran.run.status})"
    finally:
        if prepared is not None and not isinstance(prepared, str):
            remove_baseline_side(prepared)
    return None


def _forget(out_dir: Path, side: SideName, why: str) -> str:
    """No first look to run batches for: this side's files of an earlier one are not this gate's."""
    for stale in (out_dir / FOLDER).glob(f"{side}-*.json"):
        stale.unlink()
    return why
