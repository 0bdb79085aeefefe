"""Whether a gated candidate becomes the baseline, and storing it when it does (docs/spec.md#promotion).

The rule has two halves: the gate's (``evals.store.baseline.promotion_allowed``: ``pass`` or
``inconclusive`` with the drift guard holding) and the store's (never replace a newer commit's
baseline with an older one, enforced inside ``BaselineStore.promote``). Only complete, full runs
are promoted: a smoke subset or a single shard would make later gates pair against a fraction of
the suite. ``on_missing: seed`` lets the first complete run in as the baseline, blessed: it is the
first reference point, so the drift guard holds from the first gate on (not only after a reset)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from evals.common.escape import log_value
from evals.results import console
from evals.results.model import Results

if TYPE_CHECKING:
    from evals.compare.model import Comparison
    from evals.results.manifest import SnapshotInfo
    from evals.store.baseline import BaselineStore
    from evals.store.write import GatedOn, PromotionResult
    from evals.suite.config import SuiteConfig

SEED_REASON = "seeded: first baseline"
REGATES = 3  # baselines that may land while one candidate is promoted before it gives up


def gated_on(comparison: Comparison) -> GatedOn:
    """The baseline ``comparison`` is about, as the store's promotion rule checks it."""
    from evals.store.write import GatedOn

    ref = comparison.baseline
    if ref is None:
        return GatedOn(None, "no baseline")
    if ref.snapshot is None:
        return GatedOn(None, f"{ref.source} ({'legacy baseline.json' if ref.legacy else 'not a stored snapshot'})")
    return GatedOn(ref.snapshot, f"{ref.snapshot.sha[:12]} of {ref.source}")


@dataclass
class PromotionOutcome:
    promoted: bool
    message: str
    result: PromotionResult | None = None
    # The comparison the outcome rests on: the gate's own, or the re-gate's against a baseline
    # that landed while the gate ran.
    comparison: Comparison | None = None


def promote_candidate(
    store: BaselineStore,
    candidate: Results,
    comparison: Comparison,
    *,
    config: SuiteConfig,
    sha: str,
    actor: str | None,
    on_missing: str,
) -> PromotionOutcome:
    """Promote ``candidate`` (commit ``sha``) if the gate and the store allow it. Refusals are
    outcomes, not errors; a store that cannot be written raises ``InfraError`` (exit 3) with the
    previous baseline intact.

    The gate's verdict is about one baseline. When another one landed on top of it before the
    switch (a concurrent promotion or reset), the store refuses; the candidate is then gated
    again against the new baseline, as a fresh gate would (same config, drift guard included),
    and promoted only if that verdict allows it too."""
    from evals.store.selection import load_baselines

    run = candidate.run
    if run.subset or run.shard:
        part = f"subset {run.subset}" if run.subset else f"shard {run.shard}"
        return PromotionOutcome(False, f"not promoted: the candidate is a partial suite ({part})", None, comparison)
    if not run.is_complete:
        return PromotionOutcome(
            False, f"not promoted: the candidate run is not complete ({run.status})", None, comparison
        )
    landed: list[SnapshotInfo] = []  # baselines that landed while this candidate was gated
    for _ in range(REGATES + 1):
        admitted = _admission(comparison, on_missing)
        if isinstance(admitted, str):
            return PromotionOutcome(False, f"not promoted: {_regated(landed, admitted)}", None, comparison)
        verdict, reason, blessed = admitted
        result = store.promote(
            candidate,
            sha=sha,
            verdict=verdict,
            reason=reason,
            actor=actor,
            blessed=blessed,
            gated_on=gated_on(comparison),
        )
        for line in result.warnings:
            console.warning(log_value(line, limit=None))
        if result.moved is None:
            break
        landed.append(result.moved)
        baselines = load_baselines(store, config)
        if baselines.drift_unchecked:
            return PromotionOutcome(
                False, f"not promoted: {_regated(landed, baselines.drift_unchecked)}", result, comparison
            )
        comparison = baselines.compare(candidate, config)
    else:
        return PromotionOutcome(
            False,
            f"not promoted: {len(landed)} baselines landed while this candidate was gated; re-run the gate",
            result,
            comparison,
        )
    if not result.promoted:
        return PromotionOutcome(False, f"not promoted: {_regated(landed, result.reason)}", result, comparison)
    what = "seeded and blessed" if blessed else "promoted"
    again = f"gated again against {landed[-1].sha[:12]}, which became the baseline meanwhile" if landed else None
    how = "".join(f"; {note}" for note in (again, result.basis) if note)
    return PromotionOutcome(
        True, f"{what} {sha[:12]} as the baseline in {store.source} ({verdict}{how})", result, comparison
    )


def _regated(landed: list[SnapshotInfo], why: str) -> str:
    """``why`` a promotion stopped, after the baselines that landed meanwhile, if any."""
    if not landed:
        return why
    return (
        f"{landed[-1].sha[:12]} became the baseline while this candidate was gated (a concurrent promotion or "
        f"reset); gated again against it: {why}"
    )


def _admission(comparison: Comparison, on_missing: str) -> tuple[str, str | None, bool] | str:
    """(the entry's verdict, reason, blessed) when the gate's half of the rule admits the
    candidate, else why not."""
    from evals.store.baseline import promotion_allowed

    if comparison.verdict == "no-baseline":
        if on_missing != "seed":
            return (
                "there is no baseline yet; set baseline.on_missing: seed to let the first full run in, or run a reset"
            )
        return "seed", SEED_REASON, True
    allowed, why = promotion_allowed(comparison.verdict, comparison.drift_ok)
    return (comparison.verdict, None, False) if allowed else why
