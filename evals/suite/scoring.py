"""What a suite scores and measures (docs/spec.md#config): the scorers, the metrics and their
defaults, and the judge-agreement floor — the parts of ``evalgate.yml`` that name a per-case value."""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal

from pydantic import Field, field_validator, model_validator

from evals.suite.strict import StrictModel

BUILTIN_SCORERS = ("exact", "final_answer", "contains", "regex", "json_valid", "json_equal", "numeric", "judge")
# Scorers of what the agent did (its trace), not of its output (``evals.run.scorers.trajectory``).
TRAJECTORY_SCORERS = ("tool_used", "tool_sequence", "max_steps", "tool_args")
LOWER_IS_BETTER = ("error_rate", "latency_p50_ms", "latency_p95_ms", "tokens", "cost_usd")
BUILTIN_METRICS = ("pass_rate", "score", *LOWER_IS_BETTER)
# Metrics in their own units (milliseconds, tokens, dollars); every other metric — pass_rate,
# score, error_rate, pass@k, a named score — is a rate or score in [0, 1].
JUDGE_AGREEMENT = "judge_agreement"  # metrics.judge_agreement: a floor, not a metric of the cases
# Below this many labelled cases a 90% interval of an agreement near 0.8 is wider than ±0.15.
JUDGE_AGREEMENT_MIN_CASES = 20
UNBOUNDED_METRICS = ("latency_p50_ms", "latency_p95_ms", "tokens", "cost_usd")
# Named scores a built-in scorer records beside its own (``evals.run.scorers.builtin``).
SCORER_EXTRAS = {"final_answer": ("format_valid",)}
# Built-in scorers that judge against the case's ``expected`` unless this parameter replaces it.
EXPECTED_UNLESS = {
    "exact": None,
    "final_answer": None,
    "json_equal": None,
    "numeric": None,
    "contains": "value",
    "regex": "pattern",
}


def default_direction(metric: str) -> Literal["higher", "lower"]:
    """Which way is better for a metric when its config does not say."""
    return "lower" if metric in LOWER_IS_BETTER else "higher"


# ---------------------------------------------------------------------------------------- scorers


class ScorerSpec(StrictModel):
    """``exact`` | ``{regex: {pattern: ...}}`` | ``{python: pkg.mod:fn, name: ...}``."""

    name: str
    python: str | None = None
    params: dict[str, Any] = Field(default_factory=dict)

    @model_validator(mode="before")
    @classmethod
    def _shorthand(cls, value: Any) -> Any:
        if isinstance(value, str):
            return {"name": value}
        if isinstance(value, dict) and "name" not in value and "python" not in value and len(value) == 1:
            ((name, params),) = value.items()
            return {"name": name, "params": params if params is not None else {}}
        if isinstance(value, dict) and "python" in value and "name" not in value:
            return {**value, "name": str(value["python"]).rsplit(":", 1)[-1]}
        return value

    @property
    def needs_expected(self) -> bool:
        """Whether this scorer compares with the case's ``expected`` (unknown for callables: no)."""
        if self.python is not None or self.name not in EXPECTED_UNLESS:
            return False
        param = EXPECTED_UNLESS[self.name]
        return param is None or self.params.get(param) is None

    @model_validator(mode="after")
    def _known(self) -> ScorerSpec:
        if self.python is None and self.name not in (*BUILTIN_SCORERS, *TRAJECTORY_SCORERS):
            raise ValueError(
                f"unknown scorer {self.name!r}: built-ins are {', '.join((*BUILTIN_SCORERS, *TRAJECTORY_SCORERS))}; "
                "a callable is written {python: 'pkg.module:function'}"
            )
        return self


# ---------------------------------------------------------------------------------------- metrics


class MetricSpec(StrictModel):
    direction: Literal["higher", "lower"] | None = Field(
        default=None, description="Which way is better; defaults per metric (latency, cost, errors: lower)."
    )
    tolerance: float | str = Field(
        default=0.02, description='Absolute (0.02) or relative to the baseline value ("10%").'
    )
    gate: bool = True
    min: float | None = Field(
        default=None,
        description="Absolute floor: the gate fails when the candidate's interval lies entirely below it (needs no "
        "baseline).",
    )
    max: float | None = Field(
        default=None,
        description="Absolute ceiling: the gate fails when the candidate's interval lies entirely above it.",
    )
    per_slice: bool = Field(default=False, description="min/max hold for every slice value too, not only overall.")

    @model_validator(mode="after")
    def _floor_below_ceiling(self) -> MetricSpec:
        if self.min is not None and self.max is not None and self.min > self.max:
            raise ValueError(f"min {self.min:g} is above max {self.max:g}: no value could clear both")
        if self.per_slice and self.min is None and self.max is None:
            raise ValueError("per_slice applies min/max to every slice: set min or max too")
        return self

    @field_validator("tolerance")
    @classmethod
    def _tolerance(cls, value: float | str) -> float | str:
        if isinstance(value, str):
            if not re.fullmatch(r"\s*\d+(\.\d+)?\s*%\s*", value):
                raise ValueError('a relative tolerance is written like "10%"')
        elif value < 0:
            raise ValueError("tolerance must be >= 0")
        return value

    def band(self, baseline_value: float) -> float:
        """The tolerance δ as an absolute amount for this baseline value."""
        if isinstance(self.tolerance, str):
            return abs(baseline_value) * float(self.tolerance.strip().rstrip("%")) / 100.0
        return float(self.tolerance)


class JudgeAgreementSpec(StrictModel):
    """``metrics.judge_agreement``: a floor on the share of labelled cases where the judge agrees with
    the case's human verdict (docs/spec.md#human-labels). Read out of ``metrics:`` (it is no per-case
    metric: the paired tests never see it)."""

    min: Annotated[float, Field(ge=0, le=1)] = Field(
        description="The floor: the gate fails when the agreement's interval lies entirely below it."
    )
    min_cases: Annotated[int, Field(ge=1)] = Field(
        default=JUDGE_AGREEMENT_MIN_CASES,
        description="Fewer labelled cases than this: the floor cannot be judged, and the gate cannot pass.",
    )
