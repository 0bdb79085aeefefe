"""The smoke subset (docs/spec.md#smoke-subset): a small, deterministic, slice-stratified part of the suite for PRs.

Each case gets a rank from ``sha256(seed:id)``. Ranks do not depend on file order, and adding or
removing a case leaves every other case's rank alone, so the subset moves as little as possible
between commits (a PR's smoke run pairs with the baseline's on mostly the same ids).

``smoke.select: informative`` (docs/spec.md#informative-smoke) reads the history's runs of the same config: within each
slice combination it stratifies cases by how their outcome has varied (always passed, always
failed, mixed, or new: too few runs), allocates the budget across strata by Neyman's rule
``n_h ∝ N_h·S_h`` (Neyman 1934, "On the two different aspects of the representative method",
JRSS 97:558–625; Cochran 1977, *Sampling Techniques*, §5.5), where ``S_h`` is the stratum's
run-to-run spread of a case's outcome, and records each drawn case's inclusion probability
``n_h/N_h`` (``run.sample``) so the comparison is a stratified Horvitz–Thompson estimate of the
full suite (``evals.compare.sampling``). Within a stratum the lowest ranks are drawn, as above."""

from __future__ import annotations

import hashlib
import itertools
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from evals.results.model import Inclusion, SampleDesign, Stratum
from evals.suite.config import SmokeSpec

if TYPE_CHECKING:
    from evals.suite.cases import Case


def _rank(seed: int, case_id: str) -> str:
    return hashlib.sha256(f"{seed}:{case_id}".encode()).hexdigest()


def tag_matches(case: Case, tag: str) -> bool:
    key, sep, value = tag.partition("=")
    return key in case.tags and (not sep or case.tags[key] == value)


def subset_label(spec: SmokeSpec) -> str:
    """What ``run.subset`` says about a smoke run."""
    return f"tag:{spec.tag}" if spec.tag else "smoke"


def smoke_subset(cases: list[Case], spec: SmokeSpec, slices: list[str]) -> list[Case]:
    """The smoke cases, in suite order.

    With ``spec.tag``: the cases whose tags have that key (or ``key=value``). Otherwise: first
    ``per_slice_min`` cases of every value of every slice key (all of them when a value has
    fewer), then the lowest-ranked remaining cases up to ``spec.cases`` in total. The per-slice
    minimum wins over the total: a slice the gate reports on must not be left empty."""
    if spec.tag:
        return [c for c in cases if tag_matches(c, spec.tag)]
    ranked = sorted(cases, key=lambda c: _rank(spec.seed, c.id))
    chosen: set[str] = set()
    for key in slices:
        counts: dict[str, int] = {}
        for case in ranked:
            if case.id in chosen and key in case.tags:
                counts[case.tags[key]] = counts.get(case.tags[key], 0) + 1
        for case in ranked:
            value = case.tags.get(key)
            if value is None or case.id in chosen or counts.get(value, 0) >= spec.per_slice_min:
                continue
            chosen.add(case.id)
            counts[value] = counts.get(value, 0) + 1
    for case in ranked:
        if len(chosen) >= spec.cases:
            break
        chosen.add(case.id)
    return [c for c in cases if c.id in chosen]


# A stratum keeps at least this many cases (all when it has fewer), which its s_h² needs, where the
# budget allows it; else one (no stratum's weight rests on nothing, no slice with cases is left
# out), and a stratum of one drawn case uses the variance the history predicted for it.
STRATUM_FLOOR = 2
# Runs of a case the history needs before its outcome counts as known (one run shows no variation).
MIN_RUNS = 2
# S_h² of a stratum of new cases: the largest a 0/1 paired delta can have under no change
# (2·p·(1 − p) at p = ½), so the draw never treats the unknown as settled.
NEW_VARIANCE = 0.5
KINDS = ("new", "pass", "fail", "mixed")


@dataclass(frozen=True)
class CaseHistory:
    """What the informative draw reads of the history: each case's per-run pass rates of the
    latest ``runs`` repeated runs of this config (baselines and re-runs: ``evals.history.repeats``),
    oldest first (``evals.history.flaky``)."""

    runs: int
    outcomes: Mapping[str, Sequence[float]]


@dataclass(frozen=True)
class SmokeDraw:
    cases: list[Case]
    sample: SampleDesign | None = None
    note: str | None = None  # said on stderr: why the draw is not the one configured


def uncertainty(outcomes: Sequence[float]) -> str:
    """A case's stratum by its history: ``new`` (fewer than ``MIN_RUNS`` runs), ``pass`` (passed
    every attempt of every run), ``fail`` (never passed), else ``mixed``."""
    if len(outcomes) < MIN_RUNS:
        return "new"
    if all(x >= 1.0 for x in outcomes):
        return "pass"
    if all(x <= 0.0 for x in outcomes):
        return "fail"
    return "mixed"


