"""The Anthropic Messages fake (tests/fakes/anthropic_server.py) speaks the wire format of the
public references its docstring names: golden request/response pairs taken from them, the error
shapes, tool use, prompt caching usage, the Bedrock and Vertex routes, and its faults. A model
target for the format is only as faithful as the server it is tested against."""

from __future__ import annotations

import http.client
import json
import urllib.parse
from typing import Any

import pytest
from fakes.anthropic_server import (
    AnthropicServer,
    malformed,
    overloaded,
    rate_limited,
    reset,
    tool_results,
    tool_use,
    truncated,
)
from fakes.anthropic_server import anthropic_server as anthropic_server  # the fixture

KEY = "sk-ant-api03-test-0123456789"
HEADERS = {"x-api-key": KEY, "anthropic-version": "2023-06-01", "content-type": "application/json"}


def post(url: str, body: Any, headers: dict[str, str] | None = None) -> tuple[int, dict[str, str], Any]:
    """(status, headers, parsed JSON body) of one POST; the raw text when it is not JSON."""
    parts = urllib.parse.urlsplit(url)
    conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=10)
    try:
        data = body if isinstance(body, bytes) else json.dumps(body).encode()
        conn.request("POST", parts.path, body=data, headers=HEADERS if headers is None else headers)
        response = conn.getresponse()
        raw = response.read()
        try:
            parsed = json.loads(raw)
        except json.JSONDecodeError:
            parsed = raw.decode("utf-8", errors="replace")
        return response.status, {k.lower(): v for k, v in response.getheaders()}, parsed
    finally:
        conn.close()


def messages_url(server: AnthropicServer) -> str:
    return server.url + "/v1/messages"


def test_golden_text_exchange(anthropic_server: AnthropicServer) -> None:
    """The Messages API reference's first example: a user turn in, one text block out."""
    request = {
        "model": "claude-sonnet-4-5",
        "max_tokens": 1024,
        "messages": [{"role": "user", "content": "Hello, Claude"}],
    }
    code, headers, reply = post(messages_url(anthropic_server), request)
    assert code == 200 and headers["request-id"].startswith("req_")
    assert reply["id"].startswith("msg_")
    assert {k: v for k, v in reply.items() if k != "id"} == {
        "type": "message",
        "role": "assistant",
        "model": "claude-sonnet-4-5",
        "content": [{"type": "text", "text": "Hello, Claude"}],
        "stop_reason": "end_turn",
        "stop_sequence": None,
        "usage": {
            "input_tokens": 2,
            "cache_creation_input_tokens": 0,
            "cache_read_input_tokens": 0,
            "output_tokens": 2,
        },
    }
    assert anthropic_server.requests == [request] and anthropic_server.paths == ["/v1/messages"]
    assert anthropic_server.headers[0]["X-Api-Key"] == KEY and "Authorization" not in anthropic_server.headers[0]


@pytest.mark.parametrize(
    ("headers", "code", "kind", "says"),
    [
        ({"anthropic-version": "2023-06-01"}, 401, "authentication_error", "x-api-key header is required"),
        (
            {"x-api-key": "sk-ant-wrong", "anthropic-version": "2023-06-01"},
            401,
            "authentication_error",
            "invalid x-api-key",
        ),
        ({"x-api-key": KEY}, 400, "invalid_request_error", "anthropic-version: header is required"),
        # A key sent as an OpenAI client sends it is no key here.
        (
            {"authorization": f"Bearer {KEY}", "anthropic-version": "2023-06-01"},
            401,
            "authentication_error",
            "required",
        ),
    ],
)
def test_headers_are_checked_with_the_error_shape(anthropic_server, headers, code, kind, says) -> None:
    body = {"model": "claude-sonnet-4-5", "max_tokens": 8, "messages": [{"role": "user", "content": "hi"}]}
    status, _, reply = post(messages_url(anthropic_server), body, {**headers, "content-type": "application/json"})
    assert status == code
    assert reply["type"] == "error" and reply["error"]["type"] == kind and says in reply["error"]["message"]


@pytest.mark.parametrize(
    ("change", "says"),
    [
        ({"max_tokens": None}, "max_tokens: Field required"),
        ({"messages": []}, "at least one message"),
        ({"messages": [{"role": "system", "content": "be terse"}]}, "top-level system parameter"),
        ({"model": None}, "model: Field required"),
        ({"anthropic_version": "bedrock-2023-05-31"}, "anthropic_version: Extra inputs are not permitted"),
    ],
)
def test_invalid_bodies_are_400_invalid_request_error(anthropic_server, change, says) -> None:
    body = {"model": "claude-sonnet-4-5", "max_tokens": 8, "messages": [{"role": "user", "content": "hi"}], **change}
    body = {k: v for k, v in body.items() if v is not None}
    code, _, reply = post(messages_url(anthropic_server), body)
    assert code == 400 and reply["error"]["type"] == "invalid_request_error" and says in reply["error"]["message"]


