"""A local OpenAI-compatible chat completions server for tests and the runner benchmark.

The plumbing, recording and fault scripting of every wire format's fake (``fakes.model_server``:
``status(429, retry_after="1")``, ``status(500)``, ``reset()``, ``hang(30)``, ``malformed()``,
``truncated()``, keyed by the last user message), speaking Chat Completions on any path under its
``url`` (``.../v1``). By default it answers with the last user message (so ``exact`` against the
input passes). A responder may answer with tool calls (``tool_calls(("name", {args}), ...)``).
``Sampled`` is a responder that answers like a sampled model: right with a probability per model
and question, a fresh draw per request (what a more-evidence batch needs). ``cached_tokens`` and
``reasoning_tokens`` make every reply's usage report that many prompt tokens read from OpenAI's
prompt cache (``prompt_tokens_details.cached_tokens``, part of ``prompt_tokens``) and reasoning
tokens (``completion_tokens_details.reasoning_tokens``, part of ``completion_tokens``), as
https://platform.openai.com/docs/api-reference/chat/object describes.

Run as a module (``PYTHONPATH=tests python -m fakes.openai_server --latency 0.02``) it prints its
base URL on the first line of stdout and serves until killed: the benchmark runs it in its own
process so the server's work does not share the measured process's interpreter."""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import threading
from collections import Counter
from collections.abc import Callable
from typing import Any

from fakes.model_server import Fault, ModelServer, Refusal, hang, malformed, reset, status, truncated

try:
    import pytest
except ImportError:  # the benchmark runs the server without pytest
    pytest = None  # type: ignore[assignment]


def tool_calls(*calls: tuple[str, dict[str, Any]], content: str | None = None) -> dict[str, Any]:
    """An assistant message asking for these ``(function, arguments)`` calls."""
    return {
        "role": "assistant",
        "content": content,
        "tool_calls": [
            {"id": f"call_{i}", "type": "function", "function": {"name": name, "arguments": json.dumps(args)}}
            for i, (name, args) in enumerate(calls)
        ],
    }


def tool_results(body: dict[str, Any]) -> list[str]:
    """The ``tool`` messages the client sent back so far, in order: what a responder reads."""
    return [m.get("content") or "" for m in body.get("messages") or [] if m.get("role") == "tool"]


__all__ = [
    "Fault",
    "OpenAIServer",
    "Sampled",
    "hang",
    "malformed",
    "reset",
    "status",
    "tool_calls",
    "tool_results",
    "truncated",
]

Responder = Callable[[dict[str, Any]], "str | dict[str, Any]"]


def last_user_text(body: dict[str, Any]) -> str:
    for message in reversed(body.get("messages") or []):
        if message.get("role") == "user":
            content = message.get("content")
            return content if isinstance(content, str) else json.dumps(content)
    return ""


class Sampled:
    """A responder that answers like a model sampled at a temperature: for each request, the right
    answer with a probability set by the model asked (a "version") and the question, else a wrong
    one. Every request is a fresh draw — seeded by the model, the question and how many times that
    model was asked it before — so a run is reproducible whatever the concurrency, and a re-run of
    the same cases (a more-evidence batch) draws anew."""

    def __init__(
        self,
        answers: Callable[[str], tuple[str, str]],
        p_right: Callable[[str, str], float],
        seed: int = 0,
    ):
        self.answers = answers  # question -> (right reply, wrong reply)
        self.p_right = p_right  # (model, question) -> probability of the right reply
        self.seed = seed
        self.asked: Counter[tuple[str, str]] = Counter()
        self._lock = threading.Lock()

    def draw(self, model: str, text: str) -> float:
        with self._lock:
            n = self.asked[(model, text)]
            self.asked[(model, text)] += 1
        return unit(f"{self.seed}:{model}:{n}:{text}")

    def __call__(self, body: dict[str, Any]) -> str:
        text, model = last_user_text(body), str(body.get("model"))
        right, wrong = self.answers(text)
        return right if self.draw(model, text) < self.p_right(model, text) else wrong


def unit(text: str) -> float:
    """A number in [0, 1) fixed by ``text``."""
    return int.from_bytes(hashlib.sha256(text.encode("utf-8")).digest()[:8], "big") / 2**64


class OpenAIServer(ModelServer):
    malformed_body = '{"id": "chatcmpl-local", "choices": [{"message": {"content": "cut of'

    def __init__(
        self, latency: float = 0.0, responder: Responder | None = None, fingerprint: str = "fp_local", port: int = 0
    ):
        super().__init__(latency=latency, port=port)
        self.responder: Responder = responder or last_user_text
        self.fingerprint = fingerprint
        self.cached_tokens = 0
        self.reasoning_tokens = 0
        self.report_usage = True  # False: replies carry no usage (an endpoint that reports none)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def admit(self, method: str, path: str, headers: dict[str, str], body: Any) -> Refusal | None:
        return None if isinstance(body, dict) else Refusal(400, '{"error": {"message": "request body is not JSON"}}')

    def key_of(self, body: dict[str, Any]) -> str:
        return last_user_text(body)

    def reply_for(self, body: dict[str, Any], admitted: Any) -> dict[str, Any]:
        return self.completion(body)

    def completion(self, body: dict[str, Any]) -> dict[str, Any]:
        reply = self.responder(body)
        message = reply if isinstance(reply, dict) else {"role": "assistant", "content": reply}
        message.setdefault("role", "assistant")
        prompt = sum(len(str(m.get("content", "")).split()) for m in body.get("messages", []))
        usage: dict[str, Any] = {
            "prompt_tokens": prompt,
            "completion_tokens": len(str(message.get("content") or "").split()) + self.reasoning_tokens,
        }
        if self.cached_tokens or self.reasoning_tokens:
            usage["prompt_tokens_details"] = {"cached_tokens": min(self.cached_tokens, prompt)}
            usage["completion_tokens_details"] = {"reasoning_tokens": self.reasoning_tokens}
        return {
            "id": "chatcmpl-local",
            "object": "chat.completion",
            "model": body.get("model"),
            "system_fingerprint": self.fingerprint,
            "choices": [
                {"index": 0, "message": message, "finish_reason": "tool_calls" if message.get("tool_calls") else "stop"}
            ],
            **({"usage": usage} if self.report_usage else {}),
        }


if pytest is not None:

    @pytest.fixture
    def openai_server():
        """A running server; tests script faults on it and read what it saw."""
        with OpenAIServer() as server:
            yield server


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--latency", type=float, default=0.0, help="seconds before each answer")
    args = parser.parse_args()
    server = OpenAIServer(latency=args.latency)
    print(server.url, flush=True)
    with contextlib.suppress(KeyboardInterrupt):
        server._loop.run_forever()


if __name__ == "__main__":
    main()
