"""The judge's ``headers:`` (docs/spec.md#judge, #target-headers): as a model target's, on every
wire format — ``${NAME}`` values expanded when the run starts and masked wherever they would be
written, and the key of ``api_key_env`` only in the header its format carries it in (``x-api-key``
on Anthropic, never ``Authorization``; a bearer token elsewhere)."""

from __future__ import annotations

from typing import Any

import pytest
from fakes.anthropic_server import anthropic_server as anthropic_server  # the fixture
from fakes.openai_server import openai_server as openai_server  # the fixture
from fakes.responses_server import responses_server as responses_server  # the fixture
from test_judge_formats import ANTHROPIC_KEY, grade, grader, served
from test_judge_spend import evalgate, judged_suite

from evals.common.errors import EXIT_USAGE
from evals.run.cache import ResponseCache
from evals.run.scorers.judge import Judge, JudgeParams
from evals.suite.cases import Case

# Short, and under no secret-looking name: only its use in a header makes it a secret.
SHORT_SECRET = "q7Zx9"
OPENAI_KEY = "sk-openai-judge-0123456789"
# Where each format carries the key, and what it must carry there.
KEY_HEADER = {"chat": "Authorization", "responses": "Authorization", "anthropic": "X-Api-Key"}


@pytest.mark.parametrize("kind", ["chat", "responses", "anthropic", "bedrock", "vertex"])
def test_the_judge_sends_its_headers_expanded_and_the_key_only_in_its_formats_header(
    kind, openai_server, responses_server, anthropic_server, monkeypatch
):
    monkeypatch.setenv("TEAM_HEADER", SHORT_SECRET)
    monkeypatch.setenv("OPENAI_API_KEY", OPENAI_KEY)
    monkeypatch.setenv("ANTHROPIC_API_KEY", ANTHROPIC_KEY)
    monkeypatch.setenv("AWS_BEARER_TOKEN_BEDROCK", anthropic_server.bedrock_token)
    monkeypatch.setenv("VERTEX_ACCESS_TOKEN", anthropic_server.vertex_token)
    server: Any = {"chat": openai_server, "responses": responses_server}.get(kind, anthropic_server)
    server.responder = grader
    params = {**served(kind, server), "headers": {"X-Team": "${TEAM_HEADER}", "X-Trace": "id-${TEAM_HEADER}"}}
    if kind == "chat":
        params["api_key_env"] = "OPENAI_API_KEY"
    assert grade("Berlin", **params).passed
    sent = server.headers[-1]
    assert (sent["X-Team"], sent["X-Trace"]) == (SHORT_SECRET, f"id-{SHORT_SECRET}")
    key = {
        "chat": OPENAI_KEY,
        "responses": OPENAI_KEY,
        "anthropic": ANTHROPIC_KEY,
        "bedrock": anthropic_server.bedrock_token,
        "vertex": anthropic_server.vertex_token,
    }[kind]
    carriers = [name for name, value in sent.items() if key in value]
    assert carriers == [KEY_HEADER.get(kind, "Authorization")]
    if kind == "anthropic":
        assert "Authorization" not in sent


def test_a_judges_header_value_is_in_no_file_or_log(tmp_path, openai_server, monkeypatch):
    """The judge's reasoning quotes the expanded value: no file written (the results, the response
    cache) and nothing evalgate printed holds it, whatever its length and its variable's name."""
    monkeypatch.setenv("TEAM_HEADER", SHORT_SECRET)

    def quoting(body: dict[str, Any]) -> str:
        return grader(body).replace('"reasoning": "read"', f'"reasoning": "read with {SHORT_SECRET}"')

    openai_server.responder = quoting
    config = judged_suite(tmp_path, openai_server, 2, target_cost=0.0, judge={"headers": {"X-Team": "${TEAM_HEADER}"}})
    done = evalgate("run", "--config", str(config), "--output", "r.json", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert openai_server.headers[0]["X-Team"] == SHORT_SECRET
    assert "read with ***" in (tmp_path / "r.json").read_text()
    written = [p for p in tmp_path.rglob("*") if p.is_file()]
    assert any(p.name == "cache.sqlite" for p in written)  # the response cache, which keeps verdicts
    assert [p for p in written if SHORT_SECRET.encode() in p.read_bytes()] == []
    assert SHORT_SECRET not in done.stdout + done.stderr


def test_an_unset_variable_in_a_judges_header_is_a_usage_error_naming_it(tmp_path, openai_server, monkeypatch):
    monkeypatch.delenv("EVALGATE_NO_SUCH_HEADER", raising=False)
    config = judged_suite(
        tmp_path, openai_server, 1, target_cost=0.0, judge={"headers": {"X-Team": "${EVALGATE_NO_SUCH_HEADER}"}}
    )
    done = evalgate("run", "--config", str(config), "--output", "r.json", cwd=tmp_path)
    assert done.returncode == EXIT_USAGE
    assert "scorers[0]: judge.headers.X-Team names ${EVALGATE_NO_SUCH_HEADER}, which is not set" in done.stderr


def test_a_judges_header_keys_its_cache_entries_but_a_rotated_credential_does_not(tmp_path, monkeypatch):
    """A header can select which deployment grades (another value, another verdict); a
    credential is not part of the question."""
    cache = ResponseCache(tmp_path / "cache", max_bytes=1 << 20)
    case = Case(id="c", input="q", expected="a")

    def key(org: str, token: str) -> str | None:
        monkeypatch.setenv("ORG", org)
        monkeypatch.setenv("HDR_TOKEN", token)
        params = JudgeParams(
            model="local:judge", base_url="http://127.0.0.1:9/v1", api_key_env=None, rubric="r",
            headers={"X-Org": "${ORG}", "api-key": "${HDR_TOKEN}"},
        )  # fmt: skip
        return Judge(params, tmp_path, cache).cache_key("a", case)

    first = key("org-one", "token-0123456789")
    assert key("org-one", "token-rotated-9876543210") == first
    assert key("org-two", "token-0123456789") != first