def test_an_unknown_route_is_404_not_found_error(anthropic_server) -> None:
    """What an OpenAI client posting to this host gets: the issue's "answers 404 to every call"."""
    body = {"model": "claude-sonnet-4-5", "messages": [{"role": "user", "content": "hi"}]}
    code, _, reply = post(anthropic_server.url + "/v1/chat/completions", body, {"authorization": f"Bearer {KEY}"})
    assert code == 404 and reply == {"type": "error", "error": {"type": "not_found_error", "message": "Not Found"}}


def test_golden_tool_use_round_trip(anthropic_server) -> None:
    """The tool use guide's loop: tools in, a tool_use block out with stop_reason tool_use, the
    tool_result in the next user turn, the final answer; a tool_use left unanswered is a 400."""
    weather = {"name": "get_weather", "description": "Get the weather", "input_schema": {"type": "object"}}

    def responder(body: dict[str, Any]) -> str | dict[str, Any]:
        done = tool_results(body)
        return f"It is {done[0]}." if done else tool_use(("get_weather", {"location": "Paris"}), text="Let me look.")

    anthropic_server.responder = responder
    first = {"model": "claude-sonnet-4-5", "max_tokens": 100, "tools": [weather],
             "messages": [{"role": "user", "content": "Weather in Paris?"}]}  # fmt: skip
    code, _, reply = post(messages_url(anthropic_server), first)
    assert code == 200 and reply["stop_reason"] == "tool_use"
    text, call = reply["content"]
    assert text == {"type": "text", "text": "Let me look."}
    assert call == {"type": "tool_use", "id": "toolu_00", "name": "get_weather", "input": {"location": "Paris"}}

    answer = {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_00", "content": "sunny"}]}
    second = {**first, "messages": [*first["messages"], {"role": "assistant", "content": reply["content"]}, answer]}
    code, _, reply = post(messages_url(anthropic_server), second)
    assert code == 200 and reply["stop_reason"] == "end_turn" and reply["content"][0]["text"] == "It is sunny."

    unanswered = {**first, "messages": [*second["messages"][:2], {"role": "user", "content": "well?"}]}
    code, _, reply = post(messages_url(anthropic_server), unanswered)
    assert code == 400 and "`tool_use` ids were found without `tool_result` blocks" in reply["error"]["message"]
    stray = {**first, "messages": [{"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_99"}]}]}
    code, _, reply = post(messages_url(anthropic_server), stray)
    assert code == 400 and "unexpected `tool_use_id`" in reply["error"]["message"]


def test_prompt_caching_usage(anthropic_server) -> None:
    """A cache_control breakpoint writes the prefix the first time and reads it after: usage says
    which, and input_tokens counts only what follows the breakpoint."""
    system = [
        {
            "type": "text",
            "text": "You grade answers by the rubric below strictly",
            "cache_control": {"type": "ephemeral"},
        }
    ]
    body = {"model": "claude-sonnet-4-5", "max_tokens": 50, "system": system,
            "messages": [{"role": "user", "content": "two words"}]}  # fmt: skip
    _, _, first = post(messages_url(anthropic_server), body)
    _, _, second = post(messages_url(anthropic_server), body)
    assert first["usage"] == {
        "input_tokens": 2,
        "cache_creation_input_tokens": 8,
        "cache_read_input_tokens": 0,
        "output_tokens": 2,
    }
    assert second["usage"] == {
        "input_tokens": 2,
        "cache_creation_input_tokens": 0,
        "cache_read_input_tokens": 8,
        "output_tokens": 2,
    }

    short = AnthropicServer(min_cache_tokens=1024).start()  # the API's minimum: a short prefix is not cached
    try:
        _, _, reply = post(messages_url(short), body)
        assert reply["usage"]["cache_creation_input_tokens"] == 0 and reply["usage"]["input_tokens"] == 10
    finally:
        short.stop()


def test_stop_reasons(anthropic_server) -> None:
    body = {"model": "claude-sonnet-4-5", "messages": [{"role": "user", "content": "one two three four five"}]}
    _, _, reply = post(messages_url(anthropic_server), {**body, "max_tokens": 2})
    assert (reply["stop_reason"], reply["content"], reply["usage"]["output_tokens"]) == (
        "max_tokens",
        [{"type": "text", "text": "one two"}],
        2,
    )
    _, _, reply = post(messages_url(anthropic_server), {**body, "max_tokens": 50, "stop_sequences": ["three"]})
    assert (reply["stop_reason"], reply["stop_sequence"]) == ("stop_sequence", "three")
    assert reply["content"][0]["text"] == "one two "
    anthropic_server.responder = lambda body: {"content": [], "stop_reason": "refusal"}
    _, _, reply = post(messages_url(anthropic_server), {**body, "max_tokens": 50})
    assert (reply["stop_reason"], reply["content"]) == ("refusal", [])


