"""Whether a gate promotes its candidate to the baseline, and doing it (docs/spec.md#promotion): a run
that measured nothing, a drift guard left unchecked or a pull request's candidate never becomes one."""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING

from evals.common.escape import log_value
from evals.github.activity import Activity, actor_name
from evals.pipeline.candidate import candidate_sha
from evals.results import console
from evals.results.model import Results
from evals.store.selection import Baselines
from evals.suite.config import SuiteConfig
from evals.suite.options import GateOptions

if TYPE_CHECKING:
    from evals.compare.model import Comparison
    from evals.store.baseline import BaselineStore


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


def wants_promotion(comparison: Comparison, config: SuiteConfig, activity: Activity, options: GateOptions) -> bool:
    if options.promote is not None:
        return options.promote
    # Locally, `on_missing: seed` means what it says: the first full run becomes the baseline. In
    # Actions only the default branch's runs may (activity.promote), never a PR's or a side branch's.
    seeding = not activity.in_actions and comparison.verdict == "no-baseline" and config.baseline.on_missing == "seed"
    return activity.promote or seeding


def promote(
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
