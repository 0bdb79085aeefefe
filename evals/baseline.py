"""The baseline store (SPEC §7): immutable snapshots named by commit, a versioned manifest, and
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

import gzip
import hashlib
import os
import random
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING

from pydantic import ValidationError

from evals import ancestry
from evals.blobs import Blob, BlobGone, Blobs, FolderBlobs, NameTaken
from evals.config import SuiteConfig
from evals.errors import InfraError, InputFileError, UsageError
from evals.escape import log_value
from evals.manifest import (
    LEGACY_NAME,
    MANIFEST_RE,
    SNAPSHOT_RE,
    BaselineRef,
    Manifest,
    SnapshotInfo,
    manifest_name,
    snapshot_name,
)
from evals.release_blobs import ReleaseBlobs
from evals.results import Results, dump_results, gunzip, parse_results

if TYPE_CHECKING:
    from evals.github import GitHubClient

PROMOTABLE_VERDICTS = ("pass", "inconclusive")
MANIFESTS_KEPT = 3  # current + 2 earlier generations: readers fall back to them if the newest is damaged
WRITE_ATTEMPTS = 8  # manifest publications lost to concurrent writers before giving up
READ_ATTEMPTS = 3  # re-lists when a listed blob vanished (pruned by a concurrent writer) before it was read


def promotion_allowed(comparison_verdict: str, drift_ok: bool) -> tuple[bool, str]:
    """SPEC §7's promotion rule in one place: a full gate's candidate may become the baseline when
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


@dataclass
class _Stored:
    """Where ``promote`` put the snapshot: its name, and the digest and size of the bytes there."""

    name: str
    digest: str
    size: int
    adopted: bool = False  # an earlier, interrupted promotion's snapshot of the same commit


def say(message: str) -> None:
    """One line about the store in the job log (stderr): what a writer retried or cleaned up."""
    print(f"evalgate: baseline store: {log_value(message, limit=None)}", file=sys.stderr, flush=True)


@dataclass
class PromotionResult:
    """What ``promote`` did. ``promoted`` is True when the candidate is now the latest baseline
    (also when an identical snapshot of the same commit already was); False when the rule refused
    (an older commit, or a different run of the latest's own commit without a reset): not an error,
    the gate's verdict stands."""

    promoted: bool
    reason: str
    snapshot: SnapshotInfo | None  # the stored entry; None when refused
    manifest: Manifest  # the current manifest after the call
    warnings: list[str] = field(default_factory=list)


class StoreCorrupt(InfraError):
    """The store holds data that fails verification and nothing valid to fall back to (exit 3:
    the user's files are fine; a reset writes a fresh baseline)."""


# ---------------------------------------------------------------------------------------- store


@dataclass
class _State:
    """One consistent look at the store."""

    blobs: dict[str, Blob]
    manifest: Manifest  # the current one (empty when there is none)
    generation: int  # of ``manifest``; 0 when there is none
    top: int  # highest generation any manifest blob claims, valid or not: the next write is top + 1
    warnings: list[str]
    legacy: Blob | None
    damaged: bool = False  # manifests exist but none is readable


def encode_snapshot(results: Results) -> bytes:
    """The stored bytes: gzip with mtime=0, so the same results always give the same digest."""
    return gzip.compress(dump_results(results), compresslevel=6, mtime=0)


