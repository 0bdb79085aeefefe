"""``evalgate merge PART... -o OUT``: join the shards of one run (SPEC §4).

The parts must be the shards 1..N of one N (each file's ``run.shard`` says which), of one suite,
one config hash, one target, one commit, and hold disjoint case ids; anything else is exit 2
naming the files. The merged run is ``success`` only if every part is; otherwise it carries the
worst part's status, and ``merge`` exits 3 like an incomplete ``run``."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from evals.errors import EXIT_INFRA, EXIT_PASS, UsageError
from evals.results import Results, RunInfo, RunStatus, load_results, save_results
from evals.shards import parse_shard

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
        config_hash=config_hash,
        definitions=first.definitions,
        target=first.target.model_copy(update={"params": params}) if first.target else None,
        attempts_per_case=first.attempts_per_case,
        subset=first.subset,
        message="; ".join(messages) or None,
        evalgate_version=first.evalgate_version,
    )
    cases = sorted((c for p in parts for c in p.cases), key=lambda c: c.id)
    return Results(run=run, cases=cases)


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("parts", nargs="+", metavar="PART", help="shard results files (from run --shard I/N)")
    parser.add_argument("-o", "--output", required=True, help="merged results file (.json or .json.gz)")


def main(args: argparse.Namespace) -> int:
    parts = [load_results(p) for p in args.parts]
    merged = merge_results(parts, list(args.parts))
    save_results(merged, Path(args.output))
    run = merged.run
    print(
        f"evalgate merge: {len(parts)} shards -> {args.output}: {run.status}, "
        f"{run.completed_cases}/{run.total_cases} cases complete",
        file=sys.stderr,
    )
    return EXIT_PASS if run.is_complete else EXIT_INFRA


if __name__ == "__main__":
    from evals.cli import module_main

    raise SystemExit(module_main("merge"))
