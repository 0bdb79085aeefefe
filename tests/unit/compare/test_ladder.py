"""The verdict ladder (evals/compare/ladder.py): when several special verdicts apply, the first
rule of LADDER decides, and a breached floor fails anything but incomplete and incompatible."""

from __future__ import annotations

import pytest

from evals.compare.ladder import LADDER, Facts, special_verdict, with_breached_floors
from evals.compare.model import FloorResult, RunSummary
from evals.results.spend import LimitStop

COMPLETE = RunSummary(
    suite="s", status="success", complete=True, total_cases=4, completed_cases=4, cases_in_file=4, attempts=8
)


def facts(**changes) -> Facts:
    """Every special verdict applies: a limit stopped a partial run whose cases hold no attempt,
    with infra errors, errors, another suite's baseline and none at all."""
    candidate = COMPLETE.model_copy(
        update={
            "complete": False,
            "status": "cancelled",
            "completed_cases": 1,
            "attempts": 0,
            "infra_error_rate": 0.5,
            "limit": LimitStop(limit="max_tokens", value=100, spent=120),
        }
    )
    every = {
        "candidate": candidate,
        "cases": 4,
        "max_error_rate": 0.1,
        "has_baseline": False,
        "incompatible": "another suite",
        "errored": "every attempt errored",
        "on_missing": "warn",
        "reset_command": None,
    }
    return Facts(**(every | changes))


def test_the_ladders_order_is_its_precedence():
    assert [rule.__name__ for rule in LADDER] == [
        "stopped_by_fail_fast",
        "stopped_by_a_limit",
        "partial_run",
        "nothing_attempted",
        "too_many_infra_errors",
        "incompatible_baseline",
        "errors_not_measured",
        "no_baseline",
    ]
    c = facts().candidate
    steps = [
        ({}, "incomplete", "limits.max_tokens"),
        ({"candidate": c.model_copy(update={"limit": None})}, "incomplete", "candidate run is partial"),
        ({"candidate": c.model_copy(update={"limit": None, "complete": True})}, "incomplete", "hold no attempt"),
        (
            {"candidate": c.model_copy(update={"limit": None, "complete": True, "attempts": 8})},
            "incomplete",
            "infra error rate 50.0%",
        ),
        ({"candidate": COMPLETE}, "incompatible", "another suite"),
        ({"candidate": COMPLETE, "incompatible": None}, "fail", "every attempt errored"),
        ({"candidate": COMPLETE, "incompatible": None, "errored": None}, "no-baseline", "no baseline"),
    ]
    for changes, verdict, said in steps:
        got = special_verdict(facts(**changes))
        assert got is not None and got[0] == verdict and said in got[1], (changes, got)
    quiet = facts(candidate=COMPLETE, incompatible=None, errored=None, has_baseline=True)
    assert special_verdict(quiet) is None  # the statistics decide


def _breached() -> FloorResult:
    return FloorResult(
        metric="pass_rate", unit="overall", bound="min", limit=0.9, value=0.5, ci_low=0.4, ci_high=0.6,
        confidence=0.9, n=10, verdict="breached",
    )  # fmt: skip


@pytest.mark.parametrize(
    ("verdict", "reason", "expected"),
    [
        ("pass", "", "fail"),
        ("inconclusive", "not sure", "fail"),
        ("no-baseline", "first run", "fail"),
        ("incomplete", "partial", "incomplete"),
        ("incompatible", "reset", "incompatible"),
    ],
)
def test_a_breached_floor_fails_all_but_incomplete_and_incompatible(verdict, reason, expected):
    got, said = with_breached_floors(verdict, reason, [_breached()])
    assert got == expected
    assert ("absolute floor breached" in said) is (expected == "fail")
    assert with_breached_floors(verdict, reason, []) == (verdict, reason)
