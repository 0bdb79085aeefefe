"""Compare a candidate run with a baseline (SPEC §5): ``compare()`` makes the ``Comparison`` that
``evalgate compare``, the gate and the promotion rule act on (its exit code is the gate verdict,
SPEC §9).

``compare`` turns results files into paired arrays (``evals.compare.pairing``), checks the special
verdicts (``evals.compare.compatibility``) and hands the arrays to the decision rule (``evals.compare.decide``),
which ``benchmarks/sim_gate.py`` calls directly, so the simulations test the code that gates.
"""

from __future__ import annotations

import gc
from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Literal

import numpy as np

from evals import __version__
from evals.common.errors import EXIT_FAIL, EXIT_INFRA, EXIT_PASS, UsageError
from evals.compare.casediff import case_diff, case_ranks
from evals.compare.compatibility import first_baseline_hint, incompatibility
from evals.compare.decide import decide, describe_unit, gate_verdict
from evals.compare.errored import errored_reason, errors_warning
from evals.compare.floors import check_floors, floor_sentence
from evals.compare.lazyload import load_lazy
from evals.compare.metrics import MetricDef, RunTable, default_metric, metric_def, named_scores, scan, slice_keys_of
from evals.compare.model import (
    CaseDiff,
    Comparison,
    DriftCheck,
    FloorResult,
    GateConfig,
    MetricGate,
    ProvenanceChange,
    UnitResult,
    Verdict,
)
from evals.compare.paired import MetricInput, UnitIndex
from evals.compare.pairing import Pairing, pair, unit_indices
from evals.compare.runs import Run, own_units, provenance_diff, run_summary
from evals.compare.sampling import Strata
from evals.compare.spending import limit_reason, unmeasured
from evals.compare.trajectory import gate_entry as trajectory_gate_entry
from evals.compare.trajectory import trajectory_input
from evals.results.manifest import BaselineRef
from evals.suite.config import BaselineSpec, GateSpec, MetricSpec, SuiteConfig
from evals.suite.overrides import apply_tolerance_override, parse_tolerance
from evals.suite.slices import require_slice_keys

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


def _inputs(
    defs: list[MetricDef], specs: dict[str, MetricSpec], bt: RunTable, ct: RunTable, pairing: Pairing
) -> list[MetricInput]:
    return [
        MetricInput(d, specs[d.name], bt.values(d)[pairing.base_rows], ct.values(d)[pairing.cand_rows]) for d in defs
    ]


