"""``headers:`` of a model target (docs/spec.md#target-headers): ``${NAME}`` values expanded from
the environment when the run starts and never written expanded (results, cache, report, output) on
every wire format, the key of ``api_key_env`` only in Authorization, and a credential written in
clear text warned about."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from fakes.anthropic_server import anthropic_server as anthropic_server  # the fixture
from fakes.openai_server import OpenAIServer
from fakes.openai_server import openai_server as openai_server  # the fixture
from fakes.responses_server import responses_server as responses_server  # the fixture
from fakes.suites import echo_cases, load_suite, write_suite
from test_judge_spend import evalgate

from evals.common.errors import UsageError
from evals.results import console
from evals.run.execution import execute
from evals.run.targets.code import build_target
from evals.suite.cases import Case

# Short, and under no secret-looking name: the environment's masking (8 characters and up) would
# not catch it; only its use in a header makes it a secret.
SHORT_SECRET = "q7Zx9"


def suite(tmp_path: Path, server: OpenAIServer, headers: dict[str, str], **openai):
    spec = {"base_url": server.url, "model": "local:m", "api_key_env": None, "headers": headers, **openai}
    return load_suite(tmp_path, echo_cases(2), target={"openai": spec}, cache={"dir": "cache"})


def call(target, case: Case) -> None:
    async def go() -> None:
        try:
            await target.call(case)
        finally:
            await target.aclose()

    asyncio.run(go())


def line_of(config, text: str) -> int:
    return next(i for i, line in enumerate(config.path.read_text().splitlines(), start=1) if text in line)


def test_a_header_naming_a_variable_is_sent_expanded_and_written_nowhere(tmp_path, openai_server, monkeypatch, capsys):
    monkeypatch.setenv("TEAM_HEADER", SHORT_SECRET)
    # The model echoes it back: the answer, the trace and the report must not hold it.
    openai_server.responder = lambda body: f"seen {SHORT_SECRET} here"
    config = suite(tmp_path, openai_server, {"X-Team": "${TEAM_HEADER}", "X-Trace": "id-${TEAM_HEADER}-1"})
    results = execute(config, tmp_path / "r.json", progress=False)
    assert openai_server.headers[0]["X-Team"] == SHORT_SECRET
    assert openai_server.headers[0]["X-Trace"] == f"id-{SHORT_SECRET}-1"
    assert results.run.status == "success"
    assert results.cases[0].attempts[0].output == "seen *** here"
    assert SHORT_SECRET.encode() not in (tmp_path / "r.json").read_bytes()
    console.info(f"an error message quoting {SHORT_SECRET}", source="run")  # evalgate's own output
    assert SHORT_SECRET not in capsys.readouterr().err


def test_an_unset_variable_is_a_usage_error_naming_the_header_line(tmp_path, openai_server, monkeypatch) -> None:
    monkeypatch.delenv("EVALGATE_NO_SUCH_HEADER", raising=False)
    config = suite(tmp_path, openai_server, {"api-key": "${EVALGATE_NO_SUCH_HEADER}"})
    with pytest.raises(UsageError) as info:
        build_target(config)
    where = f"{config.path}:{line_of(config, 'api-key:')}"
    assert str(info.value).startswith(f"{where}: target.openai.headers.api-key names ${{EVALGATE_NO_SUCH_HEADER}}")
    assert "export EVALGATE_NO_SUCH_HEADER=..." in str(info.value)


@pytest.mark.parametrize(
    ("headers", "openai", "says"),
    [
        ({"X-Key": "${1BAD}"}, {}, "'${1BAD}' is not a variable reference"),
        ({"X-Org": "a", "x-org": "b"}, {}, "names the header 'X-Org' again"),
        # The key of api_key_env goes in Authorization; a second one there would be sent beside it.
        ({"authorization": "Bearer ${HDR_VALUE}"}, {"api_key_env": "HDR_VALUE"}, "already goes in Authorization"),
        ({"X-Key": "${HDR_BROKEN}"}, {}, "holds a line break"),
    ],
)
def test_headers_that_cannot_be_sent_as_written_are_refused(
    tmp_path, openai_server, monkeypatch, headers, openai, says
):
    monkeypatch.setenv("HDR_VALUE", "value-0123456789")
    monkeypatch.setenv("HDR_BROKEN", "one\r\nX-Injected: two")
    with pytest.raises(UsageError, match=r"target\.openai\.headers") as info:
        build_target(suite(tmp_path, openai_server, headers, **openai))
    assert says in str(info.value)


def test_authorization_of_ones_own_is_sent_when_api_key_env_is_null(tmp_path, openai_server, monkeypatch) -> None:
    monkeypatch.setenv("AZURE_TOKEN", "entra-token-0123456789")
    target = build_target(suite(tmp_path, openai_server, {"Authorization": "Bearer ${AZURE_TOKEN}"}))
    call(target, Case(id="c", input="hi"))
    assert openai_server.headers[0]["Authorization"] == "Bearer entra-token-0123456789"
    assert "entra-token-0123456789" in target.secrets


@pytest.mark.parametrize(
    ("headers", "warned"),
    [
        ({"api-key": "0123456789abcdef0123456789abcdef"}, "api-key"),  # a credential's name
        ({"X-Custom": "sk-proj-abcdefghijklmnopqrstuvwx"}, "X-Custom"),  # a key's shape
        ({"X-Title": "evalgate", "HTTP-Referer": "https://example.com"}, None),
        ({"api-key": "${HDR_VALUE}"}, None),
    ],
)
def test_a_credential_in_clear_text_is_warned_about(tmp_path, openai_server, monkeypatch, capsys, headers, warned):
    monkeypatch.setenv("HDR_VALUE", "value-0123456789")
    build_target(suite(tmp_path, openai_server, headers))
    err = capsys.readouterr().err
    if warned is None:
        assert "clear text" not in err
    else:
        variable = warned.replace("-", "_").upper()
        assert f"target.openai.headers.{warned} holds a credential in clear text" in err
        assert f"write ${{{variable}}} instead" in err and "0123456789abcdef" not in err


def test_the_cache_key_follows_a_headers_value_but_not_a_rotated_credential(tmp_path, openai_server, monkeypatch):
    """A header can select what answers (a deployment, an organisation): another value is another
    request. A credential is not part of the question: rotating it keeps the cached answers."""
    monkeypatch.setenv("ORG", "org-one")
    monkeypatch.setenv("HDR_VALUE", "value-0123456789")
    headers = {"X-Org": "${ORG}", "api-key": "${HDR_VALUE}"}
    execute(suite(tmp_path, openai_server, headers), tmp_path / "r.json", progress=False)
    assert len(openai_server.requests) == 2
    for entry in (p for p in (tmp_path / "cache").rglob("*") if p.is_file()):
        assert b"org-one" not in entry.read_bytes() and b"value-0123456789" not in entry.read_bytes()
    monkeypatch.setenv("HDR_VALUE", "value-rotated-9876543210")
    again = execute(suite(tmp_path, openai_server, headers), tmp_path / "r.json", progress=False)
    assert len(openai_server.requests) == 2 and all(a.cached for c in again.cases for a in c.attempts)
    monkeypatch.setenv("ORG", "org-two")
    execute(suite(tmp_path, openai_server, headers), tmp_path / "r.json", progress=False)
    assert len(openai_server.requests) == 4


@pytest.mark.parametrize("kind", ["chat", "responses", "anthropic"])
def test_on_every_format_a_headers_value_is_sent_expanded_and_is_in_no_file_or_log(
    kind, tmp_path, openai_server, responses_server, anthropic_server, monkeypatch
):
    """Through evalgate itself, run then compare: the value the model echoes back is in none of
    the files written (results, cache, report, comparison) nor in what evalgate printed."""
    monkeypatch.setenv("TEAM_HEADER", SHORT_SECRET)
    monkeypatch.setenv("ANTHROPIC_API_KEY", anthropic_server.api_key)
    server: Any = {"chat": openai_server, "responses": responses_server}.get(kind, anthropic_server)
    server.responder = lambda body: f"seen {SHORT_SECRET} here"
    spec: dict[str, Any] = {"base_url": server.url, "headers": {"X-Team": "${TEAM_HEADER}"}}
    if kind == "anthropic":
        target = {"anthropic": {**spec, "model": "anthropic:claude-haiku-4-5"}}
    else:
        target = {"openai": {**spec, "model": "local:m", "api_key_env": None, "api": kind}}
    config = write_suite(tmp_path, echo_cases(2), target=target, cache={"dir": "cache"})
    done = evalgate("run", "--config", str(config), "--output", "r.json", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert server.headers[0]["X-Team"] == SHORT_SECRET
    compared = evalgate(
        "compare", "--baseline", "r.json", "--candidate", "r.json", "--report", "report.md", "--json", "c.json",
        cwd=tmp_path,
    )  # fmt: skip
    assert compared.returncode == 0, compared.stderr
    assert "seen *** here" in (tmp_path / "r.json").read_text()
    written = [p for p in tmp_path.rglob("*") if p.is_file()]
    assert {"r.json", "report.md", "c.json"} <= {p.name for p in written} and any("cache" in p.parts for p in written)
    assert [p for p in written if SHORT_SECRET.encode() in p.read_bytes()] == []
    assert SHORT_SECRET not in done.stdout + done.stderr + compared.stdout + compared.stderr
