"""Slice keys: checking that the keys a config or a command asks for exist in the data.

A slice key that no case carries would otherwise make a gate with no slices at all, silently:
the run still passes, and nobody learns that ``language=ko`` was never looked at."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from evals.common.errors import UsageError


def require_slice_keys(
    requested: Sequence[str], available: Iterable[str], *, where: str, asked_in: str = "slices:"
) -> None:
    """Raise UsageError (exit 2) when a requested slice key is carried by no case.

    ``where`` says where the keys were asked for (``evalgate.yml:7`` or a results path) and
    ``asked_in`` what to correct there (``slices:``, ``--filter``); the message names the missing
    keys, that place, and the keys the cases do carry, so a typo is one edit away from fixed."""
    have = set(available)
    missing = [key for key in dict.fromkeys(requested) if key not in have]
    if not missing:
        return
    listed = ", ".join(repr(k) for k in missing)
    carried = ", ".join(sorted(have)) if have else "none (no case has tags)"
    noun = "slice key" if len(missing) == 1 else "slice keys"
    raise UsageError(
        f"{where}: {noun} {listed} carried by no case; the cases carry these tag keys: {carried} "
        f"(fix the spelling in {asked_in}, or add the tag to the cases)"
    )
