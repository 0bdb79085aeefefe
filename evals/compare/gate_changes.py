"""What a candidate's config changes of the rules it is judged by (docs/spec.md#trust-boundaries).

On a pull request the config is the PR author's: ``tolerance: 0.5`` and ``gate: false`` on the
metric that broke turned a `fail` into `inconclusive`, and "What changed" listed only the commit.
Every run records its config's gate settings (``run.gate_settings``: metrics, ``gate:``, slices,
smoke draw); a gate lists each one the candidate's config holds otherwise than the baseline run's,
and the report says so in its headline."""

from __future__ import annotations

import json
from typing import Any


def gate_changes(recorded: dict[str, Any] | None, current: dict[str, Any]) -> list[str]:
    """``key: old → new`` for every setting that differs (dotted keys; a metric added or removed is
    one line); [] when the baseline recorded none (a run of an older evalgate, an imported file)."""
    if not recorded:
        return []
    return _diff(recorded, current, "")


def _diff(old: Any, new: Any, key: str) -> list[str]:
    if isinstance(old, dict) and isinstance(new, dict):
        out = []
        for name in sorted(old.keys() | new.keys(), key=str):
            where = f"{key}.{name}" if key else str(name)
            if name not in old:
                out.append(f"{where}: (not set) → {_shown(new[name])}")
            elif name not in new:
                out.append(f"{where}: {_shown(old[name])} → (not set)")
            else:
                out += _diff(old[name], new[name], where)
        return out
    return [] if old == new else [f"{key}: {_shown(old)} → {_shown(new)}"]


def _shown(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, default=str, sort_keys=True)
