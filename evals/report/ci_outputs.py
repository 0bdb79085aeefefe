"""The comparison for machines: GitHub workflow-command annotations and JUnit XML, saying what
the PR comment says (docs/spec.md#pr-comment)."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from typing import Any

from evals.common import escape
from evals.compare.model import Comparison, UnitResult
from evals.report.filters import fmt_ci, fmt_delta, fmt_value, unit_order


def _unit_sentence(u: UnitResult) -> str:
    return (
        f"{u.metric} on {u.unit}: {fmt_value(u.baseline, u.metric)} → {fmt_value(u.candidate, u.metric)} "
        f"(Δ {fmt_delta(u.delta, u.metric)}, CI {fmt_ci(u)}, n={u.n}, {u.method or 'no test'}, "
        f"{'blocking' if u.blocking else 'advisory'})"
    )


def annotation_lines(comparison: Comparison) -> list[str]:
    """GitHub workflow-command lines: an error per blocking regressed unit, a warning per advisory
    one, and one line for a verdict that is not a plain pass. Escaped per GitHub's rules."""
    c = comparison
    lines = []

    def command(level: str, title: str, message: str) -> str:
        return f"::{level} title={escape.workflow_property(title)}::{escape.workflow_data(message)}"

    for u in sorted(c.regressed, key=unit_order):
        level = "error" if u.blocking and u.gated else "warning"
        lines.append(command(level, f"evalgate: {u.metric} regressed on {u.unit}", _unit_sentence(u)))
    if c.verdict != "pass":
        level = "error" if c.exit_code != 0 else "warning"
        lines.append(command(level, f"evalgate: {c.verdict}", escape.strip_controls(c.reason)))
    return lines


def _xml_text(value: Any) -> str:
    return escape.strip_controls(escape.to_text(value))


def junit_xml(comparison: Comparison) -> str:
    """One test case per unit and metric; regressed units are failures (blocking) or skipped
    with a message (advisory), so CI dashboards show the same thing as the PR comment."""
    c = comparison
    suite = ET.Element(
        "testsuite",
        name=_xml_text(f"evalgate {c.candidate_run.suite}"),
        tests=str(len(c.units)),
        failures=str(len(c.failing_units)),
        errors="0",
    )
    for u in c.units:
        case = ET.SubElement(suite, "testcase", classname=_xml_text(u.unit), name=_xml_text(u.metric))
        if u.verdict == "regressed" and u.blocking and u.gated:
            ET.SubElement(case, "failure", message=_xml_text(_unit_sentence(u)), type="regressed")
        elif u.verdict == "regressed":
            ET.SubElement(case, "skipped", message=_xml_text("advisory regression: " + _unit_sentence(u)))
    if c.verdict in ("incomplete", "incompatible", "no-baseline"):
        case = ET.SubElement(suite, "testcase", classname="gate", name=c.verdict)
        tag = "error" if c.exit_code != 0 else "skipped"
        ET.SubElement(case, tag, message=_xml_text(c.reason))
    return ET.tostring(suite, encoding="unicode", xml_declaration=True) + "\n"
