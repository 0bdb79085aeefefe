"""The smoke subset (SPEC §4): a small, deterministic, slice-stratified part of the suite for PRs.

Each case gets a rank from ``sha256(seed:id)``. Ranks do not depend on file order, and adding or
removing a case leaves every other case's rank alone, so the subset moves as little as possible
between commits (a PR's smoke run pairs with the baseline's on mostly the same ids)."""

from __future__ import annotations

import hashlib
from typing import TYPE_CHECKING

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
