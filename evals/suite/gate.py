"""``gate:`` of the suite config (docs/spec.md#config): the decision rule's parameters and more evidence."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field, model_validator

from evals.suite.strict import StrictModel


class MoreEvidenceSpec(StrictModel):
    """More evidence: when the gate ends inconclusive, re-run the cases of the slices
    that look worse (both sides) in batches and test again, on per-case means, at a share of α fixed in advance."""

    max_batches: Annotated[int, Field(ge=0)] = Field(
        default=0, description="Most batches to run after the first look; 0 turns more evidence off."
    )
    max_cost_usd: Annotated[float, Field(gt=0)] | None = Field(
        default=None, description="Stop starting batches once both sides' batches cost this much."
    )
    rho: Annotated[float, Field(gt=0, lt=1)] = Field(
        default=0.2,
        description="Share of α the looks after the first share (by a spending function); the first look's "
        "fixed-sample rule keeps (1 − rho)·α.",
    )
    select: Literal["looks_worse", "all"] = Field(
        default="looks_worse",
        description="looks_worse: the cases of slices not regressed whose delta is below the tolerance (can only "
        "turn inconclusive into fail); all: every case (the only way overall can reach pass).",
    )

    @property
    def enabled(self) -> bool:
        return self.max_batches > 0


class GateRule(StrictModel):
    """The decision rule's parameters: what ``gate:`` says and what a comparison records as in
    force (``evals.compare.model.GateConfig``), declared once with their defaults."""

    alpha: Annotated[float, Field(gt=0, lt=1)] = 0.05
    power: Annotated[float, Field(gt=0, lt=1)] = 0.8
    slice_alpha_share: Annotated[float, Field(ge=0, lt=1)] = Field(
        default=0.7, description="Share of α the slices get (0: only overall can block); overall gets the rest."
    )
    slice_weights: Literal["cases", "sqrt_cases", "equal"] = Field(
        default="cases", description="How a slice key's share of α is split among its values."
    )
    target_mde: Annotated[float, Field(gt=0)] = Field(
        default=0.10,
        description="Report only: units whose minimum detectable drop is above it are marked underpowered. "
        "The old key max_detectable_drop is read as this one, with a warning.",
    )
    inconclusive: Literal["warn", "fail"] = "warn"
    max_error_rate: Annotated[float, Field(ge=0, le=1)] = Field(
        default=0.10, description="Largest share of attempts with an infra error before 'incomplete'."
    )


class GateSpec(GateRule):
    """gate: the decision rule and how the config tunes the rest of the gate."""

    mcnemar: Literal["mid-p", "exact"] = Field(
        default="mid-p",
        description="The McNemar test of binary units under 300 cases: mid-p (its size stays at its level) "
        "or exact (spends 27-75% of its level on small units).",
    )
    id: str | None = Field(default=None, description="Gate id for the sticky PR comment; defaults to the suite.")
    max_removed_share: Annotated[float, Field(ge=0, le=1)] = Field(
        default=0.2, description="A full gate whose candidate lacks more of the baseline's cases is incompatible."
    )
    bootstrap_resamples: Annotated[int, Field(ge=200)] = 2000
    seed: int = 0
    more_evidence: MoreEvidenceSpec = Field(default_factory=MoreEvidenceSpec)
    fail_fast: bool = Field(
        default=False,
        description="Pull-request gates: run the cases in a seeded order stratified by slice and stop scheduling "
        "once a blocking unit's regression is certain (an anytime-valid test at its own share of alpha); never "
        "stops with a pass. A push, reset or default-branch gate runs every case.",
    )

    @model_validator(mode="before")
    @classmethod
    def _old_key(cls, value: Any) -> Any:
        if isinstance(value, dict) and "max_detectable_drop" in value:
            if "target_mde" in value:
                raise ValueError("max_detectable_drop is the old name of target_mde: keep only target_mde")
            value = {**value, "target_mde": value["max_detectable_drop"]}
            del value["max_detectable_drop"]
        return value
