"""Compare a candidate run with a baseline and decide (SPEC §5); CLI ``evalgate compare`` and
``python -m evals.compare`` (the seed workflow's flags). Exit code = gate verdict (SPEC §9).

The decision is made by :func:`decide` on numpy arrays of paired per-case values; ``compare``
builds those arrays from results files, and ``benchmarks/sim_gate.py`` calls ``decide`` directly
so the simulations test the very code that gates.
"""

from __future__ import annotations

import argparse
import gc
import json
import math
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

import numpy as np
from scipy import special

from evals import __version__
from evals.comparison import (
    CaseDiff,
    CaseDiffEntry,
    Comparison,
    DriftCheck,
    GateConfig,
    MetricGate,
    ProvenanceChange,
    RunSummary,
    UnitResult,
    Verdict,
)
from evals.config import BaselineSpec, GateSpec, MetricSpec, SuiteConfig, load_config
from evals.errors import EXIT_FAIL, EXIT_INFRA, EXIT_PASS, InputFileError, UsageError
from evals.lazyload import LazyResults, load_lazy
from evals.manifest import BaselineRef
from evals.metrics import MetricDef, RunTable, default_metric, metric_def, named_scores, scan, slice_keys_of
from evals.results import CaseResult, Results, atomic_write
from evals.stats import (
    bh_qvalues,
    bootstrap_mean,
    bootstrap_p_worse,
    bootstrap_percentile_delta,
    holm,
    mcnemar_worse,
    mde,
    paired_clt,
    percentile_interval,
    smoothed_mean_delta,
)
from evals.trace import failed_tail

# A results file as compare reads it: validated models, or the lean form the CLI loads.
Run = Results | LazyResults
# Units with at least this many paired cases use the paired CLT for means (SPEC §5: ≈300+).
CLT_MIN_CASES = 300
# Metrics whose values are rates in [0, 1]: the ones `--tolerance` applies to (and every pass@k).
RATE_METRICS = ("pass_rate", "score", "error_rate")


def is_rate_metric(name: str) -> bool:
    """A metric whose values are rates in [0, 1]: ``pass_rate``, ``score``, ``error_rate``, ``pass@k``."""
    return name in RATE_METRICS or name.startswith("pass@")


def apply_tolerance_override(config: SuiteConfig, tolerance: float | str) -> SuiteConfig:
    """The ``--tolerance`` rule of ``evalgate compare`` and ``evalgate gate``: a copy of ``config``
    whose rate metrics (:func:`is_rate_metric`) get this tolerance; latency, tokens, cost and named
    scores keep theirs, since an absolute band in rate units means nothing in milliseconds or
    dollars. ``tolerance`` is absolute (``0.02``, ``"0.02"``) or relative (``"5%"``). The input
    config is not changed, and neither is ``config_hash()`` (tolerances are not part of it).
    Raises ``UsageError`` for anything else (negative, NaN, ``"abc"``)."""
    checked = _parse_tolerance(tolerance)
    metrics = {
        name: spec.model_copy(update={"tolerance": checked}) if is_rate_metric(name) else spec
        for name, spec in config.metrics.items()
    }
    return config.model_copy(update={"metrics": metrics})


def _parse_tolerance(tolerance: float | str) -> float | str:
    hint = 'use a number >= 0 (0.02) or a percentage ("5%")'
    try:
        if isinstance(tolerance, str):
            raw = tolerance.strip()
            value: float | str = raw if raw.endswith("%") else float(raw)
        else:
            value = float(tolerance)
        return MetricSpec(tolerance=value).tolerance
    except (ValueError, TypeError):  # pydantic's ValidationError is a ValueError
        raise UsageError(f"--tolerance {tolerance!r}: {hint}") from None


# ---------------------------------------------------------------------------------------- decision


@dataclass
class MetricInput:
    """One metric's paired per-case values (same case order on both sides)."""

    definition: MetricDef
    spec: MetricSpec
    base: np.ndarray
    cand: np.ndarray


@dataclass
class UnitIndex:
    name: str  # "overall" or "key=value"
    key: str | None
    value: str | None
    rows: np.ndarray | None  # row indices into the paired arrays; None = all


@dataclass
class _Tested:
    result: UnitResult
    se: float
    margin: float
    p_worse: float
    p_better: float
    oriented_low: float
    oriented_high: float
    oriented_delta: float
    # The smoothed normal interval (oriented); "unchanged" and the gate's pass need it inside the
    # band as well as the bootstrap interval, which has zero width when every case has the same delta.
    smoothed_low: float
    smoothed_high: float
    # What max_detectable_drop is measured in: 1 for rates and scores (an absolute drop, 0.10 =
    # 10 points); the baseline value for latency, tokens and cost, whose drops only mean something
    # relative to their size (0.10 = 10% slower).
    drop_unit: float = 1.0


