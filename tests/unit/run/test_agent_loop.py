"""The ``openai`` target's tool loop (docs/spec.md#tool-loop) against the local OpenAI-compatible server: tool
calls in replies run as the configured callables, a tool that raises is a ``tool_error`` the model
reads (not a crash), a 429 in the middle of the loop is retried there, ``max_steps`` stops it, and
every step and call is in the trace."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from fakes.openai_server import OpenAIServer, status, tool_calls, tool_results
from fakes.openai_server import openai_server as openai_server  # the fixture
from fakes.suites import write_suite

from evals.common.errors import UsageError
from evals.results.files import load_results
from evals.results.model import Attempt
from evals.results.trace import step_count
from evals.run.execution import execute
from evals.suite.loading import load_config

TOOLS = '''
import asyncio

CALLS = []


def get_weather(city: str, unit: str = "C") -> dict:
    """The temperature in a city.

    More text the model does not need."""
    CALLS.append(city)
    if city == "Atlantis":
        raise LookupError(f"no station in {city}")
    return {"city": city, "temp": 20}


async def slow(seconds: float) -> str:
    await asyncio.sleep(seconds)
    return "done"
'''


def weather_agent(body: dict[str, Any]) -> dict[str, Any] | str:
    """A model that looks the weather up once, then answers with what the tool said."""
    results = tool_results(body)
    if not results:
        city = body["messages"][-1]["content"]
        return tool_calls(("get_weather", {"city": city}), content="checking")
    return f"FINAL ANSWER: {results[-1]}"


def suite(tmp_path: Path, server: OpenAIServer, cases: list[dict[str, Any]], **openai: Any) -> Path:
    (tmp_path / "agent_tools.py").write_text(TOOLS, encoding="utf-8")
    target = {"openai": {"base_url": server.url, "model": "local:agent", "api_key_env": None, **openai}}
    return write_suite(
        tmp_path, cases, target=target, scorers=["contains"], retries={"max": 3, "backoff_s": [0]}, timeout_s=10
    )


def attempt(config: Path, tmp_path: Path) -> Attempt:
    results = execute(load_config(config), tmp_path / "r.json", progress=False)
    return results.cases[0].attempts[0]


def events(a: Attempt) -> list[tuple[str, str | None]]:
    return [(e.kind, e.name) for e in a.trace or []]


TOOLS_CONFIG = {"tools": {"get_weather": "agent_tools:get_weather", "slow": "agent_tools:slow"}}


def test_the_loop_runs_the_tools_the_model_calls_and_traces_every_step(tmp_path, openai_server):
    openai_server.responder = weather_agent
    config = suite(
        tmp_path, openai_server, [{"id": "paris", "input": "Paris", "expected": '"temp": 20'}], **TOOLS_CONFIG
    )
    a = attempt(config, tmp_path)
    assert a.passed is True and a.error is None
    assert a.output == 'FINAL ANSWER: {"city": "Paris", "temp": 20}'
    assert events(a) == [
        ("message", "user"),
        ("log", "step"),
        ("message", "assistant"),
        ("tool_call", "get_weather"),
        ("tool_result", "get_weather"),
        ("log", "step"),
        ("message", "assistant"),
    ]
    assert json.loads(a.trace[3].content) == {"city": "Paris"}
    first, second = openai_server.requests
    # The model is offered each tool with a schema read from its signature and docstring.
    offered = {t["function"]["name"]: t["function"] for t in first["tools"]}
    assert offered["get_weather"]["description"] == "The temperature in a city."
    assert offered["get_weather"]["parameters"]["required"] == ["city"]
    assert offered["get_weather"]["parameters"]["properties"]["unit"] == {"default": "C", "type": "string"}
    # ... and reads the tool's answer back, after its own call.
    assert [m["role"] for m in second["messages"]] == ["user", "assistant", "tool"]
    assert second["messages"][2] == {"role": "tool", "tool_call_id": "call_0", "content": a.trace[4].content}
    # Tokens add up over the steps.
    assert a.tokens_in == sum(len(str(m.get("content", "")).split()) for r in (first, second) for m in r["messages"])


def test_a_tool_that_raises_is_a_tool_error_the_model_reads_not_a_crash(tmp_path, openai_server):
    openai_server.responder = weather_agent
    config = suite(
        tmp_path, openai_server, [{"id": "x", "input": "Atlantis", "expected": "no station"}], **TOOLS_CONFIG
    )
    a = attempt(config, tmp_path)
    assert a.error is None and a.passed is True
    assert ("tool_error", "get_weather") in events(a)
    error = next(e for e in a.trace if e.kind == "tool_error")
    assert error.content == "LookupError: no station in Atlantis"
    told = openai_server.requests[1]["messages"][-1]
    assert told["role"] == "tool" and told["content"] == "error: LookupError: no station in Atlantis"


@pytest.mark.parametrize(
    ("call", "error"),
    [
        (("slow", {"seconds": 5}), "slow did not return within tool_timeout_s=0.2"),
        (("get_weather", {"town": "Paris"}), "bad arguments for get_weather: missing a required argument: 'city'"),
        (("teleport", {}), "unknown tool 'teleport': the tools are get_weather, slow"),
    ],
)
def test_a_wrong_or_slow_tool_call_is_the_models_failure_never_infra(tmp_path, openai_server, call, error):
    def agent(body: dict[str, Any]) -> dict[str, Any] | str:
        return tool_calls(call) if not tool_results(body) else "gave up"

    openai_server.responder = agent
    config = suite(
        tmp_path, openai_server, [{"id": "a", "input": "q", "expected": "x"}], tool_timeout_s=0.2, **TOOLS_CONFIG
    )
    a = attempt(config, tmp_path)
    assert a.error is None and a.retries == 0 and a.passed is False
    assert [e.content for e in a.trace if e.kind == "tool_error"] == [error]


def test_a_429_in_the_middle_of_the_loop_is_retried_there_without_running_the_tools_again(tmp_path, openai_server):
    openai_server.responder = weather_agent
    openai_server.script("Paris", status(429, retry_after="0"), after=1)  # the second step's request
    config = suite(
        tmp_path, openai_server, [{"id": "paris", "input": "Paris", "expected": '"temp": 20'}], **TOOLS_CONFIG
    )
    a = attempt(config, tmp_path)
    assert a.passed is True and a.error is None
    assert a.retries == 1 and a.retry_history[0].message.startswith("step 2: HTTP 429")
    assert a.retry_history[0].status == 429
    assert len(openai_server.requests) == 3
    assert [e.kind for e in a.trace].count("tool_call") == 1  # the tool ran once


def test_infra_errors_past_the_retries_end_the_attempt_as_infra_naming_the_step(tmp_path, openai_server):
    openai_server.responder = weather_agent
    openai_server.script("Paris", *[status(503)] * 10, after=1)
    config = suite(tmp_path, openai_server, [{"id": "paris", "input": "Paris", "expected": "x"}], **TOOLS_CONFIG)
    a = attempt(config, tmp_path)
    assert a.error is not None and a.error.kind == "infra" and a.passed is None
    assert a.error.message.startswith("step 2: HTTP 503") and a.retries == 3


def test_max_steps_stops_the_loop_and_the_last_calls_are_not_run(tmp_path, openai_server):
    openai_server.responder = lambda body: tool_calls(("get_weather", {"city": "Oslo"}))  # never answers
    config = suite(tmp_path, openai_server, [{"id": "a", "input": "q", "expected": "x"}], max_steps=3, **TOOLS_CONFIG)
    a = attempt(config, tmp_path)
    assert len(openai_server.requests) == 3
    assert a.metadata["finish_reason"] == "max_steps" and a.error is None and a.passed is False
    assert [e.kind for e in a.trace].count("log") == 3
    assert [e.content for e in a.trace if e.kind == "tool_result"][-1] == "not executed: max_steps (3) reached"
    assert [e.kind for e in a.trace if e.kind.startswith("tool_")].count("tool_call") == 3
    # An agent the cap cut off had not finished: it needed more steps than the cap, so a max_steps
    # scorer at the cap fails it (it read 3 steps and passed it).
    assert step_count(a.trace) == 4


def test_a_reply_with_malformed_tool_calls_is_an_infra_error_not_a_crash(tmp_path, openai_server):
    """A tool call whose function is not an object (or tool_calls that are not a list) is a
    broken reply: the attempt's infra error, never a traceback that stops every case."""
    openai_server.responder = lambda body: {"content": None, "tool_calls": [{"id": "1", "function": "get_weather"}]}
    config = suite(tmp_path, openai_server, [{"id": "a", "input": "q", "expected": "x"}], **TOOLS_CONFIG)
    a = attempt(config, tmp_path)
    assert a.error is not None and a.error.kind == "infra" and "malformed response" in a.error.message


