"""What a suite can certify before any paid run (docs/spec.md#certifiable-band): per unit, its
cases and share of α, the drop it detects at the configured power (MDE), the tolerance at which an
unchanged candidate passes 4 runs in 5, and the cases the configured tolerance and
``gate.target_mde`` would need.

Everything follows from the design (cases per unit, α and its allocation) and one number about
the target: the discordance ψ, the mean squared per-case delta between two runs of the same
config (for a binary metric, the share of cases whose outcome differs). The history measures it
(``evals.history.discordance``); without two such runs it is an assumption, and the plan says so.
The formulas are the gate's own: the MDE and the cases for ``target_mde`` of
``evals.compare.power`` (the power of the unit's own test, exact for McNemar under 300 cases, with
each metric sized as a 0/1 outcome whose cases flip between runs at ψ), and
``evals.compare.stats.certifiable_tolerance``, all at the α the first look decides with
(:func:`first_look_alpha`)."""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass

from evals.compare.decide import alpha_weights
from evals.compare.failfast import FAIL_FAST_SHARE
from evals.compare.metrics import metric_def
from evals.compare.paired import CERTIFY_PROBABILITY
from evals.compare.pairing import repeats_overall
from evals.compare.power import binary_cases, binary_mde
from evals.compare.stats import cases_to_certify, certifiable_tolerance
from evals.suite.cases import Case
from evals.suite.gate import GateSpec
from evals.suite.scoring import MetricSpec

# The discordance assumed when the history cannot tell: one case in ten changes its outcome
# between two runs of an unchanged config (sampling at temperature > 0, flaky tools).
ASSUMED_DISCORDANCE = 0.10


@dataclass(frozen=True)
class PlannedUnit:
    """One unit of one metric, as the α allocation reads it (``evals.compare.decide.Design``)."""

    unit: str
    slice_key: str | None
    metric: str
    gated: bool
    n: int


@dataclass(frozen=True)
class PlanRow:
    unit: PlannedUnit
    weight: float
    level: float  # α·weight (the first look's α): Holm's first step for this unit
    tolerance: float | None  # None: relative, so it depends on the baseline's value
    mde: float | None  # at level and gate.power; None for an advisory unit, or when no drop reaches the power
    certifies: float  # tolerance an unchanged candidate passes at, CERTIFY_PROBABILITY of the runs
    cases_to_certify: int | None  # for the configured tolerance
    cases_for_target: int | None  # for an MDE of gate.target_mde (None: met already, or no number is)


@dataclass(frozen=True)
class Plan:
    suite: str
    gate: GateSpec
    discordance: float
    source: str  # where the discordance came from, in words
    rows: list[PlanRow]
    skipped: list[str]  # metrics the plan cannot size (latency, tokens, cost: their scale is the data's)


def plan_suite(
    suite: str,
    units: list[tuple[str, str | None, int]],
    metrics: dict[str, MetricSpec],
    gate: GateSpec,
    discordance: float,
    source: str,
) -> Plan:
    """``units``: (name, slice key or None, paired cases), ``overall`` first, as ``compare`` forms them."""
    sized = {name: spec for name, spec in metrics.items() if metric_def(name, spec).bounded}
    planned = [PlannedUnit(u, key, m, spec.gate, n) for m, spec in sized.items() for u, key, n in units]
    weights = alpha_weights(planned, gate.slice_alpha_share, gate.slice_weights)
    alpha = first_look_alpha(gate)
    rows = []
    for unit, weight in zip(planned, weights, strict=True):
        spec = sized[unit.metric]
        tolerance = None if isinstance(spec.tolerance, str) else float(spec.tolerance)
        margin = tolerance if tolerance is not None else 0.0
        level = alpha * float(weight)
        blocking = weight > 0
        found = binary_mde(unit.n, discordance, level, margin, gate.power, gate.mcnemar) if blocking else None
        rows.append(
            PlanRow(
                unit=unit,
                weight=float(weight),
                level=level,
                tolerance=tolerance,
                mde=found,
                certifies=certifiable_tolerance(unit.n, discordance, alpha, CERTIFY_PROBABILITY),
                cases_to_certify=(
                    cases_to_certify(tolerance, discordance, alpha, CERTIFY_PROBABILITY) if tolerance else None
                ),
                cases_for_target=(
                    binary_cases(gate.target_mde, discordance, level, margin, gate.power, gate.mcnemar)
                    if blocking and (found is None or found > gate.target_mde)
                    else None
                ),
            )
        )
    skipped = [name for name in metrics if name not in sized]
    return Plan(suite, gate, discordance, source, rows, skipped)


def fixed_rule_alpha(gate: GateSpec) -> float:
    """The α left once ``fail_fast`` (when the gate runs with it: ``gate.fail_fast`` is then on)
    took its share for its looks (docs/spec.md#alpha-split)."""
    return gate.alpha * (1.0 - FAIL_FAST_SHARE) if gate.fail_fast else gate.alpha


def first_look_alpha(gate: GateSpec) -> float:
    """The α the fixed-sample rule decides with: :func:`fixed_rule_alpha`, and with
    ``more_evidence`` on the first look keeps (1 − ρ) of it and the later looks' tests share the
    rest (docs/spec.md#more-evidence), so its tests, their MDE and what an unchanged candidate
    certifies are all at that α."""
    alpha = fixed_rule_alpha(gate)
    return alpha * (1.0 - gate.more_evidence.rho) if gate.more_evidence.enabled else alpha


