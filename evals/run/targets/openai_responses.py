"""OpenAI **Responses** (docs/spec.md#model-targets), the ``openai`` target with ``api: responses``:
``POST <base_url>/responses`` with the key as ``Authorization: Bearer``
(https://platform.openai.com/docs/api-reference/responses, the function-calling guide).

The system prompt is ``instructions``; a case's input is a user message in ``input`` (a
``{"messages": [...]}`` input is sent as input items as it is); tools are function tools
``{type: "function", name, description, parameters, strict: false}`` — the API's default is strict,
which would refuse any schema with an optional parameter. The reply's ``output`` holds ``message``
items (their ``output_text`` parts are the answer) and ``function_call`` items, answered by
``function_call_output`` items. Stateless: ``store: false``, and every step sends the whole
conversation — the reply's own items sent back without their ids (nothing is kept to find them
by), a ``reasoning`` item only with the ``encrypted_content`` the request asks for when it runs
tools. Usage: ``input_tokens`` (with ``input_tokens_details.cached_tokens``), ``output_tokens``
(with ``output_tokens_details.reasoning_tokens``)."""

from __future__ import annotations

from typing import Any

from evals.common import jsonsafe
from evals.run.connections import Reply
from evals.run.targets.base import excerpt
from evals.run.targets.formats import Call, Turn, Usage, WireFormat
from evals.run.targets.openai_chat import content_text, usage_detail
from evals.run.targets.tools import Tool
from evals.suite.targets import OpenAIParams

SAMPLING = ("temperature", "top_p", "max_output_tokens")
# incomplete_details.reason in the words evalgate records finish_reason in.
FINISH = {"max_output_tokens": "length", "content_filter": "content_filter"}


class OpenAIResponses(WireFormat):
    name = "openai responses"
    kind = "openai responses"
    key_header = "Authorization"

    def __init__(self, params: OpenAIParams, tools: dict[str, Tool], system_prompt: str | None):
        self.p = params
        self.url = params.base_url.rstrip("/") + "/responses"
        self.fixed_headers: dict[str, str] = {}
        self.system_prompt = system_prompt
        self.sampling = {k: v for k in SAMPLING if (v := getattr(params, k)) is not None}
        head: dict[str, Any] = {"model": params.model_name}
        if system_prompt is not None:
            head["instructions"] = system_prompt
        if tools:
            head["tools"] = [_tool(tool) for tool in tools.values()]
            # A reasoning model's reasoning goes back with the conversation: stateless, only as the
            # encrypted content the reply carries when asked.
            head["include"] = ["reasoning.encrypted_content"]
        head.update(self.sampling)
        head["store"] = False
        self.head = head

    def events(self, messages: list[Any]) -> list[dict[str, Any]]:
        events = []
        if self.system_prompt is not None:
            events.append({"kind": "message", "name": "system", "content": self.system_prompt})
        for item in messages:
            if not isinstance(item, dict):
                continue
            kind = item.get("type", "message")
            if kind == "function_call":
                events.append(
                    {
                        "kind": "message",
                        "name": "assistant",
                        "content": f"[tool call] {item.get('name')}({item.get('arguments') or ''})",
                    }
                )
            elif kind == "function_call_output":
                events.append({"kind": "message", "name": "tool", "content": str(item.get("output") or "")})
            elif kind == "message" and (text := content_text(item.get("content"))):
                events.append({"kind": "message", "name": item.get("role") or "user", "content": text})
        return events

    def body(self, messages: list[Any]) -> dict[str, Any]:
        return {**self.head, "input": messages}

    def parse(self, reply: Reply) -> dict[str, Any]:
        data = jsonsafe.loads(reply.body)
        output = data["output"]
        if not _valid_items(output):
            raise TypeError
        usage = data.get("usage") or {}
        incomplete = data.get("incomplete_details") or {}
        return {
            "output": output,
            "status": data.get("status"),
            "incomplete": incomplete.get("reason") if isinstance(incomplete, dict) else None,
            "usage": usage if isinstance(usage, dict) else {},
        }

    def is_stored(self, data: Any) -> bool:
        return isinstance(data, dict) and _valid_items(data.get("output")) and isinstance(data.get("usage"), dict)

    def turn(self, data: dict[str, Any], usage: Usage) -> Turn:
        output = data["output"]
        parts = [p for i in output if i.get("type") == "message" for p in i.get("content") or [] if isinstance(p, dict)]
        text = "".join(p.get("text", "") for p in parts if p.get("type") == "output_text")
        refused = any(p.get("type") == "refusal" for p in parts)
        if refused and not text:
            text = "".join(p.get("refusal", "") for p in parts if p.get("type") == "refusal")
        counts = data["usage"]
        usage.add(
            counts.get("input_tokens"),
            counts.get("output_tokens"),
            answered=bool(text.strip()),
            read=usage_detail(counts, "input_tokens_details", "cached_tokens"),
            reasoning=usage_detail(counts, "output_tokens_details", "reasoning_tokens"),
        )
        calls = [
            Call(i["call_id"], i["name"], i.get("arguments"), raw=i) for i in output if i.get("type") == "function_call"
        ]
        reason = data.get("incomplete") or ("refusal" if refused else None)
        finish = FINISH.get(reason or "", "content_filter" if refused else "tool_calls" if calls else "stop")
        return Turn(text, calls, output, reason or finish, finish)

    def answer(self, messages: list[Any], turn: Turn, results: list[tuple[Call, bool, str]]) -> None:
        for item in turn.message:
            if item.get("type") == "reasoning":
                if item.get("encrypted_content"):
                    messages.append(item)
            elif item.get("type") in ("message", "function_call"):
                # Nothing is stored (store: false): an id would name an item the server cannot find.
                messages.append({k: v for k, v in item.items() if k not in ("id", "status")})
        for call, ok, text in results:
            messages.append(
                {"type": "function_call_output", "call_id": call.id, "output": text if ok else f"error: {text}"}
            )

    def params(self) -> dict[str, Any]:
        return {"base_url": self.p.base_url, "api": "responses", **self.sampling}

    def error(self, reply: Reply, limit: int) -> str:
        """OpenAI's ``{"error": {"message", "type", "code"}}``, its type named."""
        try:
            error = jsonsafe.loads(reply.body).get("error")
        except (ValueError, AttributeError):
            error = None
        if isinstance(error, dict) and isinstance(error.get("message"), str):
            kind = error.get("type") or error.get("code")
            return f"HTTP {reply.status}{f' {kind}' if kind else ''}: {excerpt(error['message'], limit)}"
        return f"HTTP {reply.status}: {excerpt(reply.text, limit)}"


def _tool(tool: Tool) -> dict[str, Any]:
    entry: dict[str, Any] = {"type": "function", "name": tool.name}
    if tool.description:
        entry["description"] = tool.description
    entry["parameters"] = tool.parameters
    entry["strict"] = False
    return entry


def _valid_items(output: Any) -> bool:
    """Output items the loop can read: objects, a function_call naming its function and call id."""
    return isinstance(output, list) and all(
        isinstance(item, dict)
        and (
            item.get("type") != "function_call"
            or (isinstance(item.get("name"), str) and isinstance(item.get("call_id"), str))
        )
        for item in output
    )
