"""Sharding (SPEC §4): a case's shard comes from a stable hash of its id, never its position, so
adding a case moves no other case to another shard and every matrix job agrees without talking."""

from __future__ import annotations

import hashlib
import re

from evals.errors import UsageError


def parse_shard(text: str, where: str = "--shard") -> tuple[int, int]:
    """``"i/N"`` → ``(i, N)`` with 1 <= i <= N."""
    match = re.fullmatch(r"\s*(\d+)\s*/\s*(\d+)\s*", text or "")
    if not match:
        raise UsageError(f"{where}: expected i/N (e.g. 2/4), got {text!r}")
    index, count = int(match[1]), int(match[2])
    if not 1 <= index <= count:
        raise UsageError(f"{where}: shard {index}/{count} is out of range: i goes from 1 to N")
    return index, count


def shard_of(case_id: str, count: int) -> int:
    """The 1-based shard of a case among ``count``."""
    digest = hashlib.sha256(case_id.encode("utf-8")).digest()
    return int.from_bytes(digest[:8], "big") % count + 1
