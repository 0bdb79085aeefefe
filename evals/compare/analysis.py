"""Compare a candidate run with a baseline (docs/spec.md#decision-rule): ``compare()`` makes the ``Comparison`` that
``evalgate compare``, the gate and the promotion rule act on (its exit code is the gate verdict,
docs/spec.md#exit-codes).

``compare`` turns results files into paired arrays (``evals.compare.pairing``), checks the special
verdicts (``evals.compare.compatibility``) and hands the arrays to the decision rule (``evals.compare.decide``),
which ``benchmarks/sim_gate.py`` calls directly, so the simulations test the code that gates.
"""

from __future__ import annotations

import gc
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Literal

from evals import __version__
from evals.common.gcpause import gc_paused
from evals.compare.case_changes import CaseDiff
from evals.compare.casediff import case_diff, case_ranks
from evals.compare.compatibility import incompatibility
from evals.compare.decide import decide, describe_unit, gate_verdict
from evals.compare.errored import errored_reason, errors_warning
from evals.compare.failfast import mark_stopped
from evals.compare.floors import check_floors, floor_sentence, subset_floors
from evals.compare.gate_changes import gate_changes
from evals.compare.judging import judge_checks, with_agreement_floor
from evals.compare.ladder import Facts, exit_code_for, special_verdict, with_breached_floors
from evals.compare.lazyload import load_lazy
from evals.compare.metrics import MetricDef, RunTable, default_metric, metric_def, named_scores, scan, slice_keys_of
from evals.compare.model import Comparison, DriftCheck, GateConfig, MetricGate, ProvenanceChange, RunSummary, UnitResult
from evals.compare.paired import MetricInput, UnitIndex
from evals.compare.pairing import Pairing, pair, unit_indices
from evals.compare.preconditions import require_comparable
from evals.compare.runs import Run, own_units, provenance_diff, run_summary
from evals.compare.sampling import Strata
from evals.compare.spending import unmeasured
from evals.compare.trajectory import gate_entry as trajectory_gate_entry
from evals.compare.trajectory import trajectory_input
from evals.results.manifest import BaselineRef
from evals.suite.config import BaselineSpec, SuiteConfig
from evals.suite.gate import GateSpec
from evals.suite.overrides import apply_tolerance_override, parse_tolerance
from evals.suite.scoring import MetricSpec

# ---------------------------------------------------------------------------------------- compare


def _gate_config(
    config: SuiteConfig | None, tolerance: float | str | None, tables: list[RunTable]
) -> tuple[dict[str, MetricSpec], GateSpec, list[str], Literal["warn", "fail", "seed"], int, int]:
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


