"""What the baseline store keeps beside the snapshots (SPEC §7): one entry per snapshot.
Shared by the store (which writes it) and the report (which names the baseline used)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

MANIFEST_VERSION = 1


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
