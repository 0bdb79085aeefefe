"""A local Anthropic Messages server for tests: the Messages API and the same body on Amazon
Bedrock (InvokeModel) and Google Vertex AI (rawPredict), on one port.

Built from the public references (read 2026-12-04; the pages, not an SDK, are what it follows):

- Messages API, https://docs.anthropic.com/en/api/messages — ``POST /v1/messages`` with the
  ``x-api-key`` and ``anthropic-version`` headers; ``model``, ``max_tokens`` (required),
  ``messages`` of ``user``/``assistant`` turns whose content is a string or content blocks, a
  top-level ``system`` (string or text blocks), ``temperature``, ``top_p``, ``stop_sequences``,
  ``tools``; the reply ``{id, type: "message", role, model, content, stop_reason, stop_sequence,
  usage}``.
- Errors, https://docs.anthropic.com/en/api/errors — ``{"type": "error", "error": {"type",
  "message"}}``: 400 invalid_request_error, 401 authentication_error, 403 permission_error, 404
  not_found_error, 413 request_too_large, 429 rate_limit_error (with ``retry-after``), 500
  api_error, 529 overloaded_error; a ``request-id`` header on every reply.
- Tool use, https://docs.anthropic.com/en/docs/build-with-claude/tool-use/overview — tools as
  ``{name, description, input_schema}``, ``tool_use`` blocks ``{id, name, input}`` with
  ``stop_reason: "tool_use"``, answered by ``tool_result`` blocks ``{tool_use_id, content,
  is_error}`` in the next user turn (every ``tool_use`` answered, none unknown: 400 otherwise).
- Prompt caching, https://docs.anthropic.com/en/docs/build-with-claude/prompt-caching — a
  ``cache_control: {"type": "ephemeral"}`` breakpoint caches the prefix (tools, then system,
  then messages) up to it when at least the model's minimum is that long; usage then reports
  ``cache_creation_input_tokens`` (written now) or ``cache_read_input_tokens`` (read), and
  ``input_tokens`` counts only what follows the last breakpoint.
- Stop reasons, https://docs.anthropic.com/en/api/handling-stop-reasons — ``end_turn``,
  ``max_tokens``, ``stop_sequence``, ``tool_use``, ``refusal``.
- Bedrock, https://docs.aws.amazon.com/bedrock/latest/userguide/model-parameters-anthropic-claude-messages.html
  and https://docs.anthropic.com/en/api/claude-on-amazon-bedrock — ``POST /model/{modelId}/invoke``,
  the Messages body without ``model`` and with ``anthropic_version: "bedrock-2023-05-31"``, a
  Bedrock API key as ``Authorization: Bearer``; AWS errors are ``{"message"}`` with an
  ``x-amzn-ErrorType`` header (400 ValidationException, 403 on a bad key).
- Vertex AI, https://docs.anthropic.com/en/api/claude-on-vertex-ai and
  https://cloud.google.com/vertex-ai/generative-ai/docs/partner-models/claude/use-claude —
  ``POST /v1/projects/{project}/locations/{region}/publishers/anthropic/models/{model}:rawPredict``,
  the body without ``model`` and with ``anthropic_version: "vertex-2023-10-16"``, an access token
  as ``Authorization: Bearer``; a bad token is Google's 401 ``{"error": {"code", "message",
  "status": "UNAUTHENTICATED"}}``.

Tokens are counted as whitespace-separated words, as the OpenAI fake counts them. Tests script
faults per request like ``fakes.openai_server``'s (for the next requests whose last user text is
``key``, or any with ``key=None``): ``status(500)``, ``overloaded(retry_after="1")`` (529),
``rate_limited(retry_after="2")`` (429), ``reset()``, ``hang(30)``, ``malformed()`` (a complete
reply whose JSON is cut) and ``truncated()`` (a reply cut mid-body: fewer bytes than its
Content-Length). The responder (the scripted behaviour hook) gets the request body and returns
the answer's text, or a message dict (``tool_use(("name", {args}))``, or any ``content`` and
``stop_reason``, e.g. ``refusal``). Every request's path, headers and body are recorded, so a
test can assert where a key was sent."""

from __future__ import annotations

import asyncio
import itertools
import json
import re
from collections.abc import Callable
from typing import Any

from fakes.model_server import Fault, ModelServer, Refusal, hang, malformed, reset, truncated
from fakes.openai_server import OpenAIServer

try:
    import pytest
except ImportError:  # run without pytest
    pytest = None  # type: ignore[assignment]

__all__ = ["AnthropicServer", "hang", "malformed", "overloaded", "rate_limited", "reset", "status", "truncated"]

