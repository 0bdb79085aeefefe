"""How the reports write numbers and text: the formatters and filters the markdown templates use
(docs/spec.md#machine-outputs), shared by the report, the annotations and the JUnit XML.

Everything a formatter returns is :class:`Safe` (already escaped for markdown); :func:`finalize`
escapes any other value a template prints as a table cell, the strictest inline context."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any, TypeGuard

from markupsafe import Markup

from evals.common import escape
from evals.compare.metrics import metric_def
from evals.compare.model import UnitResult
from evals.report.timeline import event_line

BAR_CELLS = 12
_EIGHTHS = " ▏▎▍▌▋▊▉"


class Safe(str):
    """Markdown that is already escaped (or written by us): :func:`finalize` leaves it alone."""


def is_rate(metric: str) -> bool:
    """Whether a metric's values are rates in [0, 1], shown in % and pp: every metric the
    comparison treats as bounded (pass rates, scores, any named score such as a 0/1 judge or
    trajectory scorer), not latency, tokens or cost."""
    return bool(metric) and metric_def(metric).bounded


def finite(x: float | None) -> TypeGuard[float]:
    return x is not None and math.isfinite(x)


def fmt_value(x: float | None, metric: str = "") -> Safe:
    """A metric value: rates as percentages, latencies in ms, cost in USD."""
    if not finite(x):
        return Safe("–")
    if is_rate(metric):
        return Safe(f"{100 * x:.1f}%")
    if metric.startswith("latency"):
        return Safe(f"{x:,.0f} ms")
    if metric.startswith("cost"):
        return Safe(f"${x:.4g}")
    return Safe(f"{x:,.4g}")


def fmt_band(x: float | None, metric: str = "") -> Safe:
    """A band a unit resolves or certifies, ±, rounded *up* at the printed precision: a reader who
    sets the tolerance it shows gets a pass, never a hair short of one."""
    if not finite(x):
        return Safe("–")
    if is_rate(metric):
        return Safe(f"±{math.ceil(10000 * x - 1e-9) / 100:.2f} pp")
    return Safe(f"±{x:,.3g}")


def fmt_delta(x: float | None, metric: str = "") -> Safe:
    """A signed difference: percentage points for rates (a relative % would be ambiguous)."""
    if not finite(x):
        return Safe("–")
    sign = "+" if x > 0 else "−" if x < 0 else "±"
    if is_rate(metric):
        return Safe(f"{sign}{abs(100 * x):.1f} pp")
    if metric.startswith("latency"):
        return Safe(f"{sign}{abs(x):,.0f} ms")
    if metric.startswith("cost"):
        return Safe(f"{sign}${abs(x):.3g}")
    return Safe(f"{sign}{abs(x):,.3g}")


def fmt_ci(unit: UnitResult) -> Safe:
    if not (finite(unit.ci_low) and finite(unit.ci_high)):
        return Safe("–")
    return Safe(f"[{fmt_delta(unit.ci_low, unit.metric)}, {fmt_delta(unit.ci_high, unit.metric)}]")


NBSP = "\u00a0"
WJ = "\u2060"
_UNITS = (" pp", " ms")


def fmt_interval(unit: UnitResult) -> Safe:
    """The interval in a table cell or a sentence: ``−46.8…−28.8 pp``, its unit said once and
    non-breaking spaces inside, so a cell never wraps it over lines (a comment's column is narrow)."""
    return fmt_bounds(unit.ci_low, unit.ci_high, unit.metric)


def fmt_bounds(low_value: float | None, high_value: float | None, metric: str) -> Safe:
    """:func:`fmt_interval` of any two bounds (the marginal interval a pass reads, say)."""
    if not (finite(low_value) and finite(high_value)):
        return Safe("–")
    low, high = str(fmt_delta(low_value, metric)), str(fmt_delta(high_value, metric))
    suffix = next((s for s in _UNITS if low.endswith(s) and high.endswith(s)), "")
    if suffix:
        low, high = low[: -len(suffix)], high[: -len(suffix)]
    # The word joiners keep a browser from breaking the line at the ellipsis or a minus sign.
    return Safe(f"{low}{WJ}…{WJ}{high}{suffix}".replace(" ", NBSP))


def interval_levels(units: list[UnitResult]) -> Safe:
    """The two-sided level the printed intervals are at, once per table: each unit's tested level
    (``98.9–99.9%``) where the comparison records it, else the marginal level (old comparison files)."""
    levels = sorted({u.ci_level for u in units if u.ci_level is not None and finite(u.ci_low)})
    if levels:
        low, high = (f"{100 * x:.3g}" for x in (levels[0], levels[-1]))
        span = f"{low}%" if low == high else f"{low}–{high}%"
        return Safe(f"intervals of Δ at each unit's tested level ({span})")
    marginal = sorted({u.confidence for u in units if finite(u.ci_low)})
    if not marginal:
        return Safe("")
    return Safe(f"{', '.join(f'{100 * x:.3g}%' for x in marginal)} intervals of Δ, each unit on its own (not adjusted)")


def role(unit: UnitResult) -> Safe:
    """Blocking or advisory, and *underpowered* only where it limits what the verdict means: a unit
    that regressed or improved was powerful enough (docs/spec.md#report-consistency)."""
    text = "blocking" if unit.blocking and unit.gated else "advisory"
    if unit.underpowered and unit.verdict not in ("regressed", "improved"):
        text += ", underpowered"
    return Safe(text)


def fmt_p(x: float | None) -> Safe:
    if not finite(x):
        return Safe("–")
    return Safe("<0.001" if x < 0.001 else f"{x:.3f}")


def fmt_mde(x: float | None, metric: str = "") -> Safe:
    if not finite(x):
        return Safe("–")
    return Safe(f"{100 * x:.1f} pp" if is_rate(metric) else f"{x:,.3g}")


def fmt_fixed(x: float | None, digits: int = 1) -> Safe:
    return Safe(f"{x:,.{digits}f}") if finite(x) else Safe("–")


def fmt_int(x: int | None) -> Safe:
    return Safe("–" if x is None else f"{x:,}")


def fmt_age(days: float | None) -> Safe:
    """How old a baseline is, in the unit a person would say it."""
    if not finite(days):
        return Safe("–")
    if days < 1:
        hours = max(0, round(24 * days))
        return Safe(f"{hours} hour{'s' if hours != 1 else ''} old")
    whole = round(days)
    return Safe(f"{whole:,} day{'s' if whole != 1 else ''} old")


def bar(delta: float | None, scale: float) -> Safe:
    """A text bar whose length is |Δ| / ``scale`` of ``BAR_CELLS`` cells (eighths of a cell), so
    bars order as |Δ| at a glance whatever the sign; the sign is in the Δ column beside it."""
    if delta is None or not math.isfinite(delta) or scale <= 0 or delta == 0:
        return Safe("")
    eighths = max(1, round(8 * BAR_CELLS * min(1.0, abs(delta) / scale)))
    full, part = divmod(eighths, 8)
    return Safe("█" * full + (_EIGHTHS[part] if part else ""))


def short_sha(sha: str | None) -> Safe:
    return Safe(escape.cell(sha[:10])) if sha else Safe("–")


ONE_LINE_CHARS = 160


def one_line(entry: Any) -> bool:
    """A case diff entry whose excerpts are all short single lines: a two-column table shows it
    in a quarter of the height of code blocks."""
    texts = [entry.input, entry.expected, entry.baseline_output, entry.candidate_output]
    return all(t is None or (len(t) <= ONE_LINE_CHARS and "\n" not in t) for t in texts)


def tool_rows(entry: Any) -> list[tuple[int, str, str, bool]]:
    """A case diff entry's two tool sequences side by side: (call number, baseline tool, candidate
    tool, first divergence?); "–" where a side made fewer calls, "(no trace)" where it has none."""
    base, cand = entry.baseline_tools, entry.candidate_tools
    length = max(len(base or ()), len(cand or ()), 1)

    def at(side: list[str] | None, i: int) -> str:
        if side is None:
            return "(no trace)" if i == 0 else ""
        return side[i] if i < len(side) else "–"

    return [(i + 1, at(base, i), at(cand, i), i == entry.tools_diverge_at) for i in range(length)]


def finalize(value: Any) -> Any:
    if isinstance(value, Safe | Markup):
        return value
    if value is None:
        return ""
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, float):
        return fmt_value(value)
    return escape.cell(value, limit=None)


