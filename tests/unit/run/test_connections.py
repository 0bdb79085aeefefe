"""The OpenAI target's keep-alive connections (evals/run/connections.py) against real local sockets:
connections are reused, one the server dropped while idle is replaced without a failed call (also
when it drops it right after each answer), a request that got no byte of an answer on a reused
connection is sent once more and one that got part of an answer is not, connecting has its own
timeout, and proxies named in the environment are used (or bypassed by NO_PROXY) as httpx would."""

from __future__ import annotations

import asyncio
import json
import select
import shutil
import socket
import ssl
import subprocess
import threading
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

import pytest
from fakes.model_server import LoopServer
from fakes.suites import echo_cases, load_suite

from evals.common.errors import UsageError
from evals.run.connections import (
    ConnectError,
    ConnectionLost,
    ConnectTimeout,
    KeepAlivePool,
    ProtocolError,
    environment_proxy,
)
from evals.run.execution import execute

Handler = Callable[[asyncio.StreamReader, asyncio.StreamWriter, "LocalServer"], Awaitable[None]]


class LocalServer(LoopServer):
    """A TCP server on 127.0.0.1 that serves each connection with ``handler``; counts connections."""

    def __init__(self, handler: Handler, tls: ssl.SSLContext | None = None):
        super().__init__(tls=tls)
        self.handler = handler
        self.connections = 0
        self.request_lines: list[str] = []
        self.request_heads: list[str] = []

    async def _connection(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        await self.handler(reader, writer, self)

    async def read_request(self, reader: asyncio.StreamReader) -> bytes:
        head = (await reader.readuntil(b"\r\n\r\n")).decode("latin-1")
        self.request_lines.append(head.split("\r\n")[0])
        self.request_heads.append(head)
        length = next(
            int(line.split(":")[1]) for line in head.lower().split("\r\n") if line.startswith("content-length")
        )
        return await reader.readexactly(length)


def reply(writer: asyncio.StreamWriter, payload: bytes) -> None:
    writer.write(
        b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n" % len(payload) + payload
    )


async def echo_keep_alive(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, server: LocalServer) -> None:
    while True:
        reply(writer, await server.read_request(reader))
        await writer.drain()


async def echo_then_hang_up(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, server: LocalServer) -> None:
    # Answers as if the connection stays open (no "Connection: close"), then drops it: what a
    # server's idle keep-alive timeout does between two requests.
    reply(writer, await server.read_request(reader))
    await writer.drain()


def post_all(pool: KeepAlivePool, bodies: list[bytes], *, concurrent: bool = False, pause_s: float = 0.0) -> list:
    async def go() -> list:
        try:
            if concurrent:
                return [r.body for r in await asyncio.gather(*(pool.post(b) for b in bodies))]
            out = []
            for body in bodies:
                out.append((await pool.post(body)).body)
                await asyncio.sleep(pause_s)
            return out
        finally:
            await pool.aclose()

    return asyncio.run(go())


def bodies(n: int) -> list[bytes]:
    return [json.dumps({"n": i}).encode() for i in range(n)]


@pytest.fixture(autouse=True)
def no_proxy_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in (
        "HTTP_PROXY",
        "HTTPS_PROXY",
        "ALL_PROXY",
        "NO_PROXY",
        "http_proxy",
        "https_proxy",
        "all_proxy",
        "no_proxy",
    ):
        monkeypatch.delenv(name, raising=False)


def test_connections_are_kept_alive_and_reused() -> None:
    with LocalServer(echo_keep_alive) as server:
        pool = KeepAlivePool(f"http://127.0.0.1:{server.port}/v1/chat/completions", {"X-Test": "1"})
        assert post_all(pool, bodies(5)) == bodies(5)
        assert server.connections == 1
        assert server.request_lines[0] == "POST /v1/chat/completions HTTP/1.1"
        assert f"Host: 127.0.0.1:{server.port}" in server.request_heads[0] and "X-Test: 1" in server.request_heads[0]

    with LocalServer(echo_keep_alive) as server:
        pool = KeepAlivePool(f"http://127.0.0.1:{server.port}/v1/chat/completions", {})
        assert post_all(pool, bodies(8), concurrent=True) == bodies(8)
        assert server.connections == 8  # one per call in flight, none shared


def test_a_connection_the_server_dropped_while_idle_is_replaced() -> None:
    with LocalServer(echo_then_hang_up) as server:
        pool = KeepAlivePool(f"http://127.0.0.1:{server.port}/v1/chat/completions", {})
        assert post_all(pool, bodies(3), pause_s=0.2) == bodies(3)  # no call fails on a dead connection
        assert server.connections == 3


def chat_reply(writer: asyncio.StreamWriter, request: bytes) -> None:
    content = json.loads(request)["messages"][-1]["content"]
    reply(writer, json.dumps({"choices": [{"message": {"content": content}}]}).encode())


async def chat_then_hang_up(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, server: LocalServer) -> None:
    # A chat completion answered as if the connection stays open, then closed at once: what some
    # servers and load balancers do. The client sees the FIN only after it has the answer.
    chat_reply(writer, await server.read_request(reader))
    await writer.drain()


async def chat_once_then_drop(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, server: LocalServer) -> None:
    chat_reply(writer, await server.read_request(reader))
    await writer.drain()
    await server.read_request(reader)  # read, never answered: the close raced the request


def test_a_server_closing_after_every_answer_costs_no_failed_attempt(tmp_path: Path) -> None:
    """The poll before reuse sees most hang-ups; a request that races one (sent before the FIN
    arrived) is dropped unread, sent again, and recorded in the attempt's retry_history."""
    with LocalServer(chat_then_hang_up) as server:
        target = {
            "openai": {"base_url": f"http://127.0.0.1:{server.port}/v1", "model": "local:echo", "api_key_env": None}
        }
        config = load_suite(tmp_path, echo_cases(200), target=target, concurrency=1)
        results = execute(config, tmp_path / "results.json", progress=False)
        attempts = [a for c in results.cases for a in c.attempts]
        assert all(a.passed is True and a.error is None for a in attempts)
        assert server.connections == 200 and len(server.request_lines) == 200
        for attempt in attempts:
            assert attempt.retries == len(attempt.retry_history) <= 1
            assert all("reused keep-alive connection" in r.message for r in attempt.retry_history)


def test_a_request_resent_after_a_stale_connection_is_in_retry_history(tmp_path: Path) -> None:
    """Before, the resend left no trace: an attempt that needed it looked like one that did not."""
    with LocalServer(chat_once_then_drop) as server:
        target = {
            "openai": {"base_url": f"http://127.0.0.1:{server.port}/v1", "model": "local:echo", "api_key_env": None}
        }
        config = load_suite(tmp_path, echo_cases(4), target=target, concurrency=1, retries={"max": 0})
        results = execute(config, tmp_path / "results.json", progress=False)
    assert [c.attempts[0].passed for c in results.cases] == [True] * 4
    assert [c.attempts[0].retries for c in results.cases] == [0, 1, 1, 1]  # cases 2-4 met a dropped request
    (record,) = results.cases[1].attempts[0].retry_history
    assert record.kind == "infra" and record.wait_s == 0 and record.status is None
    assert "before any byte of an answer" in record.message and "sent again on a new connection" in record.message
    assert len(server.request_lines) == 7 and server.connections == 4


def test_an_idle_connection_the_server_closed_reads_as_readable_before_the_loop_sees_it() -> None:
    hang_up, closed = threading.Event(), threading.Event()

    async def close_when_asked(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, server: LocalServer) -> None:
        await asyncio.get_running_loop().run_in_executor(None, hang_up.wait, 5)
        writer.close()
        await writer.wait_closed()
        closed.set()

    async def go(port: int) -> tuple[bool, bool, bool]:
        pool = KeepAlivePool(f"http://127.0.0.1:{port}/v1", {})
        connection = await pool._connect()
        connection._keep_alive = True  # as after an answer that allows another request
        connection.idle_since = time.monotonic()
        alive = connection.reusable()
        hang_up.set()
        closed.wait(5)  # blocks the loop: only the socket has seen the FIN, not the protocol
        seen_by_loop = not connection.alive
        gone = not connection.reusable()
        connection.close()
        return alive, seen_by_loop, gone

    with LocalServer(close_when_asked) as server:
        assert asyncio.run(go(server.port)) == (True, False, True)


async def answer_once_then_drop(
    reader: asyncio.StreamReader, writer: asyncio.StreamWriter, server: LocalServer
) -> None:
    # The first request on a connection is answered; the next one is read and dropped unanswered:
    # the close raced the request, deterministically.
    reply(writer, await server.read_request(reader))
    await writer.drain()
    await server.read_request(reader)


async def answer_once_then_cut_short(
    reader: asyncio.StreamReader, writer: asyncio.StreamWriter, server: LocalServer
) -> None:
    reply(writer, await server.read_request(reader))
    await writer.drain()
    await server.read_request(reader)
    writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n{")  # part of an answer, then gone
    await writer.drain()


def test_only_a_request_that_got_no_answer_on_a_reused_connection_is_sent_again() -> None:
    with LocalServer(answer_once_then_drop) as server:
        pool = KeepAlivePool(f"http://127.0.0.1:{server.port}/v1/chat/completions", {})
        assert post_all(pool, bodies(4)) == bodies(4)
        assert len(server.request_lines) == 7  # requests 2-4 each went out twice
        assert server.connections == 4

    with LocalServer(answer_once_then_cut_short) as server:
        pool = KeepAlivePool(f"http://127.0.0.1:{server.port}/v1/chat/completions", {})
        with pytest.raises((ConnectionLost, ProtocolError)):
            post_all(pool, bodies(2))
        assert len(server.request_lines) == 2 and server.connections == 1  # the server may have acted on it


def full_backlog() -> tuple[socket.socket, list[socket.socket]]:
    """A listening socket on 127.0.0.1 that never accepts, its backlog filled: the kernel drops
    further SYNs, so a connect neither succeeds nor fails — a black-holed endpoint."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(0)
    fillers = []
    while True:
        filler = socket.socket()
        filler.setblocking(False)
        fillers.append(filler)
        filler.connect_ex(listener.getsockname())
        # A loopback connect the backlog has room for completes at once; one still pending after
        # half a second has had its SYN dropped: the backlog is full.
        if not select.select([], [filler], [], 0.5)[1]:
            return listener, fillers


def test_connecting_has_its_own_timeout() -> None:
    listener, fillers = full_backlog()
    try:
        pool = KeepAlivePool(f"http://127.0.0.1:{listener.getsockname()[1]}/v1", {}, connect_timeout_s=0.2)
        with pytest.raises(ConnectTimeout, match=r"no connection to 127\.0\.0\.1"):
            post_all(pool, bodies(1))
    finally:
        for sock in [listener, *fillers]:
            sock.close()


def test_a_connect_error_without_a_message_names_its_kind(monkeypatch: pytest.MonkeyPatch) -> None:
    """An OSError may carry no text: the message names its class rather than ending after the
    colon (an exception is always truthy, so ``exc or name`` never fell back to the name)."""

    async def refuse(*args: object, **kwargs: object) -> None:
        raise ConnectionRefusedError()

    monkeypatch.setattr(asyncio.BaseEventLoop, "create_connection", refuse)
    pool = KeepAlivePool("http://127.0.0.1:9/v1", {})
    with pytest.raises(ConnectError, match=r"^127\.0\.0\.1:9: ConnectionRefusedError$"):
        post_all(pool, bodies(1))


async def forward_proxy(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, server: LocalServer) -> None:
    body = await server.read_request(reader)
    upstream_port = int(server.request_lines[-1].split()[1].split("/")[2].split(":")[1])
    up_reader, up_writer = await asyncio.open_connection("127.0.0.1", upstream_port)
    head = server.request_heads[-1].encode("latin-1")
    target = server.request_lines[-1].split()[1]
    up_writer.write(head.replace(target.encode(), b"/" + target.split("/", 3)[3].encode(), 1) + body)
    await up_writer.drain()
    writer.write(await up_reader.read(65536))
    await writer.drain()
    up_writer.close()


def test_the_environment_proxy_is_used_unless_no_proxy_exempts_the_host(monkeypatch: pytest.MonkeyPatch) -> None:
    with LocalServer(echo_keep_alive) as endpoint, LocalServer(forward_proxy) as proxy:
        url = f"http://127.0.0.1:{endpoint.port}/v1/chat/completions"
        monkeypatch.setenv("HTTP_PROXY", f"http://user:p%40ss@127.0.0.1:{proxy.port}")
        assert post_all(KeepAlivePool(url, {}), bodies(1)) == bodies(1)
        assert proxy.request_lines == [f"POST {url} HTTP/1.1"]
        assert "Proxy-Authorization: Basic dXNlcjpwQHNz" in proxy.request_heads[0]  # user:p@ss

        monkeypatch.setenv("NO_PROXY", "127.0.0.1")
        assert post_all(KeepAlivePool(url, {}), bodies(1)) == bodies(1)
        assert len(proxy.request_lines) == 1 and len(endpoint.request_lines) == 2


def test_unusable_proxy_or_header_is_a_usage_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HTTPS_PROXY", "socks5://127.0.0.1:1080")
    with pytest.raises(UsageError, match=r"socks5:// .* not supported"):
        environment_proxy("https://api.example.com/v1")
    with pytest.raises(UsageError, match=r"'X-Name'.*non-ASCII"):
        KeepAlivePool("http://127.0.0.1:9/v1/chat/completions", {"X-Name": "Jürgen"})
    with pytest.raises(UsageError, match=r"'X-Extra'.*line break"):
        KeepAlivePool("http://127.0.0.1:9/v1/chat/completions", {"X-Extra": "a\r\nX-Injected: 1"})
    with pytest.raises(UsageError, match="not an http:// or https:// URL"):
        KeepAlivePool("localhost:8000/v1/chat/completions", {})


@pytest.fixture
def tls_server_context(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> ssl.SSLContext:
    """A throwaway certificate for 127.0.0.1, trusted by the client through SSL_CERT_FILE."""
    if shutil.which("openssl") is None:
        pytest.skip("the openssl command is needed to make a test certificate")
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=127.0.0.1",
         "-addext", "subjectAltName=IP:127.0.0.1", "-keyout", str(key), "-out", str(cert)],
        check=True, capture_output=True,
    )  # fmt: skip
    monkeypatch.setenv("SSL_CERT_FILE", str(cert))
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(cert, key)
    return context


async def connect_tunnel(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, server: LocalServer) -> None:
    head = (await reader.readuntil(b"\r\n\r\n")).decode("latin-1")
    server.request_heads.append(head)
    authority = head.split("\r\n")[0].split(" ")[1]  # CONNECT host:port HTTP/1.1
    host, port = authority.rsplit(":", 1)
    up_reader, up_writer = await asyncio.open_connection(host, int(port))
    writer.write(b"HTTP/1.1 200 Connection established\r\n\r\n")

    async def pump(src: asyncio.StreamReader, dst: asyncio.StreamWriter) -> None:
        while data := await src.read(65536):
            dst.write(data)
            await dst.drain()
        dst.close()

    await asyncio.gather(pump(reader, up_writer), pump(up_reader, writer), return_exceptions=True)


def test_https_directly_and_through_a_connect_tunnel(
    tls_server_context: ssl.SSLContext, monkeypatch: pytest.MonkeyPatch
) -> None:
    with LocalServer(echo_keep_alive, tls=tls_server_context) as endpoint, LocalServer(connect_tunnel) as proxy:
        url = f"https://127.0.0.1:{endpoint.port}/v1/chat/completions"
        assert post_all(KeepAlivePool(url, {}), bodies(3)) == bodies(3)
        assert endpoint.connections == 1 and endpoint.request_lines[0] == "POST /v1/chat/completions HTTP/1.1"

        monkeypatch.setenv("HTTPS_PROXY", f"http://user:pw@127.0.0.1:{proxy.port}")
        assert post_all(KeepAlivePool(url, {}), bodies(2)) == bodies(2)
        (head,) = proxy.request_heads
        assert head.startswith(f"CONNECT 127.0.0.1:{endpoint.port} HTTP/1.1\r\n")
        assert "Proxy-Authorization: Basic dXNlcjpwdw==" in head  # user:pw, to the proxy only
        assert endpoint.connections == 2 and len(endpoint.request_lines) == 5
        assert not any("Proxy-Authorization" in h for h in endpoint.request_heads)
