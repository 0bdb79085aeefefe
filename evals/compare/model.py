"""The outcome of comparing a candidate run with a baseline (docs/spec.md#decision-rule): what ``compare`` produces,
what the report renders and what ``comparison.json`` holds.

Conventions every consumer relies on:

- ``delta`` is always ``candidate - baseline`` in the metric's own units; whether that is good
  depends on ``direction`` (``lower`` is better for latency, tokens, cost, error rate).
- ``ci_low``/``ci_high`` bound that same raw delta at ``ci_level``: each end is the unit's own
  one-sided test inverted at the level it was tested at, so a unit is regressed exactly when its
  interval lies wholly beyond −tolerance on the bad side. ``marginal_low``/``marginal_high`` bound
  it at ``confidence`` (= 1 − 2·alpha, each side a one-sided bound at ``alpha``): the gate's pass
  reads overall's bad end there.
- Strings that came from a case (ids, slice values, input/expected/output excerpts, error
  messages) are stored RAW here; the report escapes them when it renders.
"""

from __future__ import annotations

from typing import Any, Final, Literal

from pydantic import ConfigDict, Field

from evals.compare.bridge import JudgeBridge
from evals.compare.case_changes import CaseDiff
from evals.compare.judge_checks import JudgeChecks
from evals.compare.looks import MoreEvidence
from evals.compare.record import Record
from evals.results.manifest import BaselineRef
from evals.results.model import FailFastStop
from evals.results.spend import LimitStop, Spend
from evals.results.summary import RunStatus, UnitSummary
from evals.suite.gate import GateRule

COMPARISON_VERSION: Final = 1

Verdict = Literal["pass", "fail", "inconclusive", "no-baseline", "incomplete", "incompatible"]
UnitVerdict = Literal["regressed", "improved", "unchanged", "inconclusive"]
Method = Literal["mcnemar-mid-p", "mcnemar", "clt", "bootstrap", "bootstrap-t", "stratified-ht"]
Direction = Literal["higher", "lower"]
CiMethod = Literal[
    "mcnemar-inverted",
    "clt-inverted",
    "bootstrap-t-inverted",
    "bootstrap-inverted",
    "stratified-t-inverted",
    "smoothed",
    # Comparisons written before intervals were at the tested level named the marginal interval's method.
    "bootstrap",
    "stratified-t",
]
Bound = Literal["min", "max"]


class MetricGate(Record):
    """One metric as the gate used it."""

    metric: str = Field(description="pass_rate, score, a named score (score:<name>), pass@k, error_rate, ...")
    direction: Direction
    tolerance: float | str = Field(description='As configured: absolute (0.02) or relative ("10%").')
    gate: bool = Field(description="False: reported, never blocking.")


class GateConfig(GateRule):
    """The decision parameters in force (config ``gate:`` and ``metrics:``, or the CLI defaults):
    the rule's own (:class:`GateRule`, with their defaults) and what the comparison applied them to."""

    max_age_days: int = Field(default=30, description="baseline.max_age_days: older baselines get a warning.")
    # As gate.bootstrap_resamples and gate.seed (GateSpec): always recorded, so without a default here.
    bootstrap_resamples: int
    seed: int
    metrics: list[MetricGate]
    slice_keys: list[str] = Field(default_factory=list, description="Case tag keys the units are sliced by.")
    id: str | None = Field(
        default=None,
        description="gate.id when it is not the suite's name: the reports name it, so that two gates of one "
        "suite (say one with more_evidence) can be told apart on a pull request.",
    )


