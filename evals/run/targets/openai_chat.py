"""OpenAI **Chat Completions** (docs/spec.md#model-targets), the ``openai`` target's format:
``POST <base_url>/chat/completions`` with the key as ``Authorization: Bearer``; ``messages`` with
the system prompt as the first, function ``tools``, ``tool_calls`` answered by ``tool`` messages;
usage from ``prompt_tokens`` / ``completion_tokens``, the prompt-cache hits from
``prompt_tokens_details.cached_tokens`` and reasoning from ``completion_tokens_details``
(https://platform.openai.com/docs/api-reference/chat)."""

from __future__ import annotations

from typing import Any

from evals.common import jsonsafe
from evals.run.connections import Reply
from evals.run.targets.formats import Call, Turn, Usage, WireFormat
from evals.run.targets.tools import Tool
from evals.suite.targets import OpenAIParams

SAMPLING = ("temperature", "seed", "max_tokens", "top_p")


class OpenAIChat(WireFormat):
    name = "openai chat completions"
    kind = "openai"
    key_header = "Authorization"

    def __init__(self, params: OpenAIParams, tools: dict[str, Tool], system_prompt: str | None):
        self.p = params
        self.preamble = ({"role": "system", "content": system_prompt},) if system_prompt is not None else ()
        self.url = params.base_url.rstrip("/") + "/chat/completions"
        self.fixed_headers: dict[str, str] = {}
        # Built once: the same for every request of the run.
        self.tools = [_tool(tool) for tool in tools.values()]
        self.sampling = {k: v for k in SAMPLING if (v := getattr(params, k)) is not None}

    def events(self, messages: list[Any]) -> list[dict[str, Any]]:
        return conversation_events(messages)

    def body(self, messages: list[Any]) -> dict[str, Any]:
        body: dict[str, Any] = {"model": self.p.model_name, "messages": messages}
        if self.tools:
            body["tools"] = self.tools
        body.update(self.sampling)
        return body

    def parse(self, reply: Reply) -> dict[str, Any]:
        """What the target uses of a reply — its first choice, usage and system fingerprint."""
        data = jsonsafe.loads(reply.body)
        choice = data["choices"][0]
        message = choice["message"]
        if not isinstance(message, dict):
            raise TypeError
        calls = message.get("tool_calls") or []
        # Tool calls must be a list of objects with a function object: anything else is a
        # broken reply, not the model's answer (and must not crash the run further on).
        if not isinstance(calls, list) or not all(
            isinstance(c, dict) and isinstance(c.get("function") or {}, dict) for c in calls
        ):
            raise TypeError
        usage = data.get("usage") or {}
        return {
            "choice": {"message": message, "finish_reason": choice.get("finish_reason")},
            "usage": usage if isinstance(usage, dict) else {},
            "system_fingerprint": data.get("system_fingerprint"),
        }

    def is_stored(self, data: Any) -> bool:
        choice = data.get("choice") if isinstance(data, dict) else None
        return (
            isinstance(choice, dict) and isinstance(choice.get("message"), dict) and isinstance(data.get("usage"), dict)
        )

    def turn(self, data: dict[str, Any], usage: Usage) -> Turn:
        choice = data["choice"]
        message = choice["message"]
        text = content_text(message.get("content"))
        counts = data.get("usage") or {}
        usage.add(
            counts.get("prompt_tokens"),
            counts.get("completion_tokens"),
            answered=bool(text.strip()),
            read=usage_detail(counts, "prompt_tokens_details", "cached_tokens"),
            reasoning=usage_detail(counts, "completion_tokens_details", "reasoning_tokens"),
        )
        calls = [
            Call(c.get("id"), *_function(c), raw=c) for c in message.get("tool_calls") or [] if isinstance(c, dict)
        ]
        finish = choice.get("finish_reason")
        return Turn(text, calls, message, finish, finish, data.get("system_fingerprint"))

    def answer(self, messages: list[Any], turn: Turn, results: list[tuple[Call, bool, str]]) -> None:
        messages.append(
            {"role": "assistant", "content": turn.message.get("content"), "tool_calls": [c.raw for c in turn.calls]}
        )
        for call, ok, text in results:
            messages.append({"role": "tool", "tool_call_id": call.id, "content": text if ok else f"error: {text}"})

    def params(self) -> dict[str, Any]:
        return {"base_url": self.p.base_url, **self.sampling}


def _tool(tool: Tool) -> dict[str, Any]:
    function: dict[str, Any] = {"name": tool.name, "parameters": tool.parameters}
    if tool.description:
        function["description"] = tool.description
    return {"type": "function", "function": function}


def usage_detail(usage: dict[str, Any], details: str, key: str) -> Any:
    """``usage[details][key]`` (0 when the reply does not say)."""
    part = usage.get(details)
    return part.get(key, 0) if isinstance(part, dict) else 0


def content_text(content: Any) -> str:
    if isinstance(content, list):  # content parts
        return "".join(part.get("text", "") for part in content if isinstance(part, dict))
    return content if isinstance(content, str) else ""


def _function(call: dict[str, Any]) -> tuple[str, Any]:
    function = call.get("function") or {}
    return str(function.get("name")), function.get("arguments")


def conversation_events(messages: list[Any]) -> list[dict[str, Any]]:
    """The Chat Completions conversation as trace ``message`` events (``WireFormat.events``)."""
    events = []
    for message in messages:
        if not isinstance(message, dict):
            continue
        text = content_text(message.get("content"))
        for call in message.get("tool_calls") or []:
            if isinstance(call, dict):
                name, arguments = _function(call)
                text += f"{chr(10) if text else ''}[tool call] {name}({arguments if arguments is not None else ''})"
        if text or message.get("role") == "tool":
            events.append({"kind": "message", "name": message.get("role") or "user", "content": text})
    return events
