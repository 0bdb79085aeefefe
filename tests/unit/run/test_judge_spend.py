"""The judge's own calls are spend (docs/spec.md#spend-reporting): each judged attempt records what its judge calls
cost (``judge_usage``: the usage the endpoint reported, at the judge's prices), the run's spend
and every summary count it beside the target's, and ``limits.max_cost_usd`` / ``max_tokens`` stop
a run the judge alone takes past them. Against the local OpenAI-compatible server as the judge;
a verdict from the response cache paid nothing; a cost limit over a judge without prices is
refused before the run."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from fakes.openai_server import OpenAIServer
from fakes.openai_server import openai_server as openai_server  # the fixture
from fakes.suites import echo_cases, write_suite
from test_judge import framing

from evals.common.errors import EXIT_INFRA, EXIT_PASS, EXIT_USAGE
from evals.results.files import load_results
from evals.results.spend import usd

PRICE_IN, PRICE_OUT = 50.0, 200.0  # USD per million tokens: a judge call costs about a cent


def evalgate(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GITHUB_")}
    return subprocess.run(
        [sys.executable, "-m", "evals", *args], capture_output=True, text=True, timeout=300, cwd=cwd, env=env
    )


class Grader:
    """A judge model that passes an output equal to the reference, and keeps the usage the server
    reports for each call (word counts of the prompt and of the reply, tests/fakes/openai_server.py)."""

    def __init__(self) -> None:
        self.usage: list[tuple[int, int]] = []

    def __call__(self, body: dict) -> str:
        nonce, data, _ = framing(body["messages"][-1]["content"])
        ok = data["OUTPUT"].strip() == data["REFERENCE ANSWER"].strip()
        reply = json.dumps({"nonce": nonce, "verdict": "pass" if ok else "fail", "score": int(ok), "reasoning": "ok"})
        prompt = sum(len(str(m.get("content", "")).split()) for m in body["messages"])
        self.usage.append((prompt, len(reply.split())))
        return reply


def judged_suite(folder: Path, server: OpenAIServer | str, n: int, *, target_cost: float, **config) -> Path:
    """An echo target that reports 1 token in, 1 out and ``target_cost`` per answer, graded by a
    priced judge on ``server`` (or at a URL)."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "echo.py").write_text(
        "def answer(text):\n"
        f"    return {{'output': text, 'tokens_in': 1, 'tokens_out': 1, 'cost_usd': {target_cost!r}}}\n"
    )
    judge = {
        "model": "local:judge-1",
        "base_url": server if isinstance(server, str) else server.url,
        "api_key_env": None,
        "rubric": "The output is the reference answer.",
        "retries": 0,
        "price_in_per_mtok": PRICE_IN,
        "price_out_per_mtok": PRICE_OUT,
    }
    judge.update(config.pop("judge", {}))
    return write_suite(
        folder, echo_cases(n), target={"python": "echo:answer"}, scorers=[{"judge": judge}], concurrency=1, **config
    )


def test_each_attempt_records_its_judges_usage_and_the_spend_counts_it(tmp_path: Path, openai_server) -> None:
    grader = Grader()
    openai_server.responder = grader
    config = judged_suite(tmp_path, openai_server, 6, target_cost=0.001)
    done = evalgate("run", "--config", str(config), "--output", "r.json", cwd=tmp_path)
    assert done.returncode == EXIT_PASS, done.stderr
    results = load_results(tmp_path / "r.json")
    usage = [a.judge_usage for c in results.cases for a in c.attempts]
    assert len(grader.usage) == 6 and all(u is not None and u.calls == 1 for u in usage)
    assert sorted((u.tokens_in, u.tokens_out) for u in usage) == sorted(grader.usage)  # type: ignore[union-attr]
    judge_cost = sum((i * PRICE_IN + o * PRICE_OUT) / 1e6 for i, o in grader.usage)
    assert sum(u.cost_usd for u in usage) == pytest.approx(judge_cost)  # type: ignore[union-attr,misc]
    # The target's own tokens and cost stay the target's: the tokens and cost_usd metrics compare targets.
    assert all(a.cost_usd == 0.001 and a.tokens_in == 1 for c in results.cases for a in c.attempts)

    total = 6 * 0.001 + judge_cost
    judge_tokens = sum(i + o for i, o in grader.usage)
    shown = evalgate("show", "r.json", cwd=tmp_path)
    assert f"cost:    {usd(total)} (judge {usd(judge_cost)})" in shown.stdout, shown.stdout
    assert f"(judge {judge_tokens:,})" in shown.stdout

    # The same suite again: every verdict comes from the response cache, and paid nothing.
    again = evalgate("run", "--config", str(config), "--output", "r2.json", cwd=tmp_path)
    assert again.returncode == EXIT_PASS, again.stderr
    assert len(grader.usage) == 6
    cached = load_results(tmp_path / "r2.json")
    assert all(a.judge_usage is None and a.passed for c in cached.cases for a in c.attempts)
    shown = evalgate("show", "r2.json", cwd=tmp_path)
    assert "cost:    $0.006\n" in shown.stdout and "judge" not in shown.stdout.split("cost:", 1)[1].split("\n")[0]

    # The gate's comment states the judge's part of the spend.
    gate = evalgate("gate", "--config", str(config), "--results", "r.json", "--out-dir", "out", cwd=tmp_path)
    assert gate.returncode == EXIT_PASS, gate.stdout + gate.stderr
    comment = (tmp_path / "out" / "comment.md").read_text(encoding="utf-8")
    row = next(line for line in comment.splitlines() if line.startswith("| candidate | 6 |"))
    assert f"(judge \\{usd(judge_cost)})" in row and f"(judge {judge_tokens:,})" in row, row


