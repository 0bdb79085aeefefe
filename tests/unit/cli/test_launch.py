"""The ``evalgate`` command checks that the ``evals`` Python imports is evalgate's before importing
it (_evalgate_launch.py; another distribution owning ``evals``: tests/e2e/test_wheel_install.py)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

import _evalgate_launch

EVALGATE = Path(sys.executable).with_name("evalgate")


def test_the_development_install_is_evalgates_own() -> None:
    assert _evalgate_launch.conflict() is None


@pytest.mark.e2e
def test_an_evals_folder_on_pythonpath_is_one_line_naming_it(tmp_path: Path) -> None:
    (tmp_path / "evals").mkdir()
    (tmp_path / "evals" / "__init__.py").write_text("raise ImportError('a repository of its own')\n")
    env = {**os.environ, "PYTHONPATH": str(tmp_path)}
    done = subprocess.run([EVALGATE, "--version"], env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr == (
        f"evalgate: Python imports `evals` from {tmp_path / 'evals'}, which hides evalgate's package of that name;"
        f" take {tmp_path} off PYTHONPATH (evalgate imports your config's evals.* modules from the config's"
        " folder itself)\n"
    )
