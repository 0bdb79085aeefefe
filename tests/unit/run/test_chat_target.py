"""The ``openai`` target on Chat Completions (``api: chat``, docs/spec.md#model-targets) as the
Responses and Messages formats are tested (test_responses_target.py, test_anthropic_target.py),
against the local server (tests/fakes/openai_server.py): a 40-case tool-using suite with tool calls
traced, tokens and prompt-cache tokens counted and priced at the cache-read price, the key only
in ``Authorization``; faults (429, 5xx, resets, cut-off bodies) retried; a candidate that skips the
tool failing on the trajectory."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from fakes import weather
from fakes.openai_server import OpenAIServer, tool_calls, tool_results
from fakes.openai_server import openai_server as openai_server  # the fixture

KEY = "sk-test-chat-0123456789"
PRICES = {"price_in_per_mtok": 0.15, "price_out_per_mtok": 0.6, "price_cache_read_per_mtok": 0.075}
CACHED = 3  # prompt tokens of every reply read from OpenAI's prompt cache


def last_user(body: dict[str, Any]) -> str:
    return next(m["content"] for m in reversed(body["messages"]) if m["role"] == "user")


def weather_agent(body: dict[str, Any]) -> dict[str, Any] | str:
    """A model that looks the weather up once, then answers with what the tool said."""
    results = tool_results(body)
    if not results:
        return tool_calls(("get_weather", {"city": last_user(body)}))
    return f"FINAL ANSWER: {results[-1]}"


def no_tool_agent(body: dict[str, Any]) -> str:
    """The same answers, without looking anything up."""
    return f'FINAL ANSWER: {{"city": "{last_user(body)}", "temp": 20}}'


def suite(tmp_path: Path, server: OpenAIServer, n: int = 40) -> Path:
    spec = {"base_url": server.url, "model": "openai:gpt-4o-mini", "api_key_env": "CHAT_KEY", **PRICES}
    return weather.weather_suite(tmp_path, "openai", spec, n=n)


@pytest.fixture
def keyed(openai_server, monkeypatch):
    """The server answering as the weather agent, part of every prompt read from the cache."""
    monkeypatch.setenv("CHAT_KEY", KEY)
    openai_server.responder, openai_server.cached_tokens = weather_agent, CACHED
    return openai_server


def test_a_tool_using_suite_runs_on_the_chat_format(tmp_path, keyed):
    results = weather.run(suite(tmp_path, keyed), tmp_path / "r.json")
    weather.assert_the_tool_was_used(results)
    for a in weather.attempts(results):
        read = a.metadata["tokens_cache_read"]
        assert a.tokens_in and a.tokens_out and 0 < read < a.tokens_in
        assert a.cost_usd == pytest.approx(((a.tokens_in - read) * 0.15 + read * 0.075 + a.tokens_out * 0.6) / 1e6)
    # Every cached token the server reported (at most CACHED of each prompt's words), over both steps.
    reported = sum(
        min(CACHED, sum(len(str(m["content"] or "").split()) for m in b["messages"])) for b in keyed.requests
    )
    assert sum(a.metadata["tokens_cache_read"] for a in weather.attempts(results)) == reported
    assert len(keyed.requests) == 80 and {p for p in keyed.paths} == {"/v1/chat/completions"}
    for sent in keyed.headers:  # the key only where Chat Completions takes it
        assert [name for name, value in sent.items() if KEY in value] == ["Authorization"]
        assert sent["Authorization"] == f"Bearer {KEY}"


def test_a_candidate_that_skips_the_tool_fails_on_the_trajectory(tmp_path, keyed):
    weather.assert_skipping_the_tool_fails(tmp_path, lambda folder: suite(folder, keyed), keyed, no_tool_agent)


def test_faults_are_retried(tmp_path, keyed):
    weather.script_faults(keyed)
    weather.assert_faults_retried(weather.run(suite(tmp_path, keyed, n=weather.FAULTS_CASES), tmp_path / "r.json"))
