"""A local OpenAI Responses server for tests: ``POST /v1/responses``.

Built from the public reference (read 2026-12-04), https://platform.openai.com/docs/api-reference/responses
and the function-calling guide, https://platform.openai.com/docs/guides/function-calling, with the
shapes of the openai-python SDK's generated types (``types/responses``):

- The request: ``model``, ``input`` (a string, or input items: messages ``{role, content}``,
  ``function_call`` ``{call_id, name, arguments}``, ``function_call_output`` ``{call_id,
  output}``, ``reasoning``), ``instructions`` (the system prompt), ``tools`` (``{type:
  "function", name, description, parameters, strict}``; ``strict`` defaults to true, and a strict
  schema must say ``additionalProperties: false`` and require every property), ``temperature``,
  ``top_p``, ``max_output_tokens``, ``store`` (default true), ``include``. Chat Completions'
  ``messages`` and ``max_tokens`` are unknown parameters (400).
- The reply: ``{id, object: "response", status, model, output, usage, incomplete_details,
  error}``; ``output`` holds ``message`` items (``content`` of ``output_text`` parts) and
  ``function_call`` items ``{id, call_id, name, arguments, status}``; a reply cut at
  ``max_output_tokens`` is ``status: "incomplete"`` with ``incomplete_details.reason``; usage is
  ``{input_tokens, input_tokens_details: {cached_tokens}, output_tokens, output_tokens_details:
  {reasoning_tokens}, total_tokens}``.
- Stateless use: with ``store: false`` nothing is kept, so an item sent back by ``id`` alone is
  not found (404) — a ``reasoning`` item must carry its ``encrypted_content``, which a reply holds
  only when ``include`` asked for ``reasoning.encrypted_content``. Every ``function_call_output``
  answers a ``function_call`` earlier in the input (400 otherwise).
- Errors: ``{"error": {"message", "type", "param", "code"}}``.

Prompt caching: the ``instructions`` and ``tools`` of a request seen before (at least
``min_cache_tokens`` long) are reported as ``cached_tokens``. ``reasoning_tokens`` > 0 makes every
reply carry a ``reasoning`` item first and count those tokens. Tokens are whitespace-separated
words. Faults are scripted as on ``fakes.openai_server`` (keyed by the last user message's text),
``truncated()`` among them: a reply cut mid-body."""

from __future__ import annotations

import itertools
import json
from typing import Any

from fakes.model_server import Refusal, hang, malformed, reset, status, truncated
from fakes.openai_server import OpenAIServer

try:
    import pytest
except ImportError:  # run without pytest
    pytest = None  # type: ignore[assignment]

__all__ = [
    "ResponsesServer",
    "function_calls",
    "function_outputs",
    "hang",
    "malformed",
    "reset",
    "status",
    "truncated",
]

KNOWN = {
    "model",
    "input",
    "instructions",
    "tools",
    "tool_choice",
    "parallel_tool_calls",
    "temperature",
    "top_p",
    "max_output_tokens",
    "store",
    "include",
    "metadata",
    "previous_response_id",
    "reasoning",
    "text",
    "truncation",
    "user",
}


class Invalid(Exception):
    def __init__(self, code: int, message: str, param: str | None = None, kind: str = "invalid_request_error"):
        super().__init__(message)
        self.code, self.message, self.param, self.kind = code, message, param, kind

    def body(self) -> str:
        return json.dumps({"error": {"message": self.message, "type": self.kind, "param": self.param, "code": None}})


def function_calls(*calls: tuple[str, dict[str, Any]]) -> dict[str, Any]:
    """A reply asking for these ``(function, arguments)`` calls."""
    return {"calls": list(calls)}


def function_outputs(body: dict[str, Any]) -> list[str]:
    """The ``function_call_output`` outputs the client sent back so far, in order."""
    items = body.get("input")
    return (
        [i.get("output", "") for i in items if i.get("type") == "function_call_output"]
        if isinstance(items, list)
        else []
    )


def last_user_text(body: dict[str, Any]) -> str:
    items = body.get("input")
    if isinstance(items, str):
        return items
    for item in reversed(items if isinstance(items, list) else []):
        if isinstance(item, dict) and item.get("role") == "user":
            content = item.get("content")
            if isinstance(content, str):
                return content
            return "".join(p.get("text", "") for p in content or [] if isinstance(p, dict))
    return ""


def words(value: Any) -> int:
    return len((value if isinstance(value, str) else json.dumps(value)).split()) if value is not None else 0


