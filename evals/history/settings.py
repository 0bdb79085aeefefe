"""Where the history is (SPEC §12): on by default outside GitHub Actions (SQLite next to the
config), in Actions only when a URL is given, never when switched off.

Order: ``EVALGATE_HISTORY=off`` (or ``history.enabled: false``) → off; ``EVALGATE_HISTORY_URL`` →
that; ``history.url`` → that; inside Actions → off; else ``history.path`` (SQLite)."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from evals.suite.config import SuiteConfig

OFF_WORDS = frozenset({"off", "0", "false", "no", "disabled"})
DEFAULT_PATH = ".evalgate/history.sqlite"


def switched_off(config: SuiteConfig | None, env: Mapping[str, str] = os.environ) -> bool:
    """The user turned the history off (``EVALGATE_HISTORY=off`` or ``history.enabled: false``)."""
    spec = config.history if config is not None else None
    return env.get("EVALGATE_HISTORY", "").strip().lower() in OFF_WORDS or (spec is not None and not spec.enabled)


def history_url(config: SuiteConfig | None, env: Mapping[str, str] = os.environ) -> str | None:
    """The history's URL (``postgresql://...``, or a SQLite file path), or None when off."""
    if switched_off(config, env):
        return None
    spec = config.history if config is not None else None
    if env.get("EVALGATE_HISTORY_URL", "").strip():
        return env["EVALGATE_HISTORY_URL"].strip()
    if spec is not None and spec.url:
        return spec.url
    if env.get("GITHUB_ACTIONS") == "true":
        return None
    if config is not None:
        return str(config.resolve(spec.path if spec else DEFAULT_PATH))
    return str(Path.cwd() / DEFAULT_PATH)
