"""Cached input tokens in the spend (docs/spec.md#spend-reporting, #prompt-caching): what a
provider's prompt cache served of the input — the target's ``metadata.tokens_cache_read`` and the
judge's ``judge_usage.tokens_cache_read`` — is counted in the run's spend, the judge's part named,
in ``evalgate run``'s summary and in the report's Spend section (read through the comparison's
lazy loader), with the same figures both ways."""

from __future__ import annotations

from pathlib import Path

from fakes.anthropic_server import anthropic_server as anthropic_server  # the fixture
from fakes.openai_server import openai_server as openai_server  # the fixture
from fakes.suites import echo_cases, write_suite
from test_judge_formats import ANTHROPIC_KEY, grader
from test_judge_spend import evalgate

from evals.compare.metrics import scan
from evals.results.files import load_results
from evals.results.spend import spend_of


def test_the_judges_and_the_targets_cached_input_tokens_are_in_the_spend(
    tmp_path: Path, openai_server, anthropic_server, monkeypatch
):
    monkeypatch.setenv("ANTHROPIC_API_KEY", ANTHROPIC_KEY)
    openai_server.cached_tokens = 1  # every target reply: 1 prompt token read from OpenAI's cache
    anthropic_server.responder = grader
    judge = {"model": "anthropic:claude-haiku-4-5", "base_url": anthropic_server.url, "rubric": "The output is it."}
    judge |= {"retries": 0, "price_in_per_mtok": 1.0, "price_out_per_mtok": 5.0, "price_cache_read_per_mtok": 0.1}
    target = {"openai": {"base_url": openai_server.url, "model": "local:m", "api_key_env": None}}
    config = write_suite(tmp_path, echo_cases(4), target=target, scorers=[{"judge": judge}], concurrency=1)
    done = evalgate("run", "--config", str(config), "--output", "r.json", cwd=tmp_path)
    assert done.returncode == 0, done.stderr

    attempts = [a for c in load_results(tmp_path / "r.json").cases for a in c.attempts]
    target_read = sum(a.metadata["tokens_cache_read"] for a in attempts)
    judge_read = sum(a.judge_usage.tokens_cache_read or 0 for a in attempts if a.judge_usage)
    assert target_read == 4 and judge_read > 0  # the judge's static prefix, read by every call after the first
    said = f"{target_read + judge_read:,} in read from prompt caches (judge {judge_read:,})"
    assert said in done.stderr

    spend = spend_of(attempts)
    assert (spend.tokens_cache_read, spend.judge_tokens_cache_read) == (target_read + judge_read, judge_read)
    results = load_results(tmp_path / "r.json")
    assert scan(results.cases, len(results.cases)).spend == spend  # the comparison counts the same
    compared = evalgate(
        "compare", "--baseline", "r.json", "--candidate", "r.json", "--report", "report.md", cwd=tmp_path
    )
    assert compared.returncode == 0, compared.stderr
    assert said in (tmp_path / "report.md").read_text()
