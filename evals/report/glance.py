"""What a reviewer reads in the first seconds (docs/spec.md#pr-comment): the verdict as a GitHub alert with one
sentence in words and percentage points, and Δ bars whose length is |Δ|.

The gate's own ``Comparison.reason`` is for logs and machines (raw decimals, method names); the
sentence here says the same thing for a person, from the same units."""

from __future__ import annotations

import math
from collections.abc import Sequence

from evals.common import escape
from evals.compare.bridge import agreement_text
from evals.compare.decide import bad_side
from evals.compare.floors import floor_sentence
from evals.compare.model import Comparison, UnitResult
from evals.compare.spending import limit_stopped
from evals.report.filters import Safe, fmt_band, fmt_bounds, fmt_delta, fmt_interval, fmt_value
from evals.results.spend import usd
from evals.run.failfast import stop_headline

# GitHub alert per verdict: red for a failing gate, yellow for "look at this", purple when the
# gate could not judge at all, green for a pass.
ALERT = {
    "pass": "TIP",
    "fail": "CAUTION",
    "inconclusive": "WARNING",
    "no-baseline": "NOTE",
    "incomplete": "IMPORTANT",
    "incompatible": "IMPORTANT",
}


def alert(c: Comparison) -> str:
    return "CAUTION" if c.verdict == "inconclusive" and c.exit_code == 1 else ALERT[c.verdict]


def metric_name(metric: str) -> str:
    return "pass rate" if metric == "pass_rate" else metric


def _tolerance(u: UnitResult) -> str:
    return fmt_delta(u.tolerance, u.metric).lstrip("+±")


class _Style:
    """Markdown (escaped, bold) or plain text (for the HTML page, which escapes it itself)."""

    def __init__(self, markdown: bool):
        self.markdown = markdown

    def text(self, value: str, limit: int = 160) -> str:
        return escape.inline(value, limit=limit) if self.markdown else value

    def strong(self, value: str) -> str:
        return f"**{value}**" if self.markdown else value


def _subject(u: UnitResult, st: _Style) -> str:
    return st.text(f"{metric_name(u.metric)} {'overall' if u.unit == 'overall' else 'on ' + u.unit}")


def _moved(u: UnitResult) -> str:
    if u.delta is None:
        return "changed"
    worse = u.delta < 0 if u.direction == "higher" else u.delta > 0
    verb = ("fell" if u.delta < 0 else "rose") if worse or u.delta else "moved"
    return f"{verb} {fmt_delta(abs(u.delta), u.metric).lstrip('+')}"


def _regressed_sentence(units: Sequence[UnitResult], st: _Style) -> str:
    first, *rest = units
    parts = [
        f"{st.strong(f'{_subject(first, st)} {_moved(first)}')} ({fmt_value(first.baseline, first.metric)} → "
        f"{fmt_value(first.candidate, first.metric)}, CI {fmt_interval(first)}, {first.n:,} paired cases)"
    ]
    if rest:
        named = ", ".join(f"{_subject(u, st)} {fmt_delta(u.delta, u.metric)}" for u in rest[:3])
        more = f" and {len(rest) - 3:,} more" if len(rest) > 3 else ""
        parts.append(f"also regressed: {named}{more}")
    return "; ".join(parts) + "."


def _certify(u: UnitResult) -> str:
    if u.certifiable is None:
        return ""
    need = f"; about {u.cases_to_certify:,} paired cases would certify {_tolerance(u)}" if u.cases_to_certify else ""
    return f" This suite can certify {fmt_band(u.certifiable, u.metric)}{need} (`evalgate plan` shows it per slice)."


def _amount(x: float, u: UnitResult) -> str:
    return fmt_delta(abs(x), u.metric).lstrip("+±")


