import os
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

# Commands record into a history by default (docs/spec.md#history-writes): tests that are not about it (and the
# subprocesses they start) keep no database, in their tmp folders or beside the bundled example.
# The history tests switch it back on with their own URL.
os.environ["EVALGATE_HISTORY"] = "off"
# The suite runs in GitHub Actions too (ci.yml): the tests that mean Actions set GITHUB_ACTIONS
# themselves, the others (and their subprocesses) must not say warnings as workflow commands.
os.environ.pop("GITHUB_ACTIONS", None)


@pytest.fixture
def repo_root() -> Path:
    return ROOT


@pytest.fixture
def python_exe() -> str:
    """The interpreter running the tests; subprocess tests use it to run ``-m evals``."""
    return sys.executable


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Everything under tests/e2e/ is e2e, so the quick loop (`-m "not e2e"`) needs no per-test marks there."""
    e2e = ROOT / "tests" / "e2e"
    for item in items:
        if item.path.is_relative_to(e2e):
            item.add_marker(pytest.mark.e2e)
