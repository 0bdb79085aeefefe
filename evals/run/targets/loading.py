"""Importing the user's callables named ``package.module:function`` in the config (targets,
scorers, tools), with the config's folder importable.

A user's own ``evals/`` package (many suites live in one) shares its name with evalgate's, which
Python has already imported: ``evals.bot`` would be looked up in evalgate's folder only. So for a
module named ``evals.*`` the user's ``evals/`` folders (next to the config and in ``path:``) are
appended to evalgate's ``evals.__path__``: ``evals.bot`` and the ``from evals.helpers import x``
inside it resolve to the user's files. Two limits follow: the user's ``evals/__init__.py`` is not
run, and a user module named like one of evalgate's (``evals/run.py``) can never be imported, so
it is refused with the file's name rather than silently replaced by evalgate's."""

from __future__ import annotations

import difflib
import importlib
import pkgutil
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
    if module_name.startswith("evals."):
        _admit_user_evals([Path(e) for e in entries], f"{what} {spec!r}")
    try:
        obj: Any = importlib.import_module(module_name)
    except Exception as exc:
        raise UsageError(
            f"{what} {spec!r}: cannot import module {module_name!r}: {type(exc).__name__}: {exc}"
            + _missing_hint(exc, module_name, [Path(e) for e in entries])
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


def _admit_user_evals(entries: list[Path], what: str) -> None:
    """Append the user's ``evals/`` folders under ``entries`` to evalgate's ``evals.__path__`` (after
    evalgate's own, so no module of evalgate's can be replaced by a user file)."""
    import evals

    ours = Path(evals.__file__).parent
    own_names = {m.name for m in pkgutil.iter_modules([str(ours)])}
    for folder in (e / "evals" for e in entries):
        if not folder.is_dir() or folder.resolve() == ours.resolve():
            continue
        for found in sorted(folder.iterdir()):
            if _module_name(found) in own_names:
                raise UsageError(
                    f"{what}: {found} cannot be imported as evals.{_module_name(found)}: evalgate's own package is"
                    f" named evals and has a module of that name; rename your {found.name} (and its imports)"
                )
        if str(folder) not in evals.__path__:
            evals.__path__.append(str(folder))


def _module_name(path: Path) -> str | None:
    """The name ``path`` is imported by inside its package (a ``.py`` file, or a folder with Python
    files, a namespace package included), or None for anything else (a data folder, a README)."""
    if path.is_file():
        return path.stem if path.suffix == ".py" and path.stem != "__init__" else None
    return path.name if path.is_dir() and any(path.glob("*.py")) else None


def _missing_hint(exc: Exception, module_name: str, entries: list[Path]) -> str:
    """The closest names that exist when the module's own first part (or its ``evals.`` part) is missing."""
    if not isinstance(exc, ModuleNotFoundError):
        return ""
    parts = module_name.split(".")
    if parts[0] == "evals" and exc.name == ".".join(parts[:2]):
        folders = [e / "evals" for e in entries if (e / "evals").is_dir()]
        if not folders:
            return " (evalgate looks for your evals.* modules in an evals/ folder next to the config or in path:)"
        return _did_you_mean(parts[1], {n for f in folders for p in f.iterdir() if (n := _module_name(p))})
    if exc.name != parts[0]:
        return ""
    return _did_you_mean(parts[0], {n for e in entries for p in e.glob("*") if (n := _module_name(p))})


def _did_you_mean(name: str, choices: set[str]) -> str:
    close = difflib.get_close_matches(name, sorted(choices), n=3)
    return f" (did you mean {' or '.join(map(repr, close))}?)" if close else ""
