"""``judge: {repeats: k}`` (docs/spec.md#judge-noise) against the local OpenAI-compatible server: an
output is judged k times, scored by the mean verdict against ``pass_threshold``, every verdict kept;
each repeat is its own cache entry, and the first keeps the key a judge without repeats has, so the
entries an old run cached still answer."""

from __future__ import annotations

import asyncio
import itertools
import json
import subprocess
import sys
from pathlib import Path

import pytest
from fakes.openai_server import OpenAIServer, status
from fakes.openai_server import openai_server as openai_server  # the fixture
from test_judge import GERMANY, RUBRIC, framing, grader, reply, suite

from evals.results.files import load_results
from evals.run.cache import ResponseCache
from evals.run.scorers.base import Score, ScorerUnavailable
from evals.run.scorers.judge import Judge, JudgeParams
from evals.suite.cases import Case


def scripted(*verdicts: bool):
    """A judge model that gives these verdicts in turn, whatever it is shown (then the last, forever)."""
    turns = itertools.chain(verdicts, itertools.repeat(verdicts[-1]))

    def respond(body: dict) -> str:
        nonce, _, _ = framing(body["messages"][-1]["content"])
        ok = next(turns)
        return reply(nonce, ok, "looks right" if ok else "looks wrong")

    return respond


def judged(server: OpenAIServer, cache: ResponseCache | None = None, case: Case = GERMANY, **params) -> Score:
    base = {"model": "local:judge-1", "base_url": server.url, "api_key_env": None, "rubric": RUBRIC, "retries": 0}

    async def once() -> Score:
        judge = Judge(JudgeParams(**{**base, **params}), Path("."), cache)
        try:
            return await judge("Berlin", case)
        finally:
            await judge.aclose()

    return asyncio.run(once())


def test_repeats_score_the_mean_verdict_and_keep_every_one(openai_server):
    openai_server.responder = scripted(True, False, True)
    score = judged(openai_server, repeats=3)
    assert len(openai_server.requests) == 3
    assert score.passed is True and score.score == 2 / 3
    judge = score.details["judge"]
    assert [r["passed"] for r in judge["repeats"]] == [True, False, True]
    assert judge["verdict"] == "pass" and judge["reasoning"] == "looks right"  # a reason that agrees with it
    assert score.usage is not None and score.usage.calls == 3  # every call is paid for and counted


def test_the_threshold_applies_to_the_share_of_passing_verdicts(openai_server):
    openai_server.responder = scripted(True, False, False)
    assert judged(openai_server, repeats=3).passed is False  # 1 of 3 is below 0.5
    openai_server.responder = scripted(True, False, False)
    assert judged(openai_server, repeats=3, pass_threshold=0.3).passed is True
    openai_server.responder = scripted(True, False)
    assert judged(openai_server, repeats=2).passed is True  # a tie reaches 0.5: pass


def test_each_repeat_is_its_own_cache_entry_and_the_first_keeps_the_old_key(tmp_path, openai_server):
    cache = ResponseCache(tmp_path / "cache", 1 << 20)
    openai_server.responder = scripted(False)
    old = judged(openai_server, cache)  # a judge without repeats, as before
    assert "repeats" not in old.details["judge"] and len(openai_server.requests) == 1
    openai_server.responder = scripted(True)
    score = judged(openai_server, cache, repeats=3)
    # The old entry answers the first repeat; the other two are asked (and are not the first's copy).
    assert len(openai_server.requests) == 3
    assert [r["passed"] for r in score.details["judge"]["repeats"]] == [False, True, True]
    assert [bool(r.get("cached")) for r in score.details["judge"]["repeats"]] == [True, False, False]
    again = judged(openai_server, cache, repeats=3)
    assert len(openai_server.requests) == 3 and again.details["judge"]["cached"] is True and again.usage is None


