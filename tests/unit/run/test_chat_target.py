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
from fakes.openai_server import OpenAIServer, malformed, reset, status, tool_calls, tool_results, truncated
from fakes.openai_server import openai_server as openai_server  # the fixture
from fakes.suites import write_suite

from evals.compare.analysis import compare
from evals.results.model import Attempt, Results
from evals.results.trace import tool_names
from evals.run.execution import execute
from evals.suite.config import load_config

KEY = "sk-test-chat-0123456789"
TOOLS = '''
def get_weather(city: str) -> dict:
    """The temperature in a city."""
    return {"city": city, "temp": 20}
'''
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
    tmp_path.mkdir(parents=True, exist_ok=True)
    (tmp_path / "chat_agent_tools.py").write_text(TOOLS, encoding="utf-8")
    target = {
        "openai": {
            "base_url": server.url,
            "model": "openai:gpt-4o-mini",
            "api_key_env": "CHAT_KEY",
            "tools": {"get_weather": "chat_agent_tools:get_weather"},
            "price_in_per_mtok": 0.15,
            "price_out_per_mtok": 0.6,
            "price_cache_read_per_mtok": 0.075,
        }
    }
    cases = [{"id": f"c{i:02d}", "input": f"City{i}", "expected": '"temp": 20'} for i in range(n)]
    scorers = ["contains", {"tool_used": {"tool": "get_weather", "in_verdict": True}}]
    return write_suite(
        tmp_path, cases, target=target, scorers=scorers, retries={"max": 3, "backoff_s": [0]}, timeout_s=10, cache=False
    )


def run(config: Path, out: Path) -> Results:
    return execute(load_config(config), out, progress=False)


def attempts(results: Results) -> list[Attempt]:
    return [a for c in results.cases for a in c.attempts]


@pytest.fixture
def keyed(openai_server, monkeypatch):
    monkeypatch.setenv("CHAT_KEY", KEY)
    openai_server.responder = weather_agent
    openai_server.cached_tokens = CACHED
    return openai_server


def test_a_tool_using_suite_runs_on_the_chat_format(tmp_path, keyed):
    results = run(suite(tmp_path, keyed), tmp_path / "r.json")
    assert all(a.passed for a in attempts(results)), [a.error for a in attempts(results) if a.error]
    for a in attempts(results):
        assert tool_names(a.trace) == ["get_weather"] and a.metadata["finish_reason"] == "stop"
        assert [e.kind for e in a.trace if e.kind.startswith("tool")] == ["tool_call", "tool_result"]
        read = a.metadata["tokens_cache_read"]
        assert a.tokens_in and a.tokens_out and 0 < read < a.tokens_in
        assert a.cost_usd == pytest.approx(((a.tokens_in - read) * 0.15 + read * 0.075 + a.tokens_out * 0.6) / 1e6)
    # Every cached token the server reported (at most CACHED of each prompt's words), over both steps.
    reported = sum(
        min(CACHED, sum(len(str(m["content"] or "").split()) for m in b["messages"])) for b in keyed.requests
    )
    assert sum(a.metadata["tokens_cache_read"] for a in attempts(results)) == reported
    assert len(keyed.requests) == 80 and {p for p in keyed.paths} == {"/v1/chat/completions"}
    for sent in keyed.headers:  # the key only where Chat Completions takes it
        assert [name for name, value in sent.items() if KEY in value] == ["Authorization"]
        assert sent["Authorization"] == f"Bearer {KEY}"


def test_a_candidate_that_skips_the_tool_fails_on_the_trajectory(tmp_path, keyed):
    baseline = run(suite(tmp_path / "b", keyed), tmp_path / "b.json")
    keyed.responder = no_tool_agent
    candidate = run(suite(tmp_path / "c", keyed), tmp_path / "c.json")
    assert all(a.output and '"temp": 20' in a.output for a in attempts(candidate))  # the same answers
    assert all(tool_names(a.trace) == [] and a.passed is False for a in attempts(candidate))
    assert compare(baseline, candidate, load_config(tmp_path / "c" / "evalgate.yml")).verdict == "fail"


def test_faults_are_retried(tmp_path, keyed):
    keyed.script("City0", status(429, retry_after="0"))
    keyed.script("City1", status(503), after=1)  # in the loop, after the tool ran
    keyed.script("City2", malformed())  # a whole reply whose JSON is cut
    keyed.script("City3", status(500))
    keyed.script("City4", truncated())  # a reply cut mid-body, the connection closed
    keyed.script("City5", reset())
    results = run(suite(tmp_path, keyed, n=7), tmp_path / "r.json")
    assert all(a.passed for a in attempts(results)), [a.error for a in attempts(results) if a.error]
    retried = {c.id: c.attempts[0].retry_history for c in results.cases}
    assert retried["c00"][0].status == 429 and retried["c01"][0].message.startswith("step 2: HTTP 503")
    assert "malformed response" in retried["c02"][0].message
    assert retried["c03"][0].status == 500
    assert "connection error" in retried["c04"][0].message or "malformed" in retried["c04"][0].message
    assert "connection error" in retried["c05"][0].message
    assert not retried["c06"]
