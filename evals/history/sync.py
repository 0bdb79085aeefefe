"""``evalgate history sync``: the baseline store's snapshots are the history of the default
branch (docs/spec.md#history-sync). Every manifest entry becomes a run (its snapshot, digest-verified) and a
``promote``, ``seed`` or ``reset`` row with the entry's verdict, reason, actor and time. Entries
already recorded — by the gate that promoted them, or an earlier sync — are left alone, so a sync
can run after every push."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from evals.history.record import Writer
from evals.history.rows import run_digest

if TYPE_CHECKING:
    from evals.results.manifest import SnapshotInfo
    from evals.store.baseline import BaselineStore


@dataclass
class SyncReport:
    snapshots: int = 0
    added_runs: int = 0
    added_actions: int = 0
    problems: list[str] = field(default_factory=list)


def action_of(verdict: str | None) -> str:
    return {"reset": "reset", "seed": "seed"}.get(verdict or "", "promote")


def sync_store(writer: Writer, store: BaselineStore, *, last: int | None = None) -> SyncReport:
    """Load every snapshot of ``store``'s manifest (or its ``last`` newest) into the history. A
    snapshot that fails verification is reported and skipped; the others still load."""
    from evals.common.errors import InputFileError

    report = SyncReport()
    snapshots = store.list().snapshots
    for info in snapshots[-last:] if last else snapshots:
        report.snapshots += 1
        try:
            loaded = store.load(info)
        except InputFileError as exc:
            report.problems.append(str(exc))
            continue
        digest = run_digest(loaded.results)
        before = writer.run_id(digest)
        run_id = writer.run(loaded.results, recorded_by="sync", digest=digest)
        report.added_runs += before is None
        report.added_actions += record_entry(writer, loaded.results.run.suite, run_id, info) is not None
    return report


def record_entry(writer: Writer, suite: str, run_id: int, info: SnapshotInfo) -> int | None:
    """A manifest entry as its ``promote``, ``seed`` or ``reset`` row, once (None: there already)."""
    action = action_of(info.verdict)
    return writer.gate(
        action,
        suite=suite,
        candidate_run=run_id,
        candidate_sha=info.sha,
        verdict=info.verdict,
        reason=None if action == "reset" else info.reason,
        actor=info.actor,
        reset_reason=info.reason if action == "reset" else None,
        blessed=info.blessed,
        snapshot=info,
        created_at=info.created_at,
    )
