"""The judge on every wire format (docs/spec.md#judge), against each format's local server: OpenAI
Chat Completions (tests/fakes/openai_server.py), OpenAI Responses with ``api: responses``
(responses_server.py), Anthropic Messages for an ``anthropic:`` model on Anthropic, Bedrock and
Vertex (anthropic_server.py). The request, the reply, the key header, retries and error words are
the format's; the prompt's instructions and rubric are a static prefix, byte-identical for every
call, with the per-call nonce after it, so the provider's prompt cache serves it, and the judge's
spend prices the cached tokens at the cache-read price."""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path
from typing import Any

import pytest
from fakes.anthropic_server import anthropic_server as anthropic_server  # the fixture
from fakes.anthropic_server import overloaded
from fakes.openai_server import openai_server as openai_server  # the fixture
from fakes.responses_server import responses_server as responses_server  # the fixture
from test_judge_spend import PRICE_IN, PRICE_OUT, evalgate, judged_suite

from evals.common.errors import UsageError
from evals.results.files import load_results
from evals.run.scorers.base import Score, ScorerUnavailable
from evals.run.scorers.judge import Judge, JudgeParams
from evals.suite.cases import Case

RUBRIC = "The answer names the same city as the reference answer."
GERMANY = Case(id="de", input="Capital of Germany?", expected="Berlin")
ANTHROPIC_KEY = "sk-ant-api03-test-0123456789"


def prompt_of(body: dict[str, Any]) -> str:
    """The judge's prompt as each format carries it: the last user message's text."""
    content = body["messages"][-1]["content"] if "messages" in body else body["input"][-1]["content"]
    return content if isinstance(content, str) else "".join(block["text"] for block in content)


def grader(body: dict[str, Any]) -> str:
    """A judge model that honours the framing: the first line of the output against the reference."""
    prompt = prompt_of(body)
    nonce = re.search(r'\{"nonce": "(\w+)"', prompt).group(1)  # type: ignore[union-attr]
    block = dict(re.findall(rf"<<<{nonce} BEGIN ([A-Z ]+)>>>\n(.*?)\n<<<{nonce} END \1>>>", prompt, re.DOTALL))
    ok = block["REFERENCE ANSWER"].lower() in block["OUTPUT"].splitlines()[0].lower()
    return json.dumps({"nonce": nonce, "verdict": "pass" if ok else "fail", "score": int(ok), "reasoning": "read"})


def grade(output: str, **params: Any) -> Score:
    async def once() -> Score:
        judge = Judge(JudgeParams(**{"rubric": RUBRIC, "retries": 0, **params}), Path("."))
        try:
            return await judge(output, GERMANY)
        finally:
            await judge.aclose()

    return asyncio.run(once())


def served(kind: str, server: Any) -> dict[str, Any]:
    """The judge params that reach ``server`` in format ``kind``."""
    if kind == "chat":
        return {"model": "local:judge-1", "base_url": server.url, "api_key_env": None}
    if kind == "responses":
        return {"model": "openai:judge-1", "base_url": server.url, "api": "responses"}
    platform = {"anthropic": {}, "bedrock": {"platform": "bedrock"}, "vertex": {"platform": "vertex", "project": "p"}}
    extra: dict[str, Any] = {"region": "us-east5"} if kind != "anthropic" else {}
    model = {"anthropic": "claude-haiku-4-5", "bedrock": "anthropic.claude-haiku", "vertex": "claude-haiku@1"}[kind]
    return {"model": f"anthropic:{model}", "base_url": server.url, **platform[kind], **extra}


