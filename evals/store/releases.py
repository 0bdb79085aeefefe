"""The baseline store as GitHub release assets (docs/spec.md#baseline-store), in one of two layouts:

- **one release** (``assets``, the default): every snapshot and manifest is an asset of the
  release ``<tag>``, a prerelease that never becomes the repository's latest release. The first
  write creates it as a draft, uploads its snapshot and manifest, then publishes it: a release is
  never published empty, which immutable releases would keep so (and burn its tag) for good;
- **one release per promotion** (``releases``), for repositories with GitHub's immutable releases,
  where a published release's assets can no longer change and a tag can never be reused: each
  promotion creates a draft ``<tag>-draft-<random>``, uploads its snapshot and manifest there, and
  publishes it as ``<tag>-g<generation>``. The tag is created on publishing, so it is the
  compare-and-swap between concurrent writers (a 422 ``already_exists`` is ``NameTaken``). A
  write that ends without publishing its draft deletes it (``abandon``).

The layout is detected, not configured: a 422 "Cannot upload assets to an immutable release", an
``immutable`` main release, or an existing ``<tag>-g<n>`` release switch a writer to one release per
promotion. Readers always look at both (one paginated listing of the releases)."""

from __future__ import annotations

import re
import secrets
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, cast

from evals.common.escape import log_value
from evals.results import console
from evals.results.manifest import MANIFEST_RE
from evals.store.blobs import Blob, BlobGone, Blobs, NameTaken

if TYPE_CHECKING:
    from evals.github.client import GitHubClient
    from evals.github.models import Asset, Release


DRAFT_GRACE = timedelta(hours=1)  # another writer's draft younger than this may still be in use
MAIN_TITLE = "evalgate baselines"
MAIN_BODY = (
    "Baseline snapshots and their manifest, managed by evalgate. Do not edit the assets by hand; "
    "see docs/baseline-store.md."
)
DRAFT_BODY = "A baseline promotion, managed by evalgate; see docs/baseline-store.md."


