"""Anthropic **Messages** (docs/spec.md#model-targets), the ``anthropic`` target's format, on three
platforms that take the same body (the pages the fake in tests/fakes/anthropic_server.py names):

- ``anthropic``: ``POST <base_url>/v1/messages``, the key as ``x-api-key`` (never
  ``Authorization``) with ``anthropic-version: 2023-06-01``, ``model`` in the body;
- ``bedrock``: InvokeModel, ``POST <base_url>/model/<model>/invoke``, ``anthropic_version:
  bedrock-2023-05-31`` in the body and no ``model``, a Bedrock API key as ``Authorization: Bearer``;
- ``vertex``: ``POST <base_url>/v1/projects/<project>/locations/<region>/publishers/anthropic/
  models/<model>:rawPredict``, ``anthropic_version: vertex-2023-10-16``, no ``model``, an access
  token as ``Authorization: Bearer``.

The system prompt is the top-level ``system``; tools are ``{name, description, input_schema}``;
the reply's ``content`` blocks hold text and ``tool_use`` calls, answered by ``tool_result`` blocks
in the next user turn; ``max_tokens`` is required. With ``cache_prompt`` the end of the static
prefix (tools, then system) is a ``cache_control`` breakpoint, so the cases after the first read
it from the prompt cache; usage reports ``input_tokens`` after the breakpoint beside
``cache_read_input_tokens`` and ``cache_creation_input_tokens``."""

from __future__ import annotations

import json
import urllib.parse
from typing import Any

from evals.common import jsonsafe
from evals.run.connections import Reply
from evals.run.targets.base import excerpt
from evals.run.targets.formats import Call, Turn, Usage, WireFormat
from evals.run.targets.tools import Tool
from evals.suite.targets import AnthropicParams

API_VERSION = "2023-06-01"
BODY_VERSION = {"bedrock": "bedrock-2023-05-31", "vertex": "vertex-2023-10-16"}
BREAKPOINT = {"type": "ephemeral"}
# stop_reason in the words evalgate records finish_reason in (OpenAI's): a cut answer is "length",
# a refusal "content_filter", so a report reads the same whatever the format.
FINISH = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "max_tokens": "length",
    "model_context_window_exceeded": "length",
    "tool_use": "tool_calls",
    "refusal": "content_filter",
}


