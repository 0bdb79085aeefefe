"""The order a fail-fast run takes its cases in (docs/spec.md#fail-fast), and how its stop reads.

``gate.fail_fast`` looks at the run after each block of cases; for a block to stand for the
suite, every block must hold its share of every slice. So the cases run in a seeded random order
stratified by slice: within each stratum (a combination of the config's slice values) the cases
are shuffled, and the i-th of a stratum of n gets the position (i + u)/n, u drawn once per
stratum; the run takes them by position. Any prefix of the order then holds each stratum's
share of it to within two cases. Deterministic from ``gate.seed``: the same suite runs in the same
order every time (and its response cache is read in that order). The stopping rule itself is
``evals.compare.failfast``; the runner only stops scheduling (``Runner.stop_early``)."""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence
from typing import Protocol

from evals.results.model import CaseResult, FailFastStop
from evals.suite.cases import Case


class StopRule(Protocol):
    """Fed each completed case; returns the stop once a blocking unit's regression is certain
    (``evals.compare.failfast.FailFast``)."""

    def add(self, result: CaseResult) -> FailFastStop | None: ...


# The rule for the cases in the order they will run (built by the caller, which holds the baseline).
StopRulePlan = Callable[[list[Case]], StopRule]


def interleave(strata: Sequence[Hashable], seed: int) -> list[int]:
    """Indices of ``strata`` (one label per case) in the stratified order."""
    # numpy only here: `evalgate run` without fail fast starts without it (benchmarks/bench_cli_start.py).
    import numpy as np

    rng = np.random.default_rng(seed)
    groups: dict[Hashable, list[int]] = {}
    for i, label in enumerate(strata):
        groups.setdefault(label, []).append(i)
    position = np.empty(len(strata))
    for members in groups.values():
        shuffled = rng.permutation(members)
        position[shuffled] = (np.arange(len(members)) + rng.random()) / len(members)
    return np.argsort(position, kind="stable").tolist()


def stratified_order(cases: Sequence[Case], keys: Sequence[str], seed: int) -> list[Case]:
    """``cases`` in the stratified order of their values of the slice ``keys``."""
    strata = [tuple(case.tags.get(key) for key in keys) for case in cases]
    return [cases[i] for i in interleave(strata, seed)]


def stopped_message(stop: FailFastStop, done: int, total: int, rerun: str) -> str:
    """The run's message: how far it went, which unit regressed, and how to finish it."""
    return (
        f"{stop_headline(stop, done, total)} (gate.fail_fast: p {stop.p_value:.2g} ≤ {stop.level:.2g} at look "
        f"{stop.look} of {stop.looks}, mean drop {stop.observed_drop:.3g} over its {stop.unit_cases} cases so far); "
        f"to finish it, rerun with {rerun}"
    )


def stop_headline(stop: FailFastStop, done: int, total: int) -> str:
    """ "stopped after N of M cases: <unit> regressed" (docs/spec.md#fail-fast)."""
    return f"stopped after {done} of {total} cases: {stop.unit} regressed"
