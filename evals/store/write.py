"""Writing the baseline store (docs/spec.md#manifest, docs/baseline-store.md "How an update works"): a promotion
or reset stores its snapshot under an immutable name (reusing identical bytes, replacing debris,
adopting an interrupted promotion's orphan, never clobbering anything else), publishes the next
manifest generation with an exclusive create (a clash means a concurrent writer: re-read and
retry), and prunes what no kept manifest names. ``StoreWriter`` is the writing half of
``evals.store.baseline.BaselineStore``, which supplies the reading half (``_read_state``, ``_decode``)."""

from __future__ import annotations

import contextlib
import gzip
import hashlib
import random
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from functools import partial
from pathlib import Path
from typing import Protocol

from evals.common.errors import InfraError, InputFileError
from evals.common.escape import log_value
from evals.common.gitinfo import uncommitted_changes
from evals.results import console
from evals.results.files import dump_results
from evals.results.manifest import MANIFEST_RE, SNAPSHOT_RE, Manifest, SnapshotInfo, manifest_name, snapshot_name
from evals.results.model import Results, RunInfo
from evals.store import ancestry
from evals.store.blobs import Blob, BlobGone, Blobs, NameTaken
from evals.store.snapshot_order import Checkout, order

MANIFESTS_KEPT = 3  # current + 2 earlier generations: readers fall back to them if the newest is damaged
WRITE_ATTEMPTS = 8  # manifest publications lost to concurrent writers before giving up


@dataclass
class _Stored:
    """Where ``promote`` put the snapshot: its name, and the digest and size of the bytes there."""

    name: str
    digest: str
    size: int
    adopted: bool = False  # an earlier, interrupted promotion's snapshot of the same commit


@dataclass(frozen=True)
class GatedOn:
    """The baseline a gate's verdict is about: the manifest entry it compared the candidate with
    (None when it had none), and how the refusal names it (``what``)."""

    entry: SnapshotInfo | None
    what: str

    def moved(self, landed: SnapshotInfo) -> str:
        return (
            f"{landed.sha[:12]} became the baseline ({landed.verdict}, {landed.created_at}) after this gate compared "
            f"the candidate with {self.what}: the candidate was never compared with it, so it does not replace it; "
            "re-run the gate to compare with the new baseline (a concurrent promotion or reset landed first)"
        )


@dataclass
class PromotionResult:
    """What ``promote`` did. ``promoted`` is True when the candidate is now the latest baseline
    (also when an identical snapshot of the same commit already was); False when the rule refused
    (an older commit, a different run of the latest's own commit without a reset, or a baseline
    that landed on top of the one the gate compared with: ``moved``): not an error, the gate's
    verdict stands."""

    promoted: bool
    reason: str
    snapshot: SnapshotInfo | None  # the stored entry; None when refused
    manifest: Manifest  # the current manifest after the call
    warnings: list[str] = field(default_factory=list)
    basis: str | None = None  # how the candidate was found newer, when git ancestry did not decide
    moved: SnapshotInfo | None = None  # the baseline that landed after the one the gate compared with


@dataclass
class StoreState:
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


def _listing(paths: list[str], shown: int = 3) -> str:
    more = f" and {len(paths) - shown} more" if len(paths) > shown else ""
    return ", ".join(paths[:shown]) + more


def _dirty_reason(sha: str, uncommitted: list[str]) -> str | None:
    return f"uncommitted changes at HEAD {sha[:12]}: {_listing(uncommitted)}" if uncommitted else None


class _Loaded(Protocol):
    """What the writer reads of ``load``'s answer (evals.store.baseline.LoadedBaseline, which
    imports this module)."""

    @property
    def results(self) -> Results: ...