def test_a_tool_that_cannot_be_imported_names_the_config_line(tmp_path, openai_server):
    config = suite(
        tmp_path, openai_server, [{"id": "a", "input": "q", "expected": "x"}], tools={"get_weather": "agent_tools:nope"}
    )
    with pytest.raises(UsageError) as err:
        execute(load_config(config), tmp_path / "r.json", progress=False)
    line = next(i for i, text in enumerate(config.read_text().splitlines(), 1) if "tools:" in text)
    assert str(err.value).startswith(f"{config}:{line}: target.openai.tools: tool get_weather")
    assert "has no attribute 'nope'" in str(err.value)


HANGING_TOOLS = """
import time


def stuck(seconds: float) -> str:
    time.sleep(seconds)  # a sync tool that outlives its timeout: its thread cannot be stopped
    return "late"
"""


@pytest.mark.e2e
def test_a_hung_sync_tool_does_not_hold_the_end_of_the_run(tmp_path, openai_server):
    """``time.sleep(40)`` under ``tool_timeout_s: 1``: the attempt is the tool's error, and
    ``evalgate run`` writes its results and exits without waiting for the thread."""

    def agent(body: dict[str, Any]) -> dict[str, Any] | str:
        results = tool_results(body)
        return tool_calls(("stuck", {"seconds": 40})) if not results else f"FINAL ANSWER: {results[-1]}"

    openai_server.responder = agent
    (tmp_path / "hang_tools.py").write_text(HANGING_TOOLS, encoding="utf-8")
    target = {
        "openai": {
            "base_url": openai_server.url,
            "model": "local:agent",
            "api_key_env": None,
            "tools": {"stuck": "hang_tools:stuck"},
            "tool_timeout_s": 1,
        }
    }
    write_suite(tmp_path, [{"id": "a", "input": "q", "expected": "x"}], target=target, scorers=["contains"])
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-m", "evals", "run", "--config", "evalgate.yml", "-o", "r.json"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    took = time.monotonic() - started
    assert done.returncode == 0, done.stderr
    assert took < 30, f"the run waited {took:.0f} s for the hung tool's thread"
    a = load_results(tmp_path / "r.json").cases[0].attempts[0]
    assert "stuck did not return within tool_timeout_s=1" in (a.output or "")


