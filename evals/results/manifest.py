"""What the baseline store keeps beside the snapshots (docs/spec.md#snapshots): one entry per snapshot, and the
names of the store's files. Shared by the store (which writes it) and the report (which names the
baseline used)."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from typing import Final, Literal

from pydantic import BaseModel, ConfigDict, Field

from evals.common.errors import UsageError

MANIFEST_VERSION: Final = 1
# The store's file names (docs/baseline-store.md, "Layout").
LEGACY_NAME = "baseline.json"
MANIFEST_RE = re.compile(r"^manifest-(\d+)\.json$")
SNAPSHOT_RE = re.compile(r"^baseline-[0-9A-Za-z._-]+\.json\.gz$")


def snapshot_name(sha: str, digest: str | None = None) -> str:
    """``baseline-<sha>.json.gz``; with ``digest``, the name for a second, different snapshot of
    the same commit (a reset re-blessing it): ``baseline-<sha>-<12 hex of the digest>.json.gz``."""
    if not re.fullmatch(r"[0-9A-Za-z._-]+", sha):
        raise UsageError(
            f"commit {sha!r} cannot name a baseline snapshot: give --sha a git sha or a label of letters, "
            "digits, '.', '_' and '-'"
        )
    suffix = f"-{digest.removeprefix('sha256:')[:12]}" if digest else ""
    return f"baseline-{sha}{suffix}.json.gz"


def manifest_name(generation: int) -> str:
    return f"manifest-{generation:08d}.json"


class SnapshotInfo(BaseModel):
    model_config = ConfigDict(extra="forbid")

    sha: str = Field(description="Commit the snapshot was made from.")
    name: str = Field(description="Asset or file name, baseline-<sha>.json.gz.")
    digest: str = Field(description="sha256:<hex> of the stored (gzipped) bytes.")
    size: int | None = None
    created_at: str
    config_hash: str | None = None
    verdict: str | None = Field(default=None, description="Gate verdict that let it in (or 'reset', 'seed').")
    reason: str | None = None
    actor: str | None = None
    blessed: bool = Field(default=False, description="Set by a reset; the drift guard compares with it.")
    git_ref: str | None = None
    suite: str | None = None
    commit_date: str | None = Field(
        default=None, description="Committer date of sha (ISO 8601) when git knew it; orders commits without history."
    )

    def age_days(self, now: datetime | None = None) -> float | None:
        try:
            created = datetime.fromisoformat(self.created_at.replace("Z", "+00:00"))
        except ValueError:
            return None
        if created.tzinfo is None:
            created = created.replace(tzinfo=UTC)
        return ((now or datetime.now(UTC)) - created).total_seconds() / 86400.0


class Manifest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    manifest_version: Literal[1] = MANIFEST_VERSION
    generation: int = Field(default=0, ge=0, description="n of the manifest-<n>.json it is stored as.")
    snapshots: list[SnapshotInfo] = Field(default_factory=list, description="Oldest first.")


class BaselineRef(BaseModel):
    """The baseline a comparison used, as the report shows it."""

    model_config = ConfigDict(extra="forbid")

    source: str = Field(description='Where it came from: "local:<folder>", "github-release:<tag>", or a file path.')
    snapshot: SnapshotInfo | None = Field(default=None, description="None for a plain file or legacy baseline.json.")
    legacy: bool = False
    note: str | None = Field(default=None, description="e.g. 'nearest ancestor of the PR base that has a snapshot'.")