def _is_binary(x: np.ndarray) -> bool:
    return bool(np.all((x == 0.0) | (x == 1.0)))


def _test_unit(metric: MetricInput, unit: UnitIndex, gate: GateSpec, rng: np.random.Generator) -> _Tested:
    d_ = metric.definition
    base, cand = metric.base, metric.cand
    if unit.rows is not None:
        base, cand = base[unit.rows], cand[unit.rows]
    keep = ~(np.isnan(base) | np.isnan(cand))
    if not keep.all():
        base, cand = base[keep], cand[keep]
    n = int(base.size)
    sign = 1.0 if d_.direction == "higher" else -1.0
    confidence = 1.0 - 2.0 * gate.alpha
    common = {
        "unit": unit.name,
        "slice_key": unit.key,
        "slice_value": unit.value,
        "metric": d_.name,
        "direction": d_.direction,
        "gated": metric.spec.gate,
        "confidence": confidence,
        "n": n,
        "blocking": False,
    }
    if n < 2:
        margin = metric.spec.band(float(base[0])) if n else 0.0
        result = UnitResult(
            **common,
            baseline=float(base[0]) if n else None,
            candidate=float(cand[0]) if n else None,
            delta=float(cand[0] - base[0]) if n else None,
            tolerance=margin,
            verdict="inconclusive",
            note="fewer than 2 paired cases: not tested",
        )
        return _Tested(result, math.inf, margin, 1.0, 1.0, -math.inf, math.inf, 0.0, -math.inf, math.inf)
    d = sign * (cand - base)
    scale = 1.0 if d_.bounded else _data_scale(base, cand)
    smoothed_center, se = smoothed_mean_delta(d, scale)
    if d_.percentile is None:
        b_value, c_value = float(base.mean()), float(cand.mean())
        dist = bootstrap_mean(d, gate.bootstrap_resamples, rng)
    else:
        b_value, c_value = float(np.percentile(base, d_.percentile)), float(np.percentile(cand, d_.percentile))
        dist = sign * bootstrap_percentile_delta(base, cand, d_.percentile, gate.bootstrap_resamples, rng)
        # A percentile's SE is at least its mean's (e.g. 1.25× for a normal median), so the
        # smoothed SE of the mean delta is a floor under the bootstrap's, not a replacement.
        se = max(float(dist.std(ddof=1)), se)
    margin = metric.spec.band(b_value)
    low, high = percentile_interval(dist, confidence)
    oriented = sign * (c_value - b_value)
    center = smoothed_center if d_.percentile is None else oriented
    half = float(special.ndtri(1.0 - gate.alpha)) * se
    s_low, s_high = center - half, center + half
    if d_.bounded:
        s_low, s_high = max(s_low, -1.0), min(s_high, 1.0)
    if d_.percentile is not None:
        method = "bootstrap"
        p_worse, p_better = bootstrap_p_worse(dist, margin)
    elif n >= CLT_MIN_CASES:
        method = "clt"
        _, _, p_worse, p_better = paired_clt(d, margin)
    elif d_.binary_possible and _is_binary(base) and _is_binary(cand):
        method = "mcnemar"
        worse, better = int(np.count_nonzero(d < 0)), int(np.count_nonzero(d > 0))
        p_worse, p_better = mcnemar_worse(worse, better, n, margin), mcnemar_worse(better, worse, n, margin)
    else:
        method = "bootstrap"
        p_worse, p_better = bootstrap_p_worse(dist, margin)
    raw_low, raw_high = (low, high) if sign > 0 else (-high, -low)
    result = UnitResult(
        **common,
        baseline=b_value,
        candidate=c_value,
        delta=c_value - b_value,
        tolerance=margin,
        ci_low=raw_low,
        ci_high=raw_high,
        method=method,
        p_value=p_worse,
        p_improved=p_better,
        smoothed_low=s_low if sign > 0 else -s_high,
        smoothed_high=s_high if sign > 0 else -s_low,
        verdict="inconclusive",
    )
    drop_unit = 1.0 if d_.bounded else abs(b_value)
    return _Tested(result, se, margin, p_worse, p_better, low, high, oriented, s_low, s_high, drop_unit)


