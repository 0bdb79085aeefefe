"""The ``evalgate`` command's entry point, kept outside the ``evals`` package on purpose.

``evals`` is also the import package of other distributions (OpenAI's ``evals`` on the package
index). Installed into one environment, both write into the same ``evals/`` folder and the later
install overwrites the other's files, so importing ``evals.cli.app`` may fail, or half work,
before evalgate could say why. This module checks that the ``evals`` Python would import is
evalgate's alone, with the standard library only, and then hands over to ``evals.cli.app``.
The check reads one RECORD file and lists two folders, without importlib.metadata (tens of
milliseconds on every start): the scan of every installed distribution runs only to name the
culprit once something is wrong."""

from __future__ import annotations

import base64
import hashlib
import importlib.util
import sys
from pathlib import Path

DISTRIBUTION = "evalgate-action"
FIX = (
    f"install evalgate on its own: `pipx install {DISTRIBUTION}`, `uv tool install {DISTRIBUTION}`"
    f" or a virtualenv of its own"
)


def conflict() -> str | None:
    """What stands between the ``evalgate`` command and evalgate's own ``evals``, as one line, or None."""
    ours = Path(__file__).resolve().parent / "evals"
    spec = importlib.util.find_spec("evals")
    if spec is None or spec.origin is None:
        return f"evalgate: its package `evals` is missing from {ours.parent}; reinstall {DISTRIBUTION}"
    found = Path(spec.origin).resolve().parent
    if found != ours:
        owners = _owners(exclude=DISTRIBUTION)
        if owners:
            return (
                f"evalgate: Python imports `evals` from {found} ({_named(owners)}), not evalgate's from {ours}; {FIX}"
            )
        # A folder on PYTHONPATH (a repository with its own evals/ at its root, say): no install fixes that.
        return (
            f"evalgate: Python imports `evals` from {found}, which hides evalgate's package of that name; take"
            f" {found.parent} off PYTHONPATH (evalgate imports your config's evals.* modules from the config's"
            " folder itself)"
        )
    foreign = _foreign_files(ours)
    if foreign:
        owners = _owners(exclude=DISTRIBUTION)
        who = _named(owners) if owners else "another distribution"
        return f"evalgate: {who} also installed the package `evals` ({ours / foreign}), which evalgate is; {FIX}"
    return None


def _foreign_files(folder: Path) -> str | None:
    """A file in ``folder`` that the installed distribution did not put there, or ``evals/__init__.py``
    changed since; None for a source tree or an editable install (no RECORD beside it lists ``evals/``)."""
    infos = sorted(folder.parent.glob(DISTRIBUTION.replace("-", "_") + "-*.dist-info"))
    record = (infos[0] / "RECORD").read_text(encoding="utf-8") if infos else ""
    rows = [line.split(",") for line in record.splitlines() if line.startswith("evals/")]
    if not rows:
        return None
    shipped = {path.split("/")[1] for path, *_ in rows}
    extra = sorted(set(p.name for p in folder.iterdir()) - shipped - {"__pycache__"})
    if extra:
        return extra[0]
    for path, digest, *_ in rows:
        if path == "evals/__init__.py" and digest != _record_hash(folder / "__init__.py"):
            return "__init__.py"
    return None


def _record_hash(path: Path) -> str:
    raw = hashlib.sha256(path.read_bytes()).digest()
    return "sha256=" + base64.urlsafe_b64encode(raw).rstrip(b"=").decode()


def _owners(exclude: str) -> list[str]:
    """Installed distributions that declare the top-level package ``evals``, but ``exclude``."""
    import importlib.metadata

    names = set(importlib.metadata.packages_distributions().get("evals", []))
    return sorted(n for n in names if _normalized(n) != _normalized(exclude))


def _normalized(name: str) -> str:
    return name.lower().replace("_", "-").replace(".", "-")


def _named(owners: list[str]) -> str:
    import importlib.metadata

    return " and ".join(f"the distribution {n!r} {importlib.metadata.version(n)}" for n in owners)


def main() -> int:
    problem = conflict()
    if problem is not None:
        # One line and exit 2 (a usage error): evalgate's own output funnel lives in `evals`,
        # which is what cannot be trusted here.
        sys.stderr.write(problem + "\n")
        return 2
    from evals.cli.app import main as evalgate
    from evals.cli.leave import leave

    leave(evalgate())


if __name__ == "__main__":
    raise SystemExit(main())
