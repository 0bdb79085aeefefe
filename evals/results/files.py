"""Reading and writing results files (docs/spec.md#results-format): JSON or gzipped JSON, checked on
the way in, written atomically on the way out."""

from __future__ import annotations

import contextlib
import gzip
import json
import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from evals.common.errors import InputFileError
from evals.results.inflate import GZIP_MAGIC, gunzip
from evals.results.model import SCHEMA_VERSION, Results


def _describe(exc: ValidationError, data: Any) -> str:
    parts = []
    for err in exc.errors(include_url=False)[:5]:
        loc = err["loc"]
        where = ""
        for p in loc:
            where += f"[{p}]" if isinstance(p, int) else (("." if where else "") + str(p))
        if len(loc) >= 2 and loc[0] == "cases" and isinstance(loc[1], int):
            with contextlib.suppress(KeyError, IndexError, TypeError):
                where += f" (case id {data['cases'][loc[1]]['id']!r})"
        parts.append(f"{where or '(top level)'}: {err['msg']}")
    more = exc.error_count() - len(parts)
    return "; ".join(parts) + (f"; and {more} more" if more > 0 else "")


def read_json_bytes(path: Path) -> bytes:
    """The file's bytes, gunzipped when it starts with the gzip magic (whatever its name)."""
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        raise InputFileError(path, "file not found") from None
    except OSError as exc:
        raise InputFileError(path, f"cannot read: {exc}") from None
    return gunzip(raw, path) if raw[:2] == GZIP_MAGIC else raw


def json_problem(exc: json.JSONDecodeError) -> str:
    """The decoder's message with its column, read as a sentence: several of its messages end in
    "at" ("Unterminated string starting at") and expect the position to follow."""
    msg = exc.msg.removesuffix(" at")
    return f"{msg} at column {exc.colno}"


def looks_truncated(exc: json.JSONDecodeError) -> bool:
    """The decoder stopped where a cut-short file would stop it: at the end of the text (in
    characters: ``exc.pos`` counts them, not bytes), inside a string that never closes, or inside a
    ``true``/``false``/``null`` that the end of the file cut."""
    tail = exc.doc[exc.pos :].strip()
    return not tail or exc.msg.startswith("Unterminated string") or any(w.startswith(tail) for w in LITERALS)


LITERALS = ("true", "false", "null")


def parse_results(raw: bytes, where: str | Path) -> Results:
    if not raw.strip():
        # What a run killed before its first write, or a failed download, leaves behind.
        what = "empty" if not raw else "blank (only whitespace)"
        raise InputFileError(where, f"the file is {what}: no results in it", "check the path, or run the suite again")
    try:
        data = json.loads(raw)
    except UnicodeDecodeError:
        raise InputFileError(where, "not UTF-8 text (is this a results file?)") from None
    except json.JSONDecodeError as exc:
        hint = "the file looks truncated" if looks_truncated(exc) else None
        raise InputFileError(f"{where}:{exc.lineno}", f"invalid JSON: {json_problem(exc)}", hint) from None
    except RecursionError:  # json.loads recurses per nesting level
        raise InputFileError(where, "JSON nested too deeply to be a results file") from None
    if not isinstance(data, dict):
        raise InputFileError(where, "not a results file: expected a JSON object with schema_version, run, cases")
    version = data.get("schema_version")
    if version is None:
        raise InputFileError(
            where,
            "not a results file: no schema_version",
            "output of another harness: `evalgate import --from auto FILE -o results.json` converts it; "
            "`show --from auto` and `gate --results-format auto` read it as it is",
        )
    if version != SCHEMA_VERSION:
        raise InputFileError(
            where,
            f"unsupported schema_version {version!r}; this evalgate reads {SCHEMA_VERSION}",
            "upgrade evalgate or re-create the file",
        )
    try:
        return Results.model_validate(data)
    except ValidationError as exc:
        raise InputFileError(where, f"invalid results file: {_describe(exc, data)}") from None


def load_results(path: str | Path) -> Results:
    """Read a results file (JSON or gzipped JSON). Any problem is an InputFileError (exit 2)."""
    path = Path(path)
    return parse_results(read_json_bytes(path), path)


def dump_results(results: Results) -> bytes:
    return results.model_dump_json(exclude_none=False).encode("utf-8")


def _read_umask() -> int:
    # os.umask can only be read by setting it; done once at import, before any thread exists.
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


_UMASK = _read_umask()


@contextmanager
def temp_copy(folder: Path, name: str, data: bytes) -> Iterator[Path]:
    """A complete, fsynced temporary file holding ``data`` in ``folder`` (hidden, named after
    ``name``), for the caller to rename or link into place; removed on exit if it is still there.
    OSError propagates. Its mode follows the umask like open()'s would (mkstemp makes 0600): a
    results file or a baseline snapshot is meant to be as readable as any file the user writes."""
    folder.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=folder, prefix=f".{name}.", suffix=".tmp")
    try:
        os.fchmod(fd, 0o666 & ~_UMASK)
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        yield Path(tmp)
    finally:
        Path(tmp).unlink(missing_ok=True)


def atomic_write(path: Path, data: bytes) -> None:
    """Write via a temporary file in the same folder and rename: a reader never sees half a file.
    A path that cannot be written is the user's to fix (exit 2), not a crash."""
    try:
        with temp_copy(path.parent, path.name, data) as tmp:
            os.replace(tmp, path)
    except OSError as exc:
        raise InputFileError(path, f"cannot write: {exc.strerror or exc}", "check the output path") from None


def save_results(results: Results, path: str | Path) -> None:
    """Write atomically; gzip when the name ends in ``.gz``."""
    write_results_bytes(dump_results(results), path)


def write_results_bytes(data: bytes, path: str | Path) -> None:
    """``save_results`` for a results file already serialised (``dump_results``'s bytes)."""
    path = Path(path)
    if path.name.endswith(".gz"):
        data = gzip.compress(data, compresslevel=6, mtime=0)
    atomic_write(path, data)
