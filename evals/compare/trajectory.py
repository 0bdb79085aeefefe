"""Trajectories in a comparison (docs/spec.md#trajectory-diff): the advisory unit ``trajectory_changed`` and the aligned
tool sequences of the case diff.

``trajectory_changed`` is the share of paired cases whose tool sequence (the tools called, in
order, by the first attempt without an infra error — the attempt the case diff shows) differs
between the runs. It is a per-case 0/1 of a *pair*, so it enters the paired test as 0 on the
baseline's side and the change on the candidate's: its unit gets the binary test and interval like
any 0/1 metric, is never gated (the agent may well have found a better way; the trajectory scorers
are what a suite gates on), and is reported in every comparison of runs that record tool calls.
A case with no trace on a side has no sequence there and is left out of the unit."""

from __future__ import annotations

import numpy as np

from evals.compare.metrics import MetricDef, RunTable
from evals.compare.model import MetricGate
from evals.compare.paired import MetricInput
from evals.compare.pairing import Pairing
from evals.suite.scoring import MetricSpec

METRIC = "trajectory_changed"
SPEC = MetricSpec(direction="lower", gate=False)
DEFINITION = MetricDef(METRIC, METRIC, None, "lower")


def gate_entry() -> MetricGate:
    return MetricGate(metric=METRIC, direction="lower", tolerance=SPEC.tolerance, gate=False)


def trajectory_input(bt: RunTable, ct: RunTable, pairing: Pairing) -> MetricInput | None:
    """The unit's paired values, or None when neither run's paired cases called a tool."""
    base = [bt.tools[i] for i in pairing.base_rows.tolist()]
    cand = [ct.tools[i] for i in pairing.cand_rows.tolist()]
    if not any(base) and not any(cand):
        return None
    changed = np.array(
        [np.nan if b is None or c is None else float(b != c) for b, c in zip(base, cand, strict=True)], dtype=float
    )
    return MetricInput(DEFINITION, SPEC, np.where(np.isnan(changed), np.nan, 0.0), changed)