def _inconclusive_sentence(u: UnitResult, st: _Style) -> str:
    worst, _ = bad_side(u)
    if u.no_change_seen:
        seen = st.strong(f"no change seen on {u.n:,} paired cases")
        return (
            f"{seen}, but they resolve only {fmt_band(-worst, u.metric)}, more than the {_tolerance(u)} "
            f"tolerance.{_certify(u)}"
        )
    down = st.strong(f"{_subject(u, st)} could be down by up to {_amount(worst, u)}")
    return (
        # The pass reads the marginal interval (a one-sided claim at α): the bound quoted is its end.
        f"no significant regression, but {down} (Δ {fmt_delta(u.delta, u.metric)}, {u.confidence:.0%} CI "
        f"{fmt_bounds(u.marginal_low, u.marginal_high, u.metric)}, "
        f"{u.n:,} paired cases), more than the {_tolerance(u)} tolerance.{_certify(u)}"
    )


def rerun_clause(c: Comparison) -> str:
    """`` Reached after 4 batches of re-runs (1,400 more attempts, $0.12).`` when more evidence
    decided the verdict: a reviewer must see on the first screen that the first look alone did not
    (docs/spec.md#report-consistency); empty otherwise."""
    me = c.more_evidence
    batches = len(me.looks) - 1 if me is not None else 0
    if me is None or batches < 1 or me.ended != c.verdict or c.verdict not in ("fail", "pass"):
        return ""
    cost = f", {usd(me.cost_usd)}" if me.cost_usd is not None else ", cost unknown"
    plural = "batch" if batches == 1 else "batches"
    return f" Reached after {batches:,} {plural} of re-runs ({me.attempts:,} more attempts{cost})."


def bridge_clause(c: Comparison) -> str:
    """`` The judge changed (model: a → b), so the baseline's outputs were re-judged with the
    candidate's judge: the two judges agreed on 18 of 20 (90%, κ 0.78).`` when the gate bridged a
    judge change (docs/spec.md#judge-bridging): the verdict compares against a re-scored baseline,
    and how far the judges agree says how much the switch alone moved; empty otherwise."""
    b = c.judge_bridge
    if b is None:
        return ""
    listed = [change if len(change) <= 100 else change[:99] + "…" for change in b.changes[:3]]
    what = "; ".join(listed) + (f"; and {len(b.changes) - 3} more" if len(b.changes) > 3 else "")
    agreed = agreement_text(b.agreement)
    return (
        f" The judge changed ({what}), so the baseline's outputs were re-judged with the candidate's judge: {agreed}."
    )


def own_rules_clause(c: Comparison) -> str:
    """`` This change also changes its own gate: metrics.pass_rate.tolerance: 0.02 → 0.5.`` when the
    candidate's config judges it by other rules than its baseline's (docs/spec.md#trust-boundaries):
    a reviewer must read the verdict knowing the change set the bar it was measured against."""
    if not c.gate_changes:
        return ""
    # Each change cut on its own, so a metric added with a long spec cannot hide the others' values.
    listed = [change if len(change) <= 100 else change[:99] + "…" for change in c.gate_changes[:4]]
    shown = "; ".join(listed) + (f"; and {len(c.gate_changes) - 4} more" if len(c.gate_changes) > 4 else "")
    if c.gate_decided_by:
        return f" This change also changes its own gate, so {c.gate_decided_by} judged it: {shown}."
    return f" This change also changes its own gate against the baseline's: {shown}."


def headline(c: Comparison, *, markdown: bool = True) -> str:
    """The banner's sentence: escaped markdown (``Safe``), or plain text with ``markdown=False``.
    Falls back to the gate's reason where the units cannot tell the story (a special verdict, a
    gate with nothing compared)."""
    clause = rerun_clause(c) + own_rules_clause(c) + bridge_clause(c)
    if markdown:
        # The clauses are bounded on their own (own_rules_clause lists four changes, each cut, about
        # 500 characters; bridge_clause three, about 450): the headline's usual cut would hide what a
        # PR changed of its own gate, or that the baseline was re-judged.
        return Safe(_headline(c, markdown=True) + _Style(True).text(clause, 1200))
    return _headline(c, markdown=False) + clause


