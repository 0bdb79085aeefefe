"""``evalgate history show``: a trend as a terminal table. One unit: a row per run (value, 95% CI,
cases, what happened). Several: a row per unit, a column per run, the events on top."""

from __future__ import annotations

from evals.history.trends import Trends, Value, nothing_to_show

SYMBOLS = {"promotion": "▲", "reset": "◆", "failed gate": "✗"}
LEGEND = "▲ promoted to baseline   ◆ reset (blessed)   ✗ gate failed"


def fmt(metric: str, value: float | None) -> str:
    if value is None:
        return "–"
    if metric.endswith("_ms"):
        return f"{value:.1f}"
    if "cost" in metric:
        return f"{value:.3g}"
    if metric in ("tokens_per_success", "tool_calls"):
        return f"{value:.1f}"
    return f"{value:.3f}"


def _events(markers: list[str]) -> str:
    return " ".join(f"{SYMBOLS[m]} {m}" for m in markers)


def render(trends: Trends) -> str:
    if not trends.runs or not trends.units:
        return nothing_to_show(trends) + "\n"
    head = f"suite {trends.suite} · {trends.metric} · {len(trends.runs)} run(s), oldest first"
    body = _one_unit(trends, next(iter(trends.units))) if len(trends.units) == 1 else _matrix(trends)
    notes = [f"  {run.label}: {note}" for run in trends.runs for note in run.notes]
    tail = ["", LEGEND, *(["reset reasons:", *notes] if notes else [])]
    if trends.partial:
        tail.append(
            f"left out: {trends.partial} partial run(s) (cancelled, failed or timed out); --include-subsets shows them"
        )
    if trends.without_cases:  # the runs a `compare` of unseen files left: said here, as `compare` said
        tail.append(
            f"left out: {trends.without_cases} run(s) known by their header alone (`compare` of files the history "
            "had not seen); `evalgate history add RESULTS...` adds their cases"
        )
    return "\n".join([head, "", *body, *tail]) + "\n"


def _one_unit(trends: Trends, unit: str) -> list[str]:
    values = trends.units[unit]
    rows = [["commit", "started", f"{trends.metric} ({unit})", "95% CI", "cases", "events"]]
    for run, v in zip(trends.runs, values, strict=True):
        rows.append(
            [
                run.label,
                (run.started_at or "")[:16].replace("T", " "),
                fmt(trends.metric, v.value if v else None),
                _ci(trends.metric, v),
                str(v.n) if v and v.n is not None else "–",
                _events(run.markers),
            ]
        )
    return _align(rows, right={2, 3, 4})


def _ci(metric: str, v: Value | None) -> str:
    if v is None or v.low is None or v.high is None:
        return ""
    return f"[{fmt(metric, v.low)}, {fmt(metric, v.high)}]"


def _matrix(trends: Trends) -> list[str]:
    labels = [run.label for run in trends.runs]
    rows = [["unit", *labels]]
    if len(set(labels)) < len(labels):  # one commit gated again, or quick runs outside git: tell them apart
        rows.append(["run", *(f"#{run.id}" for run in trends.runs)])
    rows.append(["events", *(" ".join(SYMBOLS[m] for m in run.markers) for run in trends.runs)])
    for unit, values in trends.units.items():
        rows.append([unit, *(fmt(trends.metric, v.value if v else None) for v in values)])
    return _align(rows, right=set(range(1, len(trends.runs) + 1)))


def _align(rows: list[list[str]], right: set[int]) -> list[str]:
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    lines = []
    for row in rows:
        cells = [c.rjust(w) if i in right else c.ljust(w) for i, (c, w) in enumerate(zip(row, widths, strict=True))]
        lines.append("  ".join(cells).rstrip())
    return lines
