"""Inflating compressed input (gzipped results files, zip members) within a limit, so a small crafted
file cannot take the machine's memory."""

from __future__ import annotations

import os
import re
import zlib
from collections.abc import Iterator
from pathlib import Path

from evals.common.errors import InputFileError, UsageError

INFLATE_LIMIT_ENV = "EVALGATE_MAX_INFLATED_MB"
DEFAULT_INFLATE_LIMIT_MB = 1024


def inflate_limit() -> int:
    """How many bytes compressed input (a gzipped results file, a zip member) may expand to:
    ``EVALGATE_MAX_INFLATED_MB`` megabytes (default 1024), so a small crafted file cannot take
    the machine's memory."""
    raw = os.environ.get(INFLATE_LIMIT_ENV, "").strip()
    if not raw:
        return DEFAULT_INFLATE_LIMIT_MB << 20
    try:
        megabytes = int(raw)
        if megabytes <= 0:
            raise ValueError
    except ValueError:
        raise UsageError(f"{INFLATE_LIMIT_ENV}={raw!r}: expected a whole number of megabytes above 0") from None
    return megabytes << 20


def inflated_too_large(where: str | Path, what: str = "decompressed data") -> InputFileError:
    limit_mb = inflate_limit() >> 20
    return InputFileError(
        where,
        f"{what} larger than {limit_mb:,} MB: refusing to inflate it",
        f"if the file is genuine, raise the limit with {INFLATE_LIMIT_ENV}=<megabytes>",
    )


GZIP_MAGIC = b"\x1f\x8b"
_ZERO_PADDING = re.compile(rb"\0*")
_INPUT_CHUNK = 1 << 14  # compressed bytes fed per step: zlib copies what a step leaves unread
_INFLATE_CHUNK = 1 << 18  # inflated bytes per step: memory while counting is one of these
# Inflated data is kept while it is counted up to this size (most results files: one pass); past
# it, only counted, and inflated again once it is known to fit. So a bomb holds at most this much.
_KEEP_WHILE_COUNTING = 64 << 20


def _inflated(raw: bytes) -> Iterator[bytes]:
    """The inflated bytes of every gzip member in ``raw``, a chunk at a time; zlib.error or
    EOFError when the data is corrupt or cut short (zlib checks each member's CRC and length)."""
    view = memoryview(raw)
    start = 0
    while start < len(raw):
        member = zlib.decompressobj(16 + zlib.MAX_WBITS)
        data: memoryview | bytes
        pos, data = start, view[start:start]
        while not member.eof:
            if not data:
                data, pos = view[pos : pos + _INPUT_CHUNK], min(pos + _INPUT_CHUNK, len(raw))
            # Output may still be pending inside zlib once its input is consumed: call until the
            # end marker; no input left and no output before it is data cut short.
            chunk = member.decompress(data, _INFLATE_CHUNK)
            data = member.unconsumed_tail
            if not chunk and not data and pos == len(raw) and not member.eof:
                raise EOFError("compressed data ended before the end-of-stream marker")
            yield chunk
        # The next member starts where this one's data ended; members may be padded with zeros.
        padding = _ZERO_PADDING.match(raw, pos - len(member.unused_data))
        assert padding is not None  # \0* matches everywhere, if only the empty string
        start = padding.end()


def gunzip(raw: bytes, where: str | Path) -> bytes:
    """Gzip data (any number of members) inflated, up to :func:`inflate_limit` bytes.

    A bomb is refused without holding what it inflates to: the bytes are counted as they are
    inflated, a chunk at a time, and refused the moment the count passes the limit; past
    :data:`_KEEP_WHILE_COUNTING` they are only counted, and inflated again to keep them once they
    are known to fit (a second inflate costs a fraction of parsing the JSON they hold). The size a
    gzip trailer states is not used: it is the last member's alone, modulo 4 GiB, and a cut-short
    file's last bytes state anything."""
    limit = inflate_limit()
    try:
        kept: list[bytes] | None = []
        size = 0
        for chunk in _inflated(raw):
            size += len(chunk)
            if size > limit:
                raise inflated_too_large(where, "gzip data that inflates")
            if kept is not None:
                kept.append(chunk)
                if size > _KEEP_WHILE_COUNTING:
                    kept = None
        return b"".join(kept if kept is not None else _inflated(raw))
    except (EOFError, zlib.error) as exc:
        raise InputFileError(where, f"corrupt or truncated gzip data: {exc}") from None
