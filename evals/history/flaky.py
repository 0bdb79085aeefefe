"""Flaky cases as the history saw them (docs/spec.md#flaky-cases), and what the informative smoke draw reads.

A case's outcomes are its per-run pass rates in the latest whole, complete runs of the suite with
the same config hash that repeat the same code (``evals.history.repeats``: one commit with a clean
tree, one case set and target definition; baselines and re-runs, never a gated proposal nor the run
being gated), oldest first. Its flip rate is ``evals.compare.flaky.run_flip_rate`` of those
outcomes."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from evals.common.errors import UsageError
from evals.compare.flaky import attempt_flip_rate, pass_hat_k, run_flip_rate, stability
from evals.compare.metrics import scan
from evals.compare.pairing import repeats_overall
from evals.compare.stats import pass_at_k
from evals.history import read_history
from evals.history.repeats import repeated_runs
from evals.run.smoke import CaseHistory

if TYPE_CHECKING:
    from evals.history.engine import Engine
    from evals.results.model import Results, ResultsView
    from evals.suite.config import SuiteConfig

# Whole runs read: the history size of the informative smoke simulation (docs/spec.md#informative-smoke), recent enough
# to describe today's target.
LAST_RUNS = 20


@dataclass(frozen=True)
class FlakyCase:
    id: str
    slices: dict[str, str]
    runs: int
    flip_rate: float
    pass_rate: float  # mean of its per-run pass rates


def case_history(
    engine: Engine, suite: str, config_hash: str | None, last: int = LAST_RUNS, *, leave_out: str | None = None
) -> CaseHistory:
    """The outcomes of every case in the latest ``last`` repeated runs of ``suite`` with
    ``config_hash`` (``evals.history.repeats``; ``leave_out``: the digest of the run being gated),
    no runs: an empty history."""
    runs = [run.id for run in repeated_runs(engine, suite, config_hash, last, leave_out=leave_out)]
    if not runs:
        return CaseHistory(0, {})
    marks = ", ".join("?" * len(runs))
    rows = engine.query(
        f"SELECT c.run_id, c.case_id, p.pass_at_1 FROM cases c "
        f"JOIN case_pass p ON p.run_id = c.run_id AND p.case_no = c.case_no "
        f"WHERE c.run_id IN ({marks}) AND p.pass_at_1 IS NOT NULL",
        tuple(runs),
    )
    by_run: dict[int, dict[str, float]] = {run: {} for run in runs}
    for run_id, case_id, passed in rows:
        by_run[run_id][case_id] = float(passed)
    outcomes: dict[str, list[float]] = {}
    for run_id in reversed(runs):  # oldest first
        for case_id, passed in by_run[run_id].items():
            outcomes.setdefault(case_id, []).append(passed)
    return CaseHistory(len(runs), outcomes)


def latest_slices(engine: Engine, suite: str, config_hash: str | None) -> dict[str, dict[str, str]]:
    """Each case's slice values in the newest whole run of ``suite`` with ``config_hash``."""
    rows = engine.query(
        "SELECT c.case_id, s.slice_key, s.slice_value FROM cases c "
        "JOIN case_slices s ON s.run_id = c.run_id AND s.case_no = c.case_no "
        "WHERE c.run_id = (SELECT id FROM runs WHERE suite = ? AND config_hash = ? AND subset IS NULL "
        "AND shard IS NULL AND status = 'success' ORDER BY started_at DESC, id DESC LIMIT 1)",
        (suite, config_hash),
    )
    slices: dict[str, dict[str, str]] = {}
    for case_id, key, value in rows:
        slices.setdefault(case_id, {})[key] = value
    return slices


def flaky_cases(history: CaseHistory, slices: dict[str, dict[str, str]]) -> list[FlakyCase]:
    """The cases whose outcome changed between runs, most flaky first (then by id)."""
    found = []
    for case_id, outcomes in history.outcomes.items():
        rate = run_flip_rate(outcomes)
        if rate:
            found.append(
                FlakyCase(case_id, slices.get(case_id, {}), len(outcomes), rate, sum(outcomes) / len(outcomes))
            )
    return sorted(found, key=lambda c: (-c.flip_rate, c.id))


def flip_rates(history: CaseHistory) -> dict[str, float]:
    """Each flaky case's flip rate (what the case diff marks flips with)."""
    return {c.id: c.flip_rate for c in flaky_cases(history, {})}


def smoke_history(config: SuiteConfig) -> CaseHistory | None:
    """What ``smoke.select: informative`` reads for this config; None without a history."""
    return read_history(config, lambda engine: case_history(engine, config.suite, config.config_hash()))


def known_flaky(config: SuiteConfig | None, candidate: ResultsView | None = None) -> dict[str, float]:
    """The flip rates the case diff marks flips with: from this config's history, or none.
    ``candidate``: the run being gated or compared, never counted in its own flip rates — it is in
    the history already (the gate's suite run recorded it), and a case it broke would otherwise
    "flip" between the baseline and itself."""
    if config is None:
        return {}

    def read(engine: Engine) -> dict[str, float]:
        from evals.history.rows import run_digest

        leave_out = run_digest(candidate) if candidate is not None else None
        return flip_rates(case_history(engine, config.suite, config.config_hash(), leave_out=leave_out))

    return read_history(config, read) or {}