def filters() -> dict[str, Callable[..., Any]]:
    def safe(fn: Callable[..., str]) -> Callable[..., Safe]:
        return lambda *a, **k: Safe(fn(*a, **k))

    return {
        "md": safe(escape.inline),
        "cell": safe(escape.cell),
        "code": safe(escape.code_block),
        "html": safe(escape.html_text),
        "mermaid": safe(escape.mermaid_label),
        "value": fmt_value,
        "delta": fmt_delta,
        "band": fmt_band,
        "ci": fmt_interval,
        "levels": interval_levels,
        "role": role,
        # A number with its unit ("−12.9 pp", "89.2% → 76.2%") kept on one line in a narrow column.
        "nobreak": lambda text: Safe(str(text).replace(" ", NBSP)),
        "pval": fmt_p,
        "mde": fmt_mde,
        "count": fmt_int,
        "fixed": fmt_fixed,
        "sha": short_sha,
        "age": fmt_age,
        "bar": bar,
        "one_line": one_line,
        "tool_rows": tool_rows,
        "event": lambda ev, limit=200: Safe(escape.inline(event_line(ev["kind"], ev["name"], ev["content"], limit))),
        # For template authors' own trusted text only; never for anything from a case.
        "raw": Safe,
    }


def unit_order(u: UnitResult) -> tuple[bool, bool, float]:
    # Blocking before advisory, overall first, then the worst change.
    worse = -(u.delta or 0.0) if u.direction == "higher" else (u.delta or 0.0)
    return (not u.blocking, u.unit != "overall", -worse)
