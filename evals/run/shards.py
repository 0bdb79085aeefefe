"""Sharding (docs/spec.md#sharding): a case's shard comes from a stable hash of its id, never its position, so
adding a case moves no other case to another shard and every matrix job agrees without talking;
and joining the shards of one run back into one (``evalgate merge``)."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Sequence
from typing import Any

from evals.common.errors import UsageError
from evals.results.model import Results, RunInfo, RunStatus


def parse_shard(text: str, where: str = "--shard") -> tuple[int, int]:
    """``"i/N"`` → ``(i, N)`` with 1 <= i <= N."""
    match = re.fullmatch(r"\s*(\d+)\s*/\s*(\d+)\s*", text or "")
    if not match:
        raise UsageError(f"{where}: expected i/N (e.g. 2/4), got {text!r}")
    index, count = int(match[1]), int(match[2])
    if not 1 <= index <= count:
        raise UsageError(f"{where}: shard {index}/{count} is out of range: i goes from 1 to N")
    return index, count


def shard_of(case_id: str, count: int) -> int:
    """The 1-based shard of a case among ``count``."""
    digest = hashlib.sha256(case_id.encode("utf-8")).digest()
    return int.from_bytes(digest[:8], "big") % count + 1


# The status a merged run gets when its parts disagree: the one that explains the most.
_STATUS_ORDER: tuple[RunStatus, ...] = ("error", "timeout", "cancelled", "running", "pending", "success")


def _one(parts: Sequence[Results], names: Sequence[str], what: str, get: Callable[[RunInfo], Any]) -> Any:
    values: dict[str, list[str]] = {}
    for part, name in zip(parts, names, strict=True):
        values.setdefault(repr(get(part.run)), []).append(name)
    if len(values) > 1:
        listing = "; ".join(f"{value} in {', '.join(files)}" for value, files in values.items())
        raise UsageError(f"cannot merge: the parts have different {what}: {listing}")
    return get(parts[0].run)


def merge_results(parts: list[Results], names: list[str]) -> Results:
    """One run from its shards. UsageError (exit 2) naming the files when they do not fit together."""
    if not parts:
        raise UsageError("merge: no parts given")
    for part, name in zip(parts, names, strict=True):
        if not part.run.shard:
            raise UsageError(f"cannot merge {name}: it is not a shard (run.shard is empty); run with --shard I/N")
    positions = [parse_shard(p.run.shard or "", f"{name}: run.shard") for p, name in zip(parts, names, strict=True)]
    count = _one(parts, names, "shard counts (N in run.shard I/N)", lambda r: parse_shard(r.shard or "")[1])
    shards: dict[int, str] = {}
    for (index, _), name in zip(positions, names, strict=True):
        if index in shards:
            raise UsageError(f"cannot merge: {shards[index]} and {name} are both shard {index}/{count}")
        shards[index] = name
    missing = [i for i in range(1, count + 1) if i not in shards]
    if missing:
        raise UsageError(
            f"cannot merge: shard(s) {', '.join(f'{i}/{count}' for i in missing)} missing "
            f"(given: {', '.join(f'{name} = {i}/{count}' for i, name in sorted(shards.items()))})"
        )
    suite = _one(parts, names, "suites", lambda r: r.suite)
    config_hash = _one(parts, names, "config hashes (scorers/metrics differ)", lambda r: r.config_hash)
    _one(parts, names, "targets", lambda r: (r.target.kind, r.target.model) if r.target else None)
    _one(parts, names, "attempts per case", lambda r: r.attempts_per_case)
    _one(parts, names, "subsets (smoke or not)", lambda r: r.subset)
    git_sha = _one(parts, names, "git commits", lambda r: r.git_sha)
    owner: dict[str, str] = {}
    for part, name in zip(parts, names, strict=True):
        for case in part.cases:
            if case.id in owner:
                raise UsageError(f"cannot merge: case {case.id!r} is in both {owner[case.id]} and {name}")
            owner[case.id] = name

    statuses = {p.run.status for p in parts}
    status = next(s for s in _STATUS_ORDER if s in statuses)
    messages = [
        f"{name}: {p.run.message or p.run.status}"
        for p, name in zip(parts, names, strict=True)
        if p.run.status != "success"
    ]
    first = parts[0].run
    params: dict[str, Any] = dict(first.target.params) if first.target else {}
    fingerprints = sorted(
        {fp for p in parts if p.run.target for fp in p.run.target.params.get("system_fingerprint", [])}
    )
    if fingerprints:
        params["system_fingerprint"] = fingerprints
    started = [p.run.started_at for p in parts if p.run.started_at]
    ended = [p.run.ended_at for p in parts if p.run.ended_at]
    run = RunInfo(
        suite=suite,
        status=status,
        total_cases=sum(p.run.total_cases for p in parts),
        completed_cases=sum(p.run.completed_cases for p in parts),
        started_at=min(started) if started else None,
        ended_at=max(ended) if ended and len(ended) == len(parts) else None,
        git_sha=git_sha,
        git_ref=first.git_ref,
        git_dirty=True if any(p.run.git_dirty for p in parts) else first.git_dirty,
        config_hash=config_hash,
        definitions=first.definitions,
        gate_settings=first.gate_settings,
        target=first.target.model_copy(update={"params": params}) if first.target else None,
        attempts_per_case=first.attempts_per_case,
        subset=first.subset,
        message="; ".join(messages) or None,
        evalgate_version=first.evalgate_version,
    )
    cases = sorted((c for p in parts for c in p.cases), key=lambda c: c.id)
    return Results(run=run, cases=cases)