@dataclass(frozen=True)
class AttemptStats:
    """One case of a run with k ≥ 2 attempts: its passes of the judged attempts."""

    id: str
    slices: dict[str, str]
    passed: int
    judged: int

    @property
    def stability(self) -> str:
        return stability(self.passed, self.judged)

    @property
    def flip_rate(self) -> float:
        return float(attempt_flip_rate(np.array([self.passed]), np.array([self.judged]))[0])


def attempt_stats(results: Results) -> list[AttemptStats]:
    """Every case of ``results`` with at least two judged attempts (infra errors are not judged)."""
    table = scan(results.cases, len(results.cases))
    found = []
    for i, case_id in enumerate(table.ids):
        judged = table.columns["pass_n"][i]
        if judged >= 2:
            found.append(AttemptStats(case_id, table.case_slices[i], int(table.columns["pass_c"][i]), int(judged)))
    return found


def _units(
    slices: list[dict[str, str]], keys: list[str], wanted: str | None
) -> list[tuple[str, str | None, str | None]]:
    """("overall" | "key=value", key, value) for every slice value seen, or just ``wanted``."""
    units: list[tuple[str, str | None, str | None]] = [("overall", None, None)]
    for key in keys:
        counts = Counter(s[key] for s in slices if key in s)
        if repeats_overall(counts, len(slices)):  # no unit of its own, as in compare and plan
            continue
        units += [(f"{key}={value}", key, value) for value in sorted(counts)]
    if wanted is None:
        return units
    chosen = [u for u in units if u[0] == wanted]
    if not chosen:
        shown = ", ".join(u[0] for u in units[1:21]) or "none"
        raise UsageError(f"--slice {wanted!r}: no case has that slice value (slice values: {shown})")
    return chosen


def _member(slices: dict[str, str], key: str | None, value: str | None) -> bool:
    return key is None or slices.get(key) == value


def render_history(
    found: list[FlakyCase],
    history: CaseHistory,
    slices: dict[str, dict[str, str]],
    keys: list[str],
    wanted: str | None,
    top: int,
) -> str:
    """``evalgate flaky`` from the history: per unit, how many of its cases (``slices``: every
    case's slice values) flip between runs, and the most flaky of them with their rates."""
    every = [slices.get(case_id, {}) for case_id in history.outcomes]
    runs = f"the latest {history.runs} repeated run(s) of this config"
    lines = [f"flaky cases over {runs} (history: baselines and re-runs):"]
    for name, key, value in _units(every, keys, wanted):
        members = [c for c in found if _member(c.slices, key, value)]
        size = sum(1 for s in every if _member(s, key, value))
        lines.append(f"{name}: {len(members)} of {size} cases flaky")
        for c in members[:top]:
            lines.append(f"  {c.id}  flips {c.flip_rate:.0%} of runs  (passes {c.pass_rate:.0%} over {c.runs} runs)")
        if len(members) > top:
            lines.append(f"  showing {top} of {len(members)}")
    return "\n".join(lines) + "\n"


def render_attempts(stats: list[AttemptStats], keys: list[str], wanted: str | None, top: int) -> str:
    """``evalgate flaky --results`` (k ≥ 2 attempts): per unit, stable pass / flaky / stable fail
    counts, pass@k beside pass^k (k = the fewest judged attempts of a case), and the flaky cases."""
    if not stats:
        raise UsageError("--results: no case has two or more judged attempts; run with attempts: 2 (or more)")
    k = min(s.judged for s in stats)
    lines = [f"flaky cases within the run ({len(stats)} cases with ≥ 2 attempts; pass@k and pass^k at k={k}):"]
    for name, key, value in _units([s.slices for s in stats], keys, wanted):
        members = [s for s in stats if _member(s.slices, key, value)]
        counts = {
            kind: sum(1 for s in members if s.stability == kind) for kind in ("stable pass", "flaky", "stable fail")
        }
        at_k = sum(float(pass_at_k(s.judged, s.passed, k)) for s in members) / len(members)
        hat_k = sum(pass_hat_k(s.passed, s.judged, k) or 0.0 for s in members) / len(members)
        shown = ", ".join(f"{n} {kind}" for kind, n in counts.items())
        lines.append(f"{name}: {len(members)} cases: {shown}; pass@{k} {at_k:.1%}, pass^{k} {hat_k:.1%}")
        flaky = sorted((s for s in members if s.stability == "flaky"), key=lambda s: (-s.flip_rate, s.id))
        for s in flaky[:top]:
            lines.append(
                f"  {s.id}  {s.passed}/{s.judged} attempts passed: they disagree {s.flip_rate:.0%} of the time"
            )
        if len(flaky) > top:
            lines.append(f"  showing {top} of {len(flaky)}")
    return "\n".join(lines) + "\n"
