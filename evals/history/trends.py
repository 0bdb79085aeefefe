"""Per-unit trends read from the history's views: what ``history show``, ``history plot`` and the
PR comment's trend chart draw. One query per view, filtered to the runs on the chart."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from evals.common.errors import UsageError
from evals.history.engine import Engine
from evals.results.summary import wilson

if TYPE_CHECKING:
    from evals.compare.model import Comparison, SliceTrend

# metric name (as the gate and the CLI call it) → (view, column): reading one view is several
# times faster than v_unit_metrics, which computes them all.
METRICS: dict[str, tuple[str, str]] = {
    "pass_rate": ("v_pass", "pass_at_1"),
    "pass@1": ("v_pass", "pass_at_1"),
    "pass@k": ("v_pass", "pass_at_k"),
    "error_rate": ("v_errors", "error_rate"),
    "infra_error_rate": ("v_errors", "infra_error_rate"),
    "format_invalid_rate": ("v_errors", "format_invalid_rate"),
    "latency_p50_ms": ("v_latency", "latency_p50_ms"),
    "latency_p95_ms": ("v_latency", "latency_p95_ms"),
    "tokens_per_success": ("v_cost", "tokens_per_success"),
    "cost_per_success": ("v_cost", "cost_per_success"),
    "tool_calls": ("v_tools", "tool_calls"),
    "tool_error_rate": ("v_tools", "tool_error_rate"),
}


@dataclass
class RunPoint:
    """One run on the x axis, with what happened to it."""

    id: int
    sha: str | None
    started_at: str | None
    is_baseline: bool
    markers: list[str] = field(default_factory=list)  # "promotion", "reset", "failed gate"
    notes: list[str] = field(default_factory=list)  # reset reasons, actors
    name: str | None = None  # a run without a commit: the --sha (or content digest) a gate or the store gave it

    @property
    def label(self) -> str:
        """The commit; a run outside git (no commit) by the name a gate (``--sha``) or the baseline
        store gave it, else by when it started."""
        return short_sha(self.sha or self.name) or (
            self.started_at[:16].replace("T", " ") if self.started_at else f"run{self.id}"
        )


def short_sha(sha: str | None) -> str | None:
    """A commit to 7 characters; a content digest as ``content-`` and 4 (as ``baseline list``); any
    other label (``--sha v1.2``) as given, up to 16."""
    if not sha:
        return None
    if sha.startswith("content-"):
        return sha[:12]
    if len(sha) >= 12 and all(ch in "0123456789abcdefABCDEF" for ch in sha):
        return sha[:7]
    return sha[:16]


@dataclass
class Value:
    value: float
    low: float | None = None
    high: float | None = None
    n: int | None = None


@dataclass
class Trends:
    suite: str
    metric: str
    runs: list[RunPoint]  # oldest first
    units: dict[str, list[Value | None]]  # unit → one value per run (None: not in that run)
    without_cases: int = 0  # runs left out: known by their header alone (see ``Writer.run``)
    baselines_only: bool = False
    partial: int = 0  # partial runs (cancelled, failed, timed out) left out: not whole suites


def nothing_to_show(trends: Trends, what: str = "to show") -> str:
    """Why a trend has nothing in it, and what to do: ``history show`` prints it, ``plot`` fails with it."""
    if trends.without_cases:
        return (
            f"suite {trends.suite}: no runs {what}: its {trends.without_cases} run(s) are known by their header "
            "alone (`compare` of files the history had not seen); `evalgate history add RESULTS...` adds "
            "their cases"
        )
    if not trends.runs and trends.baselines_only:
        return (
            f"suite {trends.suite}: no runs {what}: none became a baseline in this history (a promotion, seed, "
            "reset or gate records one; `evalgate history sync` loads the baseline store's); leave out --baselines "
            "for every run"
        )
    if not trends.runs and trends.partial:
        return (
            f"suite {trends.suite}: no runs {what}: its {trends.partial} partial run(s) (cancelled, failed or timed "
            "out) are left out, as the trend compares whole suites; --include-subsets shows them"
        )
    if not trends.runs:
        return f"suite {trends.suite}: no runs {what}"
    return (
        f"suite {trends.suite}: no {trends.metric} values {what} in the {len(trends.runs)} run(s): "
        "their attempts do not record it"
    )


def metric_source(metric: str) -> tuple[str, str]:
    if metric not in METRICS:
        raise UsageError(f"--metric {metric!r}: one of {', '.join(METRICS)}")
    return METRICS[metric]


def suites(engine: Engine) -> list[str]:
    return [row[0] for row in engine.query("SELECT DISTINCT suite FROM runs ORDER BY suite")]


def pick_suite(engine: Engine, suite: str | None) -> str:
    known = suites(engine)
    if suite:
        if suite not in known:
            raise UsageError(f"the history has no run of suite {suite!r} (it has: {', '.join(known) or 'nothing'})")
        return suite
    if not known:
        raise UsageError("the history is empty: run a suite, or `evalgate history sync` a baseline store")
    latest = engine.query("SELECT suite FROM runs ORDER BY recorded_at DESC, id DESC LIMIT 1")
    return latest[0][0]


def load_trends(
    engine: Engine,
    *,
    suite: str | None = None,
    metric: str = "pass_rate",
    units: list[str] | None = None,
    last: int = 20,
    baselines_only: bool = False,
    include_subsets: bool = False,
) -> Trends:
    """The last ``last`` runs of ``suite`` (full runs unless ``include_subsets``), oldest first,
    with ``metric`` per unit. ``units``: exact units ("overall", "language=ko") or slice keys
    ("language": all its values); default every unit."""
    view, column = metric_source(metric)
    suite = pick_suite(engine, suite)
    where = "suite = ?"
    if not include_subsets:
        # Whole suites only: no smoke/subset or shard run, and no partial one (cancelled, timed
        # out, failed: its rates are over the cases it reached, not the suite).
        where += " AND subset IS NULL AND shard IS NULL AND status = 'success' AND completed_cases >= total_cases"
    if baselines_only:
        where += " AND is_baseline = 1"
    # A run known only by its header (``compare`` of a file the history had not seen) has no value.
    rows = engine.query(
        f"SELECT id, git_sha, started_at, is_baseline FROM v_runs WHERE {where} "
        "AND EXISTS (SELECT 1 FROM cases c WHERE c.run_id = v_runs.id) "
        "ORDER BY started_at DESC, id DESC LIMIT ?",
        (suite, last),
    )
    runs = [RunPoint(r[0], r[1], r[2], bool(r[3])) for r in reversed(rows)]
    partial = 0
    if not include_subsets and not baselines_only:  # said under the table: a cancelled run is not lost
        partial = engine.query(
            "SELECT COUNT(*) FROM runs r WHERE suite = ? AND subset IS NULL AND shard IS NULL "
            "AND NOT (status = 'success' AND completed_cases >= total_cases) "
            "AND EXISTS (SELECT 1 FROM cases c WHERE c.run_id = r.id)",
            (suite,),
        )[0][0]
    headers = engine.query(
        f"SELECT COUNT(*) FROM v_runs WHERE {where} AND completed_cases > 0 "
        "AND NOT EXISTS (SELECT 1 FROM cases c WHERE c.run_id = v_runs.id)",
        (suite,),
    )[0][0]
    if not runs:
        return Trends(suite, metric, [], {}, without_cases=headers, baselines_only=baselines_only, partial=partial)
    index = {run.id: i for i, run in enumerate(runs)}
    ids = ", ".join(str(run.id) for run in runs)  # integers from the database: safe to inline
    for run_id, name in engine.query(
        f"SELECT candidate_run_id, candidate_sha FROM gates WHERE candidate_run_id IN ({ids}) "
        "AND candidate_sha IS NOT NULL ORDER BY id"
    ):
        runs[index[run_id]].name = name  # outside git: the --sha or content digest it was gated or stored as
    for run_id, marker, reset_reason, actor in engine.query(
        f"SELECT run_id, marker, reset_reason, actor FROM v_markers WHERE run_id IN ({ids}) ORDER BY gate_id"
    ):
        point = runs[index[run_id]]
        if marker not in point.markers:
            point.markers.append(marker)
        if marker == "reset" and reset_reason:
            point.notes.append(f"reset by {actor or 'unknown'}: {reset_reason}")
    if units:
        _check_units(engine, units, ids, len(runs))
    unit_filter, params = _unit_filter(units)
    values: dict[str, list[Value | None]] = {}
    extra = "cases" if view == "v_pass" else "NULL"
    for run_id, unit, value, cases in engine.query(
        f"SELECT run_id, unit, {column}, {extra} FROM {view} WHERE run_id IN ({ids}){unit_filter}", params
    ):
        if value is None:
            continue
        value = float(value)
        low = high = None
        if column == "pass_at_1" and cases:
            # Wilson over the cases, as `evalgate show` gives it: never zero-width at 0% or 100%.
            low, high = wilson(value * int(cases), int(cases))
        values.setdefault(unit, [None] * len(runs))[index[run_id]] = Value(value, low, high, cases)
    ordered = dict(sorted(values.items(), key=lambda item: (item[0] != "overall", item[0])))
    return Trends(suite, metric, runs, ordered, without_cases=headers, baselines_only=baselines_only, partial=partial)


def _check_units(engine: Engine, units: list[str], ids: str, shown: int) -> None:
    """A ``--slice`` that names no unit of the runs shown is an error listing what they have,
    as a ``--metric`` typo is: an empty table would read as "no data", not as a misspelling."""
    values: dict[str, set[str]] = {}
    for key, value in engine.query(f"SELECT DISTINCT slice_key, slice_value FROM case_slices WHERE run_id IN ({ids})"):
        values.setdefault(key, set()).add(value)
    keys = ", ".join(sorted(values)) or "none (no case has tags)"
    where = f"the {shown} run{'s' if shown > 1 else ''} shown"
    for unit in units:
        key, sep, value = unit.partition("=")
        if unit == "overall" or (key in values and (not sep or value in values[key])):
            continue
        if key not in values:
            raise UsageError(
                f"--slice {unit!r}: no slice key {key!r} in {where}; their slice keys: {keys} "
                "(--slice takes overall, KEY or KEY=VALUE)"
            )
        known = ", ".join(f"{key}={v}" for v in sorted(values[key]))
        raise UsageError(f"--slice {unit!r}: no such unit in {where}; {key} has: {known}")


def _unit_filter(units: list[str] | None) -> tuple[str, tuple[str, ...]]:
    if not units:
        return "", ()
    exact = [u for u in units if "=" in u or u == "overall"]
    keys = [u for u in units if u not in exact]
    parts = []
    if exact:
        parts.append(f"unit IN ({', '.join('?' * len(exact))})")
    if keys:
        parts.append(f"slice_key IN ({', '.join('?' * len(keys))})")
    return f" AND ({' OR '.join(parts)})", (*exact, *keys)


def regressed_trends(engine: Engine, comparison: Comparison, candidate_run: int, *, last: int = 8) -> list[SliceTrend]:
    """For each regressed slice (at most three, worst first) whose metric the views know: its
    value in the suite's last ``last`` baselines, then in this candidate — the PR comment's chart."""
    from evals.compare.model import SliceTrend

    regressed = sorted(
        (u for u in comparison.regressed if u.slice_key is not None and u.metric in METRICS),
        key=lambda u: u.delta if u.delta is not None else 0.0,
    )
    out: list[SliceTrend] = []
    for unit in regressed[:3]:
        view, column = METRICS[unit.metric]
        rows = engine.query(
            "SELECT COALESCE(r.git_sha, (SELECT MAX(g.candidate_sha) FROM gates g WHERE g.candidate_run_id = r.id "
            f"AND g.action IN ('promote', 'seed', 'reset'))), r.id, m.{column} "
            f"FROM v_runs r JOIN {view} m ON m.run_id = r.id "
            "WHERE r.suite = ? AND r.is_baseline = 1 AND r.id <> ? AND m.unit = ? "
            "ORDER BY r.started_at DESC, r.id DESC LIMIT ?",
            (comparison.candidate_run.suite, candidate_run, unit.unit, last),
        )
        now = engine.query(f"SELECT {column} FROM {view} WHERE run_id = ? AND unit = ?", (candidate_run, unit.unit))
        # A candidate known by its header alone (`compare` of a file the history had not seen):
        # the value the comparison measured.
        value = now[0][0] if now else unit.candidate
        points = [(short_sha(sha) or f"run{run_id}", v) for sha, run_id, v in reversed(rows) if v is not None]
        if not points or value is None:
            continue
        points.append(("candidate", value))
        out.append(
            SliceTrend(
                unit=unit.unit,
                metric=unit.metric,
                labels=[label for label, _ in points],
                values=[round(float(v), 4) for _, v in points],
            )
        )
    return out
