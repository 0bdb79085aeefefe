"""How often two graders agree on the same outputs (docs/spec.md#judges): two judges on a baseline's
outputs when a judge change is bridged, a judge with itself over repeats, a judge with people.

Cohen's κ discounts the agreement two graders would reach by chance at their own pass rates
(Cohen 1960, "A coefficient of agreement for nominal scales"): with observed agreement p_o and
chance agreement p_e = p_a·p_b + (1 − p_a)(1 − p_b), κ = (p_o − p_e) / (1 − p_e). When both graders
give every case the same verdict p_e = 1 and κ is undefined (None), not 1: a grader that passes
everything agrees with any other such grader without telling anything apart.
"""

from __future__ import annotations

from collections.abc import Iterable

from pydantic import BaseModel, ConfigDict, Field


class Agreement(BaseModel):
    """Agreement of grader ``b`` with grader ``a`` on the cases both graded."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    n: int = Field(description="Cases both graders gave a verdict on.")
    agreed: int
    share: float | None = Field(description="agreed / n; None when n == 0.")
    kappa: float | None = Field(description="Cohen's κ; None when n == 0 or chance agreement is 1.")
    a_pass_rate: float | None = None
    b_pass_rate: float | None = None
    bias: float | None = Field(
        default=None, description="b_pass_rate − a_pass_rate: how much more often b passes than a."
    )
    disagreements: list[str] = Field(
        default_factory=list, description="Case ids graded differently, in input order (raw ids)."
    )


def agreement(pairs: Iterable[tuple[str, bool, bool]]) -> Agreement:
    """Agreement over ``(case_id, verdict_a, verdict_b)``; cases missing a verdict are left out by the caller."""
    n = agreed = a_pass = b_pass = 0
    disagreements: list[str] = []
    for case_id, a, b in pairs:
        n += 1
        a_pass += a
        b_pass += b
        if a == b:
            agreed += 1
        else:
            disagreements.append(case_id)
    if n == 0:
        return Agreement(n=0, agreed=0, share=None, kappa=None)
    p_o = agreed / n
    p_a, p_b = a_pass / n, b_pass / n
    p_e = p_a * p_b + (1 - p_a) * (1 - p_b)
    kappa = None if p_e >= 1.0 else (p_o - p_e) / (1 - p_e)
    return Agreement(
        n=n,
        agreed=agreed,
        share=p_o,
        kappa=kappa,
        a_pass_rate=p_a,
        b_pass_rate=p_b,
        bias=p_b - p_a,
        disagreements=disagreements,
    )
