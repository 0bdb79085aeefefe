import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture
def repo_root() -> Path:
    return ROOT


@pytest.fixture
def python_exe() -> str:
    """The interpreter running the tests; subprocess tests use it to run ``-m evals``."""
    return sys.executable