def exit_code_for(verdict: Verdict, policy: str, on_missing: str) -> int:
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
    reset_command: str | None = None,
    flaky: Mapping[str, float] | None = None,
) -> Comparison:
    """Compare ``candidate`` with ``baseline`` (and, for the drift guard, with ``blessed``) and
    decide the gate verdict (SPEC §5). Never raises for data problems the verdict can express.
    ``tolerance`` (absolute, or ``"N%"``) is the ``--tolerance`` flag: with a config it replaces the
    rate metrics' tolerances (:func:`apply_tolerance_override`); without one it is the tolerance
    of the one metric gated (default 0.02). ``flaky``: the history's flip rate of its known-flaky
    cases (``evals.history.flaky.flip_rates``), which the case diff marks. ``reset_command``: the
    command that would bless this candidate, named in a ``no-baseline`` reason."""
    if tolerance is not None:
        tolerance = parse_tolerance(tolerance)
    names = named_scores(metric_def(name) for name in config.metrics) if config else []
    ct = scan(candidate.cases, len(candidate.cases), names)
    bt = scan(baseline.cases, len(baseline.cases), names) if baseline is not None else None
    specs, gate, slice_keys, on_missing, limit, excerpt = _gate_config(config, tolerance, [t for t in (ct, bt) if t])
    policy = inconclusive or gate.inconclusive
    defs = [metric_def(name, spec) for name, spec in specs.items()]
    if config is not None:
        _require_same_suite(config, candidate, baseline)
        _require_named_scores(config, defs, [t for t in (ct, bt) if t])
        _require_attempts_for_pass_at_k(config, defs, [t for t in (ct, bt) if t], [candidate, baseline])
        # Results files (from `run` or imported) get the check `run` makes on the case files.
        filled = [t for t in (ct, bt) if t and t.ids]
        if filled and config.slices:
            require_slice_keys(config.slices, slice_keys_of(filled), where=config.where("slices"))
    gate_model = GateConfig(
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
    cand_summary = run_summary(candidate, ct)
    warnings: list[str] = []
    subset = bool(candidate.run.subset or candidate.run.shard)
    units: list[UnitResult] = []
    provenance: list[ProvenanceChange] = []
    base_summary = None
    diff = CaseDiff(limit=limit, added=list(ct.ids), n_added=len(ct.ids))
    why_incompatible = None
    if baseline is not None and bt is not None:
        base_summary = run_summary(baseline, bt)
        provenance = provenance_diff(baseline, candidate)
        pairing = pair(bt, ct, subset)
        why_incompatible = incompatibility(
            baseline, candidate, pairing, max_removed_share=gate.max_removed_share, baseline_cases=len(bt.ids)
        )
        if not base_summary.complete:
            warnings.append(
                f"the baseline run is partial ({base_summary.status}, "
                f"{base_summary.completed_cases}/{base_summary.total_cases} cases)"
            )
        b_start, c_start = _instant(baseline.run.started_at), _instant(candidate.run.started_at)
        if b_start and c_start and b_start > c_start:
            warnings.append(
                f"the baseline run started after the candidate ({baseline.run.started_at} vs "
                f"{candidate.run.started_at}): are the baseline and the candidate the right way round?"
            )

    # Errors a pass rate cannot say (every attempt, or above max_error_rate on a first run): fail.
    errored = errored_reason(
        candidate,
        cand_summary,
        max_error_rate=gate.max_error_rate,
        first_run=baseline is None,
        reset_command=reset_command,
    )
    verdict: Verdict
    if not cand_summary.complete and cand_summary.limit is not None:
        verdict, reason = "incomplete", limit_reason(cand_summary.limit, cand_summary)
    elif not cand_summary.complete:
        verdict, reason = (
            "incomplete",
            (
                f"candidate run is partial: status {cand_summary.status}, "
                f"{cand_summary.completed_cases}/{cand_summary.total_cases} cases completed"
                + (f" ({cand_summary.message})" if cand_summary.message else "")
            ),
        )
    elif ct.ids and cand_summary.attempts == 0:
        verdict, reason = (
            "incomplete",
            (
                f"the candidate's {len(ct.ids)} cases hold no attempt (its header says {cand_summary.status}, "
                f"{cand_summary.completed_cases}/{cand_summary.total_cases} completed): nothing was measured; "
                "run the suite again, or re-import the harness's results"
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
    elif errored and (baseline is None or not why_incompatible):
        verdict, reason = "fail", errored
    elif baseline is None:
        verdict, reason = (
            "no-baseline",
            f"no baseline to compare with (first run?); on_missing is {on_missing}"
            + (f": {first_baseline_hint(reset_command)}" if on_missing != "seed" else "")
            + "; `evalgate plan` shows which drops and tolerances this suite can certify, per slice",
        )
    elif why_incompatible:
        verdict, reason = "incompatible", why_incompatible
    else:
        verdict, reason = "pass", ""
    if baseline is not None and not why_incompatible:
        inputs = _inputs(defs, specs, bt, ct, pairing)
        trajectory = trajectory_input(bt, ct, pairing)
        if trajectory is not None:  # advisory: reported with the others, never gated (evals.compare.trajectory)
            inputs.append(trajectory)
            gate_model.metrics.append(trajectory_gate_entry())
        strata = _strata(candidate, ct, pairing, warnings)
        units = decide(inputs, unit_indices(ct, pairing.cand_rows, slice_keys), gate, strata=strata)
        if verdict == "pass":
            verdict, reason = gate_verdict(units)
        if not errored and (said := errors_warning(candidate, cand_summary, max_error_rate=gate.max_error_rate)):
            warnings.append(said)
        warnings += _power_warnings(units, defs, gate)
        warnings += unmeasured(defs, specs, bt, ct)
    if baseline is not None and bt is not None:
        # After the verdicts: the failing slices' cases are listed first (evals.compare.casediff).
        ranks = case_ranks(ct, pairing, units, slice_keys) if units else None
        diff = case_diff(baseline, candidate, bt, ct, pairing, limit, excerpt, flaky or {}, ranks)
    floors = _subset_floors(check_floors(defs, specs, ct, slice_keys, gate, warnings), candidate, warnings)
    if breached := [f for f in floors if f.verdict == "breached"]:
        verdict, reason = _floor_verdict(verdict, reason, breached)
    warnings += [f"{floor_sentence(f)}: not significant, not failing" for f in floors if f.verdict == "uncertain"]

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
        exit_code=exit_code_for(verdict, policy, on_missing),
        gate=gate_model,
        units=units,
        floors=floors,
        case_diff=diff,
        provenance=provenance,
        baseline=baseline_ref,
        baseline_run=base_summary,
        candidate_run=cand_summary,
        candidate_units=own_units(candidate, slice_keys) if baseline is None and ct.ids else [],
        drift=drift,
        drift_ok=drift.ok if drift else True,
        warnings=warnings,
        evalgate_version=__version__,
        created_at=datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
    )


def _subset_floors(floors: list[FloorResult], candidate: Run, warnings: list[str]) -> list[FloorResult]:
    """A smoke subset is no even sample of the suite: an informative draw over-samples uncertain
    cases in every unit, a stratified one over-samples small slices, which biases overall. A floor
    judged where the subset biases it cannot fail the gate (the full run on the default branch
    judges it); it is said once, as a warning, whatever it found."""
    run = candidate.run
    if not run.subset:
        return floors
    informative = run.sample is not None
    biased = [f for f in floors if informative or f.unit == "overall"]
    if not biased:
        return floors
    where = "every unit" if informative else "overall"
    found = [f for f in biased if f.verdict != "met"]
    said = f"; it would read: {'; '.join(floor_sentence(f) for f in found[:3])}" if found else ""
    warnings.append(
        f"absolute floors on {where} are not judged on the {run.subset} subset, which does not sample the suite "
        f"evenly: the full run judges them{said}"
    )
    return [f for f in floors if f not in biased]


def _floor_verdict(verdict: Verdict, reason: str, breached: list[FloorResult]) -> tuple[Verdict, str]:
    """A breached floor fails the gate beside the relative test, with or without a baseline; a
    partial or incompatible candidate keeps that verdict (it says more about what to do)."""
    if verdict in ("incomplete", "incompatible"):
        return verdict, reason
    shown = "; ".join(floor_sentence(f) for f in breached[:3])
    more = f"; and {len(breached) - 3} more (comparison.json)" if len(breached) > 3 else ""
    what = f"absolute floor breached: {shown}{more}"
    return "fail", f"{reason}; {what}" if verdict == "fail" and reason else what


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


def _require_same_suite(config: SuiteConfig, candidate: Run, baseline: Run | None) -> None:
    """A candidate of another suite than the config's and its baseline's is the wrong file, not
    a change a reset should accept (a reset refuses it): exit 2, as the reset says."""
    suite = candidate.run.suite
    if config.path is None or baseline is None or suite == config.suite or baseline.run.suite != config.suite:
        return
    raise UsageError(
        f"the candidate is a run of suite {suite!r} but {config.path.name} (and its baseline) is suite "
        f"{config.suite!r}: compare a run of this suite, or name the run after it "
        f"(`evalgate import --suite {config.suite} ...`)"
    )


def _require_named_scores(config: SuiteConfig, defs: list[MetricDef], tables: list[RunTable]) -> None:
    """A named score that no case of either run records compares nothing: a typo, or a scorer that
    does not record it. The config check cannot see this for ``python:`` scorers; the runs can."""
    filled = [t for t in tables if t.ids]
    for d in defs:
        if filled and d.column.startswith("score:") and all(np.isnan(t.values(d)).all() for t in filled):
            raise UsageError(
                f"{config.where('metrics', d.name)}: metric {d.name!r} is a named score that no case of the runs "
                "records (check the spelling against the keys your scorers put in `scores`)"
            )


def _require_attempts_for_pass_at_k(
    config: SuiteConfig, defs: list[MetricDef], tables: list[RunTable], runs: list[Run | None]
) -> None:
    """``pass@k`` needs k judged attempts of a case; with fewer in every case of both runs, and
    runs made with fewer than k attempts a case, it has no value to compare, and a gate on it would
    be ``inconclusive`` whatever the runs did. (Runs made with k attempts whose attempts failed as
    infra are the verdict's to judge: ``incomplete``.)"""
    filled = [t for t in tables if t.ids]
    declared = max((r.run.attempts_per_case or 0 for r in runs if r is not None), default=0)
    for d in defs:
        if not (filled and d.column.startswith("pass@")):
            continue
        k = int(d.column.removeprefix("pass@"))
        most = max((int(np.nanmax(t.columns["pass_n"], initial=0)) for t in filled), default=0)
        if most < k and declared < k:
            raise UsageError(
                f"{config.where('metrics', d.name)}: metric {d.name!r} needs at least {k} judged attempts of a "
                f"case, and no case of the runs has more than {most}: set attempts: {k} (or more) and run again, "
                "or gate on pass@1"
            )


def _power_warnings(units: list[UnitResult], defs: list[MetricDef], gate: GateSpec) -> list[str]:
    """Overall units that cannot see drops of target_mde: the whole gate is then blunt."""
    bounded = {d.name: d.bounded for d in defs}
    out = []
    for u in units:
        if u.unit != "overall" or not u.gated or u.mde is None:
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
        elif u.mde / scale > gate.target_mde:
            shown = f"{u.mde / scale:.1%} of the baseline value" if relative else f"{100 * u.mde:.3g} pp"
            more = f" (about {u.cases_for_target} paired cases would reach it)" if u.cases_for_target else ""
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
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        runs = [load_lazy(p) if p else None for p in paths]
    finally:
        if was_enabled:
            gc.enable()
    gc.freeze()
    return runs