@pytest.mark.parametrize("limit", ["max_cost_usd", "max_tokens"])
def test_a_limit_the_judge_alone_reaches_stops_the_run(tmp_path: Path, openai_server, limit: str) -> None:
    """The target costs nothing (and 2 tokens an answer): before the judge counted, this run would
    have completed; now it stops once its judge calls reach the limit."""
    grader = Grader()
    openai_server.responder = grader
    value = {"max_cost_usd": 0.03, "max_tokens": 600}[limit]
    config = judged_suite(tmp_path, openai_server, 30, target_cost=0.0, limits={limit: value})
    stopped = evalgate("run", "--config", str(config), "--output", "r.json", cwd=tmp_path)
    assert stopped.returncode == EXIT_INFRA, stopped.stderr
    partial = load_results(tmp_path / "r.json")
    stop = partial.run.limit
    assert stop is not None and stop.limit == limit and not stop.unknown
    assert 0 < partial.run.completed_cases < 30 and len(grader.usage) == partial.run.completed_cases
    judge_cost = sum((i * PRICE_IN + o * PRICE_OUT) / 1e6 for i, o in grader.usage)
    judge_tokens = sum(i + o for i, o in grader.usage)
    spent = judge_cost if limit == "max_cost_usd" else judge_tokens + 2 * partial.run.completed_cases
    assert stop.spent == pytest.approx(spent) and spent >= value
    # Stopped at the first attempt that reached it (concurrency 1): one fewer would not have.
    last_in, last_out = grader.usage[-1]
    last = (last_in * PRICE_IN + last_out * PRICE_OUT) / 1e6 if limit == "max_cost_usd" else last_in + last_out + 2
    assert spent - last < value


def test_a_judge_that_reports_no_usage_stops_a_token_limit_rather_than_run_unmetered(
    tmp_path: Path, openai_server, monkeypatch: pytest.MonkeyPatch
) -> None:
    grader = Grader()
    openai_server.responder = grader
    completion = openai_server.completion

    def without_usage(body: dict) -> dict:
        answer = completion(body)
        answer.pop("usage")
        return answer

    monkeypatch.setattr(openai_server, "completion", without_usage)
    config = judged_suite(tmp_path, openai_server, 10, target_cost=0.0, limits={"max_tokens": 10_000})
    stopped = evalgate("run", "--config", str(config), "--output", "r.json", cwd=tmp_path)
    assert stopped.returncode == EXIT_INFRA, stopped.stderr
    partial = load_results(tmp_path / "r.json")
    assert partial.run.limit is not None and partial.run.limit.unknown and partial.run.completed_cases == 1
    # The judge reported nothing, not the target: the message says whose usage is missing.
    assert partial.run.limit.unreported_by == "judge"
    assert "cannot be enforced: an attempt's judge reported no tokens" in partial.run.message
    assert "use a judge endpoint that reports usage" in partial.run.message
    [attempt] = partial.cases[0].attempts
    assert attempt.judge_usage is not None and attempt.judge_usage.tokens is None


def test_a_cost_limit_over_a_judge_without_prices_is_refused_before_the_run(tmp_path: Path, openai_server) -> None:
    openai_server.responder = Grader()
    config = judged_suite(
        tmp_path,
        openai_server,
        3,
        target_cost=0.001,
        limits={"max_cost_usd": 1},
        judge={"price_in_per_mtok": None, "price_out_per_mtok": None},
    )
    refused = evalgate("run", "--config", str(config), "--output", "r.json", cwd=tmp_path)
    assert refused.returncode == EXIT_USAGE, refused.stderr
    line = next(i for i, text in enumerate(config.read_text().splitlines(), 1) if "judge:" in text)
    assert f"evalgate.yml:{line}" in refused.stderr and "the judge scorer has no prices" in refused.stderr
    assert "price_in_per_mtok" in refused.stderr and not openai_server.requests


def test_what_the_target_cost_counts_when_its_judge_cannot_be_reached(tmp_path: Path) -> None:
    """The target answered (and was paid); the judge's endpoint is down, so the attempt is an infra
    error. Its cost still counts toward the spend and the limit: a dead judge must not let a run
    spend without limit."""
    import socket

    with socket.socket() as sock:  # a port nothing listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    config = judged_suite(tmp_path, f"http://127.0.0.1:{port}/v1", 20, target_cost=0.01, limits={"max_cost_usd": 0.05})
    stopped = evalgate("run", "--config", str(config), "--output", "r.json", cwd=tmp_path)
    assert stopped.returncode == EXIT_INFRA, stopped.stderr
    partial = load_results(tmp_path / "r.json")
    assert partial.run.limit is not None and partial.run.limit.limit == "max_cost_usd", partial.run
    assert partial.run.limit.spent == pytest.approx(0.05)
    errors = [a.error for c in partial.cases for a in c.attempts]
    assert errors and all(e is not None and e.kind == "infra" for e in errors)
