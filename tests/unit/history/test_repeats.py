"""Which recorded runs repeat the same code (docs/spec.md#repeated-runs): runs of one commit with a clean
tree, the same config hash, case set and target definition. Flip rates, `evalgate flaky` and the
plan's discordance read only those, on SQLite and PostgreSQL."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from fakes.history_db import history_url as history_url  # the fixture
from fakes.history_db import pg_admin_url as pg_admin_url  # the fixture
from fakes.suites import load_suite

from evals.history import record_run
from evals.history.discordance import discordance_for
from evals.history.flaky import known_flaky, smoke_history
from evals.results.model import Attempt, CaseResult, Results, RunInfo, TargetInfo
from evals.suite.config import SuiteConfig

SHA = "a" * 40
# c0 and c1 pass in the first run; the second run fails c1: one flip of one pair.
FIRST = {"c0": True, "c1": True, "c2": False}
SECOND = {"c0": True, "c1": False, "c2": False}


@pytest.fixture
def config(tmp_path: Path, history_url: str) -> SuiteConfig:
    cases = [{"id": c, "input": f"q{c}"} for c in FIRST]
    return load_suite(tmp_path, cases, target={"python": "m:f"}, scorers=["exact"])


def recorded(config: SuiteConfig, outcomes: dict[str, bool], started: str, **run: Any) -> None:
    """A whole, complete run recorded as `evalgate run` records it; ``run``: what differs from a run
    of commit SHA with a clean tree, this config's hash, the python target and each case's hash."""
    hashes = run.pop("hashes", {})
    header: dict[str, Any] = {
        "git_sha": SHA,
        "git_dirty": False,
        "config_hash": config.config_hash(),
        "target": TargetInfo(kind="python", params={"python": "m:f"}),
        **run,
    }
    cases = [
        CaseResult(id=c, hash=hashes.get(c, f"h-{c}"), attempts=[Attempt(passed=p, score=float(p))], input=f"q{c}")
        for c, p in outcomes.items()
    ]
    info = RunInfo(
        suite=config.suite,
        status="success",
        total_cases=len(cases),
        completed_cases=len(cases),
        started_at=started,
        **header,
    )
    assert record_run(Results(run=info, cases=cases)).failures == 0


def test_two_runs_of_one_clean_commit_that_disagree_are_flaky(config: SuiteConfig) -> None:
    recorded(config, FIRST, "2026-11-01T10:00:00Z")
    recorded(config, SECOND, "2026-11-02T10:00:00Z")
    assert known_flaky(config) == {"c1": 1.0}
    observed = discordance_for(config)
    assert observed is not None and observed.cases == 3 and observed.discordance == pytest.approx(1 / 3)
    assert observed.pairs == [(SHA[:8], SHA[:8])]
    history = smoke_history(config)
    assert history is not None and history.runs == 2 and history.outcomes["c1"] == [1.0, 0.0]


OTHER_CODE = {
    "another commit": {"git_sha": "b" * 40},
    "uncommitted changes": {"git_dirty": True},
    "an unknown tree state": {"git_dirty": None},
    "no commit at all": {"git_sha": None, "git_dirty": None},
    "another config hash": {"config_hash": "sha256:other"},
    "another target model": {"target": TargetInfo(kind="python", model="m2", params={"python": "m:f"})},
    "another target parameter": {"target": TargetInfo(kind="python", params={"python": "m:g"})},
    "another case set": {"hashes": {"c2": "h-c2-edited"}},
}


@pytest.mark.parametrize("change", list(OTHER_CODE))
def test_a_run_of_other_code_is_no_repeat(config: SuiteConfig, change: str) -> None:
    """The second run differs from the first in one part of what it ran: the cases it flipped
    flipped with the code, so nothing is flaky and the plan has no pair to read."""
    recorded(config, FIRST, "2026-11-01T10:00:00Z")
    recorded(config, SECOND, "2026-11-02T10:00:00Z", **OTHER_CODE[change])
    assert known_flaky(config) == {}
    assert discordance_for(config) is None


def test_flips_count_within_the_newest_group_of_repeats_only(config: SuiteConfig) -> None:
    """Two runs of commit a agree; then commit b breaks c1 and is run twice, the same way each
    time. The pair across the commits is a change, not a flip; b's own pair shows no noise."""
    recorded(config, FIRST, "2026-11-01T10:00:00Z")
    recorded(config, FIRST, "2026-11-02T10:00:00Z")
    recorded(config, SECOND, "2026-11-03T10:00:00Z", git_sha="b" * 40)
    recorded(config, SECOND, "2026-11-04T10:00:00Z", git_sha="b" * 40)
    assert known_flaky(config) == {}
    observed = discordance_for(config)
    assert observed is not None and observed.discordance == 0.0 and observed.pairs == [("b" * 8, "b" * 8)]
    # A dirty run in between is of neither commit's code: it neither joins nor splits b's pair.
    recorded(config, FIRST, "2026-11-05T10:00:00Z", git_sha="b" * 40, git_dirty=True)
    assert known_flaky(config) == {}
    history = smoke_history(config)
    assert history is not None and history.runs == 2 and history.outcomes["c1"] == [0.0, 0.0]
