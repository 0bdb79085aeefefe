"""The markdown regression report of a Comparison (docs/spec.md#report-sizes): tiers, the template context, rendering.
The banner's sentence and the bars are in ``evals.report.glance``, the baseline and warnings in
``evals.report.facts``, formatters and filters in ``evals.report.filters``, annotations and JUnit
XML in ``evals.report.ci_outputs``.

Templates are jinja2 ``.md.j2`` files. Markdown is not HTML, so jinja's autoescape is off; instead
every ``{{ ... }}`` output goes through ``filters.finalize``, which escapes any plain value as a
table cell (the strictest inline context). Filters (``md``, ``cell``, ``code``, ``html``,
``mermaid`` and the number formatters) return ``Safe`` text that ``finalize`` passes through. So a
template that forgets a filter still renders case data inert; it only looks less tidy.

Size tiers: the report is rendered at the richest tier that fits ``max_chars`` (measured in
UTF-8 bytes, never fewer than characters or UTF-16 units, so it is safe for both GitHub's comment
limit and the step-summary limit): full → passing units collapsed → regressions only → headline.
Any tier below full says what it left out and where the full report is.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal

import jinja2
from jinja2.sandbox import SandboxedEnvironment

from evals.common import escape
from evals.common.errors import InputFileError
from evals.compare.case_changes import CaseDiffEntry
from evals.compare.floors import floor_sentence
from evals.compare.model import Comparison, blocking_reason
from evals.report import facts, glance
from evals.report.ci_outputs import junit_xml
from evals.report.filters import Safe, filters, finalize
from evals.report.spending import spend_view
from evals.results.files import atomic_write
from evals.suite.config import SuiteConfig

Kind = Literal["comment", "summary", "full"]
SUMMARY_MAX_CHARS = 1_048_576  # GitHub's limit on a step's summary
MAX_CHARS: dict[Kind, int | None] = {"comment": 65_536, "summary": SUMMARY_MAX_CHARS, "full": None}
DEFAULT_TEMPLATE = "report.md.j2"
# Flipped cases shown with their excerpts before any fold: a reviewer sees what broke without a click.
TOP_CASES = 3
# A trend needs this many points (baselines, then the candidate) to say more than the Δ does.
TREND_POINTS = 3
FULL_REPORT_HINT = "The full report (report.md) and comparison.json are in this workflow run's artifacts"
TEMPLATE_DIR = Path(__file__).with_name("templates")

# What each interval method is, for the line under the statistics table (a method a newer
# comparison names and this list does not is shown by its name alone).
CI_METHODS = {
    "bootstrap": "paired percentile bootstrap",
    "smoothed": "Agresti–Min, binary units under 100 cases, where the bootstrap's is often a point",
    "stratified-t": "the t interval of a smoke subset's stratified estimate",
}
STATUS = {
    "pass": ("✅", "PASS"),
    "fail": ("❌", "FAIL"),
    "inconclusive": ("⚠️", "INCONCLUSIVE"),
    "no-baseline": ("🆕", "NO BASELINE"),
    "incomplete": ("🚧", "INCOMPLETE"),
    "incompatible": ("⛔", "INCOMPATIBLE"),
}
UNIT_STATUS = {
    "regressed": "🔻 regressed",
    "improved": "🔺 improved",
    "unchanged": "unchanged",
    "inconclusive": "❔ inconclusive",
    # Not a verdict of its own: an inconclusive unit whose runs agree on every case (docs/spec.md#unit-verdicts).
    "no-change": "➖ no change seen",
}


# ------------------------------------------------------------------------------------- tiers


@dataclass(frozen=True)
class Tier:
    """What one size tier shows. ``units_table``: "all", "changed" (passing units left out) or "none";
    ``improved``: whether improvements (units and fail → pass cases) are shown at all."""

    name: str
    units_table: str
    improved: bool
    case_entries: int
    excerpts: bool
    excerpt_chars: int
    id_list: int
    unit_rows: int
    top_cases: int
    top_excerpt_chars: int
    cut: tuple[str, ...] = field(default=())


def _tiers(max_cases: int, excerpt_chars: int) -> list[Tier]:
    """full → passing units collapsed → regressions only → headline (docs/spec.md#report-sizes)."""
    return [
        Tier(
            name="full",
            units_table="all",
            improved=True,
            case_entries=max_cases,
            excerpts=True,
            # compare already cut excerpts to excerpt_chars and added "…"; keep them whole.
            excerpt_chars=excerpt_chars + 1,
            id_list=50,
            unit_rows=2_000,
            top_cases=TOP_CASES,
            top_excerpt_chars=excerpt_chars + 1,
        ),
        Tier(
            name="compact",
            units_table="changed",
            improved=True,
            case_entries=min(max_cases, 5),
            excerpts=True,
            excerpt_chars=min(excerpt_chars, 120),
            id_list=20,
            unit_rows=200,
            top_cases=TOP_CASES,
            top_excerpt_chars=min(excerpt_chars, 200),
            cut=("unchanged units", "most case excerpts"),
        ),
        Tier(
            name="regressions",
            units_table="none",
            improved=False,
            case_entries=min(max_cases, 30),
            excerpts=False,
            excerpt_chars=0,
            id_list=0,
            unit_rows=50,
            top_cases=1,
            top_excerpt_chars=min(excerpt_chars, 120),
            cut=("improved and unchanged units", "most case excerpts", "trends", "provenance details"),
        ),
        Tier(
            name="headline",
            units_table="none",
            improved=False,
            case_entries=0,
            excerpts=False,
            excerpt_chars=0,
            id_list=0,
            unit_rows=0,
            top_cases=0,
            top_excerpt_chars=0,
            cut=("all details",),
        ),
    ]


class _ConfinedLoader(jinja2.FileSystemLoader):
    """A file loader whose templates stay in its folders once symlinks are followed: a user's
    template (a PR's, perhaps) could otherwise ``{% include %}`` a committed symlink to
    ``/proc/self/environ`` and post the job's environment (docs/spec.md#trust-boundaries)."""

    def get_source(self, environment: jinja2.Environment, template: str) -> tuple[str, str, Callable[[], bool]]:
        source, filename, uptodate = super().get_source(environment, template)
        real = Path(filename).resolve()
        if not any(real.is_relative_to(Path(folder).resolve()) for folder in self.searchpath):
            raise jinja2.TemplateNotFound(f"{template} (it leads out of the template's folder, to {real})")
        return source, filename, uptodate


def _environment(loader: jinja2.BaseLoader) -> jinja2.Environment:
    # Sandboxed: a template (possibly changed in a pull request) can read the context, not reach
    # Python internals such as ``__globals__`` from it.
    env = SandboxedEnvironment(
        loader=loader,
        autoescape=False,
        finalize=finalize,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
    )
    env.filters.update(filters())
    return env


# ------------------------------------------------------------------------------------- context


def _slice_label(entry: CaseDiffEntry) -> str:
    return ", ".join(f"{k}={v}" for k, v in sorted(entry.slices.items())) or "(no slice)"


def _grouped(entries: list[CaseDiffEntry], limit: int) -> list[dict[str, Any]]:
    """Grouped by slice in the case diff's order (its first entry's): the failing slices' groups
    come first, not the alphabet's."""
    groups: dict[str, list[CaseDiffEntry]] = {}
    for entry in entries[:limit]:
        groups.setdefault(_slice_label(entry), []).append(entry)
    return [{"slice": name, "entries": items} for name, items in groups.items()]


def top_cases(c: Comparison, count: int) -> dict[str, Any] | None:
    """The first ``count`` flipped cases, shown open (here and on the HTML page's first screen):
    pass → fail, or the largest score drops without any, or the cases whose tool calls changed
    without either."""
    d = c.case_diff
    if d.pass_to_fail:
        title, entries, total = "Cases that broke", d.pass_to_fail, d.n_pass_to_fail
    elif d.score_drops:
        title, entries, total = "Largest score drops", d.score_drops, d.n_score_drops
    elif d.trajectory_changes:
        title, entries, total = "Cases whose tool calls changed", d.trajectory_changes, d.n_trajectory_changes
    else:
        return None
    shown = entries[:count]
    return {"title": title, "entries": shown, "total": total} if shown else None


def _case_sections(c: Comparison, tier: Tier, top: dict[str, Any] | None) -> list[dict[str, Any]]:
    """The rest of the case diff, for the fold: the top cases are not repeated there."""
    d = c.case_diff
    sections = [
        ("pass → fail", d.pass_to_fail, d.n_pass_to_fail),
        ("fail → pass", d.fail_to_pass if tier.improved else [], d.n_fail_to_pass if tier.improved else 0),
        ("other score drops" if d.n_pass_to_fail else "largest score drops", d.score_drops, d.n_score_drops),
        ("other tool calls, same outcome", d.trajectory_changes, d.n_trajectory_changes),
    ]
    out = []
    for title, entries, total in sections:
        skipped = len(top["entries"]) if top and top["entries"] and entries and top["entries"][0] is entries[0] else 0
        rest = entries[skipped:]
        if not rest and total <= skipped:
            continue
        shown = min(len(rest), tier.case_entries)
        out.append(
            {
                "title": title,
                "total": total,
                "skipped": skipped,
                "shown": shown,
                "groups": _grouped(rest, shown),
            }
        )
    return out


def build_context(
    comparison: Comparison,
    *,
    tier: str = "full",
    kind: Kind = "full",
    max_chars: int | None = None,
    full_report: str = FULL_REPORT_HINT,
    max_cases: int = 20,
    excerpt_chars: int = 300,
    case_entries: int | None = None,
) -> dict[str, Any]:
    """The variables a report template sees (documented in docs/report.md). ``case_entries``
    lowers the tier's number of case-diff entries per list."""
    c = comparison
    spec = {t.name: t for t in _tiers(max_cases, excerpt_chars)}[tier]
    if case_entries is not None and case_entries < spec.case_entries:
        cut = f"case-diff entries beyond the first {case_entries:,} of each list"
        spec = replace(spec, case_entries=case_entries, cut=(*spec.cut, cut))
    units = sorted(c.units, key=glance.severity_order)
    if spec.units_table == "all":
        table = units
    elif spec.units_table == "changed":
        table = [u for u in units if u.verdict != "unchanged" or u.unit == "overall"]
    else:
        table = []
    baseline = facts.baseline_info(c)
    emoji, word = STATUS[c.verdict]
    if c.verdict == "inconclusive" and c.exit_code == 1:
        emoji = STATUS["fail"][0]
    top = top_cases(c, spec.top_cases)
    shown_units = table[: spec.unit_rows]
    return {
        "c": c,
        "tier": tier,
        "show": spec,
        "kind": kind,
        "max_chars": max_chars,
        "status": {"emoji": Safe(emoji), "word": Safe(word)},
        "banner": {
            "alert": Safe(glance.alert(c)),
            "emoji": Safe(emoji),
            "word": Safe(word),
            "sentence": glance.headline(c),
        },
        "unit_status": UNIT_STATUS,
        "regressed": [u for u in units if u.verdict == "regressed"],
        "floors_breached": [floor_sentence(f) for f in c.breached_floors],
        "improved": [u for u in units if u.verdict == "improved"] if spec.improved else [],
        "inconclusive_units": [u for u in units if u.verdict == "inconclusive" and not u.no_change_seen],
        "no_change_units": [u for u in units if u.verdict == "inconclusive" and u.no_change_seen],
        "units": shown_units,
        # One scale per metric for every table, so a bar means the same length of Δ throughout.
        "scales": glance.bar_scales(units),
        "slice_roles": [
            {"unit": u.unit, "metric": u.metric, "why": blocking_reason(u, c.gate)}
            for u in shown_units
            if u.unit != "overall" and u.gated
        ],
        "units_omitted": len(units) - len(shown_units),
        "ci_methods": [(m, CI_METHODS.get(m, m)) for m in dict.fromkeys(u.ci_method for u in shown_units) if m],
        "top_cases": top,
        "case_sections": _case_sections(c, spec, top),
        "trends": [t for t in c.trends if len(t.values) >= TREND_POINTS] if spec.name in ("full", "compact") else [],
        "baseline": baseline,
        "baseline_source": facts.display_source(c.baseline.source) if c.baseline else None,
        "notices": facts.notices(c, baseline),
        "spend": spend_view(c),
        "cut": list(spec.cut),
        "full_report": full_report,
        "drift_reason": facts.drift_reason(c),
        "drift_is_headline": facts.drift_repeats_headline(c, baseline),
    }


# ------------------------------------------------------------------------------------- rendering


def _size(text: str) -> int:
    return len(text.encode("utf-8"))


@functools.cache
def _builtin_template() -> jinja2.Template:
    return _environment(jinja2.FileSystemLoader(TEMPLATE_DIR)).get_template(DEFAULT_TEMPLATE)


def _load_template(template: Path | None) -> jinja2.Template:
    if template is None:
        return _builtin_template()
    path = Path(template)
    try:
        source = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise InputFileError(path, "report template not found", "check report.template or --template") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise InputFileError(path, f"cannot read the report template: {exc}") from None
    # The user's folder is searched first so their template can include its own partials;
    # ours stay reachable for {% include "report.md.j2" %}-style reuse.
    env = _environment(_ConfinedLoader([path.resolve().parent, TEMPLATE_DIR]))
    try:
        return env.from_string(source)
    except jinja2.TemplateSyntaxError as exc:
        raise InputFileError(f"{path}:{exc.lineno}", f"report template syntax error: {exc.message}") from None


def _template_line(exc: BaseException) -> int | None:
    """Line in the user's template where rendering failed (jinja maps its frames to template lines)."""
    line = getattr(exc, "lineno", None)
    tb = exc.__traceback__
    while tb is not None:
        if tb.tb_frame.f_code.co_filename == "<template>":
            line = tb.tb_lineno
        tb = tb.tb_next
    return line


def _render(tpl: jinja2.Template, context: dict[str, Any], where: Path | None) -> str:
    try:
        return tpl.render(context)
    except Exception as exc:
        if where is None:  # our own template failing is a bug to report, not the user's input
            raise
        line = _template_line(exc)
        raise InputFileError(
            f"{where}:{line}" if line else where,
            f"report template failed: {type(exc).__name__}: {exc}",
            "docs/report.md lists the variables and filters a template gets",
        ) from None


def _hard_cut(text: str, max_chars: int, full_report: str) -> str:
    """Last resort when even the headline is too big (a tiny limit or a huge reason)."""
    note = f"\n\n✂️ Cut at {max_chars:,} bytes. {escape.inline(full_report)}.\n"
    budget = max_chars - _size(note)
    if budget <= 0:
        return note.strip().encode("utf-8")[:max_chars].decode("utf-8", errors="ignore")
    head = text.encode("utf-8")[:budget].decode("utf-8", errors="ignore")
    # The headline tier has no code fence or HTML block to leave open; cutting at the last blank
    # line keeps whole paragraphs, and a first line too long for any is cut where it is.
    if "\n\n" in head:
        head = head[: head.rfind("\n\n")]
    return head + note


def options_from_config(config: SuiteConfig | None) -> dict[str, Any]:
    """The ``render_markdown``/``write_reports`` keyword arguments a suite config's ``report:``
    section sets (none without a config)."""
    if config is None:
        return {}
    options: dict[str, Any] = {"max_cases": config.report.max_cases, "excerpt_chars": config.report.excerpt_chars}
    if config.report.template:
        options["template"] = config.resolve(config.report.template)
    return options


def render_markdown(
    comparison: Comparison,
    *,
    max_chars: int | None = None,
    template: Path | None = None,
    kind: Kind = "comment",
    full_report: str = FULL_REPORT_HINT,
    max_cases: int = 20,
    excerpt_chars: int = 300,
) -> str:
    """The report at the richest tier that fits ``max_chars`` UTF-8 bytes (default per ``kind``:
    65,536 for a PR comment, 1 MiB for a step summary, unlimited for the full report file).
    ``template``: a user ``.md.j2`` file, given the same context and filters as ours."""
    limit = MAX_CHARS[kind] if max_chars is None else max_chars
    tpl = _load_template(template)
    tiers = _tiers(max_cases, excerpt_chars)

    def render(tier: Tier, case_entries: int | None = None) -> str:
        context = build_context(
            comparison,
            tier=tier.name,
            max_cases=max_cases,
            excerpt_chars=excerpt_chars,
            case_entries=case_entries,
            kind=kind,
            max_chars=limit,
            full_report=full_report,
        )
        return _render(tpl, context, template)

    text = ""
    for tier, lower in zip(tiers, [*tiers[1:], None], strict=True):
        text = render(tier)
        if limit is None or _size(text) <= limit:
            return text
        # Fewer case entries at this tier beat the next tier, until that tier would show as many.
        floor = max(1, lower.case_entries if lower is not None and lower.excerpts == tier.excerpts else 1)
        fitted = _fit_case_entries(render, tier, text, limit, floor)
        if fitted is not None:
            return fitted
    assert limit is not None  # without a limit the first tier was returned
    return _hard_cut(text, limit, full_report)


def _fit_case_entries(render: Callable[[Tier, int], str], tier: Tier, text: str, limit: int, floor: int) -> str | None:
    """Case excerpts dominate a big report: before giving up a whole tier, keep as many case
    entries as fit (estimated from the size of a render without any, then checked), but no
    fewer than ``floor``."""
    if tier.case_entries <= floor:
        return None
    bare = _size(render(tier, 0))
    if bare > limit:
        return None
    per_entry = max(1.0, (_size(text) - bare) / tier.case_entries)
    entries = max(floor, min(tier.case_entries - 1, int((limit - bare) / per_entry * 0.95)))
    while True:
        text = render(tier, entries)
        if _size(text) <= limit:
            return text
        if entries == floor:
            return None
        entries = max(floor, entries // 2)


def write_reports(
    comparison: Comparison,
    *,
    report: Path | None,
    json_path: Path | None,
    junit: Path | None = None,
    template: Path | None = None,
    max_cases: int = 20,
    excerpt_chars: int = 300,
) -> None:
    """The artifact files: the full (uncut) markdown report, ``comparison.json``, JUnit XML."""
    if report is not None:
        text = render_markdown(
            comparison, kind="full", template=template, max_cases=max_cases, excerpt_chars=excerpt_chars
        )
        atomic_write(Path(report), text.encode("utf-8"))
    if json_path is not None:
        atomic_write(Path(json_path), comparison.model_dump_json(indent=2).encode("utf-8"))
    if junit is not None:
        atomic_write(Path(junit), junit_xml(comparison).encode("utf-8"))
