"""Where the baseline store's files live (docs/spec.md#snapshots): named, write-once blobs with an exclusive create.
Every rule of the store is in ``evals.store.baseline``; a backend only lists, reads, creates (failing
with ``NameTaken`` when the name exists) and deletes. ``FolderBlobs`` is a folder; the release
backend is ``evals.store.releases``."""

from __future__ import annotations

import os
from abc import ABC, abstractmethod
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from evals.common.errors import InfraError
from evals.results.files import temp_copy


class NameTaken(Exception):
    """An exclusive create found the name taken: another writer was first."""


class BlobGone(Exception):
    """A listed blob disappeared before it was read (a concurrent prune)."""


@dataclass(frozen=True)
class Blob:
    name: str
    size: int | None
    created: datetime | None  # for the pruning grace period
    complete: bool = True  # False: an upload that never finished (GitHub "starter" asset)
    handle: object = None  # what the backend needs to read or delete it


class Blobs(ABC):
    """Where named, write-once blobs live. Everything else about the store is backend-agnostic."""

    where: str

    @abstractmethod
    def list(self) -> dict[str, Blob]: ...

    @abstractmethod
    def read(self, blob: Blob) -> bytes:
        """The bytes; ``BlobGone`` if it vanished, ``InfraError`` if unreachable after retries."""

    @abstractmethod
    def create(self, name: str, data: bytes) -> Blob:
        """Create ``name`` holding ``data`` completely or not at all; ``NameTaken`` if it exists."""

    @abstractmethod
    def delete(self, blob: Blob) -> None: ...

    def abandon(self) -> None:  # noqa: B027 (a hook most backends need not fill)
        """Give up what this writer staged but did not publish; called when a write ends, however
        it ends. A folder publishes every create at once, so by default there is nothing to give up."""


class FolderBlobs(Blobs):
    def __init__(self, folder: Path):
        self.folder = folder
        self.where = str(folder)

    def list(self) -> dict[str, Blob]:
        try:
            entries = list(os.scandir(self.folder))
        except FileNotFoundError:
            return {}
        except OSError as exc:
            raise InfraError(f"baseline store {self.folder}: cannot list: {exc}") from None
        blobs = {}
        for entry in entries:
            if entry.name.startswith("."):
                continue  # temporary files of a writer in progress
            try:
                if not entry.is_file():
                    continue
                stat = entry.stat()
            except FileNotFoundError:
                continue  # deleted by a concurrent prune
            created = datetime.fromtimestamp(stat.st_mtime, UTC)
            blobs[entry.name] = Blob(entry.name, stat.st_size, created, handle=Path(entry.path))
        return blobs

    def read(self, blob: Blob) -> bytes:
        try:
            return Path(str(blob.handle)).read_bytes()
        except FileNotFoundError:
            raise BlobGone(blob.name) from None
        except OSError as exc:
            raise InfraError(f"baseline store {self.folder}: cannot read {blob.name}: {exc}") from None

    def create(self, name: str, data: bytes) -> Blob:
        # Write a hidden temporary file completely, then hard-link it under the final name: the
        # link is atomic and fails if the name exists, so readers never see half a file and two
        # writers cannot both win a name.
        try:
            with temp_copy(self.folder, name, data) as tmp:
                os.link(tmp, self.folder / name)
        except FileExistsError:
            raise NameTaken(name) from None
        except OSError as exc:
            raise InfraError(f"baseline store {self.folder}: cannot write {name}: {exc}") from None
        return Blob(name, len(data), datetime.now(UTC), handle=self.folder / name)

    def delete(self, blob: Blob) -> None:
        try:
            Path(str(blob.handle)).unlink(missing_ok=True)
        except OSError as exc:
            raise InfraError(f"baseline store {self.folder}: cannot delete {blob.name}: {exc}") from None