def _data_scale(base: np.ndarray, cand: np.ndarray) -> float:
    """How far apart two per-case values of an unbounded metric (latency, tokens, cost) can be, as
    the data shows it: the range of both sides' values, or their size when all are equal."""
    both = np.concatenate([base, cand])
    spread = float(both.max() - both.min())
    return spread if spread > 0 else float(np.abs(both).mean())


def _choose_blocking(tested: list[_Tested], gate: GateSpec) -> int:
    """Mark blocking units and set every unit's MDE. Overall units of gated metrics always block;
    a slice blocks when its MDE at the Bonferroni level α/m (Holm's strictest step, m = number
    of blocking units including it) is ≤ max_detectable_drop (relative to the baseline value for
    latency, tokens and cost: see ``_Tested.drop_unit``). The largest such set is taken:
    k slices block when the k with the smallest MDE at α/(m0 + k) all qualify. Returns m.

    The SE here is the smoothed one (:func:`evals.stats.smoothed_mean_delta`), so a tiny slice
    whose cases all moved the same way (SE 0 by the plain formula, hence MDE = tolerance) does not
    become blocking. A slice with SE 0 even so (an unbounded metric whose values are all 0 on
    both sides) carries no information and stays advisory."""
    overall = [t for t in tested if t.result.gated and t.result.unit == "overall"]
    slices = [
        t
        for t in tested
        if t.result.gated and t.result.unit != "overall" and 0.0 < t.se < math.inf and t.drop_unit > 0.0
    ]
    m0 = len(overall)
    se = np.array([t.se for t in slices])
    margin = np.array([t.margin for t in slices])
    drop_unit = np.array([t.drop_unit for t in slices])
    chosen: list[_Tested] = []
    for k in range(len(slices), 0, -1):
        mdes = mde(se, gate.alpha / (m0 + k), gate.power, margin) / drop_unit
        order = np.argsort(mdes, kind="stable")[:k]
        if mdes[order[-1]] <= gate.max_detectable_drop:
            chosen = [slices[i] for i in order]
            break
    for t in (*overall, *chosen):
        t.result.blocking = True
    m = m0 + len(chosen)
    for t in tested:
        level = gate.alpha / (m if t.result.blocking else m + 1)
        t.result.mde = float(mde(t.se, level, gate.power, t.margin)) if math.isfinite(t.se) else None
    return m


def decide(
    metrics: list[MetricInput], units: list[UnitIndex], gate: GateSpec, *, seed: int | None = None
) -> list[UnitResult]:
    """Test every metric on every unit, choose the blocking units, correct for multiplicity and
    give each unit its verdict (SPEC §5). Deterministic for a given seed."""
    seed = gate.seed if seed is None else seed
    tested = [
        _test_unit(metric, unit, gate, np.random.default_rng([seed, mi, ui]))
        for mi, metric in enumerate(metrics)
        for ui, unit in enumerate(units)
    ]
    _choose_blocking(tested, gate)
    blocking = [t for t in tested if t.result.blocking]
    advisory = [t for t in tested if not t.result.blocking]
    worse_adj = holm(np.array([t.p_worse for t in blocking]))
    better_adj = holm(np.array([t.p_better for t in blocking]))
    for t, pw, pb in zip(blocking, worse_adj, better_adj, strict=True):
        t.result.p_adjusted = float(pw)
        _verdict(t, float(pw), float(pb), gate.alpha)
    worse_q = bh_qvalues(np.array([t.p_worse for t in advisory]))
    better_q = bh_qvalues(np.array([t.p_better for t in advisory]))
    for t, qw, qb in zip(advisory, worse_q, better_q, strict=True):
        t.result.q_value = float(qw)
        _verdict(t, float(qw), float(qb), gate.alpha)
    return [t.result for t in tested]


def _verdict(t: _Tested, p_worse: float, p_better: float, alpha: float) -> None:
    if t.result.n < 2:
        return
    if p_worse <= alpha and t.oriented_delta < -t.margin:
        t.result.verdict = "regressed"
    elif p_better <= alpha and t.oriented_delta > t.margin:
        t.result.verdict = "improved"
    elif t.oriented_low >= -t.margin and t.oriented_high <= t.margin:
        if t.smoothed_low >= -t.margin and t.smoothed_high <= t.margin:
            t.result.verdict = "unchanged"
        else:
            t.result.note = (
                f"CI within the band, but only {t.result.n} paired cases: the smoothed interval "
                f"{_fmt(t.result.smoothed_low)} to {_fmt(t.result.smoothed_high)} is not"
            )


def _fmt(x: float | None) -> str:
    return "n/a" if x is None else f"{x:+.4g}"


