"""Importing the user's callables named ``package.module:function`` in the config (targets,
scorers, tools), with the config's folder importable."""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from evals.common.errors import UsageError


def import_callable(spec: str, root: Path, extra_paths: list[str], what: str) -> Callable[..., Any]:
    """``pkg.module:function`` → the function, with the config folder (and ``extra_paths``) importable."""
    for entry in [*(str((root / p).resolve()) for p in reversed(extra_paths)), str(root)]:
        if entry not in sys.path:
            sys.path.insert(0, entry)
    module_name, _, attr = spec.partition(":")
    try:
        obj: Any = importlib.import_module(module_name)
    except Exception as exc:
        raise UsageError(
            f"{what} {spec!r}: cannot import module {module_name!r}: {type(exc).__name__}: {exc}"
        ) from None
    for part in attr.split("."):
        if not hasattr(obj, part):
            raise UsageError(f"{what} {spec!r}: module {module_name!r} has no attribute {attr!r}")
        obj = getattr(obj, part)
    if not callable(obj):
        raise UsageError(f"{what} {spec!r} is not callable")
    return obj
