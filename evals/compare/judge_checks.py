"""What a comparison says of its judge (docs/spec.md#judge-noise, docs/spec.md#human-labels): its agreement with
itself over repeats, per run, and with people; computed by evals.compare.judging, held by
``Comparison.judge``."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from evals.compare.agreement import Agreement


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class SelfAgreement(_Model):
    """How often a judge with ``repeats: k`` agreed with itself over one run's outputs
    (docs/spec.md#judge-noise)."""

    outputs: int = Field(description="Judged outputs (attempts) with two verdicts or more.")
    repeats: int = Field(description="The most verdicts an output has (the judge's repeats).")
    unanimous: int = Field(description="Outputs whose verdicts all agree.")
    share: float = Field(description="unanimous / outputs.")
    pair_agreement: float = Field(description="The mean share of an output's pairs of verdicts that agree.")
    kappa: float | None = Field(
        description="Fleiss' κ over the outputs (the k verdicts as k raters); None when every verdict is the same."
    )
    cases: list[str] = Field(default_factory=list, description="Cases with an output whose verdicts disagree (RAW).")
    n_cases: int = Field(default=0, description="How many cases that is (the list is cut).")


class HumanAgreement(_Model):
    """The judge's verdicts against the cases' human verdicts (docs/spec.md#human-labels), on the candidate."""

    agreement: Agreement = Field(description="a: the people, b: the judge (bias > 0: the judge passes more).")
    labelled: int = Field(description="Cases carrying a human verdict.")
    floor: float | None = Field(default=None, description="metrics.judge_agreement.min, when set.")
    min_cases: int | None = Field(default=None, description="metrics.judge_agreement.min_cases, when set.")


class JudgeChecks(_Model):
    """The judge's noise and its agreement with people, per run."""

    baseline: SelfAgreement | None = None
    candidate: SelfAgreement | None = None
    humans: HumanAgreement | None = None
