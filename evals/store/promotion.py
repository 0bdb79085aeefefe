"""Whether a gated candidate becomes the baseline, and storing it when it does (SPEC §7).

The rule has two halves: the gate's (``evals.store.baseline.promotion_allowed``: ``pass`` or
``inconclusive`` with the drift guard holding) and the store's (never replace a newer commit's
baseline with an older one, enforced inside ``BaselineStore.promote``). Only complete, full runs
are promoted: a smoke subset or a single shard would make later gates pair against a fraction of
the suite. ``on_missing: seed`` lets the first complete run in as the baseline, blessed: it is the
first reference point, so the drift guard holds from the first gate on (not only after a reset)."""

from __future__ import annotations

import sys
from dataclasses import dataclass
from typing import TYPE_CHECKING

from evals.common.escape import log_value
from evals.results.model import Results

if TYPE_CHECKING:
    from evals.compare.model import Comparison
    from evals.store.baseline import BaselineStore
    from evals.store.write import GatedOn, PromotionResult

SEED_REASON = "seeded: first baseline"


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


def promote_candidate(
    store: BaselineStore,
    candidate: Results,
    comparison: Comparison,
    *,
    sha: str,
    actor: str | None,
    on_missing: str,
) -> PromotionOutcome:
    """Promote ``candidate`` (commit ``sha``) if the gate and the store allow it. Refusals are
    outcomes, not errors; a store that cannot be written raises ``InfraError`` (exit 3) with the
    previous baseline intact."""
    from evals.store.baseline import promotion_allowed

    run = candidate.run
    if run.subset or run.shard:
        part = f"subset {run.subset}" if run.subset else f"shard {run.shard}"
        return PromotionOutcome(False, f"not promoted: the candidate is a partial suite ({part})")
    if not run.is_complete:
        return PromotionOutcome(False, f"not promoted: the candidate run is not complete ({run.status})")
    if comparison.verdict == "no-baseline":
        if on_missing != "seed":
            return PromotionOutcome(
                False,
                "not promoted: there is no baseline yet; set baseline.on_missing: seed to let the first full run "
                "in, or run a reset",
            )
        verdict, reason, blessed = "seed", SEED_REASON, True
    else:
        allowed, why = promotion_allowed(comparison.verdict, comparison.drift_ok)
        if not allowed:
            return PromotionOutcome(False, f"not promoted: {why}")
        verdict, reason, blessed = comparison.verdict, None, False
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
        print(f"evalgate: warning: {log_value(line, limit=None)}", file=sys.stderr)
    if not result.promoted:
        return PromotionOutcome(False, f"not promoted: {result.reason}", result)
    what = "seeded and blessed" if blessed else "promoted"
    how = f"; {result.basis}" if result.basis else ""
    return PromotionOutcome(True, f"{what} {sha[:12]} as the baseline in {store.source} ({verdict}{how})", result)