def neyman_allocation(sizes: Sequence[int], spreads: Sequence[float], total: int, floor: int) -> list[int]:
    """``n_h`` for strata of ``sizes`` N_h and spreads S_h: Neyman's ``n_h ∝ N_h·S_h`` of ``total``,
    with every stratum kept at ``min(N_h, floor)`` or more and at most ``N_h`` (Cochran §5.9:
    strata whose optimum passes a bound are fixed at it and the rest reallocated). The floors win
    over the total, as ``per_slice_min`` does in the stratified draw. Integers by largest
    remainder, ties to the earlier stratum: the same inputs give the same allocation."""
    lower = [min(n, floor) for n in sizes]
    fixed: dict[int, int] = {}
    ideal: dict[int, float] = {}
    while True:
        free = [h for h in range(len(sizes)) if h not in fixed]
        budget = total - sum(fixed.values())
        weight = {h: sizes[h] * spreads[h] for h in free}
        if free and sum(weight.values()) <= 0:
            weight = {h: float(sizes[h]) for h in free}
        scale = budget / sum(weight.values()) if free and sum(weight.values()) > 0 else 0.0
        ideal = {h: weight[h] * scale for h in free}
        bound = {h: lower[h] for h in free if ideal[h] < lower[h]} or {h: sizes[h] for h in free if ideal[h] > sizes[h]}
        if not bound:
            break
        fixed.update(bound)
    counts = [fixed.get(h, 0) for h in range(len(sizes))]
    for h, x in ideal.items():
        counts[h] = math.floor(x)
    spare = total - sum(counts)
    by_remainder = sorted(ideal, key=lambda h: (-(ideal[h] - math.floor(ideal[h])), h))
    for h in by_remainder:
        if spare <= 0:
            break
        if counts[h] < sizes[h]:
            counts[h] += 1
            spare -= 1
    return counts


# Coarser stratifications, tried in turn when the finer one's floors (two cases a stratum, else
# one) take more than the budget: "always passed" and "always failed" merge into "settled", then
# each slice combination is one stratum (Cochran §5A.12, collapsed strata).
COLLAPSE: tuple[dict[str, str], ...] = ({}, {"pass": "settled", "fail": "settled"}, dict.fromkeys(KINDS, "all"))


def _strata(
    cases: list[Case], slices: list[str], history: CaseHistory, merge: dict[str, str]
) -> tuple[dict[str, list[Case]], dict[str, float]]:
    strata: dict[str, list[Case]] = {}
    sums: dict[str, list[float]] = {}
    for case in cases:
        outcomes = list(history.outcomes.get(case.id, ()))
        kind = uncertainty(outcomes)
        combo = ", ".join(f"{key}={case.tags[key]}" for key in slices if key in case.tags)
        shown = merge.get(kind, kind)
        label = f"{combo} · {shown}" if combo else shown
        strata.setdefault(label, []).append(case)
        # A case's run-to-run mean squared change estimates Var(d) = 2p(1 − p) of its paired delta.
        flips = sum((a - b) ** 2 for a, b in itertools.pairwise(outcomes))
        acc = sums.setdefault(label, [0.0, 0.0])
        acc[0] += NEW_VARIANCE if kind == "new" else flips
        acc[1] += 1 if kind == "new" else len(outcomes) - 1
    # One pseudo-flip per stratum: 20 runs that always passed do not prove the flip rate is 0.
    return strata, {h: (acc[0] + 1.0) / (acc[1] + 2.0) for h, acc in sums.items()}


def informative_subset(cases: list[Case], spec: SmokeSpec, slices: list[str], history: CaseHistory) -> SmokeDraw:
    """The informative draw (module docstring): the cases in suite order and their design."""
    ranked = sorted(cases, key=lambda c: _rank(spec.seed, c.id))
    for merge, floor in itertools.product(COLLAPSE, (STRATUM_FLOOR, 1)):
        strata, variance = _strata(ranked, slices, history, merge)
        if sum(min(len(m), floor) for m in strata.values()) <= spec.cases:
            break
    labels = sorted(strata)
    sizes = [len(strata[h]) for h in labels]
    counts = neyman_allocation(sizes, [math.sqrt(variance[h]) for h in labels], spec.cases, floor)
    chosen: dict[str, Inclusion] = {}
    for label, n_h in zip(labels, counts, strict=True):
        for case in strata[label][:n_h]:
            chosen[case.id] = Inclusion(stratum=label, probability=n_h / len(strata[label]))
    design = SampleDesign(
        history_runs=history.runs,
        strata={
            h: Stratum(population=size, drawn=n, variance=variance[h])
            for h, size, n in zip(labels, sizes, counts, strict=True)
        },
        cases=chosen,
    )
    return SmokeDraw([c for c in cases if c.id in chosen], design)


def draw_smoke(cases: list[Case], spec: SmokeSpec, slices: list[str], history: CaseHistory | None) -> SmokeDraw:
    """The smoke subset ``spec`` asks for. ``informative`` without a usable history (none, or
    fewer than ``MIN_RUNS`` repeated runs of this config) falls back to the stratified draw and
    says so in ``note``."""
    if spec.select != "informative" or spec.tag:
        return SmokeDraw(smoke_subset(cases, spec, slices))
    if history is None or history.runs < MIN_RUNS:
        seen = "no history" if history is None else f"{history.runs} repeated run(s) of this config in the history"
        note = (
            f"smoke.select: informative needs at least {MIN_RUNS} repeated runs of this config in the history "
            f"(baselines and re-runs; {seen}); drew the stratified subset instead (record full runs of the "
            "unchanged suite, e.g. the promoting gate on main or `evalgate run`, to enable it)"
        )
        return SmokeDraw(smoke_subset(cases, spec, slices), note=note)
    return informative_subset(cases, spec, slices, history)