def _describe_unit(u: UnitResult) -> str:
    return (
        f"{u.metric} on {u.unit} {_fmt(u.delta)} (CI {_fmt(u.ci_low)} to {_fmt(u.ci_high)}, "
        f"tolerance {u.tolerance:.4g}, {u.method}, p_adj {u.p_adjusted:.3g}, n={u.n})"
    )


def _bad_side(u: UnitResult) -> tuple[float, str]:
    """The unit's worst plausible oriented delta: the bad end of the bootstrap interval or of the
    smoothed one, whichever is worse (the bootstrap's is 0 when every case has the same delta),
    and that interval as the reason shows it, so the number it quotes is the one it prints."""
    sign = 1.0 if u.direction == "higher" else -1.0
    intervals = [("CI", u.ci_low, u.ci_high), ("smoothed interval", u.smoothed_low, u.smoothed_high)]
    worst: tuple[float, str] | None = None
    for name, low, high in intervals:
        end = low if u.direction == "higher" else high
        if low is None or high is None:
            continue
        if worst is None or sign * end < worst[0]:
            worst = (sign * end, f"{name} {_fmt(low)} to {_fmt(high)}")
    assert worst is not None  # gate_verdict checks the bootstrap interval exists first
    return worst


def gate_verdict(units: list[UnitResult]) -> tuple[Literal["pass", "fail", "inconclusive"], str]:
    """SPEC §5: fail if a blocking gated unit regressed; pass if none did and every gated
    overall's CI stays within the band on the bad side; otherwise inconclusive."""
    failing = [u for u in units if u.blocking and u.gated and u.verdict == "regressed"]
    if failing:
        # Slices first: "overall is down" is less actionable than "language=ko is down".
        failing.sort(key=lambda u: (u.unit == "overall", u.p_adjusted or 0.0))
        others = [f"{u.metric} on {u.unit} {_fmt(u.delta)}" for u in failing[1:]]
        others += [
            f"{u.metric} on {u.unit} {_fmt(u.delta)} (advisory)"
            for u in units
            if u.verdict == "regressed" and not u.blocking
        ]
        also = f"; also regressed: {', '.join(others[:6])}" + (" …" if len(others) > 6 else "") if others else ""
        return "fail", f"regression: {_describe_unit(failing[0])}{also}"
    overall = [u for u in units if u.unit == "overall" and u.gated]
    if not overall:
        return "inconclusive", "no gated metric could be compared"
    for u in overall:
        if u.n < 2 or u.ci_low is None or u.ci_high is None:
            return "inconclusive", f"{u.metric}: fewer than 2 paired cases, nothing to compare"
        bad_side, interval = _bad_side(u)
        if bad_side < -u.tolerance:
            return "inconclusive", (
                f"no significant regression, but {u.metric} overall could be down by up to {-bad_side:.4g} "
                f"({interval}, n={u.n}) — more than the tolerance {u.tolerance:.4g}; "
                f"this run can detect drops of {u.mde:.3g} or more"
            )
    names = ", ".join(u.metric for u in overall)
    return "pass", f"no regression beyond tolerance: {names} overall within the band (n={overall[0].n})"


# ---------------------------------------------------------------------------------------- compare


def _gate_config(config: SuiteConfig | None, tolerance: float | str | None, tables: list[RunTable]):
    if config is None:
        metrics = {default_metric(tables): MetricSpec(tolerance=0.02 if tolerance is None else tolerance)}
        return metrics, GateSpec(), slice_keys_of(tables), "warn", 20, 300
    if tolerance is not None:
        config = apply_tolerance_override(config, tolerance)
    return (
        dict(config.metrics),
        config.gate,
        list(config.slices),
        config.baseline.on_missing,
        config.report.max_cases,
        config.report.excerpt_chars,
    )


def summarize(results: Run, table: RunTable) -> RunSummary:
    run = results.run
    counts = {k.removeprefix("error:"): v for k, v in table.counts.items() if k.startswith("error:")}
    attempts = table.counts["attempts"]
    return RunSummary(
        suite=run.suite,
        status=run.status,
        complete=run.is_complete,
        total_cases=run.total_cases,
        completed_cases=run.completed_cases,
        cases_in_file=len(results.cases),
        started_at=run.started_at,
        ended_at=run.ended_at,
        git_sha=run.git_sha,
        git_ref=run.git_ref,
        config_hash=run.config_hash,
        model=run.target.model if run.target else None,
        attempts_per_case=run.attempts_per_case,
        subset=run.subset,
        shard=run.shard,
        message=run.message,
        attempts=attempts,
        error_counts=counts,
        error_rate=sum(counts.values()) / attempts if attempts else 0.0,
        infra_error_rate=counts.get("infra", 0) / attempts if attempts else 0.0,
        infra_errors=counts.get("infra", 0),
        infra_retries=table.counts["infra_retries"],
        cases_with_infra_retries=table.counts["cases_with_infra_retries"],
        errored_cases=int(table.errored.sum()),
    )