@pytest.mark.parametrize("kind", ["chat", "responses", "anthropic", "bedrock", "vertex"])
def test_the_judge_grades_on_every_format(kind, openai_server, responses_server, anthropic_server, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-openai-test")
    monkeypatch.setenv("ANTHROPIC_API_KEY", ANTHROPIC_KEY)
    monkeypatch.setenv("AWS_BEARER_TOKEN_BEDROCK", anthropic_server.bedrock_token)
    monkeypatch.setenv("VERTEX_ACCESS_TOKEN", anthropic_server.vertex_token)
    server = {"chat": openai_server, "responses": responses_server}.get(kind, anthropic_server)
    server.responder = grader
    params = served(kind, server)
    right, wrong = grade("Berlin", **params), grade("Bonn", **params)
    assert (right.passed, wrong.passed) == (True, False)
    assert wrong.details["judge"]["verdict"] == "fail" and wrong.details["judge"]["model"] == params["model"]
    assert right.usage is not None and right.usage.calls == 1 and right.usage.tokens_in and right.usage.tokens_out
    body, headers = server.requests[-1], server.headers[-1]
    if kind == "responses":
        assert body["store"] is False and "messages" not in body
        assert headers["Authorization"] == "Bearer sk-openai-test"
    if kind in ("anthropic", "bedrock", "vertex"):
        assert body["max_tokens"] == 1024  # the Messages API requires one
        assert (
            anthropic_server.paths[-1]
            == {
                "anthropic": "/v1/messages",
                "bedrock": "/model/anthropic.claude-haiku/invoke",
                "vertex": "/v1/projects/p/locations/us-east5/publishers/anthropic/models/claude-haiku@1:rawPredict",
            }[kind]
        )
    if kind == "anthropic":  # the key only where Anthropic takes it
        assert headers["X-Api-Key"] == ANTHROPIC_KEY and "Authorization" not in headers


def test_two_calls_share_the_static_prefix_and_the_second_reads_it_from_the_prompt_cache(anthropic_server, monkeypatch):
    """The nonce is drawn per call: before it, the prompt is the same bytes for every call, marked
    as a cache breakpoint; the second call reads it from the cache, priced at the cache-read price."""
    monkeypatch.setenv("ANTHROPIC_API_KEY", ANTHROPIC_KEY)
    anthropic_server.responder = grader
    prices = {"price_in_per_mtok": 3.0, "price_out_per_mtok": 15.0, "price_cache_read_per_mtok": 0.3}
    params = {"model": "anthropic:claude-haiku-4-5", "base_url": anthropic_server.url, **prices}
    first, second = grade("Berlin", **params), grade("Bonn", **params)
    static = [request["messages"][-1]["content"][0] for request in anthropic_server.requests]
    assert static[0] == static[1] and static[0]["cache_control"] == {"type": "ephemeral"}
    prompts = [prompt_of(request) for request in anthropic_server.requests]
    nonces = [re.search(r'\{"nonce": "(\w+)"', p).group(1) for p in prompts]  # type: ignore[union-attr]
    assert nonces[0] != nonces[1] and all(n not in static[0]["text"] for n in nonces)
    assert RUBRIC in static[0]["text"]  # the rubric is part of the cached prefix
    cut = prompts[0].index(nonces[0])  # byte-identical up to the nonce, the cached block included
    assert cut == prompts[1].index(nonces[1]) >= len(static[0]["text"]) and prompts[0][:cut] == prompts[1][:cut]
    assert first.usage and second.usage
    assert first.usage.tokens_cache_write and first.usage.tokens_cache_read is None  # written by the first call
    read = second.usage.tokens_cache_read
    assert read and read == first.usage.tokens_cache_write and second.usage.tokens_cache_write is None
    fresh = second.usage.tokens_in - read  # type: ignore[operator]
    assert second.usage.cost_usd == pytest.approx((fresh * 3.0 + read * 0.3 + second.usage.tokens_out * 15.0) / 1e6)


def test_the_chat_judges_cached_tokens_are_priced_at_the_cache_read_price(openai_server):
    openai_server.responder = grader
    openai_server.cached_tokens = 40
    usage = grade(
        "Berlin",
        model="local:judge-1",
        base_url=openai_server.url,
        api_key_env=None,
        price_in_per_mtok=1.0,
        price_out_per_mtok=2.0,
        price_cache_read_per_mtok=0.1,
    ).usage
    assert usage is not None and usage.tokens_cache_read == 40 and usage.tokens_in and usage.tokens_in > 40
    assert usage.cost_usd == pytest.approx(((usage.tokens_in - 40) * 1.0 + 40 * 0.1 + usage.tokens_out * 2.0) / 1e6)  # type: ignore[operator]


def test_an_overloaded_anthropic_judge_is_retried_and_its_errors_name_their_type(anthropic_server, monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", ANTHROPIC_KEY)
    anthropic_server.responder = grader
    params = {"model": "anthropic:claude-haiku-4-5", "base_url": anthropic_server.url, "backoff_s": 0}
    anthropic_server.script(None, overloaded(retry_after="0"))
    assert grade("Berlin", retries=1, **params).passed is True  # 529 is the world's: asked again
    anthropic_server.script(None, overloaded(), overloaded())
    with pytest.raises(ScorerUnavailable, match="HTTP 529 overloaded_error: Overloaded"):
        grade("Berlin", retries=1, **params)
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-wrong")
    with pytest.raises(ScorerUnavailable, match=r"HTTP 401 authentication_error: invalid x-api-key \(check"):
        grade("Berlin", retries=3, **params)  # the judge's set-up: not retried
    assert len(anthropic_server.requests) == 5


@pytest.mark.parametrize(
    ("params", "said"),
    [
        ({"model": "anthropic:claude-haiku-4-5", "platform": "bedrock"}, "platform bedrock needs region"),
        ({"model": "anthropic:claude-haiku-4-5", "api": "responses"}, "api: is an openai judge's"),
        ({"model": "openai:gpt-4o-mini", "platform": "vertex"}, "are an anthropic: judge's"),
        ({"model": "anthropic:claude-haiku-4-5", "base_url": "https://api.anthropic.com/v1"}, "host root"),
        ({"model": "openai:gpt-4o-mini", "base_url": "https://x/v1/responses"}, "ends in /responses"),
    ],
)
def test_a_judge_its_format_cannot_serve_is_refused_in_words(params, said):
    with pytest.raises(ValueError, match=re.escape(said)):
        JudgeParams(rubric=RUBRIC, **params)


def test_an_anthropic_judges_key_is_its_platforms_variable(monkeypatch):
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    with pytest.raises(UsageError, match="api_key_env is by default ANTHROPIC_API_KEY, which is not set"):
        Judge(JudgeParams(model="anthropic:claude-haiku-4-5", rubric=RUBRIC), Path("."))


def test_a_run_records_the_anthropic_judges_cached_tokens_and_prices_them(tmp_path, anthropic_server, monkeypatch):
    """Through the runner: every judged attempt after the first reads the judge's static prefix
    from the prompt cache, and its judge_usage (the run's spend) prices it at the cache-read price."""
    monkeypatch.setenv("ANTHROPIC_API_KEY", ANTHROPIC_KEY)
    anthropic_server.responder = grader
    judge = {
        "model": "anthropic:claude-haiku-4-5",
        "base_url": anthropic_server.url,
        "api_key_env": "ANTHROPIC_API_KEY",
        "price_cache_read_per_mtok": 5.0,
        "price_cache_write_per_mtok": 62.5,
    }
    config = judged_suite(tmp_path, anthropic_server.url, 4, target_cost=0.0, judge=judge)
    done = evalgate("run", "--config", str(config), "--output", "r.json", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    usage = [a.judge_usage for c in load_results(tmp_path / "r.json").cases for a in c.attempts]
    assert all(u is not None for u in usage)
    written = [u for u in usage if u and u.tokens_cache_write]
    read = [u for u in usage if u and u.tokens_cache_read]
    assert len(written) == 1 and len(read) == 3  # concurrency 1: the first call writes, the others read
    for u in usage:
        assert u is not None and u.tokens_in is not None and u.tokens_out is not None
        cached_read, cached_write = u.tokens_cache_read or 0, u.tokens_cache_write or 0
        fresh = u.tokens_in - cached_read - cached_write
        expected = (fresh * PRICE_IN + cached_read * 5.0 + cached_write * 62.5 + u.tokens_out * PRICE_OUT) / 1e6
        assert u.cost_usd == pytest.approx(expected)
