"""What a comparison says about spend (docs/spec.md#spend-reporting): why a candidate a ``limits:`` key stopped cannot
pass and how to finish it, and a gated ``tokens`` or ``cost_usd`` that a side does not report at
all (unknown, not 0). The spend figures themselves are each run's (``RunSummary.spend``)."""

from __future__ import annotations

import numpy as np

from evals.compare.metrics import MetricDef, RunTable
from evals.compare.model import RunSummary
from evals.results.spend import LimitStop, limit_sentence, resume_hint
from evals.suite.scoring import MetricSpec


def limit_stopped(stop: LimitStop, run: RunSummary) -> str:
    """A candidate a ``limits:`` key stopped: which limit and what it spent. The reports' banner
    says only this; how to finish the run is said once, below it."""
    return (
        f"the candidate run was stopped by a limit, so it cannot pass: {limit_sentence(stop)} after "
        f"{run.completed_cases} of {run.total_cases} cases"
    )


def limit_reason(
    stop: LimitStop, run: RunSummary, resume_command: str | None = None, gate_command: str | None = None
) -> str:
    """The gate's reason (its log line, comparison.json): what stopped the run and how to finish
    and gate it, in one line, since a log has no paragraph below to say the rest.
    ``resume_command``: the run's own command with --resume, and ``gate_command`` the gate of the
    finished file (the same config and flags), when the caller knows them."""
    rerun = f"`{resume_command}`" if resume_command else "--resume"
    again = f"then `{gate_command}`" if gate_command else "then gate it again"
    return f"{limit_stopped(stop, run)}; to finish it, {resume_hint(stop, rerun)}, {again}"


def unmeasured(defs: list[MetricDef], specs: dict[str, MetricSpec], bt: RunTable, ct: RunTable) -> list[str]:
    """A gated ``tokens`` or ``cost_usd`` that a side reports on no case: unknown, not 0. Said in
    words, so the inconclusive unit it makes is not read as a cost that held."""
    notes = []
    for d in defs:
        if d.name not in ("tokens", "cost_usd") or not specs[d.name].gate:
            continue
        missing = [side for side, table in (("baseline", bt), ("candidate", ct)) if np.isnan(table.values(d)).all()]
        if missing:
            fix = (
                "cost_usd (or set target.openai.price_in_per_mtok/price_out_per_mtok)"
                if d.name == "cost_usd"
                else "tokens_in/tokens_out"
            )
            runs = "runs report" if len(missing) > 1 else "run reports"
            notes.append(
                f"{d.name} is gated, but the {' and the '.join(missing)} {runs} "
                f"no {d.name} on any case: unknown, not 0, so the {d.name} gate could not be checked; have the "
                f"target report {fix}"
            )
    return notes