class UnitResult(Record):
    """One metric on one unit (``overall`` or one slice value)."""

    unit: str = Field(description='"overall" or "key=value".')
    slice_key: str | None = None
    slice_value: str | None = None
    metric: str
    direction: Direction
    gated: bool = Field(description="The metric's gate flag; an ungated metric never blocks.")
    baseline: float | None = Field(description="Metric on the paired baseline cases.")
    candidate: float | None = Field(description="Metric on the paired candidate cases.")
    delta: float | None = Field(description="candidate − baseline (raw units).")
    tolerance: float = Field(description="δ in absolute units for this unit (relative tolerances resolved).")
    ci_low: float | None = None
    ci_high: float | None = None
    ci_method: CiMethod | None = Field(
        default=None,
        description="How [ci_low, ci_high] was made: the unit's own test inverted at its tested level "
        "(mcnemar-inverted, clt-inverted, bootstrap-t-inverted, bootstrap-inverted: the percentile bootstrap, "
        "stratified-t-inverted: the t test of an informative smoke run's stratified estimate); smoothed: the "
        "Agresti–Min interval at the tested level, for a binary unit with no discordant pair, whose McNemar test "
        "cannot reject anything. Older comparisons: bootstrap, stratified-t (the marginal interval's method).",
    )
    confidence: float = Field(
        description="Two-sided level of the marginal interval [marginal_low, marginal_high], 1 − 2·alpha."
    )
    ci_level: float | None = Field(
        default=None,
        description="Two-sided level of [ci_low, ci_high]: the interval at the level this unit was tested at "
        "(docs/spec.md#confidence-intervals), so a unit is regressed exactly when its interval lies wholly "
        "below −tolerance.",
    )
    marginal_low: float | None = Field(
        default=None,
        description="The marginal interval of the delta at `confidence` (not adjusted for the other units): the "
        "paired bootstrap's percentile interval; for binary units under 100 cases the smoothed one; for an "
        "informative smoke run the stratified t interval. The gate's pass reads its bad end for overall; "
        "shown only labelled as marginal.",
    )
    marginal_high: float | None = None
    method: Method | None = Field(default=None, description="Test used for the p-value.")
    p_value: float | None = Field(default=None, description="One-sided p of 'worse than the band' (H0: not worse).")
    p_improved: float | None = Field(default=None, description="One-sided p of 'better than the band'.")
    p_adjusted: float | None = Field(default=None, description="Weighted-Holm adjusted p (blocking units).")
    q_value: float | None = Field(default=None, description="Benjamini–Hochberg q-value (every unit; advisory).")
    weight: float = Field(default=0.0, description="Share of α allocated before the run (0: advisory).")
    alpha_level: float | None = Field(
        default=None, description="α·weight: the level of Holm's first step, which the MDE is computed at."
    )
    smoothed_low: float | None = Field(
        default=None,
        description="Smoothed normal interval of the delta at `confidence` (Agresti–Min: two pseudo-cases); "
        "'unchanged' and the gate's pass need it inside the band too — it does not shrink to a point on a "
        "small unit whose cases all moved the same way.",
    )
    smoothed_high: float | None = None
    mde: float | None = Field(default=None, description="Minimum detectable drop at alpha_level and power.")
    underpowered: bool = Field(default=False, description="MDE above gate.target_mde.")
    cases_for_target: int | None = Field(
        default=None, description="Paired cases that would bring the MDE to target_mde (None: none would, or n/a)."
    )
    discordance: float | None = Field(
        default=None,
        description="Mean square of the per-case deltas; for a binary metric, the share of paired cases whose "
        "outcome differs between the runs (None for latency, tokens and cost).",
    )
    no_change_seen: bool = Field(default=False, description="The two runs agree on every paired case.")
    certifiable: float | None = Field(
        default=None,
        description="The smallest tolerance at which an unchanged candidate of this unit passes 4 runs in 5, at this "
        "run's discordance (docs/spec.md#certifiable-band); with no change seen, the band the unit resolves.",
    )
    cases_to_certify: int | None = Field(
        default=None, description="Paired cases that would certify the configured tolerance at this discordance."
    )
    n: int = Field(description="Paired cases in the unit.")
    blocking: bool
    verdict: UnitVerdict
    note: str | None = Field(default=None, description="Why a unit could not be tested, when it could not.")


class FloorResult(Record):
    """An absolute floor (``min``) or ceiling (``max``) of one metric on one unit, judged on the
    candidate alone (``evals.compare.floors``)."""

    unit: str = Field(description='"overall" or "key=value".')
    slice_key: str | None = None
    slice_value: str | None = None
    metric: str
    bound: Bound
    limit: float = Field(description="The configured floor or ceiling.")
    value: float = Field(description="The candidate's value on the unit.")
    ci_low: float
    ci_high: float
    confidence: float = Field(description="Two-sided level of [ci_low, ci_high], 1 − 2·alpha.")
    n: int = Field(description="Candidate cases with a value in the unit.")
    verdict: Literal["breached", "uncertain", "met"] = Field(
        description="breached: the whole interval is on the wrong side (the gate fails); uncertain: the value is, "
        "the interval is not (a warning); met."
    )