def provenance_diff(baseline: Run, candidate: Run) -> list[ProvenanceChange]:
    """What differs between the two runs' provenance: model, target, params, git, attempts."""

    def flat(results: Run) -> dict[str, Any]:
        run = results.run
        out: dict[str, Any] = {
            "suite": run.suite,
            "git_sha": run.git_sha,
            "git_ref": run.git_ref,
            "attempts_per_case": run.attempts_per_case,
            "config_hash": run.config_hash,
            "evalgate_version": run.evalgate_version,
            "subset": run.subset,
        }
        if run.target:
            out["target.kind"] = run.target.kind
            out["model"] = run.target.model
            out.update({f"params.{k}": v for k, v in run.target.params.items()})
        return out

    b, c = flat(baseline), flat(candidate)
    return [
        ProvenanceChange(field=key, baseline=b.get(key), candidate=c.get(key))
        for key in sorted(set(b) | set(c), key=lambda k: (k.startswith("params."), k))
        if b.get(key) != c.get(key)
    ]


def _excerpt(value: Any, limit: int) -> str | None:
    if value is None:
        return None
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= limit else text[:limit] + "…"


def _first_output(case: CaseResult, limit: int) -> tuple[str | None, str | None]:
    valid = [a for a in case.attempts if not a.is_infra_error] or case.attempts
    error = next((f"{a.error.kind}: {a.error.message}" for a in valid if a.error), None)
    return (_excerpt(valid[0].output, limit) if valid else None), (_excerpt(error, limit) if error else None)


@dataclass
class _Pairing:
    base_rows: np.ndarray
    cand_rows: np.ndarray
    added: list[str]
    removed: list[str]
    changed: list[str]
    errored: list[str]
    outside_subset: int


def pair(base: RunTable, cand: RunTable, subset: bool) -> _Pairing:
    """Pair on shared ids with equal hashes (where both have one). With a subset candidate
    (smoke run, shard) baseline cases outside it are not 'removed', just out of scope."""
    b_index = base.index()
    c_ids = set(cand.ids)
    base_rows, cand_rows, added, changed, errored = [], [], [], [], []
    for ci, case_id in enumerate(cand.ids):
        bi = b_index.get(case_id)
        if bi is None:
            added.append(case_id)
        elif base.hashes[bi] and cand.hashes[ci] and base.hashes[bi] != cand.hashes[ci]:
            changed.append(case_id)
        elif base.errored[bi] or cand.errored[ci]:
            errored.append(case_id)
        else:
            base_rows.append(bi)
            cand_rows.append(ci)
    missing = [case_id for case_id in base.ids if case_id not in c_ids]
    return _Pairing(
        np.array(base_rows, dtype=np.intp),
        np.array(cand_rows, dtype=np.intp),
        added,
        [] if subset else missing,
        changed,
        errored,
        len(missing) if subset else 0,
    )


def unit_indices(table: RunTable, rows: np.ndarray, slice_keys: list[str]) -> list[UnitIndex]:
    """``overall`` then every slice value (sorted), as row indices into the paired arrays."""
    units = [UnitIndex("overall", None, None, None)]
    for key in slice_keys:
        values = np.array([table.case_slices[r].get(key, "") for r in rows], dtype=object)
        for value in sorted({v for v in values if v}):
            units.append(UnitIndex(f"{key}={value}", key, value, np.flatnonzero(values == value)))
    return units