def _inputs(
    defs: list[MetricDef], specs: dict[str, MetricSpec], bt: RunTable, ct: RunTable, pairing: Pairing
) -> list[MetricInput]:
    return [
        MetricInput(d, specs[d.name], bt.values(d)[pairing.base_rows], ct.values(d)[pairing.cand_rows]) for d in defs
    ]


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
    reset_command: str | None = None,
    flaky: Mapping[str, float] | None = None,
    resume_command: str | None = None,
    gate_command: str | None = None,
) -> Comparison:
    """Compare ``candidate`` with ``baseline`` (and, for the drift guard, with ``blessed``) and
    decide the gate verdict (docs/spec.md#decision-rule). Never raises for data problems the verdict can express.
    ``tolerance`` (absolute, or ``"N%"``) is the ``--tolerance`` flag: with a config it replaces the
    rate metrics' tolerances (:func:`apply_tolerance_override`); without one it is the tolerance
    of the one metric gated (default 0.02). ``flaky``: the history's flip rate of its known-flaky
    cases (``evals.history.flaky.flip_rates``), which the case diff marks. ``reset_command``: the
    command that would bless this candidate, named in a ``no-baseline`` reason; ``resume_command``:
    the ``evalgate run --resume`` that finishes it, and ``gate_command`` the gate of the finished
    file, named (in the reason and on the comparison, for the report) when a limit stopped it.

    The steps: scan both runs into tables; the settings in force (:func:`_gate_config`); the
    preconditions (``evals.compare.preconditions``); the two runs' summaries and what tells them
    apart (:func:`_sides`); the special verdicts (``evals.compare.ladder``); the paired tests of
    every unit (:func:`_tested_units`); the case diff; the absolute floors; the drift guard."""
    if tolerance is not None:
        tolerance = parse_tolerance(tolerance)
    names = named_scores(metric_def(name) for name in config.metrics) if config else []
    ct = scan(candidate.cases, len(candidate.cases), names)
    bt = scan(baseline.cases, len(baseline.cases), names) if baseline is not None else None
    tables = [t for t in (ct, bt) if t]
    specs, gate, slice_keys, on_missing, limit, excerpt = _gate_config(config, tolerance, tables)
    policy = inconclusive or gate.inconclusive
    defs = [metric_def(name, spec) for name, spec in specs.items()]
    if config is not None:
        require_comparable(config, defs, candidate, baseline, tables)
    gate_model = _gate_model(gate, policy, defs, specs, slice_keys, config)
    cand_summary = run_summary(candidate, ct)
    # A run fail fast stopped is compared on the cases it ran, as a subset is.
    subset = bool(candidate.run.subset or candidate.run.shard or candidate.run.fail_fast)
    warnings: list[str] = []
    sides = _sides(baseline, candidate, bt, ct, gate, subset, warnings) if baseline is not None and bt else None
    errored = errored_reason(
        candidate,
        cand_summary,
        max_error_rate=gate.max_error_rate,
        first_run=baseline is None,
        reset_command=reset_command,
    )
    facts = Facts(
        candidate=cand_summary,
        cases=len(ct.ids),
        max_error_rate=gate.max_error_rate,
        has_baseline=baseline is not None,
        incompatible=sides.incompatible if sides else None,
        errored=errored,
        on_missing=on_missing,
        reset_command=reset_command,
        resume_command=resume_command,
        gate_command=gate_command,
    )
    special = special_verdict(facts)
    units: list[UnitResult] = []
    if sides is not None and not sides.incompatible:
        assert bt is not None  # with `sides`
        units = _tested_units(candidate, bt, ct, sides.pairing, defs, specs, gate, gate_model, slice_keys, warnings)
        if candidate.run.fail_fast is not None:
            mark_stopped(units, candidate.run.fail_fast)
        if not errored and (said := errors_warning(candidate, cand_summary, max_error_rate=gate.max_error_rate)):
            warnings.append(said)
        warnings += unmeasured(defs, specs, bt, ct)
    # No special verdict means a baseline that compares: the statistics decide.
    verdict, reason = special or gate_verdict(units)
    diff = CaseDiff(limit=limit, added=list(ct.ids), n_added=len(ct.ids))
    if sides is not None:
        assert baseline is not None and bt is not None  # with `sides`
        # After the verdicts: the failing slices' cases are listed first (evals.compare.casediff).
        ranks = case_ranks(ct, sides.pairing, units, slice_keys) if units else None
        diff = case_diff(baseline, candidate, bt, ct, sides.pairing, limit, excerpt, flaky or {}, ranks)
    judge = judge_checks(baseline, candidate, config)
    verdict, reason, agreement_floor = with_agreement_floor(
        verdict, reason, judge, config, gate, warnings, subset=bool(candidate.run.subset)
    )
    floors = check_floors(defs, specs, ct, slice_keys, gate, warnings) + agreement_floor
    floors = subset_floors(floors, candidate, warnings)
    verdict, reason = with_breached_floors(verdict, reason, [f for f in floors if f.verdict == "breached"])
    if verdict in ("pass", "inconclusive"):
        warnings += _power_warnings(units, defs, gate)
    warnings += [f"{floor_sentence(f)}: not significant, not failing" for f in floors if f.verdict == "uncertain"]
    drift = _drift_guard(blessed, blessed_ref, candidate, ct, defs, specs, gate, subset, warnings)
    stopped = cand_summary.limit is not None and not cand_summary.complete
    changed = gate_changes(baseline.run.gate_settings, config.gate_settings()) if baseline and config else []
    return Comparison(
        verdict=verdict,
        reason=reason,
        exit_code=exit_code_for(verdict, policy, on_missing),
        gate=gate_model,
        units=units,
        floors=floors,
        case_diff=diff,
        provenance=sides.provenance if sides else [],
        gate_changes=changed,
        baseline=baseline_ref,
        baseline_run=sides.summary if sides else None,
        candidate_run=cand_summary,
        candidate_units=own_units(candidate, slice_keys) if baseline is None and ct.ids else [],
        drift=drift,
        drift_ok=drift.ok if drift else True,
        judge=judge,
        warnings=warnings,
        resume_command=resume_command if stopped else None,
        gate_command=gate_command if stopped else None,
        evalgate_version=__version__,
        created_at=datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
    )