class RunSummary(RunStatus):
    """A run as the comparison reads it: :class:`RunStatus`, then its provenance, errors, cost and speed."""

    model_config = ConfigDict(extra="forbid")

    cases_in_file: int
    started_at: str | None = None
    ended_at: str | None = None
    git_sha: str | None = None
    git_ref: str | None = None
    git_dirty: bool | None = Field(default=None, description="The run had uncommitted changes to tracked files.")
    config_hash: str | None = None
    model: str | None = None
    attempts_per_case: int = 1
    subset: str | None = None
    shard: str | None = None
    message: str | None = None
    attempts: int = Field(default=0, description="Attempt records in the file.")
    error_counts: dict[str, int] = Field(default_factory=dict, description="Attempts with an error, by kind.")
    error_rate: float = Field(
        default=0.0, description="Attempts ending in an error of any kind (target, scorer, timeout, infra) / attempts."
    )
    latency_p50_ms: float | None = Field(default=None, description="Median of the per-case mean latency (ms).")
    latency_p95_ms: float | None = Field(default=None, description="95th percentile of the per-case mean latency (ms).")
    tokens_per_case: float | None = Field(default=None, description="Mean tokens (in + out) per case.")
    cost_usd_per_case: float | None = Field(default=None, description="Mean cost per case (USD).")
    cache_hits: int = Field(
        default=0,
        description="Attempts answered from the response cache: they keep the tokens, cost and latency "
        "of their first run, so the metrics above compare like with like; nothing was paid for them this time.",
    )
    infra_error_rate: float = Field(
        default=0.0,
        description="Attempts ending in an infra error (no answer: missing data) / attempts; gate.max_error_rate "
        "checks it. Target, scorer and timeout errors are wrong answers, judged by the metrics instead.",
    )
    infra_errors: int = Field(default=0, description="Attempts that ended in an infra error (not failures).")
    infra_retries: int = Field(default=0, description="Infra retries over all attempts.")
    cases_with_infra_retries: int = Field(default=0, description="Cases that needed infra recovery.")
    errored_cases: int = Field(default=0, description="Cases with no attempt free of infra errors.")
    spend: Spend = Field(
        default_factory=Spend,
        description="What the run paid: tokens in/out, cost (null when no attempt reports it: unknown, "
        "not 0), cache hits; every report shows the candidate's beside the baseline's.",
    )
    limit: LimitStop | None = Field(
        default=None, description="The limits: key that stopped the run and what it had spent, if one did."
    )
    fail_fast: FailFastStop | None = Field(
        default=None, description="gate.fail_fast stopped the run: the unit that regressed and the look, if it did."
    )


class ProvenanceChange(Record):
    field: str = Field(description='e.g. "model", "params.temperature", "git_sha", "attempts_per_case".')
    baseline: Any = None
    candidate: Any = None


class DriftCheck(Record):
    """Candidate vs the last blessed baseline, overall on each gated metric (docs/spec.md#drift-guard)."""

    blessed: BaselineRef | None = None
    blessed_sha: str | None = None
    units: list[UnitResult] = Field(default_factory=list, description="Overall per gated metric vs blessed.")
    verdict: UnitVerdict | None = Field(default=None, description="Worst unit verdict (regressed > others).")
    delta: float | None = Field(default=None, description="Overall delta of the first gated metric vs blessed.")
    ok: bool = True
    reason: str = ""


class SliceTrend(Record):
    """A regressed unit's metric over its last baselines (from the history), then this candidate."""

    unit: str
    metric: str
    labels: list[str] = Field(description="Commit of each baseline (short), then 'candidate'.")
    values: list[float]


