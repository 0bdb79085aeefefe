"""What the local model servers of every wire format share (``openai_server``, ``responses_server``,
``anthropic_server``): an asyncio HTTP/1.1 server (keep-alive) on 127.0.0.1 with a random port,
running its own event loop in a background thread; every request's path, headers and body
recorded, with the highest number of requests in flight at once; and faults scripted per request.

A format's server says three things: whether it takes a request (:meth:`ModelServer.admit`: a
wrong route, key or body is refused as its API refuses it, and recorded), what a request's fault
key is (:meth:`ModelServer.key_of`: the last user message's text), and its reply to a request it
takes (:meth:`ModelServer.reply_for`). Faults are scripted for the next requests whose key is
``key`` (or for any request, ``key=None``), in order: ``status(429, retry_after="1")``,
``status(500)``, ``reset()`` (the connection reset), ``hang(30)``, ``malformed()`` (a complete
reply whose JSON is cut) and ``truncated()`` (a reply cut mid-body: fewer bytes than its
Content-Length, then the connection closed); ``after=N`` lets N such requests be answered first (a
fault in the middle of an agent's loop, whose steps share the user message).

asyncio rather than ``http.server``: a thread per connection costs ~0.4 ms of CPU per request
under the GIL, which at 2,000 requests is as much as the whole ideal run time the runner benchmark
compares against."""

from __future__ import annotations

import asyncio
import json
import socket
import ssl
import struct
import threading
from collections import Counter, deque
from dataclasses import dataclass, field
from typing import Any, Self

REASONS = {200: "OK", 400: "Bad Request", 404: "Not Found", 429: "Too Many Requests", 500: "Internal Server Error"}


@dataclass
class Fault:
    kind: str  # "status" | "reset" | "hang" | "malformed" | "truncated"
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


@dataclass
class Refusal:
    """A request the API refuses before answering it: the status, body and headers it replies with."""

    status: int
    body: str
    headers: dict[str, str] = field(default_factory=dict)


class LoopServer:
    """A TCP server on 127.0.0.1 (a random port unless ``port``; TLS with ``tls``) running its own
    event loop in a background thread, from ``start()`` (or ``with``) to ``stop()``: what every
    fake server of the tests runs on. A subclass serves a connection in :meth:`_connection`; a
    client that goes away ends it quietly."""

    def __init__(self, port: int = 0, tls: ssl.SSLContext | None = None):
        self._loop = asyncio.new_event_loop()
        self._connections: set[asyncio.Task[None]] = set()
        self._server = self._loop.run_until_complete(
            asyncio.start_server(self._accept, "127.0.0.1", port, backlog=512, ssl=tls)
        )
        self._thread: threading.Thread | None = None

    @property
    def port(self) -> int:
        return int(self._server.sockets[0].getsockname()[1])

    async def _connection(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        raise NotImplementedError

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._connections.add(task)
        try:
            await self._connection(reader, writer)
        except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, ConnectionError):
            pass  # the client went away
        finally:
            self._connections.discard(task)
            writer.close()

    def start(self) -> Self:
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

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


class ModelServer(LoopServer):
    """The server of one wire format; subclasses answer (see the module docstring). ``url`` is the
    base URL a client of that format is given."""

    # A 200 whose JSON stops short: what ``malformed()`` sends, in the format's own opening.
    malformed_body: str

    def __init__(self, latency: float = 0.0, port: int = 0):
        super().__init__(port)
        self.latency = latency
        self.requests: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []
        self.paths: list[str] = []
        self.calls: Counter[str] = Counter()
        self.max_in_flight = 0
        self._in_flight = 0
        self._faults: dict[str | None, deque[Fault | None]] = {}  # None: answer this one normally
        self._lock = threading.Lock()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    # ------------------------------------------------------------------------- the format's

    def admit(self, method: str, path: str, headers: dict[str, str], body: Any) -> Any:
        """A :class:`Refusal`, or what :meth:`reply_for` needs to know of the request beyond its
        body (``body`` is the parsed JSON, None when the request had none or not JSON)."""
        raise NotImplementedError

    def key_of(self, body: dict[str, Any]) -> str:
        """The text faults are scripted by: the last user message's."""
        raise NotImplementedError

    def reply_for(self, body: dict[str, Any], admitted: Any) -> dict[str, Any]:
        """The 200 reply to a request :meth:`admit` took."""
        raise NotImplementedError

    # ------------------------------------------------------------------------------ scripting

    def script(self, key: str | None, *faults: Fault, after: int = 0) -> None:
        with self._lock:
            self._faults.setdefault(key, deque()).extend([None] * after + list(faults))

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

    # ----------------------------------------------------------------------------------- HTTP

    async def _connection(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        while await self._request(reader, writer):
            pass

    @staticmethod
    async def _read(reader: asyncio.StreamReader) -> tuple[str, str, dict[str, str], bytes]:
        """One request: its method, path (without the query), headers (names title-cased) and body."""
        head = await reader.readuntil(b"\r\n\r\n")
        lines = head.decode("latin-1").split("\r\n")
        method, _, rest = lines[0].partition(" ")
        path = rest.rsplit(" ", 1)[0].split("?", 1)[0]
        headers = {}
        for line in lines[1:]:
            name, sep, value = line.partition(":")
            if sep:
                headers[name.strip().title()] = value.strip()
        return method, path, headers, await reader.readexactly(int(headers.get("Content-Length") or 0))

    async def _request(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> bool:
        """Serve one request; False when the connection is done."""
        method, path, headers, raw = await self._read(reader)
        try:
            body = json.loads(raw) if raw else None
        except json.JSONDecodeError:
            body = None
        with self._lock:
            self.paths.append(path)
        admitted = self.admit(method, path, headers, body)
        if isinstance(admitted, Refusal):
            self._record(body if isinstance(body, dict) else {}, headers, "")
            self._reply(writer, admitted.status, admitted.body, admitted.headers)
            await writer.drain()
            return True
        key = self.key_of(body)
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
                self._reply(writer, fault.status, fault.body, fault.headers)
            elif fault is not None and fault.kind == "malformed":
                self._reply(writer, 200, self.malformed_body)
            elif fault is not None and fault.kind == "truncated":
                await self._send_cut(writer, json.dumps(self.reply_for(body, admitted)))
                return False
            else:
                self._reply(writer, 200, json.dumps(self.reply_for(body, admitted)))
            await writer.drain()
        finally:
            self._in_flight -= 1
        return headers.get("Connection", "").lower() != "close"

    def _reply(
        self, writer: asyncio.StreamWriter, code: int, payload: str, headers: dict[str, str] | None = None
    ) -> None:
        """Every reply goes out here: a format whose API adds headers to each (a request id) says so."""
        self._send(writer, code, payload, headers)

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