TYPED_TOOLS = """
def switch(on: bool, level: int = 1, ratio: float = 0.5) -> str:
    return f"on={on!r} level={level!r} ratio={ratio!r}"


def big() -> str:
    return "x" * 200_000
"""


@pytest.mark.parametrize(
    ("call", "told"),
    [
        # The schema says boolean: "false" was passed through and read as true.
        (("switch", {"on": "false"}), "error: bad arguments for switch: on: Input should be a valid boolean"),
        (("switch", {"on": True, "level": "3"}), "error: bad arguments for switch: level: Input should be a valid"),
        (("switch", {"on": False, "ratio": 2}), "on=False level=1 ratio=2.0"),  # an integer is a JSON number
        (("big", {}), "x" * 100),
    ],
)
def test_tool_arguments_are_checked_against_the_schema_and_results_are_capped(tmp_path, openai_server, call, told):
    def agent(body: dict[str, Any]) -> dict[str, Any] | str:
        return tool_calls(call) if not tool_results(body) else "done"

    openai_server.responder = agent
    (tmp_path / "typed_tools.py").write_text(TYPED_TOOLS, encoding="utf-8")
    config = suite(
        tmp_path,
        openai_server,
        [{"id": "a", "input": "q", "expected": "x"}],
        tools={"switch": "typed_tools:switch", "big": "typed_tools:big"},
    )
    attempt(config, tmp_path)
    sent = openai_server.requests[1]["messages"][-1]["content"]
    assert sent.startswith(told)
    if call[0] == "big":
        assert len(sent) < 70_000 and sent.endswith(
            "[evalgate: the tool's result was cut at 65,536 of 200,000 characters]"
        )
