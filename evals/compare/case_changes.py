"""The case diff of a comparison (docs/spec.md#case-diff): which cases flipped, dropped, changed their tool
calls, or were added, removed, changed or left out. Strings from a case are stored RAW; the report escapes them."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from evals.compare.record import Record

FlakyBasis = Literal["history", "attempts", "judge"]


class CaseDiffEntry(Record):
    id: str
    slices: dict[str, str] = Field(default_factory=dict)
    baseline_passed: bool | None = Field(default=None, description="Per-case pass rate ≥ 0.5 (None: no pass data).")
    candidate_passed: bool | None = None
    baseline_pass_rate: float | None = Field(default=None, description="Fraction of valid attempts that passed.")
    candidate_pass_rate: float | None = None
    baseline_score: float | None = None
    candidate_score: float | None = None
    score_delta: float | None = None
    input: str | None = Field(default=None, description="RAW excerpt; escape when rendering.")
    expected: str | None = None
    baseline_output: str | None = None
    candidate_output: str | None = None
    candidate_error: str | None = Field(default=None, description='"kind: message" of the first erroring attempt.')
    baseline_reasoning: str | None = Field(
        default=None, description="RAW: the judge's (or imported grader's) reasoning on the first valid attempt."
    )
    candidate_reasoning: str | None = None
    baseline_scores: dict[str, float] = Field(
        default_factory=dict, description="Named scores of the first valid attempt."
    )
    candidate_scores: dict[str, float] = Field(default_factory=dict)
    candidate_trace: list[dict[str, Any]] = Field(
        default_factory=list, description="Last trace events of the candidate's first failed attempt (RAW)."
    )
    baseline_tools: list[str] | None = Field(
        default=None,
        description="Tools the baseline's first valid attempt called, in order (RAW; None: no tool call on "
        "either side, or no trace on this one).",
    )
    candidate_tools: list[str] | None = None
    tools_diverge_at: int | None = Field(
        default=None, description="First position where the two tool sequences differ (None: the same)."
    )
    flaky_rate: float | None = Field(
        default=None,
        description="How often two tries of this case disagree, when it is known to be flaky: from the history's "
        "runs of the same config, else from the attempts of either run (docs/spec.md#flaky-cases).",
    )
    flaky_basis: FlakyBasis | None = Field(default=None, description="Where flaky_rate is from.")

    @property
    def flaky_note(self) -> str | None:
        """The case diff's mark of a known-flaky case: its flip may be noise, not the change."""
        if not self.flaky_rate:
            return None
        if self.flaky_basis == "history":
            return f"flaky (flips {self.flaky_rate:.0%} of runs)"
        if self.flaky_basis == "judge":
            return f"judge unsure (its repeated verdicts disagree {self.flaky_rate:.0%} of the time)"
        return f"flaky (its attempts disagree {self.flaky_rate:.0%} of the time)"


class CaseDiff(Record):
    """Per-case changes. Lists are capped at ``limit`` entries; the ``n_*`` counts are totals."""

    limit: int
    pass_to_fail: list[CaseDiffEntry] = Field(default_factory=list)
    fail_to_pass: list[CaseDiffEntry] = Field(default_factory=list)
    score_drops: list[CaseDiffEntry] = Field(
        default_factory=list, description="Largest score drops of cases that did not flip pass → fail, worst first."
    )
    trajectory_changes: list[CaseDiffEntry] = Field(
        default_factory=list,
        description="Cases whose tool calls changed, besides those listed above, in case order.",
    )
    n_pass_to_fail: int = 0
    n_fail_to_pass: int = 0
    n_score_drops: int = 0
    n_trajectory_changes: int = 0
    added: list[str] = Field(default_factory=list, description="Ids only in the candidate.")
    removed: list[str] = Field(default_factory=list, description="Ids only in the baseline (full runs only).")
    changed: list[str] = Field(default_factory=list, description="Same id, different input/expected hash.")
    errored: list[str] = Field(default_factory=list, description="Paired ids left out: no valid attempt on a side.")
    n_added: int = 0
    n_removed: int = 0
    n_changed: int = 0
    n_errored: int = 0
    n_paired: int = 0
    n_outside_subset: int = Field(default=0, description="Baseline cases not in a smoke/subset candidate.")
