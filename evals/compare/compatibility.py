"""When two runs cannot be compared meaningfully (docs/spec.md#special-verdicts): another suite,
other scorer or metric definitions, no case in common, or a full gate whose candidate lacks too
many of the baseline's cases. Each message says what differs and what fixes it: a reset, except
for another suite's baseline, where the store is what to change."""

from __future__ import annotations

import json
import os
import shlex
from collections.abc import Mapping
from typing import Any

from evals.compare.pairing import Pairing
from evals.compare.runs import Run
from evals.results.model import RunInfo
from evals.suite.options import ResetOptions, StoreOptions, reset_argv


def reset_hint(env: Mapping[str, str] = os.environ) -> str:
    """How to reset where this runs: the workflow's dispatch on GitHub, the command locally."""
    return f"a reset accepts it: {_how_to_reset(env)}"


def _how_to_reset(env: Mapping[str, str] = os.environ) -> str:
    if env.get("GITHUB_ACTIONS") == "true":
        return "run the workflow's workflow_dispatch reset with a reason"
    return '`evalgate reset --reason "..."` (on GitHub: the workflow\'s workflow_dispatch reset)'


def other_suite_hint(env: Mapping[str, str] = os.environ) -> str:
    """What fixes a baseline of another suite: a reset would only make the two suites' one store
    hold whichever ran last, so the store is what to change, unless the suite was renamed."""
    return (
        "this suite reads another suite's baseline, and a reset here would replace it: give this suite a store "
        "of its own (baseline.path for the local store, baseline.tag for a GitHub release; or --baseline-dir, "
        f"--baseline-tag), or if this suite was renamed, bless its first run on purpose: {_how_to_reset(env)}"
    )


def reset_command(
    results: str | os.PathLike[str],
    *,
    config: str | None = None,
    sha: str | None = None,
    store: StoreOptions | None = None,
) -> str:
    """The command that blesses the very results file a comparison just read, with the config
    (when there is a file) and store it was read with, so the first baseline costs no second run."""
    options = ResetOptions(
        config=config or ResetOptions.model_fields["config"].default,
        results=str(results),
        reason="first baseline",
        sha=sha,
        store=store or StoreOptions(),
    )
    return shlex.join(["evalgate", "reset", *reset_argv(options, always=("config",) if config else ())])


def first_baseline_hint(reset_command: str | None = None, env: Mapping[str, str] = os.environ) -> str:
    """What makes the first baseline, where this runs: ``reset_command`` is the exact command that
    blesses this very run, when the caller knows it (the files and flags it was given)."""
    if env.get("GITHUB_ACTIONS") == "true":
        return "a push to the default branch with baseline.on_missing: seed, or the workflow's reset, stores one"
    command = reset_command or 'evalgate reset --reason "first baseline"'
    return f"store this run as the baseline with `{command}`, or set baseline.on_missing: seed (or `gate --seed`)"


def incompatibility(
    baseline: Run, candidate: Run, pairing: Pairing, *, max_removed_share: float, baseline_cases: int
) -> str | None:
    """Why ``candidate`` cannot be gated against ``baseline``, or None when it can."""
    c = candidate.run
    if why := definitions_incompatibility(baseline.run, c.suite, c.config_hash, c.definitions):
        return why
    if pairing.base_rows.size == 0 and not pairing.errored:
        changed = f" ({len(pairing.changed)} share an id but changed input or expected)" if pairing.changed else ""
        return (
            f"no case in common: the baseline's {baseline_cases} cases and the candidate's {len(candidate.cases)} "
            f"pair on none{changed}; {reset_hint()}"
        )
    removed = len(pairing.removed)
    if baseline_cases and removed / baseline_cases > max_removed_share:
        return (
            f"the candidate lacks {removed} of the baseline's {baseline_cases} cases "
            f"({removed / baseline_cases:.0%}, above gate.max_removed_share {max_removed_share:.0%}): a full gate "
            f"on {baseline_cases - removed} of them says little about the suite; run the whole suite, or if the "
            f"cases were removed on purpose, {reset_hint()}"
        )
    return None