def _gate_model(
    gate: GateSpec,
    policy: Literal["warn", "fail"],
    defs: list[MetricDef],
    specs: dict[str, MetricSpec],
    slice_keys: list[str],
    config: SuiteConfig | None,
) -> GateConfig:
    """The parameters in force, as the comparison records them."""
    return GateConfig(
        alpha=gate.alpha,
        power=gate.power,
        slice_alpha_share=gate.slice_alpha_share,
        slice_weights=gate.slice_weights,
        target_mde=gate.target_mde,
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
        id=config.gate.id if config is not None and config.gate.id not in (None, config.suite) else None,
    )


@dataclass
class _Sides:
    """The baseline side of a comparison: its summary, the pairing, what differs, why not comparable."""

    summary: RunSummary
    pairing: Pairing
    provenance: list[ProvenanceChange]
    incompatible: str | None


def _sides(
    baseline: Run, candidate: Run, bt: RunTable, ct: RunTable, gate: GateSpec, subset: bool, warnings: list[str]
) -> _Sides:
    summary = run_summary(baseline, bt)
    provenance = provenance_diff(baseline, candidate)
    pairing = pair(bt, ct, subset)
    why = incompatibility(
        baseline, candidate, pairing, max_removed_share=gate.max_removed_share, baseline_cases=len(bt.ids)
    )
    if not summary.complete:
        warnings.append(
            f"the baseline run is partial ({summary.status}, {summary.completed_cases}/{summary.total_cases} cases)"
        )
    b_start, c_start = _instant(baseline.run.started_at), _instant(candidate.run.started_at)
    if b_start and c_start and b_start > c_start:
        warnings.append(
            f"the baseline run started after the candidate ({baseline.run.started_at} vs "
            f"{candidate.run.started_at}): are the baseline and the candidate the right way round?"
        )
    return _Sides(summary, pairing, provenance, why)


def _tested_units(
    candidate: Run,
    bt: RunTable,
    ct: RunTable,
    pairing: Pairing,
    defs: list[MetricDef],
    specs: dict[str, MetricSpec],
    gate: GateSpec,
    gate_model: GateConfig,
    slice_keys: list[str],
    warnings: list[str],
) -> list[UnitResult]:
    """Every metric on every unit, paired and tested (``evals.compare.decide``); the advisory
    trajectory unit joins them, reported and never gated (``evals.compare.trajectory``)."""
    inputs = _inputs(defs, specs, bt, ct, pairing)
    trajectory = trajectory_input(bt, ct, pairing)
    if trajectory is not None:
        inputs.append(trajectory)
        gate_model.metrics.append(trajectory_gate_entry())
    strata = _strata(candidate, ct, pairing, warnings)
    return decide(inputs, unit_indices(ct, pairing.cand_rows, slice_keys), gate, strata=strata)


def _drift_guard(
    blessed: Run | None,
    ref: BaselineRef | None,
    candidate: Run,
    ct: RunTable,
    defs: list[MetricDef],
    specs: dict[str, MetricSpec],
    gate: GateSpec,
    subset: bool,
    warnings: list[str],
) -> DriftCheck | None:
    """The drift guard, when there is a blessed baseline scored with the candidate's definitions."""
    if blessed is None:
        return None
    hashes = (blessed.run.config_hash, candidate.run.config_hash)
    if all(hashes) and hashes[0] != hashes[1]:
        warnings.append("the blessed baseline has another config_hash: drift guard skipped")
        return None
    return _drift(blessed, ref, candidate, ct, defs, specs, gate, subset)


