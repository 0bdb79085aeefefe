"""Where the history is (docs/spec.md#history-store): on by default outside GitHub Actions (SQLite next to the
config), in Actions only when a URL is given, never when switched off.

Order: ``EVALGATE_HISTORY=off`` (or ``history.enabled: false``) → off; ``EVALGATE_HISTORY_URL`` →
that; ``history.url`` → that; inside Actions → off; else ``history.path`` (SQLite)."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from evals.common.confine import confined
from evals.history.engine import sqlite_path

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
        return _config_url(config, spec.url)
    if env.get("GITHUB_ACTIONS") == "true":
        return None
    if config is not None:
        return str(config.resolve(spec.path if spec else DEFAULT_PATH))
    return str(Path.cwd() / DEFAULT_PATH)


def _config_url(config: SuiteConfig | None, url: str) -> str:
    """``history.url`` as the config file gives it: a SQLite file there must stay inside the
    repository (``evals.common.confine``: a PR's config wrote ``sqlite:///<venv>/…/zz.pth``, and every
    later Python start in that venv failed); resolved against the config's folder, like its other
    paths. A PostgreSQL URL is passed on as it is."""
    path = sqlite_path(url)
    if path is None or config is None:
        return url
    return str(confined(config.root, str(path), "history.url", config.where("history", "url")))


def optional_config(path: str | None, *, required: bool = False) -> SuiteConfig | None:
    """The config a history command reads: the one named, else ./evalgate.yml when there is one
    (None without). A named one must exist: a typo would otherwise read (or write) the history of
    the working folder instead of the suite's, and say nothing."""
    from evals.suite.loading import load_config

    if required or path is not None or Path("evalgate.yml").exists():
        return load_config(path)
    return None


def why_no_history(config: SuiteConfig | None, env: Mapping[str, str] = os.environ) -> str:
    """Which switch turned the history off, and the way round it that works (the environment's
    ``EVALGATE_HISTORY=off`` wins over ``EVALGATE_HISTORY_URL``, so only ``--url`` gets past it)."""
    switch = env.get("EVALGATE_HISTORY", "").strip()
    if switch.lower() in OFF_WORDS:
        return f"no history here: EVALGATE_HISTORY={switch} switches it off; unset it, or name a database with --url"
    if config is not None and not config.history.enabled:
        return (
            f"no history here: {config.where('history', 'enabled')}: history.enabled is false; name a database "
            "with --url"
        )
    return "no history here: inside GitHub Actions the history needs a URL: pass --url or set EVALGATE_HISTORY_URL"
