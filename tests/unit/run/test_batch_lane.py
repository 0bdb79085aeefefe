"""``batch: true`` (docs/spec.md#batch-pricing) against the local batch APIs
(tests/fakes/batch_server.py): a full run submits its requests and stops ``pending`` with the batch
ids in the file; a resume while the batch runs says so; the resume after it ended collects (answers
matched by custom_id whatever their order), scores, prices at the batch price, fills the response
cache, and the comparison with a synchronous run names the tier; failed and expired requests are
infra errors that the next resume submits again. On OpenAI Batch (chat and Responses) and
Anthropic Message Batches."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from fakes.batch_server import OPENAI_KEY, BatchServer
from fakes.batch_server import batch_server as batch_server  # the fixture
from fakes.suites import echo_cases, write_suite

from evals.common.errors import InfraError, UsageError
from evals.compare.analysis import compare
from evals.report.spending import spend_view
from evals.results.files import load_results
from evals.results.model import Results
from evals.results.summary import spend_lines, summarize
from evals.run.execution import execute
from evals.suite.loading import load_config

ANTHROPIC_KEY = "sk-ant-api03-test-0123456789"
PRICES = {"price_in_per_mtok": 2.0, "price_out_per_mtok": 8.0}


def target(server: BatchServer, api: str, **more: Any) -> dict[str, Any]:
    if api == "anthropic":
        return {"anthropic": {"base_url": server.url, "model": "anthropic:claude-sonnet-4-5", **PRICES, **more}}
    params = {"base_url": server.openai_url, "model": "openai:gpt-4o-mini", "api": api, **PRICES, **more}
    return {"openai": params}


def suite(folder: Path, server: BatchServer, api: str, n: int = 12, **more: Any) -> Path:
    return write_suite(
        folder,
        echo_cases(n, lang=["en", "fr"]),
        target=target(server, api, **more),
        scorers=["exact"],
        slices=["lang"],
        retries={"max": 1, "backoff_s": [0]},
        timeout_s=10,
    )


def run(config: Path, out: Path, **options: Any) -> Results:
    result = execute(load_config(config), out, progress=False, **options)
    assert isinstance(result, Results)
    return result


@pytest.fixture(autouse=True)
def keys(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", OPENAI_KEY)
    monkeypatch.setenv("ANTHROPIC_API_KEY", ANTHROPIC_KEY)
    monkeypatch.delenv("GITHUB_EVENT_NAME", raising=False)  # CI's own pull_request event: no PR run here


@pytest.mark.parametrize("api", ["chat", "responses", "anthropic"])
def test_a_batched_run_is_submitted_then_collected_scored_and_gated(tmp_path, batch_server, api):
    # 90 cases: enough for an unchanged suite to certify a pass within the default tolerance.
    config, out = suite(tmp_path / "s", batch_server, api, n=90, batch=True), tmp_path / "s" / "results.json"
    submitted = run(config, out)
    batch = submitted.run.provider_batch
    assert submitted.run.status == "pending" and not submitted.run.is_complete and submitted.cases == []
    assert batch is not None and batch.state == "submitted" and batch.requests == 90 and len(batch.ids) == 1
    assert "collect, score and gate them with --resume" in (submitted.run.message or "")
    assert submitted.run.target is not None and submitted.run.target.params["tier"] == "batch"
    # Still running: said, and the file keeps the ids for the next resume.
    waiting = run(config, out, resume=True, rerun="--resume")
    assert waiting.run.status == "pending" and "in_progress" in (waiting.run.message or "")
    assert waiting.run.provider_batch == batch
    batch_server.finish()
    collected = run(config, out, resume=True)
    assert collected.run.status == "success" and collected.run.provider_batch is not None
    assert collected.run.provider_batch.state == "collected" and collected.run.provider_batch.ids == batch.ids
    attempts = [a for c in collected.cases for a in c.attempts]
    assert len(attempts) == 90 and all(a.passed for a in attempts), [a.error for a in attempts]
    for a in attempts:  # each answer its own request's, though the results came reversed; half price
        assert a.metadata["tier"] == "batch" and not a.cached
        assert a.cost_usd == pytest.approx((a.tokens_in * 2.0 + a.tokens_out * 8.0) / 1e6 * 0.5)
    # No synchronous request was made; a synchronous run of the same suite is served by the cache
    # the collection filled, and the comparison names the tier it changed.
    assert not [p for p in batch_server.paths if p.endswith(("/chat/completions", "/responses", "/v1/messages"))]
    sync = run(suite(tmp_path / "s", batch_server, api, n=90), tmp_path / "sync.json")
    assert sync.run.status == "success" and all(a.cached for c in sync.cases for a in c.attempts)
    comparison = compare(sync, collected, load_config(config))
    assert comparison.verdict == "pass", comparison.reason
    assert [(p.baseline, p.candidate) for p in comparison.provenance if p.field == "params.tier"] == [(None, "batch")]
    # The Spend section says what was batched, in the gate as in the run's own summary.
    assert "90 batched (at the batch price)" in spend_view(comparison)["summary"]
    assert "batch:   90 of 90 attempts answered by the provider's batch API" in spend_lines(summarize(collected))


@pytest.mark.parametrize("api", ["chat", "anthropic"])
def test_failed_and_expired_requests_are_infra_errors_the_next_resume_submits(tmp_path, batch_server, api):
    config, out = suite(tmp_path, batch_server, api, n=6, batch=True), tmp_path / "results.json"
    batch_server.failing, batch_server.expiring = {"q1"}, {"q2"}
    run(config, out)
    batch_server.finish()
    collected = run(config, out, resume=True)
    assert collected.run.status == "error" and "2 of 6 cases" in (collected.run.message or "")
    errors = {c.id: c.attempts[0].error for c in collected.cases}
    assert errors["c000"] is None and errors["c003"] is None
    assert (
        errors["c001"] is not None
        and errors["c001"].kind == "infra"
        and "the model failed on q1" in errors["c001"].message
    )
    assert errors["c002"] is not None and errors["c002"].kind == "infra" and "expired" in errors["c002"].message
    # The next resume sends only those two again; once they are answered the run is whole.
    batch_server.failing, batch_server.expiring, batch_server.finished = set(), set(), False
    again = run(config, out, resume=True)
    assert again.run.status == "pending" and again.run.provider_batch is not None
    assert again.run.provider_batch.requests == 2 and len(batch_server.batches) == 2
    batch_server.finish()
    whole = run(config, out, resume=True)
    assert whole.run.status == "success" and all(a.passed for c in whole.cases for a in c.attempts)


def test_a_smoke_or_pull_request_run_ignores_batch_and_a_tool_loop_refuses_it(
    tmp_path, batch_server, capsys, monkeypatch
):
    config = suite(tmp_path, batch_server, "chat", batch=True)
    with pytest.raises(UsageError):  # the fake serves no synchronous route: the smoke run went to it
        run(config, tmp_path / "smoke.json", smoke=True)
    assert "batch: true is for full gates and resets; a smoke run" in capsys.readouterr().err
    assert not batch_server.batches and any(p.endswith("/chat/completions") for p in batch_server.paths)
    # A full run in a pull request's workflow is a PR's gate: synchronous too.
    monkeypatch.setenv("GITHUB_ACTIONS", "true")
    monkeypatch.setenv("GITHUB_EVENT_NAME", "pull_request")
    with pytest.raises(UsageError):
        run(config, tmp_path / "pr.json")
    assert "a pull request's run waits for its answers" in capsys.readouterr().err and not batch_server.batches
    (tmp_path / "tools.py").write_text("def look(city: str) -> str:\n    return city\n", encoding="utf-8")
    agent = suite(tmp_path / "agent", batch_server, "chat", batch=True, tools={"look": "tools:look"})
    with pytest.raises(UsageError, match="a tool loop"):
        load_config(agent)
    bedrock = suite(tmp_path / "bedrock", batch_server, "anthropic", batch=True, platform="bedrock", region="us-east-1")
    with pytest.raises(UsageError, match="platform bedrock batches through its own cloud's jobs"):
        load_config(bedrock)


def test_a_collection_a_limit_stops_keeps_every_answer_for_the_next_resume(tmp_path, batch_server):
    """Every collected answer goes to the response cache before scoring: a collection that a
    limit stops after 2 cases leaves the other answers there, and the next resume is served them
    instead of paying for a second batch."""

    def config(max_tokens: int) -> Path:
        return write_suite(
            tmp_path,
            echo_cases(6),
            target=target(batch_server, "chat", batch=True),
            scorers=["exact"],
            limits={"max_tokens": max_tokens},
        )

    out = tmp_path / "results.json"
    run(config(5), out)  # 2 tokens an attempt: the collection stops after 2 or 3 cases
    batch_server.finish()
    stopped = run(config(5), out, resume=True)
    assert stopped.run.status == "cancelled" and stopped.run.limit is not None and len(stopped.cases) < 6
    whole = run(config(100), out, resume=True)  # the limit raised, as the stop's message says
    assert whole.run.status == "success" and len(batch_server.batches) == 1
    assert all(a.passed and a.cached for c in whole.cases[len(stopped.cases) :] for a in c.attempts)


def test_a_failed_batch_makes_every_attempt_an_infra_error_saying_why(tmp_path, batch_server):
    config, out = suite(tmp_path, batch_server, "chat", n=4, batch=True), tmp_path / "results.json"
    batch_server.refusing = "The model gpt-4o-mini is not available for batch"
    run(config, out)
    batch_server.finish()
    collected = run(config, out, resume=True)
    assert collected.run.status == "error"
    for case in collected.cases:
        error = case.attempts[0].error
        assert error is not None and error.kind == "infra"
        assert "batch_fake0001 failed: The model gpt-4o-mini is not available for batch" in error.message


@pytest.mark.parametrize("api", ["chat", "anthropic"])
def test_a_broken_results_download_is_infra_and_keeps_the_batch_for_the_next_resume(tmp_path, batch_server, api):
    config, out = suite(tmp_path, batch_server, api, n=4, batch=True), tmp_path / "results.json"
    submitted = run(config, out)
    batch_server.finish()
    batch_server.cutting = True
    with pytest.raises(InfraError, match="not a JSON object; run again later"):
        run(config, out, resume=True)
    kept = load_results(out)
    assert kept.run.status == "pending" and kept.run.provider_batch == submitted.run.provider_batch
    batch_server.cutting = False
    assert run(config, out, resume=True).run.status == "success" and len(batch_server.batches) == 1


def test_a_resume_whose_requests_differ_refuses_the_paid_batch_and_says_what_to_do(tmp_path, batch_server):
    """A pending file resumed with another model, or with a case's prompt edited, would otherwise
    drop the paid batch silently (and submit again) or read its answers as the new requests'."""
    config, out = suite(tmp_path, batch_server, "chat", n=4, batch=True), tmp_path / "results.json"
    submitted = run(config, out).run.provider_batch
    assert submitted is not None
    batch_server.finish()
    other_model = suite(tmp_path / "m", batch_server, "chat", n=4, batch=True, model="openai:gpt-4o")
    with pytest.raises(UsageError) as refused:
        run(other_model, out, resume=True)
    said = str(refused.value)
    assert f"holds batch {submitted.ids[0]} (4 requests submitted" in said and "paid for there" in said
    assert "this run's target differs (another model" in said
    assert "resume with the config and cases that submitted it" in said and "run without --resume" in said
    edited = echo_cases(4, lang=["en", "fr"])
    edited[1]["input"] = "q1, reworded"
    (tmp_path / "cases.jsonl").write_text("".join(json.dumps(c) + "\n" for c in edited), encoding="utf-8")
    with pytest.raises(UsageError, match="this run's requests differ"):
        run(config, out, resume=True)
    assert load_results(out).run.provider_batch == submitted  # still there for the config that sent it
    suite(tmp_path, batch_server, "chat", n=4, batch=True)  # the cases as submitted: it collects
    assert run(config, out, resume=True).run.status == "success" and len(batch_server.batches) == 1
