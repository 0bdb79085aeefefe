"""The facts around a comparison that every report shows the same way (markdown and HTML): the
baseline used, the warnings a reader must not miss (each said once), and sources without the
paths of the machine that ran the gate (docs/spec.md#pr-comment: no machine paths)."""

from __future__ import annotations

import os
import re
from pathlib import Path, PurePath
from typing import Any

from evals.compare.model import Comparison

# compare's warnings about what the gate can detect (its MDE against target_mde).
_POWER = re.compile(r"can only detect drops|makes the gate detect smaller drops")
# An absolute POSIX or Windows path inside a sentence (a store folder, a results file).
_ABSOLUTE = re.compile(r"(?<![\w./:-])(?:/|[A-Za-z]:\\)(?:[^\s/\\'\"`,;()]+[/\\])*[^\s/\\'\"`,;()]+")


def _short_path(path: str) -> str:
    """``path`` relative to the working folder when it lies inside it, else its last two parts
    (enough to recognise a folder, nothing about the machine)."""
    try:
        relative = os.path.relpath(path)
    except ValueError:  # another drive on Windows
        relative = ".."
    if not relative.startswith(".."):
        return Path(relative).as_posix()
    parts = PurePath(path).parts[-2:]
    return "…/" + "/".join(parts)


def without_paths(text: str) -> str:
    return _ABSOLUTE.sub(lambda m: _short_path(m.group(0)), text)


def display_source(source: str | None) -> str | None:
    """A baseline source for people: ``local:/home/runner/work/x/.evalgate/baselines`` →
    ``local store .evalgate/baselines``; a results file by its name."""
    if not source:
        return None
    if source.startswith("local:"):
        return f"local store {without_paths(source[len('local:') :])}"
    return without_paths(source)


def baseline_info(c: Comparison) -> dict[str, Any] | None:
    if c.baseline is None and c.baseline_run is None:
        return None
    snap = c.baseline.snapshot if c.baseline else None
    age = snap.age_days() if snap else None
    max_age = c.gate.max_age_days
    run = c.baseline_run
    return {
        "source": display_source(c.baseline.source) if c.baseline else None,
        "sha": (snap.sha if snap else None) or (run.git_sha if run else None),
        "created_at": (snap.created_at if snap else None) or (run.ended_at if run else None),
        "age_days": age,
        "max_age_days": max_age,
        "too_old": age is not None and age > max_age,
        "verdict": snap.verdict if snap else None,
        "reason": snap.reason if snap else None,
        "actor": snap.actor if snap else None,
        "blessed": snap.blessed if snap else False,
        "legacy": c.baseline.legacy if c.baseline else False,
        "note": without_paths(c.baseline.note) if c.baseline and c.baseline.note else None,
    }


def drift_reason(c: Comparison) -> str:
    reason = c.drift.reason if c.drift else ""
    return re.sub(r"^drift guard:\s*", "", reason, flags=re.IGNORECASE)


def drift_repeats_headline(c: Comparison, baseline: dict[str, Any] | None) -> bool:
    """The drift guard compares with the blessed baseline; when that *is* the baseline the gate
    used, its failure is the headline's regression said again."""
    return bool(c.drift and baseline and c.drift.blessed_sha and c.drift.blessed_sha == baseline["sha"])


def notices(c: Comparison, baseline: dict[str, Any] | None) -> list[str]:
    """Things a reader must not miss, in plain text (escaped when rendered), each once."""
    notes = []
    run = c.candidate_run
    # A limit stop's banner already says the run stopped partway, after how many cases.
    if not run.complete and not (run.limit is not None and c.verdict == "incomplete"):
        notes.append(
            f"The candidate run is partial (status {run.status}, {run.completed_cases:,} of {run.total_cases:,} "
            "cases completed): its numbers do not describe the whole suite."
            + (f" {run.message[:1].upper()}{run.message[1:]}" if run.message and run.limit is None else "")
        )
    if baseline and baseline["too_old"]:
        notes.append(
            f"The baseline is {baseline['age_days']:.0f} days old (more than baseline.max_age_days = "
            f"{baseline['max_age_days']}): differences may come from elsewhere than this change."
        )
    if c.drift is not None and not c.drift.ok and not drift_repeats_headline(c, baseline):
        notes.append(f"Drift guard: {drift_reason(c) or 'the candidate drifted below the last blessed baseline'}.")
    if run.cases_with_infra_retries or run.infra_errors:
        text = (
            f"Infra recovery: {run.cases_with_infra_retries:,} "
            f"{'case' if run.cases_with_infra_retries == 1 else 'cases'} needed infra retries "
            f"({run.infra_retries:,} {'retry' if run.infra_retries == 1 else 'retries'})"
        )
        if run.infra_errors:
            text += f"; {run.infra_errors:,} attempts still ended in an infra error (not counted as wrong answers)"
        notes.append(text + ".")
    # compare's own warnings (partial baseline, blunt overall test, skipped drift guard, ...). What
    # a unit could not detect limits only what a pass or an inconclusive means: beside a fail it
    # reads as doubt about the drop that was found (docs/spec.md#report-consistency).
    power = c.verdict == "fail" or c.exit_code == 1
    notes.extend(without_paths(w) for w in c.warnings if not (power and _POWER.search(w)))
    return list(dict.fromkeys(notes))
