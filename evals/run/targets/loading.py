"""Importing the user's callables named ``package.module:function`` in the config (targets,
scorers, tools), with the config's folder importable."""

from __future__ import annotations

import difflib
import importlib
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from evals.common.errors import UsageError


def import_callable(spec: str, root: Path, extra_paths: list[str], what: str) -> Callable[..., Any]:
    """``pkg.module:function`` → the function, with the config folder (and ``extra_paths``) importable.
    A misspelt module or function names the closest ones that exist."""
    entries = [*(str((root / p).resolve()) for p in reversed(extra_paths)), str(root)]
    for entry in entries:
        if entry not in sys.path:
            sys.path.insert(0, entry)
    module_name, _, attr = spec.partition(":")
    try:
        obj: Any = importlib.import_module(module_name)
    except Exception as exc:
        missing = isinstance(exc, ModuleNotFoundError) and exc.name == module_name.split(".")[0]
        found = (p for e in entries for p in Path(e).glob("*"))
        local = {p.stem for p in found if p.suffix == ".py" or (p / "__init__.py").exists()}
        raise UsageError(
            f"{what} {spec!r}: cannot import module {module_name!r}: {type(exc).__name__}: {exc}"
            + (_did_you_mean(module_name.split(".")[0], local) if missing else "")
        ) from None
    for part in attr.split("."):
        if not hasattr(obj, part):
            names = {n for n in dir(obj) if not n.startswith("_") and callable(getattr(obj, n, None))}
            raise UsageError(
                f"{what} {spec!r}: module {module_name!r} has no attribute {attr!r}" + _did_you_mean(part, names)
            )
        obj = getattr(obj, part)
    if not callable(obj):
        raise UsageError(f"{what} {spec!r} is not callable")
    return obj


def _did_you_mean(name: str, choices: set[str]) -> str:
    close = difflib.get_close_matches(name, sorted(choices), n=3)
    return f" (did you mean {' or '.join(map(repr, close))}?)" if close else ""
