"""A scripted stand-in for the model, served by the repository's local test servers (serve.py) in
each of the three wire formats: it answers every request as a small weather agent would, reading
the tool results the target sends back.

- version 1 (the baseline): looks the city up with get_weather, converts with to_fahrenheit when the
  question asks for °F, then answers ``FINAL ANSWER: <number>``.
- version 2 (``--regress``, the "new model"): converts °C to °F in its head instead of calling
  to_fahrenheit. Its answers are the same; only its trajectory shows the skipped tool.

``decide`` is the agent; ``respond`` (Chat Completions), ``respond_responses`` (Responses) and
``respond_anthropic`` (Messages) read its question and tool results from a request body of their
format and write its move as that format's reply (``RESPONDERS``)."""

from __future__ import annotations

import json
import re
from typing import Any

QUESTION = re.compile(r"temperature in (?P<city>[\w ]+?) in °(?P<unit>[CF])\?")


def decide(question: str, results: list[Any], regress: bool) -> str | tuple[str, dict[str, Any]]:
    """The final answer, or the next tool call ``(name, arguments)``."""
    asked = QUESTION.search(question)
    if asked is None:
        return "FINAL ANSWER: I can only tell temperatures."
    if not results:
        return "get_weather", {"city": asked["city"]}
    celsius = results[0]["temp_c"]
    if asked["unit"] == "C":
        return f"FINAL ANSWER: {celsius:g}"
    if regress:
        return f"FINAL ANSWER: {celsius * 9 / 5 + 32:g}"
    if len(results) == 1:
        return "to_fahrenheit", {"celsius": celsius}
    return f"FINAL ANSWER: {results[1]:g}"


def respond(body: dict[str, Any], regress: bool = False) -> dict[str, Any] | str:
    """Chat Completions: the first user message, the ``tool`` messages; a ``tool_calls`` message."""
    messages = body["messages"]
    question = next(m["content"] for m in messages if m["role"] == "user")
    results = [json.loads(m["content"]) for m in messages if m["role"] == "tool"]
    move = decide(question, results, regress)
    if isinstance(move, str):
        return move
    name, arguments = move
    call = {
        "id": f"call_{len(results)}",
        "type": "function",
        "function": {"name": name, "arguments": json.dumps(arguments)},
    }
    return {"role": "assistant", "content": None, "tool_calls": [call]}


def respond_responses(body: dict[str, Any], regress: bool = False) -> dict[str, Any] | str:
    """Responses: the first user item, the ``function_call_output`` items; ``function_call`` items
    (which the server writes from ``{"calls": [(name, arguments)]}``)."""
    items = body["input"]
    question = next(i["content"] for i in items if i.get("role") == "user")
    results = [json.loads(i["output"]) for i in items if i.get("type") == "function_call_output"]
    move = decide(question, results, regress)
    return move if isinstance(move, str) else {"calls": [move]}


def respond_anthropic(body: dict[str, Any], regress: bool = False) -> dict[str, Any] | str:
    """Messages: the first user turn, the ``tool_result`` blocks; a ``tool_use`` block."""
    messages = body["messages"]
    question = next(m["content"] for m in messages if m["role"] == "user")
    results = [
        json.loads(block["content"])
        for m in messages
        if isinstance(m["content"], list)
        for block in m["content"]
        if block.get("type") == "tool_result"
    ]
    move = decide(question, results, regress)
    if isinstance(move, str):
        return move
    name, arguments = move
    return {
        "content": [{"type": "tool_use", "id": f"toolu_{len(results)}", "name": name, "input": arguments}],
        "stop_reason": "tool_use",
    }


RESPONDERS = {"chat": respond, "responses": respond_responses, "anthropic": respond_anthropic}