def sha256_digest(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()


def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _parse_time(text: str | None) -> datetime | None:
    if not text:
        return None
    try:
        value = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None
    return value if value.tzinfo else value.replace(tzinfo=UTC)


class BaselineStore:
    """The store interface. ``LocalStore`` and ``GitHubReleaseStore`` differ only in where the
    named blobs live; every rule (layout, update protocol, choice, promotion, pruning) is here.

    ``repo`` is the git checkout used for ancestry (baseline choice and the promotion rule);
    ``None`` or a missing/shallow history degrades as documented in ``select`` and ``promote``.
    ``grace`` keeps unreferenced snapshots younger than it (a concurrent writer's snapshot that
    its manifest does not name yet); ``settle_s`` is how long a writer waits for a newer manifest
    that is still being uploaded before treating it as debris."""

    source: str  # "local:<folder>" | "github-release:<tag>", shown in reports (BaselineRef.source)

    def __init__(
        self,
        blobs: Blobs,
        source: str,
        *,
        keep: int = 20,
        repo: Path | None = None,
        grace: timedelta = timedelta(hours=1),
        settle_s: float = 2.0,
    ):
        if keep < 1:
            raise UsageError(f"baseline.keep must be at least 1, got {keep}")
        self._blobs = blobs
        self.source = source
        self.keep = keep
        self.repo = repo
        self.grace = grace
        self.settle_s = settle_s
        # Manifest files are write-once, so a parsed one can be reused by (name, size, created).
        self._manifests: dict[tuple[str, int | None, datetime | None], Manifest] = {}

    # ---------------------------------------------------------------------------- reading

    def _read_state(self) -> _State:
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
                        return _State(blobs, manifest, generation, gens[0][0], warnings, blobs.get(LEGACY_NAME))
                    warnings.append(f"{self._blobs.where}: skipped {blob.name}: {problem}")
            except BlobGone:
                continue  # pruned while we looked: list again
            top = gens[0][0] if gens else 0
            return _State(blobs, Manifest(), 0, top, warnings, blobs.get(LEGACY_NAME), damaged=bool(gens))
        raise InfraError(f"baseline store {self._blobs.where}: manifests kept disappearing while being read; retry")

    def _readable_state(self) -> _State:
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
            say(warning)
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
        return parse_results(raw, where)

    def load(self, info: SnapshotInfo, *, state: _State | None = None) -> LoadedBaseline:
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

    def _load_first(self, state: _State, entries: Sequence[SnapshotInfo], note: str | None) -> LoadedBaseline | None:
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

    def _load_legacy(self, state: _State) -> LoadedBaseline | None:
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
        when None, they are read from ``self.repo`` with ``evals.ancestry.ancestors``.
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
        self, state: _State, base_sha: str, history_complete: bool, walk_warning: str | None
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
                e for e in entries if (d := _parse_time(e.commit_date or e.created_at)) is not None and d <= base_date
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

    # ---------------------------------------------------------------------------- writing

    def promote(
        self,
        results: Results,
        *,
        sha: str,
        verdict: str,
        reason: str | None = None,
        actor: str | None = None,
        blessed: bool = False,
    ) -> PromotionResult:
        """Store ``results`` as the snapshot of commit ``sha`` and make it the latest.

        The caller decides whether the gate allows it (``promotion_allowed``); this enforces the
        store's own rule: a promotion never replaces a newer commit's baseline with an older one
        (refused when ``sha`` is the latest's commit or an ancestor of it, by git ancestry in
        ``self.repo``, else by commit date; refused when neither can tell). A reset passes
        ``blessed=True`` (it may re-bless the latest's own commit, never an older one; when neither
        can tell, it goes ahead with a note). Protocol: upload the snapshot (an existing
        identical one is fine, a different one is never clobbered) and read it back, then publish
        the next manifest generation exclusively; a name clash means a concurrent writer → re-read
        and retry. Finally prune manifests and snapshots beyond ``keep`` (never referenced or
        blessed ones). ``InfraError`` after retries, with the previous baseline intact."""
        data = encode_snapshot(results)
        digest = sha256_digest(data)
        commit_date = ancestry.commit_date(sha, repo=self.repo)
        for attempt in range(WRITE_ATTEMPTS):
            state = self._settled_state()
            current = state.manifest
            latest = current.snapshots[-1] if current.snapshots else None
            refusal, same, note = self._order(latest, sha, digest, blessed, commit_date)
            warnings = [*state.warnings, *([note] if note else [])]
            if refusal:
                return PromotionResult(False, refusal, None, current, warnings)
            if same is not None and (same.blessed or not blessed):
                return PromotionResult(
                    True, "already the latest baseline (identical snapshot)", same, current, warnings
                )
            stored = self._put_snapshot(state, sha, data, digest, results, allow_second=blessed)
            if stored.adopted:
                note = (
                    f"{stored.name} was left by an earlier promotion of {sha[:12]} that did not finish (no manifest "
                    "named it): adopted as this commit's snapshot"
                )
                warnings.append(note)
            entry = SnapshotInfo(
                sha=sha,
                name=stored.name,
                digest=stored.digest,
                size=stored.size,
                created_at=_now(),
                config_hash=results.run.config_hash,
                verdict=verdict,
                reason=reason,
                actor=actor,
                blessed=blessed,
                git_ref=results.run.git_ref,
                suite=results.run.suite,
                commit_date=commit_date.strftime("%Y-%m-%dT%H:%M:%SZ") if commit_date else None,
            )
            previous = [e for e in current.snapshots if same is None or e is not same]
            new = Manifest(generation=state.top + 1, snapshots=self._retained([*previous, entry]))
            try:
                self._publish(new)
            except NameTaken:
                say(f"manifest generation {new.generation} was taken by a concurrent writer; re-reading")
                time.sleep(random.uniform(0, min(1.0, 0.05 * 2**attempt)))
                continue
            warnings.extend(self._prune(new))
            verb = "re-blessed" if same is not None else "promoted"
            return PromotionResult(
                True, f"{verb} {sha[:12]} (manifest generation {new.generation})", entry, new, warnings
            )
        raise InfraError(
            f"baseline store {self._blobs.where}: {WRITE_ATTEMPTS} attempts to publish a manifest lost to concurrent "
            "writers; the previous baseline is intact; retry the promotion"
        )

    def _settled_state(self) -> _State:
        """The state a writer builds on. A damaged generation above the current one may be a
        concurrent writer's upload in flight: wait ``settle_s`` once and look again; what is still
        damaged then is debris of a failed write (the next generation goes above it)."""
        state = self._read_state()
        if state.top > state.generation and self.settle_s > 0:
            time.sleep(self.settle_s)
            state = self._read_state()
        return state

    def _order(
        self, latest: SnapshotInfo | None, sha: str, digest: str, blessed: bool, commit_date: datetime | None
    ) -> tuple[str | None, SnapshotInfo | None, str | None]:
        """(refusal, the latest entry if it is this very snapshot, a note). The rule: never let an
        older commit's snapshot replace a newer commit's."""
        if latest is None:
            return None, None, None
        if latest.sha.lower() == sha.lower():
            if latest.digest == digest:
                return None, latest, None
            if blessed:
                return None, None, None
            return (
                f"commit {sha[:12]} already has a baseline snapshot from another run; a promotion never replaces "
                "it (a reset re-blesses a new run of the same commit)",
                None,
                None,
            )
        if ancestry.is_ancestor(latest.sha, sha, repo=self.repo):
            return None, None, None
        if ancestry.is_ancestor(sha, latest.sha, repo=self.repo):
            return (
                f"commit {sha[:12]} is older than the current baseline's {latest.sha[:12]} (an ancestor of it)",
                None,
                None,
            )
        latest_date = _parse_time(latest.commit_date) or ancestry.commit_date(latest.sha, repo=self.repo)
        if commit_date is not None and latest_date is not None:
            # A tie is refused: "never older" must hold even for two commits made in the same second.
            if commit_date <= latest_date:
                return (
                    f"commit {sha[:12]} ({commit_date:%Y-%m-%d %H:%M:%S}) is not newer than the current baseline's "
                    f"{latest.sha[:12]} ({latest_date:%Y-%m-%d %H:%M:%S}); git could not relate them (shallow "
                    "checkout? fetch-depth: 0 lets ancestry decide), so commit dates decide",
                    None,
                    None,
                )
            return None, None, "git could not relate the commits; ordered them by commit date"
        unknown = (
            f"cannot tell whether {sha[:12]} is newer than the current baseline's {latest.sha[:12]} (no shared git "
            "history or commit dates)"
        )
        if blessed:  # a reset is a person's explicit choice of this run: it goes ahead, noted
            return None, None, f"{unknown}; reset anyway"
        # "Never older" cannot be shown, so it is not risked; fetch-depth: 0 (or a reset) settles it.
        return (
            f"{unknown}; not promoted. Check out with fetch-depth: 0 so git ancestry can decide, or reset",
            None,
            None,
        )

    def _put_snapshot(
        self, state: _State, sha: str, data: bytes, digest: str, results: Results, *, allow_second: bool
    ) -> _Stored:
        """Store the snapshot under its immutable name and read it back. An existing blob with the
        same bytes is reused; debris of a failed upload (incomplete or undecodable, and named by no
        manifest) is replaced; an orphan — a valid snapshot of this commit that no manifest names,
        left by a promotion that failed after its upload — is adopted when it is the same suite and
        scorer definitions as ``results`` (so "re-run failed jobs" works), never deleted; any other
        valid snapshot is never touched: a reset stores its run under the digest-suffixed name,
        anything else is an error."""
        referenced = {e.name for e in state.manifest.snapshots}
        names = [snapshot_name(sha), snapshot_name(sha, digest)] if allow_second else [snapshot_name(sha)]
        problem = ""
        for name in names:
            for _ in range(2):
                try:
                    blob = self._blobs.create(name, data)
                except NameTaken:
                    kind, raw = self._existing(name, digest, referenced)
                    if kind == "same":
                        return _Stored(name, digest, len(data))
                    if kind == "debris":
                        problem = f"{name} kept turning up half-written"
                        continue
                    if kind == "orphan" and raw is not None and self._adoptable(name, raw, sha, results):
                        return _Stored(name, sha256_digest(raw), len(raw), adopted=True)
                    problem = (
                        f"{name} already holds a different snapshot of commit {sha[:12]}; snapshots are immutable "
                        "and never overwritten (a reset stores a second run of a commit)"
                    )
                    break
                if self._reads_back(blob, data):
                    return _Stored(name, digest, len(data))
                problem = f"{name} does not read back as written"
        raise InfraError(f"baseline store {self._blobs.where}: {problem}; the previous baseline is intact")

    def _adoptable(self, name: str, raw: bytes, sha: str, results: Results) -> bool:
        """An orphan may stand for this promotion when it is a complete, full run of the same commit,
        suite and scorer/metric definitions (what makes two runs comparable)."""
        try:
            found = self._decode(name, raw, None).run
        except InputFileError:
            return False
        mine = results.run
        return (
            found.is_complete
            and not (found.subset or found.shard)
            and (found.git_sha or sha).lower() == sha.lower()
            and (found.suite, found.config_hash) == (mine.suite, mine.config_hash)
        )

    def _existing(self, name: str, digest: str, referenced: set[str]) -> tuple[str, bytes | None]:
        """Classify the blob already named ``name``: "same" bytes, "debris" (deleted here), "orphan"
        (valid, named by no current manifest) or "other" (a manifest names it); with its bytes."""
        blob = self._blobs.list().get(name)
        if blob is None:
            return "debris", None  # vanished meanwhile: the name is free again
        raw = None
        if blob.complete:
            try:
                raw = self._blobs.read(blob)
            except BlobGone:
                return "debris", None
            if sha256_digest(raw) == digest:
                return "same", raw
        if name in referenced:
            return "other", raw
        if raw is not None:
            try:
                self._decode(name, raw, None)
                return "orphan", raw
            except InputFileError:
                pass
        say(f"removing {name} from {self._blobs.where}: debris of an upload that did not finish")
        self._blobs.delete(blob)
        return "debris", None

    def _publish(self, manifest: Manifest) -> None:
        """Create ``manifest-<n>.json`` exclusively and check it reads back as ours (an upload
        retried after an ambiguous failure could return a concurrent writer's asset)."""
        name = manifest_name(manifest.generation)
        data = manifest.model_dump_json(indent=1).encode("utf-8")
        if not self._reads_back(self._blobs.create(name, data), data):
            raise NameTaken(name)

    def _reads_back(self, blob: Blob, data: bytes) -> bool:
        try:
            return self._blobs.read(blob) == data
        except BlobGone:
            return False

    def _retained(self, entries: list[SnapshotInfo]) -> list[SnapshotInfo]:
        """The last ``keep`` entries, plus the last blessed one if it is older than those."""
        kept = entries[-self.keep :]
        blessed = [e for e in entries if e.blessed]
        if blessed and blessed[-1] not in kept:
            kept = [blessed[-1], *kept]
        return kept

    def _prune(self, current: Manifest) -> list[str]:
        """Delete manifests older than the last ``MANIFESTS_KEPT`` generations and snapshots none
        of the kept manifests names — including generations a concurrent writer published after
        ours — unless younger than ``grace`` (a writer between its upload and its switch). Failures
        are warnings: the store is already valid, pruning only saves space; the next writer retries."""
        warnings: list[str] = []
        try:
            blobs = self._blobs.list()
            floor = current.generation - MANIFESTS_KEPT + 1
            referenced = {e.name for e in current.snapshots}
            for name, blob in blobs.items():
                m = MANIFEST_RE.match(name)
                if m and floor <= int(m.group(1)) != current.generation:
                    manifest, _ = self._read_manifest(blob, int(m.group(1)))
                    if manifest is not None:
                        referenced.update(e.name for e in manifest.snapshots)
            cutoff = datetime.now(UTC) - self.grace
            for name, blob in sorted(blobs.items()):
                m = MANIFEST_RE.match(name)
                stale_manifest = m is not None and int(m.group(1)) < floor
                stale_snapshot = (
                    SNAPSHOT_RE.match(name) is not None
                    and name not in referenced
                    and (blob.created is None or blob.created <= cutoff)
                )
                if stale_manifest or stale_snapshot:
                    self._blobs.delete(blob)
        except (InfraError, BlobGone) as exc:
            warnings.append(f"pruning {self._blobs.where} stopped: {exc} (the store is valid; the next write retries)")
        return warnings


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
    ):
        self.folder = Path(folder)
        super().__init__(
            FolderBlobs(self.folder), f"local:{self.folder}", keep=keep, repo=repo, grace=grace, settle_s=settle_s
        )


