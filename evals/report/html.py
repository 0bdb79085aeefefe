"""``--html FILE``: one self-contained HTML report (SPEC §13) — verdict, per-slice table, the
comparison's units and a searchable case list — that opens from disk and makes no network
request: styles and the search script are inline, nothing is linked, and a Content-Security-Policy
(``default-src 'none'``) makes the browser refuse any load a case's text could smuggle in.

Everything from a case (ids, slice values, inputs, outputs, error messages) goes through jinja's
autoescape; the search reads the rows' text, never HTML."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import jinja2

from evals.results.model import Results, atomic_write
from evals.results.summary import ResultsSummary, case_values

if TYPE_CHECKING:
    from evals.compare.model import Comparison

TEMPLATE = "report.html.j2"
TEMPLATE_DIR = Path(__file__).parent / "templates"
# A page for a browser: beyond this many case rows the file stops being pleasant to open.
MAX_CASE_ROWS = 5000
EXCERPT_CHARS = 400


def _excerpt(value: Any) -> str:
    if value is None:
        return ""
    import json

    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= EXCERPT_CHARS else text[:EXCERPT_CHARS] + "…"


def _case_rows(results: Results) -> list[dict[str, Any]]:
    rows = []
    for case in results.cases[:MAX_CASE_ROWS]:
        passed, score, errored = case_values(case)
        first = case.attempts[0] if case.attempts else None
        error = next((a.error for a in case.attempts if a.error is not None), None)
        state = "infra error" if errored else ("pass" if passed == 1.0 else "fail" if passed == 0.0 else "partial")
        if passed is None and not errored:
            state = "—"
        rows.append(
            {
                "id": case.id,
                "slices": ", ".join(f"{k}={v}" for k, v in sorted(case.slices.items())),
                "state": state,
                "pass_rate": passed,
                "score": score,
                "input": _excerpt(case.input),
                "expected": _excerpt(case.expected),
                "output": _excerpt(first.output if first else None),
                "error": f"{error.kind}: {_excerpt(error.message)}" if error else "",
            }
        )
    return rows


def render_html(
    *, results: Results | None = None, summary: ResultsSummary | None = None, comparison: Comparison | None = None
) -> str:
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(TEMPLATE_DIR),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    diff_rows = []
    if comparison is not None:
        diff = comparison.case_diff
        for change, entries in (
            ("pass → fail", diff.pass_to_fail),
            ("fail → pass", diff.fail_to_pass),
            ("score drop", diff.score_drops),
        ):
            diff_rows.extend({"change": change, "entry": e} for e in entries)
    return env.get_template(TEMPLATE).render(
        summary=summary,
        comparison=comparison,
        diff_rows=diff_rows,
        cases=_case_rows(results) if results is not None else [],
        n_cases=len(results.cases) if results is not None else 0,
        max_rows=MAX_CASE_ROWS,
    )


def write_html(path: Path, **parts: Any) -> None:
    """``render_html(**parts)`` written atomically to ``path``."""
    atomic_write(Path(path), render_html(**parts).encode("utf-8"))
