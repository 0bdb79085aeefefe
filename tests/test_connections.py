"""The OpenAI target's keep-alive connections (evals/connections.py) against real local sockets:
connections are reused, one the server dropped while idle is replaced without a failed call, and
proxies named in the environment are used (or bypassed by NO_PROXY) as httpx would."""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Awaitable, Callable

import pytest

from evals.connections import KeepAlivePool, environment_proxy
from evals.errors import UsageError

Handler = Callable[[asyncio.StreamReader, asyncio.StreamWriter, "LocalServer"], Awaitable[None]]


class LocalServer:
    """A TCP server on 127.0.0.1 with its own event loop in a thread; counts connections."""

    def __init__(self, handler: Handler):
        self.handler = handler
        self.connections = 0
        self.request_lines: list[str] = []
        self.request_heads: list[str] = []
        self._tasks: set[asyncio.Task[None]] = set()
        self._loop = asyncio.new_event_loop()
        self._server = self._loop.run_until_complete(asyncio.start_server(self._serve, "127.0.0.1", 0))
        self.port = self._server.sockets[0].getsockname()[1]
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._tasks.add(task)
        self.connections += 1
        try:
            await self.handler(reader, writer, self)
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            self._tasks.discard(task)
            writer.close()

    async def read_request(self, reader: asyncio.StreamReader) -> bytes:
        head = (await reader.readuntil(b"\r\n\r\n")).decode("latin-1")
        self.request_lines.append(head.split("\r\n")[0])
        self.request_heads.append(head)
        length = next(
            int(line.split(":")[1]) for line in head.lower().split("\r\n") if line.startswith("content-length")
        )
        return await reader.readexactly(length)

    def __enter__(self) -> LocalServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        async def shutdown() -> None:
            self._server.close()
            for task in list(self._tasks):
                task.cancel()
            await asyncio.gather(*self._tasks, return_exceptions=True)

        asyncio.run_coroutine_threadsafe(shutdown(), self._loop).result(timeout=5)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=5)
        self._loop.close()


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
    with pytest.raises(UsageError, match="not an http:// or https:// URL"):
        KeepAlivePool("localhost:8000/v1/chat/completions", {})
