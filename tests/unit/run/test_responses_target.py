"""The ``openai`` target with ``api: responses`` (docs/spec.md#model-targets) against the local
Responses server (tests/fakes/responses_server.py): a tool-using suite runs its loop statelessly
(``store: false``, the conversation sent back without item ids, reasoning only as encrypted
content), function tools not strict, tool calls traced, tokens, cached and reasoning tokens counted
and priced with the cache-read price, faults (429, 5xx, cut-off bodies) retried, a candidate that
skips the tool failing on the trajectory, errors naming OpenAI's error type, and parameters of the
other API refused."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from fakes.responses_server import (
    ResponsesServer,
    function_calls,
    function_outputs,
    malformed,
    reset,
    status,
    truncated,
)
from fakes.responses_server import responses_server as responses_server  # the fixture
from fakes.suites import write_suite

from evals.common.errors import InputFileError, UsageError
from evals.compare.analysis import compare
from evals.results.model import Attempt, Results
from evals.results.trace import tool_names
from evals.run.execution import execute
from evals.suite.config import load_config

KEY = "sk-test-responses-0123456789"
TOOLS = '''
def get_weather(city: str, unit: str = "C") -> dict:
    """The temperature in a city."""
    return {"city": city, "temp": 20}
'''
PROMPT = "You are a weather assistant: look the weather up with the tool before you answer.\n"


def weather_agent(body: dict[str, Any]) -> dict[str, Any] | str:
    outputs = function_outputs(body)
    if not outputs:
        return function_calls(("get_weather", {"city": body["input"][-1]["content"]}))
    return f"FINAL ANSWER: {outputs[-1]}"


def no_tool_agent(body: dict[str, Any]) -> str:
    """The same answers, without looking anything up."""
    return f'FINAL ANSWER: {{"city": "{body["input"][-1]["content"]}", "temp": 20}}'


def suite(tmp_path: Path, server: ResponsesServer, n: int = 40, **openai: Any) -> Path:
    tmp_path.mkdir(parents=True, exist_ok=True)
    (tmp_path / "responses_agent_tools.py").write_text(TOOLS, encoding="utf-8")
    (tmp_path / "system.md").write_text(PROMPT, encoding="utf-8")
    target = {
        "openai": {
            "api": "responses",
            "base_url": server.url,
            "model": "openai:gpt-5-mini",
            "api_key_env": "RESPONSES_KEY",
            "system_prompt": "system.md",
            "tools": {"get_weather": "responses_agent_tools:get_weather"},
            "price_in_per_mtok": 0.25,
            "price_out_per_mtok": 2.0,
            "price_cache_read_per_mtok": 0.025,
            **openai,
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
def keyed(responses_server, monkeypatch):
    monkeypatch.setenv("RESPONSES_KEY", KEY)
    responses_server.api_key = KEY
    responses_server.responder = weather_agent
    return responses_server


def test_a_tool_using_suite_runs_statelessly_on_the_responses_format(tmp_path, keyed):
    keyed.reasoning_tokens = 7
    results = run(suite(tmp_path, keyed), tmp_path / "r.json")
    assert all(a.passed for a in attempts(results)), [a.error for a in attempts(results) if a.error]
    assert results.run.target.params["api"] == "responses"
    for a in attempts(results):
        assert tool_names(a.trace) == ["get_weather"] and a.metadata["finish_reason"] == "stop"
        assert [e.kind for e in a.trace if e.kind.startswith("tool")] == ["tool_call", "tool_result"]
        assert a.tokens_in and a.tokens_out
        assert a.metadata["tokens_reasoning"] == 14  # two steps
        read = a.metadata.get("tokens_cache_read", 0)
        price = ((a.tokens_in - read) * 0.25 + read * 0.025 + a.tokens_out * 2.0) / 1e6
        assert a.cost_usd == pytest.approx(price)
    read = [a for a in attempts(results) if a.metadata.get("tokens_cache_read")]
    assert len(read) >= 39 and read[0].cost_usd < (read[0].tokens_in * 0.25 + read[0].tokens_out * 2.0) / 1e6
    assert {p for p in keyed.paths} == {"/v1/responses"} and len(keyed.requests) == 80
    for sent in keyed.headers:  # the key only where the Responses API takes it
        assert sent["Authorization"] == f"Bearer {KEY}"
        assert [name for name, value in sent.items() if KEY in value] == ["Authorization"]
    first = keyed.requests[0]
    assert first["store"] is False and first["instructions"] == PROMPT and "messages" not in first
    assert first["tools"][0] == {
        "type": "function",
        "name": "get_weather",
        "description": "The temperature in a city.",
        "parameters": first["tools"][0]["parameters"],
        "strict": False,
    }
    second = next(b for b in keyed.requests if len(b["input"]) > 1)["input"]
    kinds = [item.get("type", "message") for item in second]
    assert kinds == ["message", "reasoning", "function_call", "function_call_output"]
    assert second[1]["encrypted_content"] and "id" not in second[2]


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
    keyed.script("City5", reset())  # the connection reset
    results = run(suite(tmp_path, keyed, n=7), tmp_path / "r.json")
    assert all(a.passed for a in attempts(results)), [a.error for a in attempts(results) if a.error]
    retried = {c.id: c.attempts[0].retry_history for c in results.cases}
    assert retried["c00"][0].status == 429 and retried["c01"][0].message.startswith("step 2: HTTP 503")
    assert "malformed response" in retried["c02"][0].message
    assert retried["c03"][0].status == 500
    assert "connection error" in retried["c04"][0].message or "malformed" in retried["c04"][0].message
    assert "connection error" in retried["c05"][0].message
    assert not retried["c06"]


def test_a_wrong_key_names_openais_error_type(tmp_path, keyed):
    keyed.api_key = "another-key"
    with pytest.raises(UsageError, match=r"Its first answer: HTTP 401 invalid_api_key: "):
        run(suite(tmp_path, keyed, n=1), tmp_path / "r.json")


def test_a_reply_cut_at_max_output_tokens_is_length(tmp_path, keyed):
    keyed.responder = lambda body: "a long answer that goes on past the limit"
    results = run(suite(tmp_path, keyed, n=1, tools={}, max_output_tokens=4), tmp_path / "r.json")
    (a,) = attempts(results)
    assert a.output == "a long answer that"
    assert (a.metadata["finish_reason"], a.metadata["stop_reason"]) == ("length", "max_output_tokens")
    assert keyed.requests[0]["max_output_tokens"] == 4 and "include" not in keyed.requests[0]


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({"max_tokens": 5}, "max_tokens is not a parameter of api: responses (write max_output_tokens)"),
        ({"seed": 7}, "seed is not a parameter of api: responses"),
        ({"api": "chat", "max_output_tokens": 5}, "max_output_tokens is not a parameter of api: chat"),
        ({"base_url": "http://127.0.0.1:9/v1/responses"}, "ends in /responses"),
    ],
)
def test_parameters_of_the_other_api_are_refused(tmp_path, responses_server, params, message):
    with pytest.raises(InputFileError, match=message.replace("(", r"\(").replace(")", r"\)")):
        load_config(suite(tmp_path, responses_server, n=1, **params))
