"""The ``anthropic`` target (docs/spec.md#model-targets) against the local Anthropic Messages server
(tests/fakes/anthropic_server.py): a tool-using suite runs its loop on the Messages format — tool
calls traced, tokens and prompt-cache tokens counted, cost with the cache prices, 529/429/5xx and
cut-off bodies retried — the key goes only as ``x-api-key`` (and as a bearer on Bedrock and
Vertex, only there), stop reasons are recorded, the cache keys by format, and a candidate that
skips the tool fails on the trajectory."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from fakes.anthropic_server import (
    AnthropicServer,
    malformed,
    overloaded,
    rate_limited,
    reset,
    status,
    tool_results,
    tool_use,
    truncated,
)
from fakes.anthropic_server import anthropic_server as anthropic_server  # the fixture
from fakes.weather import (
    PROMPT,
    assert_skipping_the_tool_fails,
    assert_the_tool_was_used,
    attempts,
    run,
    weather_suite,
)

from evals.common.errors import InputFileError, UsageError
from evals.results.trace import tool_names
from evals.suite.loading import load_config

KEY = "sk-ant-api03-test-0123456789"
TOOLS = '''
def get_weather(city: str) -> dict:
    """The temperature in a city."""
    if city == "Atlantis":
        raise LookupError(f"no station in {city}")
    return {"city": city, "temp": 20}
'''
PRICES = {
    "price_in_per_mtok": 3.0,
    "price_out_per_mtok": 15.0,
    "price_cache_read_per_mtok": 0.3,
    "price_cache_write_per_mtok": 3.75,
}


def weather_agent(body: dict[str, Any]) -> dict[str, Any] | str:
    """A model that looks the weather up once, then answers with what the tool said."""
    results = tool_results(body)
    if not results:
        return tool_use(("get_weather", {"city": body["messages"][-1]["content"]}), text="checking")
    return f"FINAL ANSWER: {results[-1]}"


def no_tool_agent(body: dict[str, Any]) -> str:
    """The same answers, without looking anything up."""
    return f'FINAL ANSWER: {{"city": "{body["messages"][-1]["content"]}", "temp": 20}}'


def suite(tmp_path: Path, server: AnthropicServer, n: int = 40, cache: bool = False, **anthropic: Any) -> Path:
    """A suite of ``n`` weather cases on the server, the response cache off unless ``cache``."""
    spec = {"base_url": server.url, "model": "anthropic:claude-sonnet-4-5", **PRICES, **anthropic}
    return weather_suite(tmp_path, "anthropic", spec, ("anthropic_agent_tools", TOOLS), n=n, cache=cache)


def test_a_tool_using_suite_runs_on_the_messages_format(tmp_path, anthropic_server, monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    anthropic_server.responder = weather_agent
    results = run(suite(tmp_path, anthropic_server), tmp_path / "r.json")
    assert results.run.status == "success" and results.run.target.kind == "anthropic"
    assert_the_tool_was_used(results)
    for a in attempts(results):
        assert a.metadata["stop_reason"] == "end_turn"
        assert a.tokens_in and a.tokens_out
        read, write = a.metadata.get("tokens_cache_read", 0), a.metadata.get("tokens_cache_write", 0)
        fresh = a.tokens_in - read - write
        price = (fresh * 3.0 + read * 0.3 + write * 3.75 + a.tokens_out * 15.0) / 1e6
        assert a.cost_usd == pytest.approx(price)
    # The tools and system prompt are one cached prefix: written by the first request, read by the rest.
    assert sum(a.metadata.get("tokens_cache_write", 0) for a in attempts(results)) > 0
    read = [a for a in attempts(results) if a.metadata.get("tokens_cache_read")]
    assert len(read) >= 39 and read[0].cost_usd < read[0].tokens_in * 3.0 / 1e6 + read[0].tokens_out * 15.0 / 1e6
    # What went over the wire: the key only as x-api-key with the version, never as Authorization.
    assert len(anthropic_server.requests) == 80
    for headers in anthropic_server.headers:
        assert headers["X-Api-Key"] == KEY and headers["Anthropic-Version"] == "2023-06-01"
        assert "Authorization" not in headers
    first, second = anthropic_server.requests[0], anthropic_server.requests[1]
    assert first["model"] == "claude-sonnet-4-5" and first["max_tokens"] == 1024
    assert first["system"] == [{"type": "text", "text": PROMPT, "cache_control": {"type": "ephemeral"}}]
    assert first["tools"][0]["name"] == "get_weather" and "city" in first["tools"][0]["input_schema"]["properties"]
    answer = next(m for m in anthropic_server.requests if len(m["messages"]) == 3)["messages"][2]["content"][0]
    assert answer["type"] == "tool_result" and answer["tool_use_id"] == "toolu_00" and "is_error" not in answer
    assert second["system"] == first["system"]


def test_a_candidate_that_skips_the_tool_fails_on_the_trajectory(tmp_path, anthropic_server, monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    server = anthropic_server
    server.responder = weather_agent
    assert_skipping_the_tool_fails(tmp_path, lambda folder: suite(folder, server), server, no_tool_agent)


def test_overloads_rate_limits_server_errors_resets_and_cut_bodies_are_retried(tmp_path, anthropic_server, monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    anthropic_server.responder = weather_agent
    anthropic_server.script("City0", overloaded(retry_after="0"))
    anthropic_server.script("City1", rate_limited(retry_after="0"))
    anthropic_server.script("City2", status(500))
    anthropic_server.script("City3", truncated())
    anthropic_server.script("City4", overloaded(retry_after="0"), after=1)  # in the loop, after the tool ran
    anthropic_server.script("City5", malformed())  # a whole reply whose JSON is cut
    anthropic_server.script("City6", reset())  # the connection reset
    results = run(suite(tmp_path, anthropic_server, n=8), tmp_path / "r.json")
    assert all(a.passed for a in attempts(results)), [a.error for a in attempts(results) if a.error]
    retried = {c.id: c.attempts[0].retry_history for c in results.cases}
    assert "overloaded_error" in retried["c00"][0].message and retried["c00"][0].status == 529
    assert "rate_limit_error" in retried["c01"][0].message
    assert "api_error" in retried["c02"][0].message
    assert "connection error" in retried["c03"][0].message or "malformed" in retried["c03"][0].message
    assert retried["c04"][0].message.startswith("step 2: HTTP 529 overloaded_error")
    assert "malformed response" in retried["c05"][0].message
    assert "connection error" in retried["c06"][0].message
    assert not retried["c07"]


def test_an_error_reply_names_anthropics_error_type_and_is_not_retried(tmp_path, anthropic_server, monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    config = suite(tmp_path, anthropic_server, n=2, tools={})
    text = (tmp_path / "cases.jsonl").read_text(encoding="utf-8")
    system_turn = '{"messages": [{"role": "system", "content": "hi"}, {"role": "user", "content": "x"}]}'
    (tmp_path / "cases.jsonl").write_text(text.replace('"City1"', system_turn), encoding="utf-8")
    results = run(config, tmp_path / "r.json")
    bad = results.cases[1].attempts[0]
    assert bad.error is not None and bad.error.kind == "target"
    assert "HTTP 400 invalid_request_error: messages.0.role" in bad.error.message
    assert not bad.retry_history and len(anthropic_server.requests) == 2


def test_stop_reasons_are_recorded(tmp_path, anthropic_server, monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    anthropic_server.responder = lambda body: (
        {"content": [{"type": "text", "text": "I can't help with that."}], "stop_reason": "refusal"}
        if body["messages"][-1]["content"] == "City0"
        else "a long answer that goes on past the limit"
    )
    results = run(suite(tmp_path, anthropic_server, n=2, tools={}, max_tokens=6), tmp_path / "r.json")
    refusal, cut = (c.attempts[0] for c in results.cases)
    assert (refusal.metadata["finish_reason"], refusal.metadata["stop_reason"]) == ("content_filter", "refusal")
    assert (cut.metadata["finish_reason"], cut.metadata["stop_reason"]) == ("length", "max_tokens")
    assert cut.output == "a long answer that goes on" and anthropic_server.requests[0]["max_tokens"] == 6


def test_the_cache_serves_the_anthropic_target_keyed_by_its_format(tmp_path, anthropic_server, monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    anthropic_server.responder = weather_agent
    config = suite(tmp_path, anthropic_server, n=3, cache=True)
    first = run(config, tmp_path / "r1.json")
    assert len(anthropic_server.requests) == 6 and not any(a.cached for a in attempts(first))
    again = run(config, tmp_path / "r2.json")
    assert len(anthropic_server.requests) == 6 and all(a.cached for a in attempts(again))
    assert [a.output for a in attempts(again)] == [a.output for a in attempts(first)]
    assert [tool_names(a.trace) for a in attempts(again)] == [["get_weather"]] * 3


@pytest.mark.parametrize("platform", ["bedrock", "vertex"])
def test_bedrock_and_vertex_take_the_body_at_their_route_with_a_bearer(
    tmp_path, anthropic_server, monkeypatch, platform
):
    token = anthropic_server.bedrock_token if platform == "bedrock" else anthropic_server.vertex_token
    monkeypatch.setenv("CLOUD_TOKEN", token)
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)  # there, but not this platform's: never sent
    anthropic_server.responder = weather_agent
    model = "anthropic.claude-sonnet-4-5-20250929-v1:0" if platform == "bedrock" else "claude-sonnet-4-5@20250929"
    where = {"project": "p", "region": "us-east5"} if platform == "vertex" else {}
    config = suite(
        tmp_path,
        anthropic_server,
        n=2,
        cache=False,
        platform=platform,
        model=f"anthropic:{model}",
        api_key_env="CLOUD_TOKEN",
        **where,
    )
    results = run(config, tmp_path / "r.json")
    assert all(a.passed for a in attempts(results)), [a.error for a in attempts(results) if a.error]
    route = anthropic_server.bedrock_url(model) if platform == "bedrock" else anthropic_server.vertex_url(model)
    assert {anthropic_server.url + p for p in anthropic_server.paths} == {route}
    for headers in anthropic_server.headers:
        assert headers["Authorization"] == f"Bearer {token}" and "X-Api-Key" not in headers
    version = "bedrock-2023-05-31" if platform == "bedrock" else "vertex-2023-10-16"
    assert all(b["anthropic_version"] == version and "model" not in b for b in anthropic_server.requests)
    assert results.run.target.params["platform"] == platform


def test_a_wrong_bedrock_key_names_the_aws_error_type(tmp_path, anthropic_server, monkeypatch):
    monkeypatch.setenv("AWS_BEARER_TOKEN_BEDROCK", "not-the-key")  # the platform's default variable
    config = suite(tmp_path, anthropic_server, n=1, tools={}, platform="bedrock")
    with pytest.raises(UsageError, match=r"answered HTTP 403\b.*HTTP 403 UnrecognizedClientException: Authentication"):
        run(config, tmp_path / "r.json")  # the run answered nothing: a set-up error naming AWS's error type


def test_config_errors_name_what_to_write(tmp_path, anthropic_server, monkeypatch):
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    with pytest.raises(UsageError, match="api_key_env is by default ANTHROPIC_API_KEY, which is not set"):
        run(suite(tmp_path / "a", anthropic_server, n=1), tmp_path / "a.json")
    with pytest.raises(InputFileError, match="an anthropic base_url is the host root"):
        load_config(suite(tmp_path / "b", anthropic_server, n=1, base_url=anthropic_server.url + "/v1/messages"))
    with pytest.raises(InputFileError, match="platform vertex needs project"):
        load_config(suite(tmp_path / "c", anthropic_server, n=1, platform="vertex", region="us-east5"))
    with pytest.raises(InputFileError, match="platform bedrock needs region"):
        load_config(suite(tmp_path / "d", anthropic_server, n=1, platform="bedrock", base_url=None))