class AnthropicMessages(WireFormat):
    kind = "anthropic"

    def __init__(self, params: AnthropicParams, tools: dict[str, Tool], system_prompt: str | None):
        self.p = params
        root = params.root
        model = urllib.parse.quote(params.model_name, safe=":@")  # an inference-profile ARN holds '/'
        if params.platform == "bedrock":
            self.name = "anthropic messages (bedrock invokemodel)"
            self.url = f"{root}/model/{model}/invoke"
        elif params.platform == "vertex":
            self.name = "anthropic messages (vertex rawpredict)"
            project, region = (urllib.parse.quote(v or "", safe="") for v in (params.project, params.region))
            self.url = f"{root}/v1/projects/{project}/locations/{region}/publishers/anthropic/models/{model}:rawPredict"
        else:
            self.name = "anthropic messages"
            self.url = f"{root}/v1/messages"
        native = params.platform == "anthropic"
        self.key_header = "x-api-key" if native else "Authorization"
        self.fixed_headers = {"anthropic-version": API_VERSION} if native else {}
        # What every request starts with, built once: the model (or the platform's version), then
        # the parameters, the static prefix (tools, system) with its cache breakpoint.
        head: dict[str, Any] = (
            {"model": params.model_name} if native else {"anthropic_version": BODY_VERSION[params.platform]}
        )
        head["max_tokens"] = params.max_tokens
        head.update(self._sampling())
        listed = [_tool(tool) for tool in tools.values()]
        if system_prompt is not None:
            system: dict[str, Any] = {"type": "text", "text": system_prompt}
            if params.cache_prompt:
                system["cache_control"] = BREAKPOINT
            head["system"] = [system]
        elif listed and params.cache_prompt:
            listed[-1]["cache_control"] = BREAKPOINT
        if listed:
            head["tools"] = listed
        self.head = head
        self.system_prompt = system_prompt

    def key_value(self, key: str) -> str:
        return key if self.key_header == "x-api-key" else f"Bearer {key}"

    def _sampling(self) -> dict[str, Any]:
        p = self.p
        pairs = (("temperature", p.temperature), ("top_p", p.top_p), ("stop_sequences", p.stop_sequences))
        return {k: v for k, v in pairs if v is not None}

    def prompt(self, static: str, rest: str) -> list[Any]:
        """The static part its own text block, marked as a cache breakpoint: Anthropic caches only a
        prefix that ends at one."""
        first: dict[str, Any] = {"type": "text", "text": static}
        if self.p.cache_prompt:
            first["cache_control"] = BREAKPOINT
        return [{"role": "user", "content": [first, {"type": "text", "text": rest}]}]

    def events(self, messages: list[Any]) -> list[dict[str, Any]]:
        events = []
        if self.system_prompt is not None:
            events.append({"kind": "message", "name": "system", "content": self.system_prompt})
        for message in messages:
            if not isinstance(message, dict):
                continue
            text = "\n".join(_block_text(block) for block in _blocks(message.get("content")))
            if text:
                events.append({"kind": "message", "name": message.get("role") or "user", "content": text})
        return events

    def body(self, messages: list[Any]) -> dict[str, Any]:
        return {**self.head, "messages": messages}

    def parse(self, reply: Reply) -> dict[str, Any]:
        data = jsonsafe.loads(reply.body)
        content = data["content"]
        if data.get("type", "message") != "message" or not _valid_blocks(content):
            raise TypeError
        usage = data.get("usage") or {}
        return {
            "content": content,
            "stop_reason": data.get("stop_reason"),
            "usage": usage if isinstance(usage, dict) else {},
        }

    def is_stored(self, data: Any) -> bool:
        return isinstance(data, dict) and _valid_blocks(data.get("content")) and isinstance(data.get("usage"), dict)

    def turn(self, data: dict[str, Any], usage: Usage) -> Turn:
        content = data["content"]
        text = "".join(b.get("text", "") for b in content if b.get("type") == "text")
        counts = data["usage"]
        read, write = counts.get("cache_read_input_tokens") or 0, counts.get("cache_creation_input_tokens") or 0
        fresh = counts.get("input_tokens")
        # input_tokens counts only what follows the last cache breakpoint: every input token is all three.
        whole = (
            fresh + read + write
            if all(isinstance(v, int) and not isinstance(v, bool) for v in (fresh, read, write))
            else None
        )
        usage.add(whole, counts.get("output_tokens"), answered=bool(text.strip()), read=read, write=write)
        calls = [Call(b.get("id"), b["name"], b.get("input"), raw=b) for b in content if b.get("type") == "tool_use"]
        reason = data.get("stop_reason")
        return Turn(text, calls, content, reason, FINISH.get(reason, reason) if isinstance(reason, str) else None)

    def answer(self, messages: list[Any], turn: Turn, results: list[tuple[Call, bool, str]]) -> None:
        messages.append({"role": "assistant", "content": turn.message})
        blocks = []
        for call, ok, text in results:
            block: dict[str, Any] = {"type": "tool_result", "tool_use_id": call.id, "content": text}
            if not ok:
                block["is_error"] = True
            blocks.append(block)
        messages.append({"role": "user", "content": blocks})

    def params(self) -> dict[str, Any]:
        p = self.p
        recorded: dict[str, Any] = {"base_url": p.root, "platform": p.platform}
        recorded.update({k: v for k, v in (("region", p.region), ("project", p.project)) if v is not None})
        recorded["max_tokens"] = p.max_tokens
        recorded.update(self._sampling())
        if not p.cache_prompt:
            recorded["cache_prompt"] = False
        return recorded

    def error(self, reply: Reply, limit: int) -> str:
        """Anthropic's ``{"type": "error", "error": {"type", "message"}}``, AWS's ``{"message"}``
        with its ``x-amzn-ErrorType`` header, or Google's ``{"error": {"status", "message"}}``: the
        error's type named, then its message."""
        kind, message = None, None
        try:
            data = jsonsafe.loads(reply.body)
        except ValueError:
            data = None
        if isinstance(data, dict):
            error = data.get("error")
            if isinstance(error, dict):
                kind, message = error.get("type") or error.get("status"), error.get("message")
            elif isinstance(data.get("message"), str):
                kind, message = (reply.header("x-amzn-errortype") or "").split(":", 1)[0] or None, data["message"]
        if not isinstance(message, str):
            return f"HTTP {reply.status}: {excerpt(reply.text, limit)}"
        return (
            f"HTTP {reply.status} {kind}: {excerpt(message, limit)}"
            if kind
            else f"HTTP {reply.status}: {excerpt(message, limit)}"
        )


def _valid_blocks(content: Any) -> bool:
    """Content blocks the loop can read: objects, a ``tool_use`` naming a tool with an input object."""
    return isinstance(content, list) and all(
        isinstance(block, dict)
        and (
            block.get("type") != "tool_use"
            or (isinstance(block.get("name"), str) and isinstance(block.get("input"), dict))
        )
        for block in content
    )


def _tool(tool: Tool) -> dict[str, Any]:
    entry: dict[str, Any] = {"name": tool.name}
    if tool.description:
        entry["description"] = tool.description
    entry["input_schema"] = tool.parameters
    return entry


def _blocks(content: Any) -> list[Any]:
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    return [b for b in content if isinstance(b, dict)] if isinstance(content, list) else []


def _block_text(block: dict[str, Any]) -> str:
    kind = block.get("type")
    if kind == "tool_use":
        return f"[tool call] {block.get('name')}({json.dumps(block.get('input'), ensure_ascii=False, default=str)})"
    if kind == "tool_result":
        inner = block.get("content")
        return "\n".join(_block_text(b) for b in _blocks(inner)) if inner is not None else ""
    text = block.get("text")
    return text if isinstance(text, str) else ""