def _case_diff(
    baseline: Run, candidate: Run, bt: RunTable, ct: RunTable, pairing: _Pairing, limit: int, excerpt: int
) -> CaseDiff:
    b_pass = bt.columns["pass_rate"][pairing.base_rows]
    c_pass = ct.columns["pass_rate"][pairing.cand_rows]
    b_score = bt.columns["score"][pairing.base_rows]
    c_score = ct.columns["score"][pairing.cand_rows]
    with np.errstate(invalid="ignore"):
        p2f = np.flatnonzero((b_pass >= 0.5) & (c_pass < 0.5))
        f2p = np.flatnonzero((b_pass < 0.5) & (c_pass >= 0.5))
        drop = c_score - b_score
        drops = np.flatnonzero(drop < 0)
    drops = drops[np.argsort(drop[drops], kind="stable")]

    def entry(k: int) -> CaseDiffEntry:
        b_case, c_case = baseline.cases[pairing.base_rows[k]], candidate.cases[pairing.cand_rows[k]]
        b_out, _ = _first_output(b_case, excerpt)
        c_out, c_err = _first_output(c_case, excerpt)

        def num(x: float) -> float | None:
            return None if np.isnan(x) else float(x)

        return CaseDiffEntry(
            id=c_case.id,
            slices=c_case.slices,
            baseline_passed=None if np.isnan(b_pass[k]) else bool(b_pass[k] >= 0.5),
            candidate_passed=None if np.isnan(c_pass[k]) else bool(c_pass[k] >= 0.5),
            baseline_pass_rate=num(b_pass[k]),
            candidate_pass_rate=num(c_pass[k]),
            baseline_score=num(b_score[k]),
            candidate_score=num(c_score[k]),
            score_delta=num(drop[k]),
            input=_excerpt(c_case.input if c_case.input is not None else b_case.input, excerpt),
            expected=_excerpt(c_case.expected if c_case.expected is not None else b_case.expected, excerpt),
            baseline_output=b_out,
            candidate_output=c_out,
            candidate_error=c_err,
            candidate_trace=failed_tail(c_case.attempts),
        )

    return CaseDiff(
        limit=limit,
        pass_to_fail=[entry(k) for k in p2f[:limit]],
        fail_to_pass=[entry(k) for k in f2p[:limit]],
        score_drops=[entry(k) for k in drops[:limit]],
        n_pass_to_fail=int(p2f.size),
        n_fail_to_pass=int(f2p.size),
        n_score_drops=int(drops.size),
        added=pairing.added,
        removed=pairing.removed,
        changed=pairing.changed,
        errored=pairing.errored,
        n_added=len(pairing.added),
        n_removed=len(pairing.removed),
        n_changed=len(pairing.changed),
        n_errored=len(pairing.errored),
        n_paired=int(pairing.base_rows.size),
        n_outside_subset=pairing.outside_subset,
    )


def _inputs(
    defs: list[MetricDef], specs: dict[str, MetricSpec], bt: RunTable, ct: RunTable, pairing: _Pairing
) -> list[MetricInput]:
    return [
        MetricInput(d, specs[d.name], bt.values(d)[pairing.base_rows], ct.values(d)[pairing.cand_rows]) for d in defs
    ]


def _exit_code(verdict: Verdict, policy: str, on_missing: str) -> int:
    if verdict == "pass":
        return EXIT_PASS
    if verdict == "inconclusive":
        return EXIT_FAIL if policy == "fail" else EXIT_PASS
    if verdict == "no-baseline":
        return EXIT_FAIL if on_missing == "fail" else EXIT_PASS
    if verdict == "incomplete":
        return EXIT_INFRA
    return EXIT_FAIL


