"""The tool-using suite every wire format's target is tested with (tests/unit/run/test_chat_target.py,
test_responses_target.py, test_anthropic_target.py): ``n`` cases ``City<i>`` whose answer must
hold ``"temp": 20``, graded by ``contains`` and by the trajectory (``tool_used: get_weather``, in the
verdict), against a format's fake whose responder calls the tool once, then answers with its result."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from evals.compare.analysis import compare
from evals.results.model import Attempt, Results
from evals.results.trace import tool_names
from evals.run.execution import execute
from evals.suite.loading import load_config
from fakes.model_server import ModelServer, malformed, reset, status, truncated
from fakes.suites import write_suite

PROMPT = "You are a weather assistant: look the weather up with the tool before you answer.\n"
TOOLS = (  # the tool's module, and its source
    "weather_tools",
    'def get_weather(city: str) -> dict:\n    """The temperature in a city."""\n'
    '    return {"city": city, "temp": 20}\n',
)
EXPECTED = '"temp": 20'


def weather_suite(
    folder: Path,
    kind: str,
    spec: dict[str, Any],
    tools: tuple[str, str] = TOOLS,
    *,
    n: int = 40,
    prompt: bool = True,
    cache: bool = False,
) -> Path:
    """A suite of ``n`` weather cases on ``target.<kind>`` (``spec``), its tool ``get_weather``
    defined by ``tools`` (the module's name, its source: each test file its own, as modules are
    imported once per process), the system prompt :data:`PROMPT` if ``prompt``, the response cache
    off unless ``cache``."""
    folder.mkdir(parents=True, exist_ok=True)
    module, source = tools
    (folder / f"{module}.py").write_text(source, encoding="utf-8")
    target = {"tools": {"get_weather": f"{module}:get_weather"}, **spec}  # spec's tools: {} runs none
    if prompt:
        (folder / "system.md").write_text(PROMPT, encoding="utf-8")
        target["system_prompt"] = "system.md"
    cases = [{"id": f"c{i:02d}", "input": f"City{i}", "expected": EXPECTED} for i in range(n)]
    scorers = ["contains", {"tool_used": {"tool": "get_weather", "in_verdict": True}}]
    more = {} if cache else {"cache": False}
    return write_suite(
        folder, cases, target={kind: target}, scorers=scorers, retries={"max": 3, "backoff_s": [0]}, timeout_s=10,
        **more,
    )  # fmt: skip


def run(config: Path, out: Path) -> Results:
    return execute(load_config(config), out, progress=False)


def attempts(results: Results) -> list[Attempt]:
    return [a for c in results.cases for a in c.attempts]


def assert_the_tool_was_used(results: Results) -> None:
    """Every attempt passed, having called the tool once (traced as a call and its result) and
    then answered (``finish_reason: stop``)."""
    assert all(a.passed for a in attempts(results)), [a.error for a in attempts(results) if a.error]
    for a in attempts(results):
        assert tool_names(a.trace) == ["get_weather"] and a.metadata["finish_reason"] == "stop"
        assert [e.kind for e in a.trace if e.kind.startswith("tool")] == ["tool_call", "tool_result"]


def assert_skipping_the_tool_fails(
    folder: Path, suite: Callable[[Path], Path], server: Any, no_tool: Callable[[dict[str, Any]], Any]
) -> None:
    """A baseline run of ``suite`` (made in a folder) with the server's responder as it is, then a
    candidate whose model (``no_tool``) gives the same answers without calling the tool: every
    candidate attempt fails on the trajectory, and the gate fails."""
    baseline = run(suite(folder / "b"), folder / "b.json")
    server.responder = no_tool
    candidate = run(suite(folder / "c"), folder / "c.json")
    assert all(a.output and EXPECTED in a.output for a in attempts(candidate))
    assert all(tool_names(a.trace) == [] and a.passed is False for a in attempts(candidate))
    assert compare(baseline, candidate, load_config(folder / "c" / "evalgate.yml")).verdict == "fail"


# The faults an OpenAI-format fake is scripted with, one case each (the last case has none), and
# the retry each must have left in its attempt's retry_history.
FAULTS_CASES = 7


def script_faults(server: ModelServer) -> None:
    server.script("City0", status(429, retry_after="0"))
    server.script("City1", status(503), after=1)  # in the loop, after the tool ran
    server.script("City2", malformed())  # a whole reply whose JSON is cut
    server.script("City3", status(500))
    server.script("City4", truncated())  # a reply cut mid-body, the connection closed
    server.script("City5", reset())  # the connection reset


def assert_faults_retried(results: Results) -> None:
    assert all(a.passed for a in attempts(results)), [a.error for a in attempts(results) if a.error]
    retried = {c.id: c.attempts[0].retry_history for c in results.cases}
    assert retried["c00"][0].status == 429 and retried["c01"][0].message.startswith("step 2: HTTP 503")
    assert "malformed response" in retried["c02"][0].message
    assert retried["c03"][0].status == 500
    assert "connection error" in retried["c04"][0].message or "malformed" in retried["c04"][0].message
    assert "connection error" in retried["c05"][0].message
    assert not retried["c06"]
