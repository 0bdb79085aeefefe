"""What more evidence did (docs/spec.md#more-evidence), as comparison.json records it: each look, each
unit's test at it, and how it ended."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from evals.compare.record import Record
from evals.results.spend import Spend

LookOutcome = Literal["fail", "pass", "continue", "inconclusive", "incomplete"]


class EvidenceValue(Record):
    """One unit at one look of more evidence (docs/spec.md#more-evidence): its per-case means so far.
    The statistics have defaults so that a comparison.json of an evalgate before this test (its
    e-values are left out as unknown fields) still reads, with them unknown."""

    metric: str
    unit: str
    cases: int = Field(
        default=0, description="Paired cases with a value on both sides: the test's n (never the attempts)."
    )
    attempts_per_case: float | None = Field(default=None, description="Mean attempts per case so far on each side.")
    observed_drop: float | None = Field(
        default=None, description="Mean of the per-case mean drops (oriented: positive is worse)."
    )
    p_value: float | None = Field(
        default=None,
        description="One-sided p of the t-test on per-case means against 'the drop is at most the tolerance'; "
        "none where the look did not test the unit (no case of it re-run yet).",
    )
    level: float | None = Field(
        default=None, description="What p needs alone to fail the gate: the look's α × the unit's weight."
    )
    rejected: bool
    rerun: bool = Field(default=False, description="Some batch so far re-ran cases of the unit.")
    repeated: bool = Field(
        default=False, description="This look's batch re-ran the unit's cases and every one answered as at the first."
    )


class EvidenceLook(Record):
    look: int = Field(description="0: the first look; N: after batch N.")
    units: list[str] = Field(default_factory=list, description="Units whose cases the batch re-ran.")
    cases: int = Field(default=0, description="Cases re-run; each ran once on each side.")
    attempts: int = Field(default=0, description="Attempts added, both sides together.")
    cost_usd: float | None = Field(default=None, description="What the batch cost, both sides (None: unknown).")
    level: float | None = Field(
        default=None, description="This look's share of ρ·α (none: the first look, or a look not taken)."
    )
    repeated: bool = Field(
        default=False, description="Every re-run case answered on both sides as at the first look: no look was taken."
    )
    values: list[EvidenceValue] = Field(default_factory=list)
    passed: bool = False
    outcome: LookOutcome


class MoreEvidence(Record):
    """What ``gate.more_evidence`` did: the looks, how the baseline side was run, how it ended."""

    rho: float
    first_look_alpha: float = Field(description="(1 − ρ)·α: the fixed-sample rule's level at the first look.")
    sequential_alpha: float = Field(description="ρ·α: what the looks after the first share.")
    method: str = Field(default="", description="The later looks' test and how they share ρ·α.")
    select: Literal["looks_worse", "all"]
    max_batches: int
    max_cost_usd: float | None = None
    baseline_side: str = Field(description="How the baseline's attempts were made (or why they could not be).")
    looks: list[EvidenceLook] = Field(default_factory=list)
    ended: Literal["fail", "pass", "inconclusive", "incomplete", "not-run"]
    summary: str = Field(description="One line: how it ended.")
    estimand: str
    attempts: int = Field(default=0, description="Attempts the batches added, both sides.")
    cost_usd: float | None = Field(
        default=None, description="What the batches cost, both sides, a judge's calls included (None: unknown)."
    )
    spend: Spend | None = Field(default=None, description="The batches' spend, both sides (none when none ran).")