def compare(
    baseline: Run | None,
    candidate: Run,
    config: SuiteConfig | None = None,
    *,
    tolerance: float | str | None = None,
    blessed: Run | None = None,
    baseline_ref: BaselineRef | None = None,
    blessed_ref: BaselineRef | None = None,
    inconclusive: Literal["warn", "fail"] | None = None,
) -> Comparison:
    """Compare ``candidate`` with ``baseline`` (and, for the drift guard, with ``blessed``) and
    decide the gate verdict (SPEC §5). Never raises for data problems the verdict can express.
    ``tolerance`` (absolute, or ``"N%"``) is the ``--tolerance`` flag: with a config it replaces the
    rate metrics' tolerances (:func:`apply_tolerance_override`); without one it is the tolerance
    of the one metric gated (default 0.02)."""
    if tolerance is not None:
        tolerance = _parse_tolerance(tolerance)
    names = named_scores(metric_def(name) for name in config.metrics) if config else []
    ct = scan(candidate.cases, len(candidate.cases), names)
    bt = scan(baseline.cases, len(baseline.cases), names) if baseline is not None else None
    specs, gate, slice_keys, on_missing, limit, excerpt = _gate_config(config, tolerance, [t for t in (ct, bt) if t])
    policy = inconclusive or gate.inconclusive
    defs = [metric_def(name, spec) for name, spec in specs.items()]
    gate_model = GateConfig(
        alpha=gate.alpha,
        power=gate.power,
        max_detectable_drop=gate.max_detectable_drop,
        inconclusive=policy,
        max_error_rate=gate.max_error_rate,
        max_age_days=config.baseline.max_age_days if config else BaselineSpec().max_age_days,
        bootstrap_resamples=gate.bootstrap_resamples,
        seed=gate.seed,
        metrics=[
            MetricGate(metric=d.name, direction=d.direction, tolerance=specs[d.name].tolerance, gate=specs[d.name].gate)
            for d in defs
        ],
        slice_keys=slice_keys,
    )
    cand_summary = summarize(candidate, ct)
    warnings: list[str] = []
    subset = bool(candidate.run.subset or candidate.run.shard)
    units: list[UnitResult] = []
    provenance: list[ProvenanceChange] = []
    base_summary = None
    case_diff = CaseDiff(limit=limit, added=list(ct.ids), n_added=len(ct.ids))
    if baseline is not None and bt is not None:
        base_summary = summarize(baseline, bt)
        provenance = provenance_diff(baseline, candidate)
        pairing = pair(bt, ct, subset)
        case_diff = _case_diff(baseline, candidate, bt, ct, pairing, limit, excerpt)
        if not base_summary.complete:
            warnings.append(
                f"the baseline run is partial ({base_summary.status}, "
                f"{base_summary.completed_cases}/{base_summary.total_cases} cases)"
            )

    verdict: Verdict
    incompatible = (
        baseline is not None
        and baseline.run.config_hash
        and candidate.run.config_hash
        and baseline.run.config_hash != candidate.run.config_hash
    )
    if not cand_summary.complete:
        verdict, reason = (
            "incomplete",
            (
                f"candidate run is partial: status {cand_summary.status}, "
                f"{cand_summary.completed_cases}/{cand_summary.total_cases} cases completed"
                + (f" ({cand_summary.message})" if cand_summary.message else "")
            ),
        )
    elif cand_summary.infra_error_rate > gate.max_error_rate:
        verdict, reason = (
            "incomplete",
            (
                f"candidate infra error rate {cand_summary.infra_error_rate:.1%} is above max_error_rate "
                f"{gate.max_error_rate:.1%}: {cand_summary.infra_errors} of {cand_summary.attempts} attempts got no "
                "answer (connection, 429 or 5xx after retries) — fix the endpoint or its rate limits and re-run"
            ),
        )
    elif baseline is None:
        verdict, reason = "no-baseline", f"no baseline to compare with (first run?); on_missing is {on_missing}"
    elif incompatible:
        verdict, reason = (
            "incompatible",
            (
                f"scorer/metric definitions differ: baseline config_hash {baseline.run.config_hash}, candidate "
                f"{candidate.run.config_hash}; scores do not mean the same thing — reset the baseline to move on"
            ),
        )
    else:
        verdict, reason = "pass", ""
    if baseline is not None and not incompatible:
        units = decide(_inputs(defs, specs, bt, ct, pairing), unit_indices(ct, pairing.cand_rows, slice_keys), gate)
        if verdict == "pass":
            verdict, reason = gate_verdict(units)
        bounded = {d.name: d.bounded for d in defs}
        for u in units:
            if u.unit != "overall" or not u.gated or u.mde is None:
                continue
            relative = not bounded.get(u.metric, True)
            scale = abs(u.baseline) if relative and u.baseline else 1.0
            limit = f"max_detectable_drop {gate.max_detectable_drop:g}"
            # The MDE is the tolerance plus a sampling term: past the tolerance, cases cannot help.
            if u.tolerance / scale > gate.max_detectable_drop:
                shown = f"{u.tolerance / scale:.1%} of the baseline value" if relative else f"{u.tolerance:.3g}"
                warnings.append(
                    f"{u.metric}'s tolerance ({shown}) is itself larger than {limit}: no number of cases "
                    "makes the gate detect smaller drops; lower the tolerance or raise max_detectable_drop"
                )
            elif u.mde / scale > gate.max_detectable_drop:
                shown = f"{u.mde / scale:.1%} of the baseline value" if relative else f"{u.mde:.3g}"
                warnings.append(
                    f"{u.metric} overall can only detect drops of {shown} or more ({limit}): "
                    "more cases would make the gate sharper"
                )

    drift = None
    if blessed is not None and not (
        blessed.run.config_hash and candidate.run.config_hash and blessed.run.config_hash != candidate.run.config_hash
    ):
        drift = _drift(blessed, blessed_ref, candidate, ct, defs, specs, gate, subset)
    elif blessed is not None:
        warnings.append("the blessed baseline has another config_hash: drift guard skipped")

    return Comparison(
        verdict=verdict,
        reason=reason,
        exit_code=_exit_code(verdict, policy, on_missing),
        gate=gate_model,
        units=units,
        case_diff=case_diff,
        provenance=provenance,
        baseline=baseline_ref,
        baseline_run=base_summary,
        candidate_run=cand_summary,
        drift=drift,
        drift_ok=drift.ok if drift else True,
        warnings=warnings,
        evalgate_version=__version__,
        created_at=datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
    )


