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
)
from fakes.responses_server import responses_server as responses_server  # the fixture
from fakes.weather import (
    FAULTS_CASES,
    PROMPT,
    assert_faults_retried,
    assert_skipping_the_tool_fails,
    assert_the_tool_was_used,
    attempts,
    run,
    script_faults,
    weather_suite,
)

from evals.common.errors import InputFileError, UsageError
from evals.suite.loading import load_config

KEY = "sk-test-responses-0123456789"
TOOLS = '''
def get_weather(city: str, unit: str = "C") -> dict:
    """The temperature in a city."""
    return {"city": city, "temp": 20}
'''


def weather_agent(body: dict[str, Any]) -> dict[str, Any] | str:
    outputs = function_outputs(body)
    if not outputs:
        return function_calls(("get_weather", {"city": body["input"][-1]["content"]}))
    return f"FINAL ANSWER: {outputs[-1]}"


def no_tool_agent(body: dict[str, Any]) -> str:
    """The same answers, without looking anything up."""
    return f'FINAL ANSWER: {{"city": "{body["input"][-1]["content"]}", "temp": 20}}'


def suite(tmp_path: Path, server: ResponsesServer, n: int = 40, **openai: Any) -> Path:
    spec = {
        "api": "responses",
        "base_url": server.url,
        "model": "openai:gpt-5-mini",
        "api_key_env": "RESPONSES_KEY",
        "price_in_per_mtok": 0.25,
        "price_out_per_mtok": 2.0,
        "price_cache_read_per_mtok": 0.025,
        **openai,
    }
    return weather_suite(tmp_path, "openai", spec, ("responses_agent_tools", TOOLS), n=n)


@pytest.fixture
def keyed(responses_server, monkeypatch):
    monkeypatch.setenv("RESPONSES_KEY", KEY)
    responses_server.api_key = KEY
    responses_server.responder = weather_agent
    return responses_server


def test_a_tool_using_suite_runs_statelessly_on_the_responses_format(tmp_path, keyed):
    keyed.reasoning_tokens = 7
    results = run(suite(tmp_path, keyed), tmp_path / "r.json")
    assert_the_tool_was_used(results)
    assert results.run.target.params["api"] == "responses"
    for a in attempts(results):
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
    assert_skipping_the_tool_fails(tmp_path, lambda folder: suite(folder, keyed), keyed, no_tool_agent)


def test_faults_are_retried(tmp_path, keyed):
    script_faults(keyed)
    assert_faults_retried(run(suite(tmp_path, keyed, n=FAULTS_CASES), tmp_path / "r.json"))


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