def _pp(x: float | None) -> str:
    return "–" if x is None else f"{100 * x:.2f} pp"


def _pp_up(x: float) -> str:
    """A tolerance to certify, rounded up at the printed precision: the value a reader copies passes."""
    return f"{math.ceil(100 * x * 100 - 1e-9) / 100:.2f} pp"


def _count(x: int | None) -> str:
    return "–" if x is None else f"{x:,}"


def render_text(plan: Plan) -> str:
    gate = plan.gate
    lines = [
        f"suite {plan.suite}: α {gate.alpha:g} (overall {1 - gate.slice_alpha_share:.2g}, slices "
        f"{gate.slice_alpha_share:.2g}, split by {gate.slice_weights}), power {gate.power:g}, target MDE "
        f"{_pp(gate.target_mde)}",
        f"discordance {plan.discordance:.1%} (share of cases whose outcome differs between two runs of this config): "
        f"{plan.source}",
    ]
    if gate.fail_fast:
        lines.append(
            f"fail fast is on: on pull requests its looks take {FAIL_FAST_SHARE:g} of α and the fixed-sample rule "
            f"decides at {fixed_rule_alpha(gate):.3g}, as every figure below (a push or reset gate runs every case "
            f"at α {gate.alpha:g})"
        )
    if gate.more_evidence.enabled:
        of = f"{fixed_rule_alpha(gate):.3g}" if gate.fail_fast else "α"
        lines.append(
            f"more evidence is on: the first look decides at (1 − ρ)·{of} = {first_look_alpha(gate):.3g} (ρ "
            f"{gate.more_evidence.rho:g} of α is kept for the batches' later looks), so every figure below is at that α"
        )
    lines.append("")
    head = ("unit", "metric", "cases", "α share", "MDE", "certifies", "cases for tolerance", "cases for target MDE")
    table = [head]
    for r in plan.rows:
        tol = "relative" if r.tolerance is None else _pp(r.tolerance)
        table.append(
            (
                r.unit.unit,
                r.unit.metric,
                f"{r.unit.n:,}",
                f"{r.weight:.4f}" if r.weight else "advisory",
                "none" if r.weight and r.mde is None else _pp(r.mde),
                f"±{_pp_up(r.certifies)}",
                # Only overall's bound decides a pass; a slice's band is shown under "certifies".
                f"{_count(r.cases_to_certify)} (±{tol})" if r.tolerance and r.unit.slice_key is None else "–",
                _count(r.cases_for_target),
            )
        )
    widths = [max(len(row[i]) for row in table) for i in range(len(head))]
    for k, row in enumerate(table):
        cells = [row[0].ljust(widths[0]), row[1].ljust(widths[1])] + [
            c.rjust(w) for c, w in zip(row[2:], widths[2:], strict=True)
        ]
        lines.append("  ".join(cells).rstrip())
        if k == 0:
            lines.append("  ".join("-" * w for w in widths))
    lines += ["", *summary_lines(plan)]
    if plan.skipped:
        lines.append(
            f"not planned: {', '.join(plan.skipped)} (their scale is the data's: `evalgate compare` reports their MDE)"
        )
    return "\n".join(lines) + "\n"


def summary_lines(plan: Plan) -> list[str]:
    """What the table means for the gate's verdicts, in words."""
    out = []
    for r in plan.rows:
        if r.unit.unit != "overall" or not r.unit.gated:
            continue
        verdict = (
            "so an unchanged candidate passes"
            if r.tolerance is not None and r.certifies <= r.tolerance
            else "so an unchanged candidate is mostly inconclusive"
        )
        need = (
            f"; the tolerance ±{_pp(r.tolerance)} needs about {_count(r.cases_to_certify)} paired cases"
            if r.tolerance and r.certifies > r.tolerance
            else ""
        )
        out.append(
            f"{r.unit.metric}: pass needs overall's lower bound within the tolerance; with {r.unit.n:,} cases it is "
            f"within ±{_pp_up(r.certifies)} 4 runs in 5 for an unchanged candidate, {verdict} at "
            f"{'a relative tolerance' if r.tolerance is None else f'±{_pp(r.tolerance)}'}{need}."
        )
    small = [r for r in plan.rows if r.weight > 0 and (r.mde is None or r.mde > plan.gate.target_mde)]
    if small:
        worst = max(small, key=lambda r: math.inf if r.mde is None else r.mde)
        detects = f"detect {_pp(worst.mde)}" if worst.mde is not None else "detect no drop at that power"
        out.append(
            f"{len(small)} unit(s) cannot see a drop of {_pp(plan.gate.target_mde)} at power {plan.gate.power:g} "
            f"(e.g. {worst.unit.unit}: {worst.unit.n:,} cases {detects}); "
            "add cases to them, or read their verdicts as advisory."
        )
    return out


def units_of_cases(cases: list[Case], slice_keys: list[str]) -> list[tuple[str, str | None, int]]:
    """``overall`` then every slice value (sorted) with its number of cases, as ``compare``
    forms the units from a full run of these cases (``evals.compare.pairing.unit_indices``)."""
    units: list[tuple[str, str | None, int]] = [("overall", None, len(cases))]
    for key in slice_keys:
        counts = Counter(c.tags[key] for c in cases if c.tags.get(key))
        if not repeats_overall(counts, len(cases)):
            units += [(f"{key}={value}", key, counts[value]) for value in sorted(counts)]
    return units
