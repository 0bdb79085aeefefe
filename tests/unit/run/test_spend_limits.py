"""Hard limits (docs/spec.md#limits) through the real CLI: ``limits.max_cost_usd`` with a
python target that reports its cost, ``max_tokens`` against the local OpenAI-compatible server,
``max_duration_s`` with a slow target. A stop leaves a partial, resumable file that records which
limit and what was spent; nothing in flight is lost or turned into an error; the gate says
``incomplete`` (exit 3) naming the limit; a resume with the same budget stops again at once, one
with a raised budget completes the run and the gate then gives a real verdict."""

from __future__ import annotations

import html
import json
import os
import subprocess
import sys
import textwrap
from collections import Counter
from pathlib import Path

import pytest
import yaml
from fakes.openai_server import OpenAIServer, status
from fakes.suites import echo_cases, write_suite

from evals.common.errors import EXIT_INFRA, EXIT_PASS, EXIT_USAGE
from evals.results.files import load_results
from evals.results.model import Results

COST = 0.01  # per attempt


def evalgate(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GITHUB_")}
    return subprocess.run(
        [sys.executable, "-m", "evals", *args],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=cwd,
        env=env,
        check=False,
    )


def costly_target(folder: Path, log: Path, sleep_s: float = 0.2, cost: float | None = COST) -> None:
    """``costly:answer``: echoes, reports tokens (and ``cost`` unless None), and logs the start and
    the end of every call, so a test can tell that every call it started was recorded."""
    folder.mkdir(parents=True, exist_ok=True)
    reported = f', "cost_usd": {cost!r}' if cost is not None else ""
    (folder / "costly.py").write_text(
        textwrap.dedent(
            f"""
            import time

            def answer(text, case):
                with open({str(log)!r}, "a") as fh:
                    fh.write("start " + case.id + "\\n")
                time.sleep({sleep_s!r})
                with open({str(log)!r}, "a") as fh:
                    fh.write("end " + case.id + "\\n")
                return {{"output": text, "tokens_in": 10, "tokens_out": 2{reported}}}
            """
        )
    )


def set_limits(config: Path, **limits: float) -> None:
    data = yaml.safe_load(config.read_text(encoding="utf-8"))
    data["limits"] = limits
    config.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")


def calls(log: Path) -> Counter[str]:
    return Counter(line for line in log.read_text().splitlines()) if log.exists() else Counter()


def assert_nothing_in_flight_was_lost(results: Results, log: Path, attempts_per_case: int) -> None:
    """Every call the target started ended and is in the file as an attempt without an error; every
    case in the file holds all its attempts (the attempts of a started case are run, not dropped)."""
    logged = calls(log)
    starts = sum(n for line, n in logged.items() if line.startswith("start "))
    ends = sum(n for line, n in logged.items() if line.startswith("end "))
    attempts = [a for case in results.cases for a in case.attempts]
    assert starts == ends == len(attempts), (starts, ends, len(attempts))
    assert all(a.error is None and a.passed for a in attempts)
    assert all(len(case.attempts) == attempts_per_case for case in results.cases)


@pytest.mark.e2e
def test_cost_limit_stops_the_gate_incomplete_and_a_raised_limit_resumes_to_a_verdict(tmp_path: Path) -> None:
    log = tmp_path / "calls.log"
    costly_target(tmp_path, log)
    config = write_suite(
        tmp_path, echo_cases(20), target={"python": "costly:answer"}, concurrency=3, attempts=2, slices=[]
    )
    # A baseline first (no limit): the gate stores it.
    seeded = evalgate("gate", "--config", str(config), "--out-dir", "seed", "--seed", cwd=tmp_path)
    assert seeded.returncode == EXIT_PASS, seeded.stdout + seeded.stderr
    log.unlink()

    set_limits(config, max_cost_usd=0.1)
    gate = evalgate("gate", "--config", str(config), "--out-dir", "out", cwd=tmp_path)
    assert gate.returncode == EXIT_INFRA, gate.stdout + gate.stderr
    assert "evalgate gate: incomplete: the candidate run was stopped by a limit" in gate.stdout
    assert "limits.max_cost_usd ($0.10) reached" in gate.stdout
    # The run's own lines name the limit; how to finish is said once, with the gate's verdict.
    said = gate.stdout + gate.stderr
    assert said.count("reached") == 1 and said.count("--resume") == 1, said
    # ...naming the run that finishes this gate's candidate: its config and its file, not a bare --resume.
    assert f"then rerun with `evalgate run --config {config} --output out/results.json --resume` (what" in said
    assert "evalgate run: cancelled by limits.max_cost_usd ($0.10):" in gate.stderr

    path = tmp_path / "out" / "results.json"
    partial = load_results(path)
    run = partial.run
    assert run.status == "cancelled" and not run.is_complete
    assert run.limit is not None and run.limit.limit == "max_cost_usd" and run.limit.value == 0.1
    spent = sum(a.cost_usd for c in partial.cases for a in c.attempts)
    assert run.limit.spent == pytest.approx(spent) and run.limit.spend.cost_usd == pytest.approx(spent)
    # It stopped at the limit: a case starts only while spent + $0.01 reserved for each attempt
    # under way (and for the case's second) stays below it, so it ends at $0.10 (it used to end at $0.12).
    assert 0 < run.completed_cases == len(partial.cases) < 20
    assert spent == pytest.approx(0.1)
    assert_nothing_in_flight_was_lost(partial, log, attempts_per_case=2)

    comment = (tmp_path / "out" / "comment.md").read_text(encoding="utf-8")
    assert "limits.max\\_cost\\_usd (\\$0.10) reached" in comment
    assert "raise `limits.max_cost_usd` (what the" in comment
    # The comment's paragraph names the same commands as the reason: this gate's config, file and flags.
    regate = f"`evalgate gate --config {config} --results out/results.json --out-dir out`"
    assert f"`evalgate run --config {config} --output out/results.json --resume`" in comment
    assert regate in comment and f"then {regate}" in said and "gate it again" not in said
    verdict = json.loads((tmp_path / "out" / "comparison.json").read_text(encoding="utf-8"))
    assert verdict["verdict"] == "incomplete" and verdict["exit_code"] == EXIT_INFRA
    assert verdict["candidate_run"]["limit"]["limit"] == "max_cost_usd"

    # The same budget: what the kept cases spent counts, so the resume stops before any attempt.
    calls_before = calls(log)
    again = evalgate("run", "--config", str(config), "--output", str(path), "--resume", cwd=tmp_path)
    assert again.returncode == EXIT_INFRA, again.stderr
    assert "this resume stopped before any attempt: the cases it kept had spent it" in again.stderr
    assert calls(log) == calls_before
    assert load_results(path).run.completed_cases == run.completed_cases

    # A raised budget completes it, running only the cases that were not done.
    set_limits(config, max_cost_usd=5)
    done = evalgate("run", "--config", str(config), "--output", str(path), "--resume", cwd=tmp_path)
    assert done.returncode == EXIT_PASS, done.stderr
    complete = load_results(path)
    assert complete.run.status == "success" and complete.run.completed_cases == 20 and complete.run.limit is None
    assert all(n == 2 for line, n in calls(log).items() if line.startswith("end "))  # no case ran twice

    gate = evalgate("gate", "--config", str(config), "--results", str(path), "--out-dir", "out2", cwd=tmp_path)
    verdict = json.loads((tmp_path / "out2" / "comparison.json").read_text(encoding="utf-8"))
    assert verdict["verdict"] in ("pass", "inconclusive") and gate.returncode == EXIT_PASS, gate.stdout
    # Spend beside the baseline's, in the comment.
    comment = (tmp_path / "out2" / "comment.md").read_text(encoding="utf-8")
    line = "💰 Spend: candidate $0.40 for 40 attempts · baseline $0.40 for 40 attempts (same per attempt)"
    assert f"<details><summary>{line}</summary>" in html.unescape(comment)  # entities inside HTML
    assert "| baseline | 40 | 400 in, 80 out | \\$0.40 | none |" in comment
    assert "| candidate | 40 | 400 in, 80 out | \\$0.40 | none |" in comment


@pytest.mark.e2e
def test_token_limit_against_the_openai_server(tmp_path: Path) -> None:
    """Each answer reports usage; the run stops once the tokens reach max_tokens, and every request
    the server answered is an attempt in the file."""
    with OpenAIServer(latency=0.05) as server:
        target = {"openai": {"base_url": server.url, "model": "local:echo", "api_key_env": None}}
        config = write_suite(tmp_path, echo_cases(30), target=target, concurrency=2, limits={"max_tokens": 20})
        out = tmp_path / "results.json"
        stopped = evalgate("run", "--config", str(config), "--output", str(out), cwd=tmp_path)
        assert stopped.returncode == EXIT_INFRA, stopped.stderr
        partial = load_results(out)
        assert len(server.requests) == sum(len(c.attempts) for c in partial.cases)
        tokens = sum(a.tokens_in + a.tokens_out for c in partial.cases for a in c.attempts)
        assert partial.run.status == "cancelled" and 0 < partial.run.completed_cases < 30
        assert partial.run.limit is not None and partial.run.limit.limit == "max_tokens"
        assert partial.run.limit.spent == tokens >= 20
        assert "limits.max_tokens (20 tokens) reached" in stopped.stderr
        assert all(a.error is None for c in partial.cases for a in c.attempts)

        gate = evalgate("gate", "--config", str(config), "--results", str(out), "--out-dir", "out", cwd=tmp_path)
        assert gate.returncode == EXIT_INFRA and "incomplete" in gate.stdout and "limits.max_tokens" in gate.stdout

        set_limits(config, max_tokens=10_000)
        done = evalgate("run", "--config", str(config), "--output", str(out), "--resume", cwd=tmp_path)
        assert done.returncode == EXIT_PASS, done.stderr
        assert len(server.requests) == 30  # the kept cases were not asked again
        gate = evalgate("gate", "--config", str(config), "--results", str(out), "--out-dir", "out2", cwd=tmp_path)
        assert gate.returncode == EXIT_PASS and "evalgate gate: no-baseline" in gate.stdout, gate.stdout


@pytest.mark.e2e
def test_an_endpoint_that_counts_no_tokens_for_its_answers_is_stopped_as_unreported(tmp_path: Path) -> None:
    """Zero usage on a non-empty answer is an endpoint that does not count, not a free call: with
    max_tokens set, every one of 30 answers was taken as costing nothing and the limit was never
    reached. Now the run stops at the first such answer, its spend unknown."""
    zero = json.dumps(
        {
            "id": "c",
            "object": "chat.completion",
            "choices": [
                {"index": 0, "message": {"role": "assistant", "content": "an answer"}, "finish_reason": "stop"}
            ],
            "usage": {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0},
        }
    )
    with OpenAIServer() as server:
        server.script(None, *[status(200, body=zero) for _ in range(30)])
        target = {"openai": {"base_url": server.url, "model": "local:echo", "api_key_env": None}}
        config = write_suite(tmp_path, echo_cases(30), target=target, concurrency=1, limits={"max_tokens": 1_000})
        out = tmp_path / "results.json"
        stopped = evalgate("run", "--config", str(config), "--output", str(out), cwd=tmp_path)
        assert stopped.returncode == EXIT_INFRA, stopped.stderr
        partial = load_results(out)
        assert partial.run.limit is not None and partial.run.limit.limit == "max_tokens" and partial.run.limit.unknown
        assert partial.run.completed_cases < 30 and len(server.requests) < 30
        assert all(a.tokens_in is None and a.tokens_out is None for c in partial.cases for a in c.attempts)


@pytest.mark.e2e
def test_duration_limit_with_a_slow_target_lets_in_flight_attempts_finish(tmp_path: Path) -> None:
    log = tmp_path / "calls.log"
    costly_target(tmp_path, log, sleep_s=0.5)
    config = write_suite(
        tmp_path, echo_cases(20), target={"python": "costly:answer"}, concurrency=3, limits={"max_duration_s": 1}
    )
    out = tmp_path / "results.json"
    stopped = evalgate("run", "--config", str(config), "--output", str(out), cwd=tmp_path)
    assert stopped.returncode == EXIT_INFRA, stopped.stderr
    partial = load_results(out)
    assert partial.run.status == "timeout" and partial.run.limit is not None
    assert partial.run.limit.limit == "max_duration_s" and partial.run.limit.spent >= 1
    assert 3 <= partial.run.completed_cases < 20
    assert_nothing_in_flight_was_lost(partial, log, attempts_per_case=1)
    assert "each invocation gets max_duration_s anew" in partial.run.message

    # Each invocation gets its own wall clock: a resume with the same limit goes on.
    again = evalgate("run", "--config", str(config), "--output", str(out), "--resume", cwd=tmp_path)
    assert again.returncode in (EXIT_PASS, EXIT_INFRA), again.stderr
    assert load_results(out).run.completed_cases > partial.run.completed_cases


def test_each_shard_gets_its_share_of_the_budget(tmp_path: Path) -> None:
    """A matrix of N shards spends what one run would: each shard stops at 1/N of max_cost_usd."""
    log = tmp_path / "calls.log"
    costly_target(tmp_path, log, sleep_s=0.05)
    config = write_suite(
        tmp_path, echo_cases(40), target={"python": "costly:answer"}, concurrency=1, limits={"max_cost_usd": 0.1}
    )
    stopped = evalgate("run", "--config", str(config), "--output", "s1.json", "--shard", "1/2", cwd=tmp_path)
    assert stopped.returncode == EXIT_INFRA, stopped.stderr
    shard = load_results(tmp_path / "s1.json")
    assert shard.run.limit is not None and shard.run.limit.value == 0.05
    assert shard.run.completed_cases == 5 and shard.run.limit.spent == pytest.approx(0.05)
    assert "limits.max_cost_usd ($0.05) reached" in shard.run.message


@pytest.mark.e2e
def test_a_cost_limit_the_target_cannot_measure_stops_rather_than_spend_unmetered(tmp_path: Path) -> None:
    log = tmp_path / "calls.log"
    costly_target(tmp_path, log, sleep_s=0.05, cost=None)
    config = write_suite(
        tmp_path, echo_cases(20), target={"python": "costly:answer"}, concurrency=2, limits={"max_cost_usd": 1}
    )
    out = tmp_path / "results.json"
    stopped = evalgate("run", "--config", str(config), "--output", str(out), cwd=tmp_path)
    assert stopped.returncode == EXIT_INFRA, stopped.stderr
    partial = load_results(out)
    assert partial.run.limit is not None and partial.run.limit.unknown and partial.run.limit.spent is None
    assert partial.run.completed_cases <= 2
    assert "limits.max_cost_usd ($1.00) cannot be enforced: an attempt reported no cost" in partial.run.message
    assert "have the target report cost_usd" in partial.run.message
    assert "cost:    unknown (no attempt reports cost)" in stopped.stderr


@pytest.mark.e2e
def test_a_crashed_attempt_is_no_sign_of_a_target_that_reports_no_cost(tmp_path: Path) -> None:
    """A target error (no answer) under max_cost_usd is a wrong answer, not an unmeasurable cost."""
    (tmp_path / "flaky.py").write_text(
        "def answer(text, case):\n"
        "    if case.id == 'c001':\n"
        "        raise RuntimeError('boom')\n"
        "    return {'output': text, 'cost_usd': 0.001}\n"
    )
    config = write_suite(tmp_path, echo_cases(5), target={"python": "flaky:answer"}, limits={"max_cost_usd": 1})
    done = evalgate("run", "--config", str(config), "--output", "r.json", cwd=tmp_path)
    assert done.returncode == EXIT_PASS, done.stderr
    results = load_results(tmp_path / "r.json")
    assert results.run.status == "success" and results.run.limit is None
    assert "cost:    at least $0.004 (4 of 5 attempts report cost)" in done.stderr


@pytest.mark.e2e
def test_a_cost_limit_on_an_openai_target_without_prices_is_refused_before_the_run(tmp_path: Path) -> None:
    target = {"openai": {"base_url": "http://127.0.0.1:9", "model": "local:echo", "api_key_env": None}}
    config = write_suite(tmp_path, echo_cases(3), target=target, limits={"max_cost_usd": 2})
    refused = evalgate("run", "--config", str(config), "--output", "r.json", cwd=tmp_path)
    assert refused.returncode == EXIT_USAGE, refused.stderr
    line = next(i for i, text in enumerate(config.read_text().splitlines(), 1) if "max_cost_usd" in text)
    assert f"evalgate.yml:{line}" in refused.stderr
    assert "limits.max_cost_usd cannot be enforced: the openai target has no prices" in refused.stderr
    assert "price_in_per_mtok" in refused.stderr and not (tmp_path / "r.json").exists()


@pytest.mark.e2e
def test_run_timeout_s_is_read_as_max_duration_s_and_both_are_refused(tmp_path: Path) -> None:
    config = write_suite(tmp_path, echo_cases(2), target={"python": "costly:answer"}, run_timeout_s=30)
    shown = evalgate("schema", "config", cwd=tmp_path)  # the shipped schema names only the new key
    assert '"max_duration_s"' in shown.stdout and '"run_timeout_s"' not in shown.stdout
    from evals.suite.loading import load_config

    assert load_config(config).limits.max_duration_s == 30
    both = write_suite(
        tmp_path / "both", echo_cases(2), target={"python": "m:f"}, run_timeout_s=3, limits={"max_duration_s": 4}
    )
    refused = evalgate("run", "--config", str(both), cwd=tmp_path)
    assert refused.returncode == EXIT_USAGE
    assert "run_timeout_s is the old name of limits.max_duration_s" in refused.stderr