def _strata(candidate: Run, ct: RunTable, pairing: Pairing, warnings: list[str]) -> Strata | None:
    """The design of an informative smoke run's paired rows (``run.sample``), which makes every
    mean a stratified Horvitz–Thompson estimate of the full suite; None for any other run."""
    design = candidate.run.sample
    if design is None:
        return None
    ids = [ct.ids[r] for r in pairing.cand_rows]
    unknown = [case_id for case_id in ids if case_id not in design.cases]
    if unknown:
        warnings.append(
            f"the candidate's run.sample names no inclusion probability for {len(unknown)} of its cases "
            f"(e.g. {unknown[0]!r}): compared unweighted, as a plain subset"
        )
        return None
    warnings.append(
        f"smoke run drawn by informativeness ({len(design.strata)} strata from {design.history_runs} runs of the "
        "history): slice and overall values are weighted to the full suite (stratified Horvitz–Thompson)"
    )
    return Strata.of(design, ids)


def _instant(stamp: str | None) -> datetime | None:
    """An ISO 8601 time as an aware datetime (UTC when it names no zone); None when there is none
    or it is not one (a hand-made file)."""
    try:
        when = datetime.fromisoformat(stamp.replace("Z", "+00:00")) if stamp else None
    except ValueError:
        return None
    return when if when is None or when.tzinfo else when.replace(tzinfo=UTC)


def _power_warnings(units: list[UnitResult], defs: list[MetricDef], gate: GateSpec) -> list[str]:
    """Overall units that cannot see drops of target_mde: the whole gate is then blunt. Said of a
    pass or an inconclusive only, which it limits; a fail's test saw its drop."""
    bounded = {d.name: d.bounded for d in defs}
    out = []
    for u in units:
        if u.unit != "overall" or not u.gated or not u.underpowered:
            continue
        relative = not bounded.get(u.metric, True)
        scale = abs(u.baseline) if relative and u.baseline else 1.0
        # Rates in percentage points, as the report shows them; a relative target as a share.
        target = f"target_mde {gate.target_mde:g}" + ("" if relative else f" = {100 * gate.target_mde:.3g} pp")
        # The MDE is the tolerance plus a sampling term: past the tolerance, cases cannot help.
        if u.tolerance / scale > gate.target_mde:
            shown = f"{u.tolerance / scale:.1%} of the baseline value" if relative else f"{100 * u.tolerance:.3g} pp"
            out.append(
                f"{u.metric}'s tolerance ({shown}) is itself larger than {target}: no number of cases "
                "makes the gate detect smaller drops; lower the tolerance or raise target_mde"
            )
        else:
            more = f" (about {u.cases_for_target} paired cases would reach it)" if u.cases_for_target else ""
            if u.mde is None:  # no drop at all reaches the power: a binary unit of very few cases
                out.append(f"{u.metric} overall cannot detect any drop at power {gate.power:g} ({target}){more}")
                continue
            shown = f"{u.mde / scale:.1%} of the baseline value" if relative else f"{100 * u.mde:.3g} pp"
            out.append(f"{u.metric} overall can only detect drops of {shown} or more ({target}){more}")
    return out


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
    strata = _strata(candidate, ct, pairing, [])  # the gate's own units already say it is weighted
    whole = [UnitIndex("overall", None, None, None)]
    units = decide(_inputs(gated, specs, lt, ct, pairing), whole, gate, strata=strata)
    regressed = [u for u in units if u.verdict == "regressed"]
    worst = "regressed" if regressed else (units[0].verdict if units else None)
    reason = (
        f"drift guard: {describe_unit(regressed[0])} vs the blessed baseline"
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


def load_runs(*paths: str | Path | None) -> list[Run | None]:
    """Load results files for comparison (``evals.compare.lazyload``: same validation as ``load_results``,
    a fraction of the memory) with the cyclic garbage collector paused: parsing 100,000 cases
    allocates millions of objects, and the collections that triggers (each scanning everything
    allocated so far) cost more than the parsing itself. The loaded runs are then frozen out of
    later collections."""
    with gc_paused():
        runs = [load_lazy(p) if p else None for p in paths]
    gc.freeze()
    return runs