def definitions_incompatibility(
    baseline: RunInfo, suite: str, config_hash: str | None, definitions: dict[str, Any] | None
) -> str | None:
    """The part of :func:`incompatibility` a candidate's config already decides: another suite, or
    other scorer/metric definitions. The gate asks it before running the suite too, so a paid
    model is not run on every case only to be told ``incompatible``."""
    b = baseline
    if b.suite != suite:
        return f"the baseline is a run of suite {b.suite!r}, the candidate of suite {suite!r}; {other_suite_hint()}"
    if b.config_hash and config_hash and b.config_hash != config_hash:
        changed = definition_changes(b.definitions, definitions)
        hashes = f"config_hash {b.config_hash} → {config_hash}"
        what = "; ".join(changed) if b.definitions and definitions and changed else "; ".join([*changed, hashes])
        return f"scorer/metric definitions differ, so the scores do not mean the same thing ({what}); {reset_hint()}"
    return None


def definition_changes(before: dict[str, Any] | None, after: dict[str, Any] | None) -> list[str]:
    """What changed between two runs' recorded definitions (``SuiteConfig.definitions``)."""
    if before is None or after is None:
        side = "baseline" if before is None else "candidate"
        return (
            [f"the {side} run does not record its scorer definitions (an older evalgate wrote it)"]
            if (before or after)
            else []
        )
    out = []
    old = {s.get("name"): s for s in before.get("scorers", [])}
    new = {s.get("name"): s for s in after.get("scorers", [])}
    out += [f"scorer {name!r} removed" for name in old if name not in new]
    out += [f"scorer {name!r} added" for name in new if name not in old]
    out += [
        f"scorer {name!r} changed from {_short(old[name])} to {_short(new[name])}"
        for name in old
        if name in new and old[name] != new[name]
    ]
    if not out and list(old) != list(new):
        out.append(f"scorer order changed: {list(old)} → {list(new)}")
    b_dir, c_dir = before.get("directions", {}), after.get("directions", {})
    for metric in sorted(set(b_dir) | set(c_dir)):
        if b_dir.get(metric) != c_dir.get(metric):
            out.append(f"direction of {metric!r}: {b_dir.get(metric, 'default')} → {c_dir.get(metric, 'default')}")
    return out


def judge_change(before: dict[str, Any] | None, after: dict[str, Any] | None) -> list[str] | None:
    """How the judge changed (``model: a → b``, ``rubric edited``), when the two recorded
    definitions differ in the built-in ``judge`` scorer's parameters and in nothing else (the
    same scorers in the same order, the same metric directions); None when they are equal or anything else differs."""
    if not before or not after or before.get("directions", {}) != after.get("directions", {}):
        return None
    old, new = before.get("scorers", []), after.get("scorers", [])
    if len(old) != len(new):
        return None
    changes: list[str] = []
    for a, b in zip(old, new, strict=True):
        if a == b:
            continue
        if not all(s.get("name") == "judge" and s.get("python") is None for s in (a, b)):
            return None
        pa, pb = a.get("params") or {}, b.get("params") or {}
        for key in sorted(set(pa) | set(pb)):
            if pa.get(key) != pb.get(key):
                # A rubric is prose: that it changed is the news, not its two texts side by side.
                long = key == "rubric" or any(len(str(v)) > 60 for v in (pa.get(key), pb.get(key)))
                changes.append(
                    f"{key} edited" if long else f"{key}: {pa.get(key, 'default')} → {pb.get(key, 'default')}"
                )
    return changes or None


def _short(spec: Mapping[str, Any]) -> str:
    shown = {k: v for k, v in spec.items() if v not in (None, {}, [])}
    return json.dumps(shown, sort_keys=True, ensure_ascii=False)[:200]
