"""``--html FILE``: one self-contained HTML report (docs/spec.md#html-report) that says everything the markdown
report says — the verdict in words, warnings, units by severity with MDE and the underpowered
ones, the case diff with named scores, judge reasoning and traces, what changed, the baseline —
plus searchable case lists with a failures-only toggle.

It opens from disk and makes no network request: style and script are inline, nothing is linked,
and the Content-Security-Policy (``default-src 'none'``) allows exactly the page's one stylesheet
and one script by their sha256, so nothing a case's text could smuggle in would run or load.

Everything from a case (ids, slice values, inputs, outputs, error messages, reasoning, traces)
goes through jinja's autoescape; the search reads the rows' text, never HTML."""

from __future__ import annotations

import base64
import functools
import hashlib
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING, Any

import jinja2

from evals.compare.casediff import grader_reasoning, text_excerpt
from evals.compare.floors import floor_sentence
from evals.report import facts, glance
from evals.report.filters import (
    fmt_age,
    fmt_band,
    fmt_delta,
    fmt_fixed,
    fmt_int,
    fmt_interval,
    fmt_mde,
    fmt_p,
    fmt_value,
    interval_levels,
    role,
    short_sha,
    tool_rows,
)
from evals.report.markdown import STATUS, TOP_CASES, TREND_POINTS, UNIT_STATUS, top_cases
from evals.report.spending import limit_view, spend_row, spend_view
from evals.report.timeline import event_line
from evals.results.files import atomic_write
from evals.results.model import Attempt, CaseResult, Results
from evals.results.summary import ResultsSummary, case_values
from evals.results.trace import tool_names

if TYPE_CHECKING:
    from evals.compare.case_changes import CaseDiffEntry
    from evals.compare.model import Comparison

TEMPLATE = "report.html.j2"
TEMPLATE_DIR = Path(__file__).parent / "templates"
# A page for a browser: beyond this many case rows the file stops being pleasant to open.
MAX_CASE_ROWS = 5000
EXCERPT_CHARS = 400
TRACE_EVENTS = 40
TRACE_CHARS = 300
BAR_WIDTH = 120


@functools.cache
def _asset(name: str) -> tuple[str, str]:
    """(text, CSP source) of a file inlined into the page: the source pins it by sha256."""
    text = (TEMPLATE_DIR / name).read_text(encoding="utf-8")
    digest = base64.b64encode(hashlib.sha256(text.encode("utf-8")).digest()).decode("ascii")
    return text, f"'sha256-{digest}'"


def _excerpt(value: Any, limit: int = EXCERPT_CHARS) -> str:
    return text_excerpt(value, limit) or ""


def _events(attempt: Attempt | None) -> list[dict[str, Any]]:
    if attempt is None or not attempt.trace:
        return []
    return [
        {"seq": e.seq, "kind": e.kind, "name": e.name or "", "content": _excerpt(e.content, TRACE_CHARS)}
        for e in attempt.trace[:TRACE_EVENTS]
    ]


def _reasoning(attempt: Attempt | None) -> str:
    return _excerpt(grader_reasoning(attempt.metadata)) if attempt is not None else ""


def _case_rows(results: Results) -> list[dict[str, Any]]:
    return [_case_row(case) for case in results.cases[:MAX_CASE_ROWS]]


def _case_row(case: CaseResult) -> dict[str, Any]:
    passed, score, errored = case_values(case)
    valid = [a for a in case.attempts if not a.is_infra_error]
    first = valid[0] if valid else (case.attempts[0] if case.attempts else None)
    failed = next((a for a in valid if a.passed is False or a.error is not None), None)
    error = next((a.error for a in case.attempts if a.error is not None), None)
    state = "infra error" if errored else ("pass" if passed == 1.0 else "fail" if passed == 0.0 else "partial")
    if passed is None and not errored:
        state = "—"
    shown = failed or first
    return {
        "id": case.id,
        "slices": ", ".join(f"{k}={v}" for k, v in sorted(case.slices.items())),
        "state": state,
        "failing": state in ("fail", "partial", "infra error"),
        "pass_rate": passed,
        "score": score,
        "scores": dict(shown.scores) if shown else {},
        "input": _excerpt(case.input),
        "expected": _excerpt(case.expected),
        "output": _excerpt(shown.output if shown else None),
        "error": f"{error.kind}: {_excerpt(error.message)}" if error else "",
        "reasoning": _reasoning(shown),
        "trace": _events(shown),
        "tools": tool_names(shown.trace) if shown else None,
        "attempts": len(case.attempts),
    }


def _unit_rows(c: Comparison) -> list[dict[str, Any]]:
    units = sorted(c.units, key=glance.severity_order)
    scales = glance.bar_scales(units)
    rows = []
    for u in units:
        scale = scales.get(u.metric, 0.0)
        width = 0.0 if not scale or u.delta is None else BAR_WIDTH * min(1.0, abs(u.delta) / scale)
        better = u.delta is not None and (u.delta > 0 if u.direction == "higher" else u.delta < 0)
        rows.append({"u": u, "state": glance.unit_state(u), "bar": round(width, 1), "better": better})
    return rows


