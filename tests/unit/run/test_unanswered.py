"""A model target that answered nothing (docs/spec.md#nothing-answered): a run whose every attempt
ended in an HTTP 4xx is no success. It says the endpoint does not speak the format there (naming
the format, the URL and the config line), its file says ``error``, and ``evalgate run`` exits 2.
A base URL that already holds the route is refused before anything is sent."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from fakes.anthropic_server import AnthropicServer
from fakes.openai_server import OpenAIServer, status
from fakes.openai_server import openai_server as openai_server  # the fixture
from fakes.suites import echo_cases, load_suite, write_suite

from evals.common.errors import InputFileError, UsageError
from evals.run.execution import execute
from evals.suite.loading import load_config


def openai_spec(base_url: str, **extra) -> dict:
    return {"openai": {"base_url": base_url, "model": "openai:gpt-4o-mini", "api_key_env": None, **extra}}


def test_an_anthropic_server_behind_an_openai_target_is_a_setup_error(tmp_path: Path, monkeypatch) -> None:
    """The new user's case: a Messages-style server answers 404 to every Chat Completions call.
    Before, the run said success (40 wrong answers) and only the gate said it measured nothing.
    The key went where this format sends it, Authorization, and nowhere else."""
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-api03-test-0123456789")
    with AnthropicServer() as server:
        url = server.url + "/v1/chat/completions"
        target = openai_spec(server.url + "/v1", api_key_env="ANTHROPIC_API_KEY")
        config = load_suite(tmp_path, echo_cases(4), target=target)
        with pytest.raises(UsageError) as info:
            execute(config, tmp_path / "r.json", progress=False)
    assert server.paths == ["/v1/chat/completions"] * 4
    assert all(h["Authorization"] == "Bearer sk-ant-api03-test-0123456789" for h in server.headers)
    assert not any("X-Api-Key" in h for h in server.headers)
    message = str(info.value)
    assert message.startswith(
        f"the target answered nothing: every one of the 4 requests to {url} was answered HTTP 404"
    )
    assert "does not speak openai chat completions at that URL" in message
    line = next(i for i, t in enumerate(config.path.read_text().splitlines(), 1) if "base_url:" in t)
    assert f"fix the base URL at {config.path}:{line}" in message and "not_found_error" in message
    written = json.loads((tmp_path / "r.json").read_text())
    assert written["run"]["status"] == "error" and written["run"]["message"] == message


def test_credentials_refused_on_every_request_say_so(tmp_path: Path, openai_server: OpenAIServer) -> None:
    openai_server.script(None, *[status(401, body='{"error": {"message": "Incorrect API key provided"}}')] * 3)
    config = load_suite(tmp_path, echo_cases(3), target=openai_spec(openai_server.url))
    with pytest.raises(UsageError, match="answered HTTP 401; the endpoint refuses the credentials") as info:
        execute(config, tmp_path / "r.json", progress=False)
    assert "Incorrect API key provided" in str(info.value)


def test_a_run_with_one_answer_is_not_this_error(tmp_path: Path, openai_server: OpenAIServer) -> None:
    """Some 4xx among answers are the candidate's failures on those cases, as before."""
    openai_server.script("q0", status(404))
    openai_server.script("q1", status(400))
    config = load_suite(tmp_path, echo_cases(3), target=openai_spec(openai_server.url))
    results = execute(config, tmp_path / "r.json", progress=False)
    assert results.run.status == "success"
    assert [c.attempts[0].error.kind if c.attempts[0].error else None for c in results.cases] == [
        "target",
        "target",
        None,
    ]


def test_evalgate_run_exits_2_with_the_reason(tmp_path: Path) -> None:
    with AnthropicServer() as server:
        write_suite(tmp_path, echo_cases(2), target=openai_spec(server.url + "/v1"))
        env = {k: v for k, v in os.environ.items() if not k.startswith("GITHUB_")}
        done = subprocess.run(
            [sys.executable, "-m", "evals", "run", "--config", "evalgate.yml", "-o", "r.json"],
            cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120, check=False,
        )  # fmt: skip
    assert done.returncode == 2, done.stderr
    assert "the target answered nothing" in done.stderr and "Traceback" not in done.stderr
    assert json.loads((tmp_path / "r.json").read_text())["run"]["status"] == "error"


@pytest.mark.parametrize(
    ("base_url", "says"),
    [
        ("https://api.openai.com/v1/chat/completions", "ends in /chat/completions, which evalgate appends itself"),
        ("http://localhost:11434/v1/chat/completions/", "'http://localhost:11434/v1'"),
        ("https://r.openai.azure.com/openai/deployments/d/chat/completions?api-version=2024-10-21", "appends"),
        ("https://r.openai.azure.com/openai?api-version=2024-10-21", "has a query (?api-version=2024-10-21)"),
    ],
)
def test_a_base_url_holding_the_route_or_a_query_is_refused(tmp_path: Path, base_url: str, says: str) -> None:
    path = write_suite(tmp_path, echo_cases(1), target=openai_spec(base_url))
    with pytest.raises(InputFileError) as info:
        load_config(path)
    assert says in str(info.value) and str(path) in str(info.value)
