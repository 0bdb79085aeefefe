"""The baseline store (docs/spec.md#baseline-store): immutable snapshots named by commit, a versioned manifest, and
the rules for which baseline a gate uses and when a candidate may replace it.

One store, two places, the same layout (docs/baseline-store.md):

    baseline-<sha>.json.gz        gzip (mtime=0) of the results JSON; never rewritten
    manifest-<n>.json             the manifest, generation n; the highest valid n is current
    baseline.json                 legacy seed layout, read only when no manifest exists

``LocalStore`` keeps them in a folder, ``GitHubReleaseStore`` as assets of a release. Every rule
lives in ``BaselineStore``; the two differ only in a small blob backend (list, read, exclusive
create, delete). Writers add and read back a snapshot first, then publish ``manifest-<n+1>.json``
with an exclusive create (``os.link`` / an upload that fails on a name clash): there is never a
moment without a valid baseline, and a concurrent writer is detected and retried, never overwritten.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING

from pydantic import ValidationError

from evals.common.errors import InfraError, InputFileError, UsageError
from evals.common.escape import log_value
from evals.results import console
from evals.results.files import parse_results
from evals.results.inflate import gunzip
from evals.results.manifest import LEGACY_NAME, MANIFEST_RE, BaselineRef, Manifest, SnapshotInfo
from evals.results.masking import mask_names
from evals.results.model import Results
from evals.store import ancestry
from evals.store.blobs import Blob, BlobGone, Blobs, FolderBlobs
from evals.store.releases import ReleaseBlobs
from evals.store.snapshot_order import parse_time
from evals.store.write import StoreState, StoreWriter, sha256_digest
from evals.suite.config import SuiteConfig

if TYPE_CHECKING:
    from evals.github.client import GitHubClient

PROMOTABLE_VERDICTS = ("pass", "inconclusive")
MANIFESTS_KEPT = 3  # current + 2 earlier generations: readers fall back to them if the newest is damaged
WRITE_ATTEMPTS = 8  # manifest publications lost to concurrent writers before giving up
READ_ATTEMPTS = 3  # re-lists when a listed blob vanished (pruned by a concurrent writer) before it was read


def promotion_allowed(comparison_verdict: str, drift_ok: bool) -> tuple[bool, str]:
    """The promotion rule (docs/spec.md#promotion) in one place: a full gate's candidate may become the baseline when
    the verdict is ``pass`` or ``inconclusive`` and the drift guard against the blessed baseline
    holds; never on ``fail``, ``incomplete``, ``incompatible`` (or ``no-baseline``, which is seeded
    by ``on_missing: seed`` or a reset, not by promotion). Returns (allowed, one-line reason)."""
    if comparison_verdict not in PROMOTABLE_VERDICTS:
        return False, f"verdict {comparison_verdict!r} is never promoted (only {' or '.join(PROMOTABLE_VERDICTS)})"
    if not drift_ok:
        return False, (
            f"verdict {comparison_verdict!r}, but the drift guard failed: the candidate is significantly worse "
            "than the last blessed baseline (a reset re-blesses after a deliberate change)"
        )
    return True, f"verdict {comparison_verdict!r} and the drift guard holds"


@dataclass
class LoadedBaseline:
    """A snapshot read from the store and verified against its digest."""

    results: Results
    ref: BaselineRef
    warnings: list[str] = field(default_factory=list)  # e.g. fell back past a corrupt snapshot; shallow history


class StoreCorrupt(InfraError):
    """The store holds data that fails verification and nothing valid to fall back to (exit 3:
    the user's files are fine; a reset writes a fresh baseline)."""


# ---------------------------------------------------------------------------------------- store


class BaselineStore(StoreWriter):
    """The store interface. ``LocalStore`` and ``GitHubReleaseStore`` differ only in where the
    named blobs live; every rule (layout, update protocol, choice, promotion, pruning) is here.

    ``repo`` is the git checkout used for ancestry (baseline choice and the promotion rule);
    ``None`` or a missing/shallow history degrades as documented in ``select`` and ``promote``.
    ``in_actions``: the writer runs inside GitHub Actions, where a missing history is fixed by the
    checkout (never by ordering runs by time) and checkouts are clean.
    ``grace`` keeps unreferenced snapshots younger than it (a concurrent writer's snapshot that
    its manifest does not name yet); ``settle_s`` is how long a writer waits for a newer manifest
    that is still being uploaded before treating it as debris."""

    source: str  # "local:<folder>" | "github-release:<tag>", shown in reports (BaselineRef.source)
    folder: Path | None = None

    def __init__(
        self,
        blobs: Blobs,
        source: str,
        *,
        keep: int = 20,
        repo: Path | None = None,
        grace: timedelta = timedelta(hours=1),
        settle_s: float = 2.0,
        in_actions: bool = False,
    ):
        if keep < 1:
            raise UsageError(f"baseline.keep must be at least 1, got {keep}")
        self._blobs = blobs
        self.source = source
        self.keep = keep
        self.repo = repo
        self.grace = grace
        self.settle_s = settle_s
        self.in_actions = in_actions
        # Manifest files are write-once, so a parsed one can be reused by (name, size, created).
        self._manifests: dict[tuple[str, int | None, datetime | None], Manifest] = {}

    # ---------------------------------------------------------------------------- reading

    def _read_state(self) -> StoreState:
        """List the blobs and find the current manifest: the highest generation that parses.
        Damaged newer generations (bad content, an unfinished upload) are skipped with a warning;
        a manifest that cannot be downloaded is ``InfraError``, never skipped: a reader would
        silently gate on an older baseline, and a writer building on an older generation would
        drop the newer one's entry."""
        for _ in range(READ_ATTEMPTS):
            blobs = self._blobs.list()
            gens = sorted(
                ((int(m.group(1)), blob) for name, blob in blobs.items() if (m := MANIFEST_RE.match(name))),
                key=lambda pair: pair[0],
                reverse=True,
            )
            warnings: list[str] = []
            try:
                for generation, blob in gens:
                    manifest, problem = self._read_manifest(blob, generation)
                    if manifest is not None:
                        return StoreState(blobs, manifest, generation, gens[0][0], warnings, blobs.get(LEGACY_NAME))
                    warnings.append(f"{self._blobs.where}: skipped {blob.name}: {problem}")
            except BlobGone:
                continue  # pruned while we looked: list again
            top = gens[0][0] if gens else 0
            return StoreState(blobs, Manifest(), 0, top, warnings, blobs.get(LEGACY_NAME), damaged=bool(gens))
        raise InfraError(f"baseline store {self._blobs.where}: manifests kept disappearing while being read; retry")

    def _readable_state(self) -> StoreState:
        """The state for readers: a store whose manifests are all damaged is ``StoreCorrupt``,
        never "empty" (that would pass every gate as no-baseline)."""
        state = self._read_state()
        if state.damaged:
            raise StoreCorrupt(
                f"baseline store {self._blobs.where}: no manifest is readable: {'; '.join(state.warnings)} "
                "(run a reset to write a fresh one)"
            )
        return state

    def _read_manifest(self, blob: Blob, generation: int) -> tuple[Manifest | None, str]:
        if not blob.complete:
            return None, "its upload never finished"
        key = (blob.name, blob.size, blob.created)
        if key in self._manifests:
            return self._manifests[key], ""
        raw = self._blobs.read(blob)
        try:
            manifest = Manifest.model_validate_json(raw)
        except ValidationError as exc:
            first = exc.errors(include_url=False)[0]
            return None, f"not a valid manifest ({'.'.join(map(str, first['loc'])) or 'top level'}: {first['msg']})"
        if manifest.generation != generation:
            return None, f"it says generation {manifest.generation}, its name says {generation}"
        self._manifests[key] = manifest
        return manifest, ""

    def list(self) -> Manifest:
        """The current manifest (highest valid generation), oldest snapshot first. An empty
        manifest when the store holds nothing (or only a legacy ``baseline.json``)."""
        state = self._read_state()
        for warning in state.warnings:
            console.info(f"baseline store: {log_value(warning, limit=None)}")
        return state.manifest

    def _decode(self, name: str, raw: bytes, digest: str | None) -> Results:
        where = f"{self.source}/{name}"
        if digest is not None and sha256_digest(raw) != digest:
            raise InputFileError(
                where,
                f"digest mismatch: the stored bytes hash to {sha256_digest(raw)}, the manifest says {digest}",
                "the snapshot is corrupt; it is not used",
            )
        if raw[:2] == b"\x1f\x8b":
            raw = gunzip(raw, where)
        # A snapshot an older evalgate stored holds its case ids as written: masked as they are
        # read, they pair with a candidate's (docs/spec.md#masked-names) and show no secret.
        return mask_names(parse_results(raw, where))

    def load(self, info: SnapshotInfo, *, state: StoreState | None = None) -> LoadedBaseline:
        """Read one snapshot and verify its digest. A missing snapshot, a mismatch or an unreadable
        body is an ``InputFileError`` naming the snapshot (never unverified data); an unreachable
        store is an ``InfraError``."""
        for _ in range(READ_ATTEMPTS):
            blobs = state.blobs if state is not None else self._blobs.list()
            blob = blobs.get(info.name)
            if blob is None and state is not None:
                state = None  # the listing may predate its upload: look again
                continue
            if blob is None:
                raise InputFileError(
                    f"{self.source}/{info.name}", "the manifest names it but the store has no such file"
                )
            try:
                raw = self._blobs.read(blob)
            except BlobGone:
                state = None
                continue
            results = self._decode(info.name, raw, info.digest)
            return LoadedBaseline(results, BaselineRef(source=self.source, snapshot=info))
        raise InputFileError(f"{self.source}/{info.name}", "the snapshot disappeared while being read")

    def _load_first(
        self, state: StoreState, entries: Sequence[SnapshotInfo], note: str | None
    ) -> LoadedBaseline | None:
        """The first of ``entries`` that verifies; each one that does not is a warning. All failing
        is ``StoreCorrupt``: falling back further would silently gate on something else."""
        problems: list[str] = []
        for index, info in enumerate(entries):
            try:
                loaded = self.load(info, state=state)
            except InputFileError as exc:
                problems.append(str(exc))
                continue
            loaded.ref.note = note if index == 0 else f"{note or 'snapshot'}; fell back past {index} corrupt one(s)"
            loaded.warnings = [*state.warnings, *(f"skipped corrupt baseline snapshot: {p}" for p in problems)]
            return loaded
        if problems:
            raise StoreCorrupt(
                f"baseline store {self._blobs.where}: no snapshot passes verification: {'; '.join(problems)} "
                "(run a reset to store a fresh baseline)"
            )
        return None

    def _load_legacy(self, state: StoreState) -> LoadedBaseline | None:
        if state.legacy is None:
            return None
        try:
            raw = self._blobs.read(state.legacy)
        except BlobGone:
            return None
        results = self._decode(LEGACY_NAME, raw, None)
        ref = BaselineRef(
            source=self.source, legacy=True, note="legacy baseline.json (no manifest yet; the next promotion adds one)"
        )
        return LoadedBaseline(results, ref, [*state.warnings, f"using the legacy {LEGACY_NAME} of {self.source}"])

    def latest(self) -> LoadedBaseline | None:
        """The newest snapshot (main's baseline). Falls back to the previous entry, with a warning,
        when the newest fails verification; the legacy ``baseline.json`` when there is no manifest;
        None when the store is empty. ``InfraError`` when the store is unreachable after retries,
        ``StoreCorrupt`` when no snapshot verifies."""
        state = self._readable_state()
        if not state.manifest.snapshots:
            return self._load_legacy(state)
        return self._load_first(state, state.manifest.snapshots[::-1], "latest snapshot")

    def select(
        self,
        *,
        base_sha: str | None,
        ancestors: Sequence[str] | None = None,
        history_complete: bool = True,
    ) -> LoadedBaseline | None:
        """The baseline for a PR: the snapshot of ``base_sha`` or of its nearest ancestor that has
        one. ``ancestors`` lists commits nearest first (``base_sha`` may be its first element);
        when None, they are read from ``self.repo`` with ``evals.store.ancestry.ancestors``.
        When no ancestor has a snapshot (shallow clone, history cut off), falls back to the latest
        snapshot of a commit not newer than the base commit if git knows its date, else the latest;
        the fallback is named in ``ref.note`` and in ``warnings``. ``base_sha=None`` → ``latest()``."""
        if base_sha is None:
            return self.latest()
        state = self._readable_state()
        entries = state.manifest.snapshots
        if not entries:
            return self._load_legacy(state)
        walk_warning = None
        if ancestors is None:
            walk = ancestry.ancestors(base_sha, repo=self.repo)
            ancestors, history_complete, walk_warning = walk.shas, walk.complete, walk.warning
        by_sha: dict[str, list[SnapshotInfo]] = {}
        for info in entries:
            by_sha.setdefault(info.sha.lower(), []).insert(0, info)  # newest snapshot of a commit first
        chain = [base_sha.lower(), *(s.lower() for s in ancestors if s.lower() != base_sha.lower())]
        matched: list[SnapshotInfo] = []
        first_distance = None
        for distance, sha in enumerate(chain):
            if sha in by_sha:
                first_distance = distance if first_distance is None else first_distance
                matched.extend(by_sha[sha])
        if matched:
            note = (
                "snapshot of the PR base commit"
                if first_distance == 0
                else f"nearest ancestor of the PR base with a snapshot ({first_distance} commit(s) back)"
            )
            return self._load_first(state, matched, note)
        return self._select_fallback(state, base_sha, history_complete, walk_warning)

    def _select_fallback(
        self, state: StoreState, base_sha: str, history_complete: bool, walk_warning: str | None
    ) -> LoadedBaseline | None:
        why = (
            f"no ancestor of the PR base {base_sha[:12]} has a snapshot"
            if history_complete
            else f"the history of the PR base {base_sha[:12]} is not available ({walk_warning or 'incomplete'})"
        )
        entries = state.manifest.snapshots
        base_date = ancestry.commit_date(base_sha, repo=self.repo)
        if base_date is not None:
            older = [
                e for e in entries if (d := parse_time(e.commit_date or e.created_at)) is not None and d <= base_date
            ]
            if older:
                loaded = self._load_first(state, older[::-1], f"latest snapshot not newer than the PR base ({why})")
                if loaded is not None:
                    loaded.warnings.append(f"{why}; using the latest snapshot of a commit not newer than the base")
                return loaded
        loaded = self._load_first(state, entries[::-1], f"latest snapshot ({why})")
        if loaded is not None:
            loaded.warnings.append(f"{why}; using the latest snapshot")
        return loaded

    def blessed(self) -> LoadedBaseline | None:
        """The last blessed snapshot (set by a reset), for the drift guard; None if none."""
        state = self._readable_state()
        return self._load_first(
            state, [e for e in state.manifest.snapshots if e.blessed][::-1], "last blessed snapshot"
        )


class LocalStore(BaselineStore):
    """The store in a folder (default outside GitHub Actions; ``baseline.path`` relative to the
    config file). Exclusive creates use ``os.link`` so two processes cannot both win a name."""

    def __init__(
        self,
        folder: Path,
        *,
        keep: int = 20,
        repo: Path | None = None,
        grace: timedelta = timedelta(hours=1),
        settle_s: float = 2.0,
        in_actions: bool = False,
    ):
        self.folder = Path(folder)
        super().__init__(
            FolderBlobs(self.folder),
            f"local:{self.folder}",
            keep=keep,
            repo=repo,
            grace=grace,
            settle_s=settle_s,
            in_actions=in_actions,
        )


class GitHubReleaseStore(BaselineStore):
    """The store as assets of release ``tag`` (created, as a prerelease that never becomes the
    repository's latest release, on the first write). All HTTP goes through
    ``evals.github.client.GitHubClient`` (retries, redirects without the token, typed errors)."""

    def __init__(
        self,
        client: GitHubClient,
        *,
        tag: str = "eval-baseline",
        keep: int = 20,
        repo: Path | None = None,
        grace: timedelta = timedelta(hours=1),
        settle_s: float = 2.0,
        in_actions: bool = False,
    ):
        self.client = client
        self.tag = tag
        super().__init__(
            ReleaseBlobs(client, tag),
            f"github-release:{tag}",
            keep=keep,
            repo=repo,
            grace=grace,
            settle_s=settle_s,
            in_actions=in_actions,
        )


def open_store(
    config: SuiteConfig,
    *,
    env: Mapping[str, str] = os.environ,
    client: GitHubClient | None = None,
    repo: Path | None = None,
) -> BaselineStore:
    """The store ``config.baseline`` names: ``store`` if set, else ``github-release`` inside GitHub
    Actions (``GITHUB_ACTIONS=true``) and ``local`` elsewhere. ``client`` defaults to one built
    from ``env`` (GITHUB_TOKEN or GH_TOKEN, GITHUB_API_URL, GITHUB_REPOSITORY). ``repo`` (the git
    checkout for ancestry) defaults to ``config.root``."""
    spec = config.baseline
    repo = config.root if repo is None else repo
    in_actions = env.get("GITHUB_ACTIONS") == "true"
    kind = spec.store or ("github-release" if in_actions else "local")
    if kind == "local":
        return LocalStore(config.resolve(spec.path), keep=spec.keep, repo=repo, in_actions=in_actions)
    if client is None:
        from evals.github.client import GitHubClient

        token = env.get("GITHUB_TOKEN") or env.get("GH_TOKEN")
        if not token:
            raise UsageError(
                "the github-release baseline store needs a token: pass the action's github-token input "
                "or set GITHUB_TOKEN (or use `baseline: {store: local}`)"
            )
        client = GitHubClient(token, env=env)
    return GitHubReleaseStore(client, tag=spec.tag, keep=spec.keep, repo=repo, in_actions=in_actions)
