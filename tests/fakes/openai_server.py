"""A local OpenAI-compatible chat completions server for tests and the runner benchmark.

An asyncio HTTP/1.1 server (keep-alive) on 127.0.0.1 with a random port, running its own event
loop in a background thread. By default it answers with the last user message (so ``exact``
against the input passes). Tests script faults per request: for the next requests whose last user
message is ``key`` (or for any request, ``key=None``), in order: ``status(429, retry_after="1")``,
``status(500)``, ``reset()``, ``hang(30)``, ``malformed()`` — ``after=N`` lets N such requests be
answered first (a fault in the middle of an agent's loop, whose steps share the user message). A
responder may answer with tool calls (``tool_calls(("name", {args}), ...)``). It records every
request body and headers, and the highest number of requests in flight at once. ``Sampled`` is a
responder that answers like a sampled model: right with a probability per model and question, a
fresh draw per request (what a more-evidence batch needs). ``cached_tokens`` and
``reasoning_tokens`` make every reply's usage report that many prompt tokens read from OpenAI's
prompt cache (``prompt_tokens_details.cached_tokens``, part of ``prompt_tokens``) and reasoning
tokens (``completion_tokens_details.reasoning_tokens``, part of ``completion_tokens``), as
https://platform.openai.com/docs/api-reference/chat/object describes.

asyncio rather than ``http.server``: a thread per connection costs ~0.4 ms of CPU per request
under the GIL, which at 2,000 requests is as much as the whole ideal run time the benchmark
compares against.

Run as a script (``python tests/fakes/openai_server.py --latency 0.02``) it prints its base URL on the
first line of stdout and serves until killed: the benchmark runs it in its own process so the
server's work does not share the measured process's interpreter."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import hashlib
import json
import socket
import struct
import threading
from collections import Counter, deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

try:
    import pytest
except ImportError:  # the benchmark runs the server without pytest
    pytest = None  # type: ignore[assignment]


@dataclass
class Fault:
    kind: str  # "status" | "reset" | "hang" | "malformed" | "truncated" (the formats' fakes)
    status: int = 500
    headers: dict[str, str] = field(default_factory=dict)
    body: str = '{"error": {"message": "injected fault"}}'
    seconds: float = 0.0


def status(code: int, retry_after: str | None = None, body: str | None = None) -> Fault:
    headers = {"Retry-After": retry_after} if retry_after is not None else {}
    return Fault("status", status=code, headers=headers, body=body or f'{{"error": {{"message": "injected {code}"}}}}')


def reset() -> Fault:
    return Fault("reset")


def hang(seconds: float = 30.0) -> Fault:
    return Fault("hang", seconds=seconds)


def malformed() -> Fault:
    return Fault("malformed")


def truncated() -> Fault:
    """A reply cut mid-body: fewer bytes than its Content-Length, then the connection closed."""
    return Fault("truncated")


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


Responder = Callable[[dict[str, Any]], "str | dict[str, Any]"]
REASONS = {200: "OK", 400: "Bad Request", 404: "Not Found", 429: "Too Many Requests", 500: "Internal Server Error"}


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


class OpenAIServer:
    def __init__(
        self, latency: float = 0.0, responder: Responder | None = None, fingerprint: str = "fp_local", port: int = 0
    ):
        self.latency = latency
        self.responder: Responder = responder or last_user_text
        self.fingerprint = fingerprint
        self.cached_tokens = 0
        self.reasoning_tokens = 0
        self.report_usage = True  # False: replies carry no usage (an endpoint that reports none)
        self.requests: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []
        self.calls: Counter[str] = Counter()
        self.max_in_flight = 0
        self._in_flight = 0
        self._faults: dict[str | None, deque[Fault | None]] = {}  # None: answer this one normally
        self._lock = threading.Lock()
        self._loop = asyncio.new_event_loop()
        self._connections: set[asyncio.Task[None]] = set()
        self._server = self._loop.run_until_complete(
            asyncio.start_server(self._connection, "127.0.0.1", port, backlog=512)
        )
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.sockets[0].getsockname()[1]}/v1"

    def script(self, key: str | None, *faults: Fault, after: int = 0) -> None:
        with self._lock:
            self._faults.setdefault(key, deque()).extend([None] * after + list(faults))

    def start(self) -> OpenAIServer:
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        async def shutdown() -> None:
            self._server.close()
            for task in list(self._connections):
                task.cancel()
            await asyncio.gather(*self._connections, return_exceptions=True)

        asyncio.run_coroutine_threadsafe(shutdown(), self._loop).result(timeout=10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        if self._thread is not None:
            self._thread.join(timeout=10)
        self._loop.close()

    def __enter__(self) -> OpenAIServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _next_fault(self, key: str) -> Fault | None:
        with self._lock:
            for k in (key, None):
                queue = self._faults.get(k)
                if queue:
                    return queue.popleft()  # None: a request let through before the fault
        return None

    def _record(self, body: dict[str, Any], headers: dict[str, str], key: str) -> None:
        with self._lock:
            self.requests.append(body)
            self.headers.append(headers)
            self.calls[key] += 1

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

    # ----------------------------------------------------------------------------------- HTTP

    async def _connection(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._connections.add(task)
        try:
            while await self._request(reader, writer):
                pass
        except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, ConnectionError):
            pass  # the client went away
        finally:
            self._connections.discard(task)
            writer.close()

    async def _request(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> bool:
        """Serve one request; False when the connection is done."""
        head = await reader.readuntil(b"\r\n\r\n")
        lines = head.decode("latin-1").split("\r\n")
        headers = {}
        for line in lines[1:]:
            name, sep, value = line.partition(":")
            if sep:
                headers[name.strip().title()] = value.strip()
        raw = await reader.readexactly(int(headers.get("Content-Length") or 0))
        try:
            body = json.loads(raw)
        except json.JSONDecodeError:
            self._send(writer, 400, '{"error": {"message": "request body is not JSON"}}')
            return True
        key = last_user_text(body)
        self._record(body, headers, key)
        fault = self._next_fault(key)
        self._in_flight += 1  # only the loop thread touches this
        self.max_in_flight = max(self.max_in_flight, self._in_flight)
        try:
            if fault is not None and fault.kind == "reset":
                # SO_LINGER 0 makes close() send RST: the client sees a connection reset.
                sock = writer.get_extra_info("socket")
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                writer.transport.abort()
                return False
            if fault is not None and fault.kind == "hang":
                await asyncio.sleep(fault.seconds)
            elif self.latency:
                await asyncio.sleep(self.latency)
            if fault is not None and fault.kind == "status":
                self._send(writer, fault.status, fault.body, fault.headers)
            elif fault is not None and fault.kind == "malformed":
                self._send(writer, 200, '{"id": "chatcmpl-local", "choices": [{"message": {"content": "cut of')
            else:
                self._send(writer, 200, json.dumps(self.completion(body)))
            await writer.drain()
        finally:
            self._in_flight -= 1
        return headers.get("Connection", "").lower() != "close"

    @staticmethod
    async def _send_cut(writer: asyncio.StreamWriter, payload: str) -> None:
        """A 200 whose body stops halfway through its Content-Length, the connection then closed."""
        whole = payload.encode("utf-8")
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n")
        writer.write(f"Content-Length: {len(whole)}\r\n\r\n".encode("latin-1") + whole[: len(whole) // 2])
        await writer.drain()
        writer.close()

    @staticmethod
    def _send(writer: asyncio.StreamWriter, code: int, payload: str, headers: dict[str, str] | None = None) -> None:
        data = payload.encode("utf-8")
        head = [f"HTTP/1.1 {code} {REASONS.get(code, 'Status')}", "Content-Type: application/json"]
        head += [f"Content-Length: {len(data)}", *(f"{k}: {v}" for k, v in (headers or {}).items())]
        writer.write(("\r\n".join(head) + "\r\n\r\n").encode("latin-1") + data)


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