def test_bedrock_invoke_model_route(anthropic_server) -> None:
    """InvokeModel: the model in the path, anthropic_version in the body, a bearer API key; AWS's
    error shape for a bad key or body."""
    url = anthropic_server.bedrock_url("anthropic.claude-sonnet-4-5-20250929-v1:0")
    body = {
        "anthropic_version": "bedrock-2023-05-31",
        "max_tokens": 20,
        "messages": [{"role": "user", "content": "hi there"}],
    }
    bearer = {"authorization": f"Bearer {anthropic_server.bedrock_token}", "content-type": "application/json"}
    code, _, reply = post(url, body, bearer)
    assert code == 200 and reply["model"] == "anthropic.claude-sonnet-4-5-20250929-v1:0"
    assert reply["content"] == [{"type": "text", "text": "hi there"}] and reply["type"] == "message"

    code, headers, reply = post(url, body, {"x-api-key": KEY, "content-type": "application/json"})
    assert code == 403 and headers["x-amzn-errortype"] == "UnrecognizedClientException" and "message" in reply
    code, headers, reply = post(url, {**body, "model": "claude-sonnet-4-5"}, bearer)
    assert code == 400 and headers["x-amzn-errortype"] == "ValidationException"
    assert reply["message"].startswith("Malformed input request: model: Extra inputs are not permitted")
    code, _, reply = post(url, {**body, "anthropic_version": "vertex-2023-10-16"}, bearer)
    assert code == 400 and "bedrock-2023-05-31" in reply["message"]


def test_vertex_raw_predict_route(anthropic_server) -> None:
    url = anthropic_server.vertex_url("claude-sonnet-4-5@20250929", project="my-project", region="us-east5")
    assert url.endswith(
        "/v1/projects/my-project/locations/us-east5/publishers/anthropic/models/claude-sonnet-4-5@20250929:rawPredict"
    )
    body = {"anthropic_version": "vertex-2023-10-16", "max_tokens": 20, "messages": [{"role": "user", "content": "hi"}]}
    bearer = {"authorization": f"Bearer {anthropic_server.vertex_token}", "content-type": "application/json"}
    code, _, reply = post(url, body, bearer)
    assert code == 200 and reply["model"] == "claude-sonnet-4-5@20250929" and reply["content"][0]["text"] == "hi"
    code, _, reply = post(url, body, {"authorization": "Bearer expired", "content-type": "application/json"})
    assert code == 401 and reply["error"]["status"] == "UNAUTHENTICATED"
    code, _, reply = post(url, {**body, "anthropic_version": "2023-06-01"}, bearer)
    assert code == 400 and reply["error"]["type"] == "invalid_request_error"
    assert [h.get("Authorization") for h in anthropic_server.headers] == [
        f"Bearer {anthropic_server.vertex_token}", "Bearer expired", f"Bearer {anthropic_server.vertex_token}"
    ]  # fmt: skip


def test_faults(anthropic_server) -> None:
    """529 overloaded and 429 rate limit in Anthropic's shape with retry-after, a reset, a
    complete reply with cut JSON, and a reply cut short of its Content-Length."""
    body = {"model": "claude-sonnet-4-5", "max_tokens": 20, "messages": [{"role": "user", "content": "q"}]}
    anthropic_server.script(
        "q", overloaded(retry_after="3"), rate_limited(retry_after="2"), reset(), malformed(), truncated()
    )
    code, headers, reply = post(messages_url(anthropic_server), body)
    assert (code, headers["retry-after"], reply["error"]["type"]) == (529, "3", "overloaded_error")
    code, headers, reply = post(messages_url(anthropic_server), body)
    assert (code, headers["retry-after"], reply["error"]["type"]) == (429, "2", "rate_limit_error")
    with pytest.raises(ConnectionError):
        post(messages_url(anthropic_server), body)
    code, _, reply = post(messages_url(anthropic_server), body)
    assert code == 200 and isinstance(reply, str)  # not JSON
    with pytest.raises(http.client.IncompleteRead):
        post(messages_url(anthropic_server), body)
    code, _, reply = post(messages_url(anthropic_server), body)
    assert code == 200 and reply["content"][0]["text"] == "q"  # the script is spent