def test_a_repeat_without_verdict_makes_the_attempt_infra_and_keeps_what_was_paid(openai_server):
    openai_server.responder = scripted(True)
    openai_server.script(None, status(500), after=1)  # the second repeat's call fails
    try:
        judged(openai_server, repeats=3)
    except ScorerUnavailable as exc:
        assert "HTTP 500" in str(exc)
        assert exc.usage is not None and exc.usage.calls == 1  # the first repeat's answered call
    else:
        raise AssertionError("a repeat without a verdict must not give the output one")


def flips_every_fourth():
    calls = itertools.count()

    def respond(body: dict) -> str:
        said = json.loads(grader(body))
        if next(calls) % 4 == 1:
            said["verdict"] = "fail" if said["verdict"] == "pass" else "pass"
            said["score"] = 1 - said["score"]
        return json.dumps(said)

    return respond


def evalgate(*args: str) -> subprocess.CompletedProcess:
    command = [sys.executable, "-m", "evals", *args]
    return subprocess.run(command, capture_output=True, text=True, timeout=120, check=False)


@pytest.mark.e2e
def test_a_flipping_judge_with_repeats_is_measured_not_believed(tmp_path, openai_server):
    """``evalgate run`` against a judge that flips every fourth verdict keeps the three verdicts of
    each output and pays for every call; ``evalgate compare`` reports each run's self-agreement;
    the majority of three decides, so one flipped verdict does not flip the case."""
    openai_server.responder = flips_every_fourth()
    config = suite(tmp_path, openai_server, repeats=3, retries=0)
    for name in ("base", "cand"):
        done = evalgate("run", "--config", str(config), "-o", str(tmp_path / f"{name}.json"), "--no-cache")
        assert done.returncode == 0, done.stderr
    assert len(openai_server.requests) == 2 * 3 * 3  # two runs, three cases, three verdicts each
    base = load_results(tmp_path / "base.json")
    # Each attempt keeps its three verdicts and pays for its three calls; the majority decides.
    for case in base.cases:
        [attempt] = case.attempts
        assert len(attempt.metadata["judge"]["repeats"]) == 3 and attempt.judge_usage.calls == 3
    assert {c.id: c.attempts[0].passed for c in base.cases} == {"fr": True, "de": False, "it": False}
    done = evalgate(
        "compare",
        *("--baseline", str(tmp_path / "base.json"), "--candidate", str(tmp_path / "cand.json")),
        *("--config", str(config), "--report", str(tmp_path / "report.md"), "--json", str(tmp_path / "c.json")),
    )
    assert done.returncode == 0, done.stderr
    judge = json.loads((tmp_path / "c.json").read_text())["judge"]
    assert judge["baseline"]["outputs"] == 3 and judge["candidate"]["outputs"] == 3
    assert judge["baseline"]["unanimous"] == 1 and judge["baseline"]["cases"] == ["fr", "de"]  # calls 1 and 5 flipped
    report = (tmp_path / "report.md").read_text()
    assert "⚖️ Judge: agreed with itself on" in report and "| Baseline | 3 × 3 |" in report


@pytest.mark.e2e
def test_every_repeat_counts_toward_a_limit(tmp_path, openai_server):
    """``limits.max_tokens`` counts the k judge calls of each output, not one: the run stops when
    the repeats' tokens reach it, having paid for three calls a case."""
    from test_judge_spend import Grader, judged_suite
    from test_judge_spend import evalgate as run_in

    grader = Grader()
    openai_server.responder = grader
    config = judged_suite(
        tmp_path, openai_server, 30, target_cost=0.0, limits={"max_tokens": 1500}, judge={"repeats": 3}
    )
    stopped = run_in("run", "--config", str(config), "--output", "r.json", cwd=tmp_path)
    assert stopped.returncode == 3, stopped.stderr
    partial = load_results(tmp_path / "r.json")
    stop = partial.run.limit
    assert stop is not None and stop.limit == "max_tokens" and 0 < partial.run.completed_cases < 30
    assert len(grader.usage) == 3 * partial.run.completed_cases
    assert stop.spent == sum(i + o for i, o in grader.usage) + 2 * partial.run.completed_cases >= 1500