class ReleaseBlobs(Blobs):
    def __init__(self, client: GitHubClient, tag: str):
        self.client = client
        self.tag = tag
        self.where = f"release {tag!r} of {client.repo}"
        self._generation_tag = re.compile(rf"^{re.escape(tag)}-g(\d+)$")
        self._main: Release | None = None
        self._per_promotion = False  # the layout writers use; readers always read both
        self._draft: Release | None = None  # this writer's staging release (one release per promotion)
        self._draft_assets: dict[str, Asset] = {}
        self._release_of: dict[str, Release] = {}  # blob name -> the release holding it
        self._doomed: dict[int, set[str]] = {}  # release id -> its asset names deletion was asked for
        # Manifest names whose generation tag GitHub refused as "used by an immutable release" (a
        # release of that generation was deleted: its tag can never be used again). Listed as
        # unfinished blobs so the next manifest goes above them.
        self._burned: set[str] = set()

    # -- reading -------------------------------------------------------------------------------

    def list(self) -> dict[str, Blob]:
        releases = self.client.list_releases()
        self._main = next((r for r in releases if r.tag_name == self.tag and not r.draft), None)
        blobs: dict[str, Blob] = {}
        self._release_of = {}
        if self._main is not None:
            if self._main.immutable:
                self._per_promotion = True
            for asset in self.client.list_assets(self._main):
                blobs[asset.name] = _asset_blob(asset)
                self._release_of[asset.name] = self._main
        generations = [r for r in releases if not r.draft and self._generation_tag.match(r.tag_name)]
        for release in generations:
            self._per_promotion = True
            for asset in release.assets:
                blobs.setdefault(asset.name, _asset_blob(asset))
                self._release_of.setdefault(asset.name, release)
        if self._draft is not None:
            for name, asset in self._draft_assets.items():
                blobs.setdefault(name, _asset_blob(asset))
        for name in self._burned:
            blobs.setdefault(name, Blob(name, 0, None, complete=False))
        return blobs

    def read(self, blob: Blob) -> bytes:
        from evals.github.transport import NotFound

        try:
            return self.client.download_asset(_asset(blob), expected_size=blob.size)
        except NotFound:
            raise BlobGone(blob.name) from None

    # -- writing -------------------------------------------------------------------------------

    def create(self, name: str, data: bytes) -> Blob:
        from evals.github.transport import ImmutableRelease

        if not self._per_promotion and self._main is not None:
            self.abandon()  # a first write's draft that lost the tag to a concurrent first writer
            try:
                return self._create_in_main(self._main, name, data)
            except ImmutableRelease:
                # Immutable releases are on: from now on one release per promotion.
                self._per_promotion = True
        return self._create_in_draft(name, data)

    def _create_in_main(self, release: Release, name: str, data: bytes) -> Blob:
        from evals.github.transport import AssetExists

        try:
            return _asset_blob(self.client.upload_asset(release, name, data, _content_type(name)))
        except AssetExists:
            raise NameTaken(name) from None

    def _create_in_draft(self, name: str, data: bytes) -> Blob:
        """Snapshots go into this writer's draft; a manifest goes there too and then publishes the
        draft: as ``<tag>-g<generation>``, or — the store's first write — as ``<tag>`` itself, the
        main release. Never an empty published release: with immutable releases on it could never
        take an asset, and its tag would be burned. A taken tag means another writer published
        first (``NameTaken``; the manifest is taken out of the draft for the retry)."""
        from evals.github.transport import AssetExists, ValidationFailed

        match = MANIFEST_RE.match(name)
        if match is None and (name in self._release_of or name in self._draft_assets):
            raise NameTaken(name)
        draft = self._draft or self._new_draft()
        try:
            asset = self.client.upload_asset(draft, name, data, _content_type(name))
        except AssetExists:
            raise NameTaken(name) from None
        if match is None:
            self._draft_assets[name] = asset
            return _asset_blob(asset)
        generation = int(match.group(1))
        first = not self._per_promotion  # no main release yet (else create() wrote into it)
        tag = self.tag if first else f"{self.tag}-g{generation:08d}"
        title, body = (
            (MAIN_TITLE, MAIN_BODY) if first else (f"evalgate baseline, manifest generation {generation}", DRAFT_BODY)
        )
        try:
            published = self.client.publish_release(draft, tag, name=title, body=body)
        except ValidationFailed as exc:
            burned = "used by an immutable release" in str(exc).lower()
            if "already_exists" not in exc.codes and not burned:
                raise
            if burned and first:
                self._per_promotion = True  # the main tag can never hold a release again
            elif burned:
                self._burned.add(name)
            self.client.delete_asset(asset)  # the draft is still a draft: its assets can change
            raise NameTaken(name) from None
        self._draft, self._draft_assets = None, {}
        self._release_of[name] = published
        if first:
            self._main = published
            self._per_promotion = published.immutable
        return _asset_blob(asset)

    def abandon(self) -> None:
        """Delete this writer's unpublished draft (its promotion failed or was refused): left, it
        would wait an hour for another writer's sweep. A failure here is only a line in the log:
        the promotion's own outcome stands, and the sweep is the fallback."""
        from evals.common.errors import InfraError

        draft, self._draft, self._draft_assets = self._draft, None, {}
        if draft is None:
            return
        try:
            self.client.delete_release(draft)
        except InfraError as exc:
            why = f"could not delete the unpublished draft {draft.tag_name!r} ({exc}); a later promotion sweeps it"
            console.info(f"baseline store: {log_value(why, limit=None)}")

    def _new_draft(self) -> Release:
        self._sweep_abandoned_drafts()
        self._draft = self.client.create_draft_release(
            f"{self.tag}-draft-{secrets.token_hex(6)}", name="evalgate baseline (being written)", body=DRAFT_BODY
        )
        self._draft_assets = {}
        return self._draft

    def _sweep_abandoned_drafts(self) -> None:
        """Drafts of writers that died mid-promotion (older than ``DRAFT_GRACE``) are deleted."""
        cutoff = datetime.now(UTC) - DRAFT_GRACE
        prefix = f"{self.tag}-draft-"
        for release in self.client.list_releases():
            created = _parse(release.created_at)
            if release.draft and release.tag_name.startswith(prefix) and created is not None and created < cutoff:
                self.client.delete_release(release)

    def delete(self, blob: Blob) -> None:
        """An asset of the main release (or of this writer's draft) is deleted. The release of one
        promotion is immutable: it is deleted as a whole once every asset it holds was asked to go."""
        if blob.handle is None:
            return  # a burned generation: nothing is stored under it
        if self._draft_assets.pop(blob.name, None) is not None:
            self.client.delete_asset(_asset(blob))
            return
        release = self._release_of.get(blob.name)
        if release is None or release.tag_name == self.tag:
            if not (self._main is not None and self._main.immutable):  # immutable: nothing can be removed
                self.client.delete_asset(_asset(blob))
            return
        doomed = self._doomed.setdefault(release.id, set())
        doomed.add(blob.name)
        if doomed >= {asset.name for asset in release.assets}:
            self.client.delete_release(release)


def _content_type(name: str) -> str:
    return "application/gzip" if name.endswith(".gz") else "application/json"


def _asset(blob: Blob) -> Asset:
    """The asset a blob of this store stands for: ``_asset_blob`` makes each with its asset as the
    handle (a ``Blob``'s handle is whatever its backend needs, so typed ``object``)."""
    return cast("Asset", blob.handle)


def _parse(text: str | None) -> datetime | None:
    if not text:
        return None
    try:
        return datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None


def _asset_blob(asset: Asset) -> Blob:
    return Blob(asset.name, asset.size, _parse(asset.created_at), complete=asset.state == "uploaded", handle=asset)