class GitHubReleaseStore(BaselineStore):
    """The store as assets of release ``tag`` (created, as a prerelease that never becomes the
    repository's latest release, on the first write). All HTTP goes through
    ``evals.github.GitHubClient`` (retries, redirects without the token, typed errors)."""

    def __init__(
        self,
        client: GitHubClient,
        *,
        tag: str = "eval-baseline",
        keep: int = 20,
        repo: Path | None = None,
        grace: timedelta = timedelta(hours=1),
        settle_s: float = 2.0,
    ):
        self.client = client
        self.tag = tag
        super().__init__(
            ReleaseBlobs(client, tag), f"github-release:{tag}", keep=keep, repo=repo, grace=grace, settle_s=settle_s
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
    kind = spec.store or ("github-release" if env.get("GITHUB_ACTIONS") == "true" else "local")
    if kind == "local":
        return LocalStore(config.resolve(spec.path), keep=spec.keep, repo=repo)
    if client is None:
        from evals.github import GitHubClient

        token = env.get("GITHUB_TOKEN") or env.get("GH_TOKEN")
        if not token:
            raise UsageError(
                "the github-release baseline store needs a token: pass the action's github-token input "
                "or set GITHUB_TOKEN (or use `baseline: {store: local}`)"
            )
        client = GitHubClient(token, env=env)
    return GitHubReleaseStore(client, tag=spec.tag, keep=spec.keep, repo=repo)