def _headline(c: Comparison, *, markdown: bool) -> str:
    st = _Style(markdown)
    failing = [u for u in c.units if u.blocking and u.gated and u.verdict == "regressed"]
    overall = [u for u in c.units if u.unit == "overall" and u.gated]
    errored = c.candidate_run.attempts and sum(c.candidate_run.error_counts.values()) == c.candidate_run.attempts
    if c.verdict == "fail" and (early := c.candidate_run.fail_fast) is not None:
        said = stop_headline(early, c.candidate_run.completed_cases, c.candidate_run.total_cases)
        return st.text(f"{said[:1].upper()}{said[1:]} (fail fast).", 1000)
    if c.verdict == "fail" and failing and not errored:  # every attempt errored: the reason says so, the units not
        failing.sort(key=lambda u: (u.unit == "overall", u.p_adjusted or 0.0))
        return _regressed_sentence(failing, st)
    if c.verdict == "fail" and (floors := c.breached_floors):
        more = f" (and {len(floors) - 1:,} more, listed below)" if len(floors) > 1 else ""
        return st.text(f"{floor_sentence(floors[0])}{more}.", 1000)
    if c.verdict == "inconclusive":
        for u in overall:
            if u.n >= 2 and u.ci_low is not None and u.ci_high is not None and bad_side(u)[0] < -u.tolerance:
                return _inconclusive_sentence(u, st)
    if c.verdict == "pass" and overall:
        bands = ", ".join(f"{metric_name(u.metric)} within {_tolerance(u)}" for u in overall)
        # A pass bounds overall only; a slice is said to be within the band when its own interval is.
        sliced = {u.unit for u in c.units if u.unit != "overall" and u.gated}
        unsure = sorted(
            {u.unit for u in c.units if u.unit in sliced and u.verdict == "inconclusive" and not u.no_change_seen}
        )
        text = f"no regression beyond tolerance overall: {bands} ({overall[0].n:,} paired cases)"
        if sliced and not unsure:
            text += f"; no slice regressed ({len(sliced):,} tested)"
        elif unsure:
            named = ", ".join(unsure[:3]) + (f" and {len(unsure) - 3:,} more" if len(unsure) > 3 else "")
            text += f"; inconclusive on {named} (no significant regression, not enough cases to rule one out)"
        return st.text(text + ".", 1000)
    stop = c.candidate_run.limit
    if c.verdict == "incomplete" and stop is not None and not c.candidate_run.complete:
        # The reason also says how to finish the run; the reports say that once, under the banner.
        text = limit_stopped(stop, c.candidate_run)
        return st.text(text[:1].upper() + text[1:] + ".", 1000)
    return st.text(c.reason[:1].upper() + c.reason[1:], 1000)


def bar_scales(units: Sequence[UnitResult]) -> dict[str, float]:
    """Per metric, the largest |Δ| among ``units``: bars compare within a metric, never across
    units of measure."""
    scales: dict[str, float] = {}
    for u in units:
        if u.delta is not None and math.isfinite(u.delta):
            scales[u.metric] = max(scales.get(u.metric, 0.0), abs(u.delta))
    return scales


_SEVERITY = {"regressed": 0, "inconclusive": 1, "improved": 2, "no-change": 3, "unchanged": 4}


def unit_state(u: UnitResult) -> str:
    """The unit's verdict as a reader sees it: an inconclusive unit whose runs agree on every
    case is "no-change" (docs/spec.md#unit-verdicts), not a doubt."""
    return "no-change" if u.verdict == "inconclusive" and u.no_change_seen else u.verdict


def severity_order(u: UnitResult) -> tuple[int, bool, bool, float, str]:
    """Worst first: regressed, inconclusive, improved, no change, unchanged; then blocking before
    advisory, overall first, the largest change."""
    worse = -(u.delta or 0.0) if u.direction == "higher" else (u.delta or 0.0)
    return (_SEVERITY[unit_state(u)], not u.blocking, u.unit != "overall", -worse, u.unit)
