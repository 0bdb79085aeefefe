"""What a simulated Actions runner passes on from the test process besides its own clean
environment: coverage's variable (``pyproject.toml`` ``[tool.coverage.run]``, ``patch =
subprocess``), so the action's ``python -I`` processes are measured like every other one. A real
runner has no such variable, and nothing evalgate does reads it."""

from __future__ import annotations

import os


def coverage_env() -> dict[str, str]:
    value = os.environ.get("COVERAGE_PROCESS_CONFIG")
    return {"COVERAGE_PROCESS_CONFIG": value} if value else {}