API_VERSION = "2023-06-01"
BEDROCK_VERSION = "bedrock-2023-05-31"
VERTEX_VERSION = "vertex-2023-10-16"
ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    405: "invalid_request_error",
    413: "request_too_large",
    429: "rate_limit_error",
    500: "api_error",
    529: "overloaded_error",
}
_BEDROCK = re.compile(r"^/model/([^/]+)/invoke$")
_VERTEX = re.compile(r"^/v1/projects/([^/]+)/locations/([^/]+)/publishers/anthropic/models/([^/:]+):rawPredict$")


def error_body(code: int, message: str, kind: str | None = None) -> str:
    """Anthropic's error shape."""
    return json.dumps(
        {"type": "error", "error": {"type": kind or ERROR_TYPES.get(code, "api_error"), "message": message}}
    )


def status(code: int, retry_after: str | None = None, message: str | None = None) -> Fault:
    headers = {"retry-after": retry_after} if retry_after is not None else {}
    return Fault("status", status=code, headers=headers, body=error_body(code, message or f"injected {code}"))


def overloaded(retry_after: str | None = None) -> Fault:
    return status(529, retry_after, "Overloaded")


def rate_limited(retry_after: str | None = "1") -> Fault:
    return status(429, retry_after, "Number of request tokens has exceeded your per-minute rate limit")


def tool_use(*calls: tuple[str, dict[str, Any]], text: str | None = None) -> dict[str, Any]:
    """An assistant message asking for these ``(tool, input)`` calls (after ``text``, if any)."""
    blocks: list[dict[str, Any]] = [{"type": "text", "text": text}] if text else []
    blocks += [
        {"type": "tool_use", "id": f"toolu_{i:02d}", "name": n, "input": args} for i, (n, args) in enumerate(calls)
    ]
    return {"content": blocks, "stop_reason": "tool_use"}


def tool_results(body: dict[str, Any]) -> list[str]:
    """The ``tool_result`` contents the client sent back so far, in order: what a responder reads."""
    found = []
    for message in body.get("messages") or []:
        for block in _blocks(message.get("content")):
            if block.get("type") == "tool_result":
                found.append(_text(block.get("content")))
    return found


def last_user_text(body: dict[str, Any]) -> str:
    """The text of the last user turn (tool results left out): the fault key and the default answer."""
    for message in reversed(body.get("messages") or []):
        if isinstance(message, dict) and message.get("role") == "user":
            text = "".join(b.get("text", "") for b in _blocks(message.get("content")) if b.get("type") == "text")
            if text:
                return text
    return ""


def words(value: Any) -> int:
    return len(_text(value).split())


def _blocks(content: Any) -> list[dict[str, Any]]:
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    return [b for b in content or [] if isinstance(b, dict)] if isinstance(content, list) else []


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    parts = []
    for block in _blocks(content):
        if block.get("type") == "tool_use":
            parts.append(json.dumps(block.get("input")))
        else:
            parts.append(_text(block.get("content")) if block.get("type") == "tool_result" else block.get("text", ""))
    return " ".join(parts)


class Invalid(Exception):
    """A request the API refuses: the status and the message it says."""

    def __init__(self, code: int, message: str):
        super().__init__(message)
        self.code = code
        self.message = message


Responder = Callable[[dict[str, Any]], "str | dict[str, Any]"]