class StoreWriter:
    """The writing half of a store; the class it is mixed into reads (``_read_state``, ``_decode``)."""

    _blobs: Blobs
    repo: Path | None
    keep: int
    grace: timedelta
    settle_s: float
    in_actions: bool
    folder: Path | None  # a local store's folder: its files are no uncommitted change of the code
    # The reading half's methods the writer calls (evals.store.baseline.BaselineStore), typed so
    # that those calls are checked.
    _read_state: Callable[[], StoreState]
    _read_manifest: Callable[[Blob, int], tuple[Manifest | None, str]]
    _decode: Callable[[str, bytes, str | None], Results]
    load: Callable[..., _Loaded]  # (info, *, state=None): a Callable cannot spell the keyword

    def promote(
        self,
        results: Results,
        *,
        sha: str,
        verdict: str,
        reason: str | None = None,
        actor: str | None = None,
        blessed: bool = False,
        gated_on: GatedOn | None = None,
    ) -> PromotionResult:
        """``_promote``; whatever its end, a release draft it left unpublished is deleted."""
        try:
            return self._promote(
                results, sha=sha, verdict=verdict, reason=reason, actor=actor, blessed=blessed, gated_on=gated_on
            )
        finally:
            self._blobs.abandon()

    def _promote(
        self,
        results: Results,
        *,
        sha: str,
        verdict: str,
        reason: str | None,
        actor: str | None,
        blessed: bool,
        gated_on: GatedOn | None,
    ) -> PromotionResult:
        """Store ``results`` as the snapshot of commit ``sha`` and make it the latest.

        The caller decides whether the gate allows it (``promotion_allowed``); this enforces the
        store's own rule: a promotion never replaces a newer commit's baseline with an older one
        (``evals.store.snapshot_order``: refused when ``sha`` is the latest's commit or an ancestor of it,
        by git ancestry in ``self.repo``, else by commit date; refused when neither can tell; with
        no git repository at all, outside Actions, by time). A reset passes ``blessed=True`` (it may
        re-bless the latest's own commit, never an older one; when nothing can tell, it goes ahead
        with a note). A local promotion of HEAD from a working tree with uncommitted changes to
        tracked files goes ahead with a warning, noted in the entry's ``reason``. A gate's
        promotion passes ``gated_on``, the baseline its verdict is about: when another baseline
        landed on top of that one meanwhile (a concurrent promotion or reset, seen on the first
        read or on a retry after a lost manifest clash), it is refused, since the candidate was
        never compared with the baseline it would replace. Protocol: upload
        the snapshot (an existing identical one is fine, a different one is never clobbered) and
        read it back, then publish the next manifest generation exclusively; a name clash means a
        concurrent writer → re-read and retry. Finally prune manifests and snapshots beyond
        ``keep`` (never referenced or blessed ones). ``InfraError`` after retries, with the
        previous baseline intact."""
        data = encode_snapshot(results)
        digest = sha256_digest(data)
        where = Checkout(self.repo, self.in_actions)
        commit_date = ancestry.commit_date(sha, repo=self.repo) if where.in_git else None
        uncommitted = self._uncommitted(sha, where)
        for attempt in range(WRITE_ATTEMPTS):
            state = self._settled_state()
            current = state.manifest
            latest = current.snapshots[-1] if current.snapshots else None
            decided = order(
                latest,
                earlier=any(e.sha.lower() == sha.lower() for e in current.snapshots[:-1]),
                sha=sha,
                digest=digest,
                blessed=blessed,
                commit_date=commit_date,
                candidate=results.run,
                latest_run=partial(self._run_of, state, latest),
                where=where,
            )
            same = decided.same
            warnings = [*state.warnings, *([decided.note] if decided.note else [])]
            if decided.refusal:
                return PromotionResult(False, decided.refusal, None, current, warnings)
            if same is not None and (same.blessed or not blessed):
                return PromotionResult(
                    True, "already the latest baseline (identical snapshot)", same, current, warnings
                )
            if gated_on is not None and (landed := self._landed_since(state, gated_on.entry)) is not None:
                return PromotionResult(False, gated_on.moved(landed), None, current, warnings, moved=landed)
            if uncommitted:
                warnings.append(
                    f"HEAD {sha[:12]} is stored as the baseline while the working tree has uncommitted changes to "
                    f"tracked files ({_listing(uncommitted)}): if the run included them, the baseline stands for "
                    "code that was never committed; commit, re-run and promote again (the manifest's reason notes it)"
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
                reason="; ".join(filter(None, [reason, _dirty_reason(sha, uncommitted)])) or None,
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
                console.info(
                    f"baseline store: manifest generation {new.generation} was taken by a concurrent writer; re-reading"
                )
                time.sleep(random.uniform(0, min(1.0, 0.05 * 2**attempt)))
                continue
            warnings.extend(self._prune(new))
            verb = "re-blessed" if same is not None else "promoted"
            return PromotionResult(
                True, f"{verb} {sha[:12]} (manifest generation {new.generation})", entry, new, warnings, decided.basis
            )
        raise InfraError(
            f"baseline store {self._blobs.where}: {WRITE_ATTEMPTS} attempts to publish a manifest lost to concurrent "
            "writers; the previous baseline is intact; retry the promotion"
        )

    def _landed_since(self, state: StoreState, gated: SnapshotInfo | None) -> SnapshotInfo | None:
        """The newest baseline that landed after ``gated`` (all of them when the gate had none, or
        one this store does not list), or None. An entry that fails verification does not count:
        no gate could have compared with it (readers skip it too), so it does not block healing
        the store by the next promotion."""
        entries = state.manifest.snapshots
        keys = [(e.name, e.digest) for e in entries]
        key = None if gated is None else (gated.name, gated.digest)
        for entry in reversed(entries[keys.index(key) + 1 :] if key in keys else entries):
            try:
                self.load(entry, state=state)
            except InputFileError:
                continue
            return entry
        return None

    def _settled_state(self) -> StoreState:
        """The state a writer builds on. A damaged generation above the current one may be a
        concurrent writer's upload in flight: wait ``settle_s`` once and look again; what is still
        damaged then is debris of a failed write (the next generation goes above it)."""
        state = self._read_state()
        if state.top > state.generation and self.settle_s > 0:
            time.sleep(self.settle_s)
            state = self._read_state()
        return state

    def _run_of(self, state: StoreState, entry: SnapshotInfo | None) -> RunInfo | None:
        """The run an entry's snapshot holds; None when it does not verify (time order then falls
        back to the entry's ``created_at``)."""
        if entry is None:
            return None
        try:
            return self.load(entry, state=state).results.run
        except InputFileError:
            return None

    def _uncommitted(self, sha: str, where: Checkout) -> list[str]:
        """The tracked files with uncommitted changes when ``sha`` is the checkout's HEAD, outside
        Actions (whose checkouts are clean); the store's own folder does not count."""
        if where.in_actions or not where.in_git:
            return []
        head = ancestry.resolve(self.repo, "HEAD")
        if head is None or ancestry.resolve(self.repo, sha) != head:
            return []
        return uncommitted_changes(self.repo, exclude=self.folder) if self.repo is not None else []

    def _put_snapshot(
        self, state: StoreState, sha: str, data: bytes, digest: str, results: Results, *, allow_second: bool
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
        where = log_value(f"{name} from {self._blobs.where}", limit=None)
        console.info(f"baseline store: removing {where}: debris of an upload that did not finish")
        self._blobs.delete(blob)
        return "debris", None

    def _publish(self, manifest: Manifest) -> None:
        """Create ``manifest-<n>.json`` exclusively and check it reads back as ours (an upload
        retried after an ambiguous failure could return a concurrent writer's asset)."""
        name = manifest_name(manifest.generation)
        data = manifest.model_dump_json(indent=1).encode("utf-8")
        blob = self._blobs.create(name, data)
        if not self._reads_back(blob, data):
            raise NameTaken(name)
        # A writer stalled between reading generation n and creating n + 1 can find that name free
        # again: concurrent writers published n + 1 … n + 3 meanwhile and pruned n + 1. Readers take
        # the highest generation, so such a manifest would drop the other writers' promotions and
        # lose its own: it is taken back and the promotion tried again on what is there now.
        newer = [n for n in self._blobs.list() if (m := MANIFEST_RE.match(n)) and int(m.group(1)) > manifest.generation]
        if newer:
            with contextlib.suppress(InfraError, BlobGone):
                self._blobs.delete(blob)
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
