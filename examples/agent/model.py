"""A scripted stand-in for the model, served by the repository's local OpenAI-compatible test
server (serve.py): it answers every chat request as a small weather agent would, reading the tool
results the openai target sends back.

- version 1 (the baseline): looks the city up with get_weather, converts with to_fahrenheit when the
  question asks for °F, then answers ``FINAL ANSWER: <number>``.
- version 2 (``--regress``, the "new model"): converts °C to °F in its head instead of calling
  to_fahrenheit. Its answers are the same; only its trajectory shows the skipped tool."""

from __future__ import annotations

import json
import re
from typing import Any

QUESTION = re.compile(r"temperature in (?P<city>[\w ]+?) in °(?P<unit>[CF])\?")


def _call(name: str, arguments: dict[str, Any], n: int) -> dict[str, Any]:
    return {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {"id": f"call_{n}", "type": "function", "function": {"name": name, "arguments": json.dumps(arguments)}}
        ],
    }


def respond(body: dict[str, Any], regress: bool = False) -> dict[str, Any] | str:
    messages = body["messages"]
    question = next(m["content"] for m in messages if m["role"] == "user")
    asked = QUESTION.search(question)
    if asked is None:
        return "FINAL ANSWER: I can only tell temperatures."
    results = [json.loads(m["content"]) for m in messages if m["role"] == "tool"]
    if not results:
        return _call("get_weather", {"city": asked["city"]}, 0)
    celsius = results[0]["temp_c"]
    if asked["unit"] == "C":
        return f"FINAL ANSWER: {celsius:g}"
    if regress:
        return f"FINAL ANSWER: {celsius * 9 / 5 + 32:g}"
    if len(results) == 1:
        return _call("to_fahrenheit", {"celsius": celsius}, 1)
    return f"FINAL ANSWER: {results[1]:g}"