class Comparison(Record):
    comparison_version: Literal[1] = COMPARISON_VERSION
    verdict: Verdict
    reason: str = Field(description="One line: why this verdict.")
    exit_code: int = Field(
        description="The exit code: 0 pass/inconclusive-warn/no-baseline-warn, 1 fail, 2 input, 3 incomplete."
    )
    gate: GateConfig
    units: list[UnitResult] = Field(default_factory=list)
    floors: list[FloorResult] = Field(default_factory=list, description="metrics.<m>.min / max, per unit.")
    case_diff: CaseDiff
    provenance: list[ProvenanceChange] = Field(default_factory=list, description="What changed between the runs.")
    gate_changes: list[str] = Field(
        default_factory=list,
        description="The gate settings (metrics, gate:, slices, smoke) the candidate's config holds otherwise than "
        "the baseline run's, as 'key: old → new': the candidate is judged by rules its own change set. On a "
        "pull request: what it changes of its base commit's settings, which decided (gate_decided_by).",
    )
    gate_decided_by: str | None = Field(
        default=None,
        description="On a pull request whose config changes its gate settings: whose settings judged it instead "
        "(its base commit's config, else the baseline run's record); the PR's take effect once merged.",
    )
    baseline: BaselineRef | None = None
    baseline_run: RunSummary | None = None
    candidate_run: RunSummary
    candidate_units: list[UnitSummary] = Field(
        default_factory=list,
        description="With no baseline: the candidate's own pass rate and its 95% Wilson interval, overall and per "
        "slice value (as `evalgate run` prints them), so a first run can be judged before it is blessed.",
    )
    drift: DriftCheck | None = None
    drift_ok: bool = True
    warnings: list[str] = Field(default_factory=list)
    trends: list[SliceTrend] = Field(
        default_factory=list, description="History of regressed units (docs/spec.md#trends)."
    )
    more_evidence: MoreEvidence | None = Field(
        default=None, description="gate.more_evidence's looks (docs/spec.md#more-evidence)."
    )
    judge_bridge: JudgeBridge | None = Field(
        default=None, description="The baseline re-scored with the candidate's judge (docs/spec.md#judge-bridging)."
    )
    judge: JudgeChecks | None = Field(
        default=None,
        description="The judge's self-agreement over its repeats and its agreement with people "
        "(docs/spec.md#judge-noise, docs/spec.md#human-labels); none without either.",
    )
    resume_command: str | None = Field(
        default=None,
        description="When a limit stopped the candidate run: the `evalgate run --resume` that finishes it (its "
        "config, results file and subset), as the gate knew it.",
    )
    gate_command: str | None = Field(
        default=None,
        description="When a limit stopped the candidate run: the `evalgate gate` of the finished results file, with "
        "this gate's config and flags.",
    )
    evalgate_version: str | None = None
    created_at: str | None = None

    def units_with(self, verdict: UnitVerdict, *, blocking: bool | None = None) -> list[UnitResult]:
        return [u for u in self.units if u.verdict == verdict and (blocking is None or u.blocking == blocking)]

    @property
    def regressed(self) -> list[UnitResult]:
        return self.units_with("regressed")

    @property
    def improved(self) -> list[UnitResult]:
        return self.units_with("improved")

    @property
    def breached_floors(self) -> list[FloorResult]:
        return [f for f in self.floors if f.verdict == "breached"]

    @property
    def failing_units(self) -> list[UnitResult]:
        """The units that made the gate fail: blocking, gated, regressed."""
        return [u for u in self.units if u.blocking and u.gated and u.verdict == "regressed"]


def blocking_reason(u: UnitResult, gate: GateConfig) -> str:
    """One line for the report: why this unit could or could not block, and how sharp its test was."""
    if u.n < 2:
        return "could not block: fewer than 2 paired cases"
    if not u.blocking and gate.slice_alpha_share == 0:
        return "could not block: gate.slice_alpha_share is 0, so only overall can block"
    if not u.blocking:
        return "could not block on its own: its one value holds every paired case, the same test as overall"
    level = u.alpha_level if u.alpha_level is not None else gate.alpha * u.weight
    text = f"could block: tested at α {level:.2g} ({u.weight:.1%} of α for its {u.n:,} paired cases)"
    if u.mde is not None:
        text += f"; detects drops of {u.mde:.3g} or more"
    if u.underpowered:
        more = f", about {u.cases_for_target:,} cases would reach it" if u.cases_for_target else ""
        text += f" — underpowered for target_mde {gate.target_mde:g}{more}"
    return text