class ResponsesServer(OpenAIServer):
    """The plumbing and fault scripting of every format's fake (``fakes.model_server``), speaking
    the Responses API under ``OpenAIServer``'s base URL; ``api_key`` is what ``Authorization:
    Bearer`` must carry (None: no key checked)."""

    malformed_body = '{"id": "resp_fake", "object": "response", "output": [{"type": "mess'

    def __init__(
        self, *, api_key: str | None = None, min_cache_tokens: int = 1024, latency: float = 0.0, port: int = 0
    ):
        super().__init__(latency=latency, responder=last_user_text, port=port)
        self.api_key = api_key
        self.min_cache_tokens = min_cache_tokens
        self.reasoning_tokens = 0
        self.prefixes: set[str] = set()
        self._ids = itertools.count(1)

    def check(self, body: Any) -> None:
        if not isinstance(body, dict):
            raise Invalid(400, "request body must be a JSON object")
        for key in body:
            if key not in KNOWN:
                raise Invalid(400, f"Unknown parameter: '{key}'.", key)
        if not isinstance(body.get("model"), str):
            raise Invalid(400, "Missing required parameter: 'model'.", "model")
        items = body.get("input")
        if not isinstance(items, str | list):
            raise Invalid(400, "Missing required parameter: 'input'.", "input")
        for i, tool in enumerate(body.get("tools") or []):
            if tool.get("type") != "function" or not isinstance(tool.get("name"), str):
                raise Invalid(400, f"Invalid value for 'tools[{i}]'.", f"tools[{i}]")
            schema = tool.get("parameters") or {}
            if tool.get("strict", True) is not False and (
                schema.get("additionalProperties") is not False
                or set(schema.get("required") or []) != set(schema.get("properties") or {})
            ):
                raise Invalid(
                    400,
                    f"Invalid schema for function '{tool['name']}': In context=(), 'additionalProperties' is required "
                    "to be supplied and to be false, and 'required' must list every property (strict mode).",
                    f"tools[{i}].parameters",
                )
        called: set[str] = set()
        for i, item in enumerate(items if isinstance(items, list) else []):
            if not isinstance(item, dict):
                raise Invalid(400, f"Invalid type for 'input[{i}]'.", f"input[{i}]")
            kind = item.get("type", "message")
            if kind == "function_call":
                called.add(str(item.get("call_id")))
            elif kind == "function_call_output" and str(item.get("call_id")) not in called:
                raise Invalid(
                    400, f"No tool call found for function call output with call_id {item.get('call_id')}.", "input"
                )
            elif kind == "reasoning" and body.get("store") is False and not item.get("encrypted_content"):
                raise Invalid(
                    404,
                    f"Item with id '{item.get('id')}' not found. Items are not persisted when `store` is set to false. "
                    "Try again with `store` set to true, or remove this item from your input.",
                    "input",
                )
            elif kind == "message" and item.get("role") not in ("user", "assistant", "system", "developer"):
                raise Invalid(400, f"Invalid value: '{item.get('role')}'.", f"input[{i}].role")

    def response(self, body: dict[str, Any]) -> dict[str, Any]:
        reply = self.responder(body)
        output: list[dict[str, Any]] = []
        if self.reasoning_tokens:
            reasoning: dict[str, Any] = {"type": "reasoning", "id": f"rs_fake{next(self._ids):06d}", "summary": []}
            if "reasoning.encrypted_content" in (body.get("include") or []):
                reasoning["encrypted_content"] = "gAAAAfake-encrypted"
            output.append(reasoning)
        text_out = 0
        if isinstance(reply, dict) and reply.get("calls"):
            for name, args in reply["calls"]:
                output.append(
                    {
                        "type": "function_call",
                        "id": f"fc_fake{next(self._ids):06d}",
                        "call_id": f"call_{next(self._ids):06d}",
                        "name": name,
                        "arguments": json.dumps(args),
                        "status": "completed",
                    }
                )
                text_out += words(args)
        status_, incomplete = "completed", None
        if not isinstance(reply, dict):
            text = str(reply)
            limit = body.get("max_output_tokens")
            if isinstance(limit, int) and words(text) > limit:
                text, status_, incomplete = (
                    " ".join(text.split()[:limit]),
                    "incomplete",
                    {"reason": "max_output_tokens"},
                )
            part = {"type": "output_text", "text": text, "annotations": []}
            output.append(
                {
                    "type": "message",
                    "id": f"msg_fake{next(self._ids):06d}",
                    "status": status_,
                    "role": "assistant",
                    "content": [part],
                }
            )
            text_out += words(text)
        prefix = [body.get("instructions"), body.get("tools")]
        prefix_tokens = words(body.get("instructions")) + words(body.get("tools"))
        key = json.dumps(prefix, sort_keys=True)
        with self._lock:
            seen = key in self.prefixes
            self.prefixes.add(key)
        cached = prefix_tokens if seen and prefix_tokens >= self.min_cache_tokens else 0
        items = body["input"]
        tokens_in = prefix_tokens + (words(items) if isinstance(items, str) else sum(words(i) for i in items))
        tokens_out = text_out + self.reasoning_tokens
        return {
            "id": f"resp_fake{next(self._ids):06d}",
            "object": "response",
            "status": status_,
            "model": body["model"],
            "output": output,
            "incomplete_details": incomplete,
            "error": None,
            "store": body.get("store", True),
            "usage": {
                "input_tokens": tokens_in,
                "input_tokens_details": {"cached_tokens": cached},
                "output_tokens": tokens_out,
                "output_tokens_details": {"reasoning_tokens": self.reasoning_tokens},
                "total_tokens": tokens_in + tokens_out,
            },
        }

    def admit(self, method: str, path: str, headers: dict[str, str], body: Any) -> Refusal | None:
        try:
            if path != "/v1/responses":
                raise Invalid(404, f"Invalid URL (POST {path})")
            if self.api_key is not None and headers.get("Authorization") != f"Bearer {self.api_key}":
                raise Invalid(401, "Incorrect API key provided.", kind="invalid_api_key")
            self.check(body)
        except Invalid as exc:
            return Refusal(exc.code, exc.body())
        return None

    def key_of(self, body: dict[str, Any]) -> str:
        return last_user_text(body)

    def reply_for(self, body: dict[str, Any], admitted: Any) -> dict[str, Any]:
        return self.response(body)


if pytest is not None:

    @pytest.fixture
    def responses_server():
        """A running server (caching from 4 tokens, so short test prompts cache)."""
        with ResponsesServer(min_cache_tokens=4) as server:
            yield server