class AnthropicServer(OpenAIServer):
    """The HTTP plumbing, fault scripting and recording of every format's fake
    (``fakes.model_server``), speaking Anthropic's formats (an ``OpenAIServer`` still, so that a
    server built on it can answer Chat Completions on the same port too). ``api_key`` is what ``x-api-key`` must
    be; ``bedrock_token`` and ``vertex_token`` what the ``Authorization: Bearer`` of those routes
    must be; ``min_cache_tokens`` the shortest prefix a breakpoint caches (the API's minimum for
    most models is 1024)."""

    def __init__(
        self,
        responder: Responder | None = None,
        *,
        api_key: str = "sk-ant-api03-test-0123456789",
        bedrock_token: str = "bedrock-api-key-test-0123456789",
        vertex_token: str = "ya29.vertex-token-test-0123456789",
        min_cache_tokens: int = 1024,
        latency: float = 0.0,
        port: int = 0,
    ):
        super().__init__(latency=latency, responder=responder or last_user_text, port=port)
        self.api_key = api_key
        self.bedrock_token = bedrock_token
        self.vertex_token = vertex_token
        self.min_cache_tokens = min_cache_tokens
        self.cached_prefixes: set[str] = set()
        self._ids = itertools.count(1)

    malformed_body = '{"id": "msg_fake", "type": "message", "content": [{"type": "text", "te'
    url = ModelServer.url  # the host root, as Anthropic's SDKs take a base URL (/v1/messages appended)

    def bedrock_url(self, model: str = "anthropic.claude-sonnet-4-5-20250929-v1:0") -> str:
        return f"{self.url}/model/{model}/invoke"

    def vertex_url(
        self, model: str = "claude-sonnet-4-5@20250929", project: str = "p", region: str = "us-east5"
    ) -> str:
        return f"{self.url}/v1/projects/{project}/locations/{region}/publishers/anthropic/models/{model}:rawPredict"

    # ------------------------------------------------------------------------------- the API

    def message(self, body: dict[str, Any], model: str) -> dict[str, Any]:
        """The reply to a valid request: the responder's answer, cut at a stop sequence or at
        ``max_tokens``, with usage (prompt caching included)."""
        reply = self.responder(body)
        answer = reply if isinstance(reply, dict) else {"content": [{"type": "text", "text": reply}]}
        content = [dict(block) for block in _blocks(answer.get("content"))]
        stop_reason = answer.get("stop_reason") or "end_turn"
        stop_sequence = None
        for block in content:
            if block.get("type") != "text":
                continue
            for sequence in body.get("stop_sequences") or []:
                if sequence in block["text"]:
                    block["text"] = block["text"].split(sequence, 1)[0]
                    stop_reason, stop_sequence = "stop_sequence", sequence
        out = sum(words([block]) for block in content if block.get("type") in ("text", "tool_use"))
        if out > body["max_tokens"]:  # the answer as far as max_tokens reached: text only
            text = " ".join(_text(content).split()[: body["max_tokens"]])
            content, stop_reason, stop_sequence, out = (
                [{"type": "text", "text": text}],
                "max_tokens",
                None,
                body["max_tokens"],
            )
        usage = {**self.cache_usage(body), "output_tokens": out}
        return {
            "id": f"msg_fake{next(self._ids):06d}",
            "type": "message",
            "role": "assistant",
            "model": model,
            "content": content,
            "stop_reason": stop_reason,
            "stop_sequence": stop_sequence,
            "usage": usage,
        }

    def cache_usage(self, body: dict[str, Any]) -> dict[str, int]:
        """Input tokens as prompt caching reports them: the prefix up to the last
        ``cache_control`` breakpoint read from the cache when seen before, else written to it
        (when long enough to cache); what follows the breakpoint in ``input_tokens``."""
        parts: list[tuple[Any, bool]] = [(tool, "cache_control" in tool) for tool in body.get("tools") or []]
        system = body.get("system")
        parts += [(b, "cache_control" in b) for b in _blocks(system)] if isinstance(system, list) else [(system, False)]
        for message in body.get("messages") or []:
            content = message.get("content")
            parts += (
                [(b, "cache_control" in b) for b in _blocks(content)]
                if isinstance(content, list)
                else [(content, False)]
            )
        counts = [
            words(json.dumps(p))
            if isinstance(p, dict) and "input_schema" in p
            else words([p] if isinstance(p, dict) else p)
            for p, _ in parts
        ]
        last = max((i for i, (_, marked) in enumerate(parts) if marked), default=-1)
        prefix_tokens = sum(counts[: last + 1])
        usage = {"input_tokens": sum(counts), "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}
        if last < 0 or prefix_tokens < self.min_cache_tokens:
            return usage
        key = json.dumps([p for p, _ in parts[: last + 1]], sort_keys=True)
        with self._lock:
            seen = key in self.cached_prefixes
            self.cached_prefixes.add(key)
        usage["input_tokens"] -= prefix_tokens
        usage["cache_read_input_tokens" if seen else "cache_creation_input_tokens"] = prefix_tokens
        return usage

    def check(self, body: Any, platform: str) -> None:
        """What the Messages API refuses in a body (400), in its words."""
        if not isinstance(body, dict):
            raise Invalid(400, "request body must be a JSON object")
        if platform == "anthropic":
            if "anthropic_version" in body:
                raise Invalid(400, "anthropic_version: Extra inputs are not permitted")
            if not isinstance(body.get("model"), str):
                raise Invalid(400, "model: Field required")
        else:
            want = BEDROCK_VERSION if platform == "bedrock" else VERTEX_VERSION
            if "model" in body:
                raise Invalid(400, "model: Extra inputs are not permitted (the model is in the URL)")
            if body.get("anthropic_version") != want:
                raise Invalid(400, f"anthropic_version: must be {want!r} on {platform}")
        tokens = body.get("max_tokens")
        if not isinstance(tokens, int) or isinstance(tokens, bool) or tokens < 1:
            raise Invalid(400, "max_tokens: Field required (an integer of at least 1)")
        messages = body.get("messages")
        if not isinstance(messages, list) or not messages:
            raise Invalid(400, "messages: at least one message is required")
        asked: set[str] = set()  # tool_use ids of the previous assistant turn, to be answered now
        for i, message in enumerate(messages):
            role = message.get("role") if isinstance(message, dict) else None
            if role not in ("user", "assistant"):
                raise Invalid(
                    400,
                    f'messages.{i}.role: Input should be "user" or "assistant" (a system prompt is the top-level '
                    "system parameter, not a message)",
                )
            blocks = _blocks(message.get("content"))
            answered = {b.get("tool_use_id") for b in blocks if b.get("type") == "tool_result"}
            if role == "user" and answered - asked:
                raise Invalid(
                    400,
                    f"messages.{i}.content: unexpected `tool_use_id` found in `tool_result` blocks: "
                    f"{', '.join(sorted(map(str, answered - asked)))}. Each `tool_result` block must have a "
                    "corresponding `tool_use` block in the previous message.",
                )
            if asked - answered:
                raise Invalid(
                    400,
                    f"messages.{i - 1}: `tool_use` ids were found without `tool_result` blocks immediately after: "
                    f"{', '.join(sorted(asked - answered))}. Each `tool_use` block must have a corresponding "
                    "`tool_result` block in the next message.",
                )
            asked = {str(b.get("id")) for b in blocks if b.get("type") == "tool_use"} if role == "assistant" else set()
        if asked:
            raise Invalid(400, "the last message holds `tool_use` blocks: answer them with `tool_result` blocks first")

    # ---------------------------------------------------------------------------------- HTTP

    def route(self, method: str, path: str, headers: dict[str, str]) -> tuple[str, str] | Refusal:
        """(platform, model) for a request this server serves, or the error reply its platform
        gives for a wrong route or credential."""
        bearer = headers.get("Authorization", "")
        if m := _BEDROCK.match(path):
            if bearer != f"Bearer {self.bedrock_token}":
                aws = {"x-amzn-ErrorType": "UnrecognizedClientException"}
                refused = {"message": "Authentication failed: the Bedrock API key is not valid"}
                return Refusal(403, json.dumps(refused), aws)
            return "bedrock", m.group(1)
        if m := _VERTEX.match(path):
            if bearer != f"Bearer {self.vertex_token}":
                google = {
                    "code": 401,
                    "message": "Request had invalid authentication credentials.",
                    "status": "UNAUTHENTICATED",
                }
                return Refusal(401, json.dumps({"error": google}))
            return "vertex", m.group(3)
        if path != "/v1/messages":
            return Refusal(404, error_body(404, "Not Found"))
        if method != "POST":
            return Refusal(405, error_body(405, f"Method Not Allowed: {method} /v1/messages"))
        key = headers.get("X-Api-Key")
        if not key:
            return Refusal(401, error_body(401, "x-api-key header is required"))
        if key != self.api_key:
            return Refusal(401, error_body(401, "invalid x-api-key"))
        version = headers.get("Anthropic-Version")
        if not version:
            return Refusal(400, error_body(400, "anthropic-version: header is required"))
        if not re.fullmatch(r"\d{4}-\d{2}-\d{2}", version):
            return Refusal(400, error_body(400, f"anthropic-version: invalid version {version!r}"))
        return "anthropic", ""

    def admit(self, method: str, path: str, headers: dict[str, str], body: Any) -> tuple[str, str] | Refusal:
        """(platform, model) of a request the route and the body's checks let through."""
        routed = self.route(method, path, headers)
        if isinstance(routed, Refusal):  # refused before the body is read for its meaning
            return routed
        try:
            self.check(body, routed[0])
        except Invalid as exc:
            if routed[0] == "bedrock":
                message = f"Malformed input request: {exc.message}, please reformat your input and try again."
                return Refusal(400, json.dumps({"message": message}), {"x-amzn-ErrorType": "ValidationException"})
            return Refusal(exc.code, error_body(exc.code, exc.message))
        return routed

    def key_of(self, body: dict[str, Any]) -> str:
        return last_user_text(body)

    def reply_for(self, body: dict[str, Any], admitted: Any) -> dict[str, Any]:
        return self.message(body, admitted[1] or body["model"])

    def _reply(
        self, writer: asyncio.StreamWriter, code: int, payload: str, headers: dict[str, str] | None = None
    ) -> None:
        self._send(writer, code, payload, {"request-id": f"req_fake{next(self._ids):06d}", **(headers or {})})


if pytest is not None:

    @pytest.fixture
    def anthropic_server():
        """A running server (caching from 4 tokens, so short test prompts cache); tests script
        faults on it and read what it saw."""
        with AnthropicServer(min_cache_tokens=4) as server:
            yield server