def _quiet(rows: list[dict[str, Any]]) -> str:
    """What the folded table holds besides the regressions: ``14 unchanged, 6 inconclusive``."""
    counts = Counter(r["state"] for r in rows if r["state"] != "regressed")
    names = {"no-change": "with no change seen"}
    states = ("inconclusive", "improved", "no-change", "unchanged")
    return ", ".join(f"{counts[s]:,} {names.get(s, s)}" for s in states if counts[s])


def _diff_rows(c: Comparison) -> list[dict[str, Any]]:
    d = c.case_diff
    rows: list[dict[str, Any]] = []
    for change, entries, total, failing in (
        ("pass → fail", d.pass_to_fail, d.n_pass_to_fail, True),
        ("fail → pass", d.fail_to_pass, d.n_fail_to_pass, False),
        ("score drop", d.score_drops, d.n_score_drops, True),
        ("other tool calls", d.trajectory_changes, d.n_trajectory_changes, True),
    ):
        rows.extend({"change": change, "failing": failing, "entry": e, "scores": _score_pairs(e)} for e in entries)
        if total > len(entries):
            rows.append({"change": change, "failing": failing, "more": total - len(entries), "total": total})
    return rows


def _score_pairs(e: CaseDiffEntry) -> list[tuple[str, float | None, float | None]]:
    names = list(dict.fromkeys([*e.baseline_scores, *e.candidate_scores]))
    return [(n, e.baseline_scores.get(n), e.candidate_scores.get(n)) for n in names]


def _environment() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(TEMPLATE_DIR),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters.update(
        value=fmt_value,
        delta=fmt_delta,
        band=fmt_band,
        ci=fmt_interval,
        mde=fmt_mde,
        pval=fmt_p,
        count=fmt_int,
        fixed=fmt_fixed,
        age=fmt_age,
        sha=short_sha,
        tool_rows=tool_rows,
        role=role,
        event=lambda ev: event_line(ev["kind"], ev["name"], ev["content"], limit=None),
    )
    return env


def _comparison_context(c: Comparison) -> dict[str, Any]:
    baseline = facts.baseline_info(c)
    emoji, word = STATUS[c.verdict]
    d = c.case_diff
    unpaired = [
        (label, ids, total)
        for label, ids, total in (
            ("added", d.added, d.n_added),
            ("removed", d.removed, d.n_removed),
            ("changed input or expected", d.changed, d.n_changed),
            ("no valid attempt", d.errored, d.n_errored),
        )
        if total
    ]
    rows = _unit_rows(c)
    return {
        "word": word,
        "failing_gate": c.exit_code == 1,
        "sentence": glance.headline(c, markdown=False),
        "notices": facts.notices(c, baseline),
        "baseline": baseline,
        "baseline_source": facts.display_source(c.baseline.source) if c.baseline else None,
        "drift_reason": facts.drift_reason(c),
        "drift_is_headline": facts.drift_repeats_headline(c, baseline),
        "unit_rows": rows,
        "regressed": [r for r in rows if r["state"] == "regressed"],
        "improved": [r for r in rows if r["state"] == "improved"],
        "quiet": _quiet(rows),
        "levels": interval_levels(c.units),
        "top": top_cases(c, TOP_CASES),
        "floors_breached": [floor_sentence(f) for f in c.breached_floors],
        "unit_status": {k: v.split(" ", 1)[-1] if k != "unchanged" else v for k, v in UNIT_STATUS.items()},
        "diff_rows": _diff_rows(c),
        "unpaired": unpaired,
        "trends": [t for t in c.trends if len(t.values) >= TREND_POINTS],
        "emoji": emoji,
        "spend": spend_view(c),
    }


def render_html(
    *, results: Results | None = None, summary: ResultsSummary | None = None, comparison: Comparison | None = None
) -> str:
    css, style_src = _asset("report.css")
    script, script_src = _asset("report.js")
    return (
        _environment()
        .get_template(TEMPLATE)
        .render(
            summary=summary,
            comparison=comparison,
            view=_comparison_context(comparison) if comparison is not None else None,
            run_spend=spend_row("run", summary.spend) if summary is not None else None,
            run_limit=limit_view(summary) if summary is not None else None,
            cases=_case_rows(results) if results is not None else [],
            n_cases=len(results.cases) if results is not None else 0,
            max_rows=MAX_CASE_ROWS,
            bar_width=BAR_WIDTH,
            css=css,
            script=script,
            csp=(
                f"default-src 'none'; style-src {style_src}; script-src {script_src}; img-src data:; "
                "base-uri 'none'; form-action 'none'"
            ),
        )
    )


def write_html(path: Path, **parts: Any) -> None:
    """``render_html(**parts)`` written atomically to ``path``."""
    atomic_write(Path(path), render_html(**parts).encode("utf-8"))