def _drift(
    blessed: Run,
    ref: BaselineRef | None,
    candidate: Run,
    ct: RunTable,
    defs: list[MetricDef],
    specs: dict[str, MetricSpec],
    gate: GateSpec,
    subset: bool,
) -> DriftCheck:
    """Candidate vs the last blessed baseline, overall, gated metrics: the drift guard holds
    unless one of them regressed beyond its tolerance (same test and level as the gate)."""
    gated = [d for d in defs if specs[d.name].gate]
    lt = scan(blessed.cases, len(blessed.cases), named_scores(gated))
    pairing = pair(lt, ct, subset)
    units = decide(_inputs(gated, specs, lt, ct, pairing), [UnitIndex("overall", None, None, None)], gate)
    regressed = [u for u in units if u.verdict == "regressed"]
    worst = "regressed" if regressed else (units[0].verdict if units else None)
    reason = (
        f"drift guard: {_describe_unit(regressed[0])} vs the blessed baseline"
        if regressed
        else "no regression beyond tolerance vs the blessed baseline"
    )
    return DriftCheck(
        blessed=ref,
        blessed_sha=blessed.run.git_sha,
        units=units,
        verdict=worst,
        delta=units[0].delta if units else None,
        ok=not regressed,
        reason=reason,
    )


# ---------------------------------------------------------------------------------------- CLI


def main(args: argparse.Namespace) -> int:
    # Checked before the (possibly large) files are read; compare() applies it.
    tolerance = None if args.tolerance is None else _parse_tolerance(args.tolerance)
    config = load_config(args.config) if args.config else None
    if args.baseline and not Path(args.baseline).exists():
        raise InputFileError(args.baseline, "file not found", "omit --baseline on a first run: verdict no-baseline")
    candidate, baseline, blessed = load_runs(args.candidate, args.baseline, args.blessed)
    ref = BaselineRef(source=str(args.baseline)) if args.baseline else None
    comparison = compare(
        baseline,
        candidate,
        config,
        tolerance=tolerance,
        blessed=blessed,
        baseline_ref=ref,
        blessed_ref=BaselineRef(source=str(args.blessed)) if args.blessed else None,
        inconclusive=args.inconclusive,
    )
    from evals.history import record_comparison

    record_comparison(comparison, candidate, baseline, config=config, action="compare")
    write_outputs(
        comparison, config, report=args.report, json_path=args.json, summary=args.summary, template=args.template
    )
    print(f"evalgate compare: {comparison.verdict}: {comparison.reason}")
    return comparison.exit_code


def load_runs(*paths: str | Path | None) -> list[Run | None]:
    """Load results files for comparison (``evals.lazyload``: same validation as ``load_results``,
    a fraction of the memory) with the cyclic garbage collector paused: parsing 100,000 cases
    allocates millions of objects, and the collections that triggers (each scanning everything
    allocated so far) cost more than the parsing itself. The loaded runs are then frozen out of
    later collections."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        runs = [load_lazy(p) if p else None for p in paths]
    finally:
        if was_enabled:
            gc.enable()
    gc.freeze()
    return runs


def write_outputs(
    comparison: Comparison,
    config: SuiteConfig | None,
    *,
    report: str | None,
    json_path: str | None,
    summary: str | None,
    template: str | None = None,
) -> None:
    """``--report`` is PR-comment sized (the seed workflow posts it as the sticky comment);
    ``--summary`` is step-summary sized; ``--json`` is comparison.json with everything."""
    if not (report or json_path or summary):
        return
    # The report module (and jinja2) load only when an output is asked for.
    from evals import report as report_module

    options = report_module.options_from_config(config)
    if template:
        options["template"] = Path(template)
    for path, kind in ((report, "comment"), (summary, "summary")):
        if path:
            text = report_module.render_markdown(comparison, kind=kind, **options)
            atomic_write(Path(path), text.encode("utf-8"))
    if json_path:
        report_module.write_reports(comparison, report=None, json_path=Path(json_path))


if __name__ == "__main__":
    from evals.cli import module_main

    raise SystemExit(module_main("compare"))
