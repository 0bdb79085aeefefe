"""Cost and token limits under concurrency (docs/spec.md#limits): the run reserves an estimate (the
dearest paid attempt so far) for every attempt started or committed to, and starts a case only
while spent + reserved stays below the limit. Against the local OpenAI-compatible server, an agent
whose every attempt is a three-call tool loop, priced, at concurrency 8: a limit of a few attempts'
cost once ended at 2-3× it (every slot's attempt started before the first one's cost was known)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from fakes.openai_server import OpenAIServer, tool_calls, tool_results
from fakes.suites import echo_cases, write_suite

from evals.common.errors import EXIT_INFRA, EXIT_PASS
from evals.results.files import load_results
from evals.results.model import Results
from evals.results.spend import usd

TOOLS = '''
def lookup(key: str) -> str:
    """What the notes say about a key."""
    return "the notes say " + key
'''
PRICES = {"price_in_per_mtok": 1000.0, "price_out_per_mtok": 4000.0}
CONCURRENCY = 8


def three_calls(body: dict[str, Any]) -> dict[str, Any] | str:
    """A model that looks its question up twice, then answers it: three model calls an attempt."""
    question = next(m["content"] for m in body["messages"] if m.get("role") == "user")
    if len(tool_results(body)) < 2:
        return tool_calls(("lookup", {"key": question}), content="let me check")
    return question


def one_to_four_calls(body: dict[str, Any]) -> dict[str, Any] | str:
    """Case i's attempt makes 1 + i % 4 model calls: attempts' costs differ, the first ones cheap."""
    question = next(m["content"] for m in body["messages"] if m.get("role") == "user")
    if len(tool_results(body)) < int(question[1:]) % 4:
        return tool_calls(("lookup", {"key": question}), content="let me check")
    return question


def run(
    tmp_path: Path,
    server: OpenAIServer,
    limits: dict[str, float],
    attempts: int = 1,
    cases: int = 40,
    code: int = EXIT_INFRA,
) -> tuple[Results, str]:
    tmp_path.mkdir(parents=True)
    (tmp_path / "agent_tools.py").write_text(TOOLS, encoding="utf-8")
    target = {
        "openai": {
            "base_url": server.url, "model": "local:agent", "api_key_env": None, **PRICES,
            "tools": {"lookup": "agent_tools:lookup"},
        }
    }  # fmt: skip
    config = write_suite(
        tmp_path, echo_cases(cases), target=target, scorers=["contains"], concurrency=CONCURRENCY,
        attempts=attempts, limits=limits,
    )  # fmt: skip
    env = {k: v for k, v in os.environ.items() if not k.startswith("GITHUB_")}
    out = tmp_path / "results.json"
    done = subprocess.run(
        [sys.executable, "-m", "evals", "run", "--config", str(config), "--output", str(out)],
        capture_output=True, text=True, timeout=300, cwd=tmp_path, env=env, check=False,
    )  # fmt: skip
    assert done.returncode == code, done.stderr
    return load_results(out), done.stderr


def paid(results: Results) -> list[tuple[float, int]]:
    """Each attempt's (cost, tokens): every attempt here is answered and priced."""
    return [(a.cost_usd or 0.0, (a.tokens_in or 0) + (a.tokens_out or 0)) for c in results.cases for a in c.attempts]


def test_a_cost_limit_is_passed_by_at_most_one_attempt_not_one_per_slot(tmp_path: Path) -> None:
    with OpenAIServer(latency=0.05, responder=three_calls) as server:
        probe, _ = run(tmp_path / "probe", server, {"max_cost_usd": 1e-9})
        per_attempt = paid(probe)[0][0]  # every attempt here costs the same
        limit, asked = 3.5 * per_attempt, len(server.requests)
        results, said = run(tmp_path / "run", server, {"max_cost_usd": limit})
        asked = len(server.requests) - asked
    costs = [c for c, _ in paid(results)]
    spent = sum(costs)
    assert results.run.limit is not None and results.run.limit.limit == "max_cost_usd"
    assert results.run.limit.spent == pytest.approx(spent) and results.run.status == "cancelled"
    # Nothing the server answered is lost: 3 model calls an attempt, every attempt in the file.
    assert asked == 3 * len(costs) and all(c == pytest.approx(per_attempt) for c in costs)
    # The bound of docs/spec.md#limits (one attempt's cost per slot), and what the reservation makes
    # of it when attempts cost the same: the limit reached, and passed by less than one attempt.
    assert spent <= limit + CONCURRENCY * per_attempt
    assert limit <= spent < limit + per_attempt, (spent / limit, len(costs))
    assert "limits.max_cost_usd" in said and "reached" in said


def test_a_token_limit_is_passed_by_at_most_one_attempt(tmp_path: Path) -> None:
    with OpenAIServer(latency=0.05, responder=three_calls) as server:
        probe, _ = run(tmp_path / "probe", server, {"max_tokens": 1})
        per_attempt = paid(probe)[0][1]
        limit = int(4.5 * per_attempt)
        results, _ = run(tmp_path / "run", server, {"max_tokens": limit})
    tokens = sum(t for _, t in paid(results))
    assert results.run.limit is not None and results.run.limit.limit == "max_tokens"
    assert results.run.limit.spent == tokens
    assert limit <= tokens < limit + per_attempt, (tokens / limit, tokens, limit)


def test_a_case_is_started_only_when_all_its_attempts_fit_and_is_never_cut(tmp_path: Path) -> None:
    """attempts: 3 and room for 7.5 attempts: two whole cases (6 attempts) fit, a third (9) would
    pass the limit, so the run stops before it; every case in the file is whole."""
    with OpenAIServer(latency=0.05, responder=three_calls) as server:
        probe, _ = run(tmp_path / "probe", server, {"max_cost_usd": 1e-9})
        per_attempt, asked = paid(probe)[0][0], len(server.requests)
        results, said = run(tmp_path / "run", server, {"max_cost_usd": 7.5 * per_attempt}, attempts=3)
        asked = len(server.requests) - asked
    assert results.run.limit is not None and results.run.completed_cases == len(results.cases) == 2
    assert all(len(c.attempts) == 3 for c in results.cases)
    assert asked == 3 * 6  # 6 attempts of 3 model calls: none started for the third case
    assert results.run.limit.spent == pytest.approx(6 * per_attempt)
    stop = f"limits.max_cost_usd ({usd(7.5 * per_attempt)}) reached: {usd(6 * per_attempt)} spent"
    assert f"{stop} (the next case would pass it) after 2 of 40 cases" in said


def test_the_reservation_learns_from_the_dearest_attempt_and_fills_slots_as_answers_come(tmp_path: Path) -> None:
    """Costs that differ by attempt (1 to 4 model calls), the first cheap: a reservation of the mean
    so far, with all 8 slots filled from the first answer, passed a limit of 2.5 mean attempts by ~4
    of the dearest attempts (3.6; 5.6 with no reservation). The dearest so far, and no more attempts
    under way than paid ones seen, keep it within one."""
    with OpenAIServer(latency=0.05, responder=one_to_four_calls) as server:
        probe, _ = run(tmp_path / "probe", server, {}, cases=8, code=EXIT_PASS)
        mean = sum(c for c, _ in paid(probe)) / 8
        results, _ = run(tmp_path / "run", server, {"max_cost_usd": 2.5 * mean})
    costs = [c for c, _ in paid(results)]
    assert results.run.limit is not None and results.run.limit.limit == "max_cost_usd"
    assert 2.5 * mean <= sum(costs) < 2.5 * mean + max(c for c, _ in paid(probe)), (sum(costs) / mean, costs)
