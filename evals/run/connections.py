"""HTTP/1.1 keep-alive connections to one URL: the OpenAI target's hot path, and a small client
for anything else that POSTs to one endpoint (``KeepAlivePool(url, headers).post(body)``).

Chosen on measurements (10,000 POSTs at concurrency 50 to the local test server, whole
processes, CPU user+sys; docs/running.md, Performance): httpcore's HTTP/1.1 connections (h11,
pure-Python parsing) took 2.1–2.2 s, an aiohttp session 1.5–1.6 s, and asyncio protocol
connections with httptools' response parser (llhttp, in C) 0.52 s — as little as a bare asyncio
loop that parses nothing but Content-Length. So: asyncio protocols here, llhttp for the HTTP
framing (status, headers, Content-Length and chunked bodies, keep-alive), and this module only
manages connections: reuse, staleness, proxies (``HTTP(S)_PROXY``/``NO_PROXY``: forwarding, or a
CONNECT tunnel for https), TLS, the connect timeout.

A call takes an idle connection (or opens one) and gives it back once the response is read: a
flat cost per request, and as many connections as calls in flight. The caller bounds each call
(the runner's per-attempt timeout cancels it, and a cancelled exchange closes its connection);
the only timeout here is for opening a connection, so an endpoint that cannot be reached shows as
``ConnectTimeout``, not as a slow answer."""

from __future__ import annotations

import asyncio
import base64
import re
import select
import ssl
import time
import urllib.parse
import urllib.request
from collections.abc import Callable
from typing import Any, NamedTuple

import httptools

from evals import __version__
from evals.common.errors import UsageError

KEEPALIVE_S = 5.0  # an idle connection older than this is not reused (httpx's default)
CONNECT_TIMEOUT_S = 10.0  # TCP connect, TLS handshake and proxy tunnel of one connection, at most
_TOKEN = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]+")


class HTTPError(Exception):
    """An exchange that ended without a complete response."""


class ConnectTimeout(HTTPError):
    """No connection within the connect timeout."""


class ConnectError(HTTPError):
    """Refused, unreachable, TLS handshake failed, or the proxy refused the tunnel."""


class ConnectionLost(HTTPError):
    """The connection closed or broke before the response was complete."""


class ProtocolError(HTTPError):
    """The server's bytes are not an HTTP/1.1 response."""


class Reply(NamedTuple):
    status: int
    headers: list[tuple[bytes, bytes]]
    body: bytes

    @property
    def text(self) -> str:
        return self.body.decode("utf-8", errors="replace")

    def header(self, name: str) -> str | None:
        wanted = name.lower().encode("latin-1")
        for key, value in self.headers:
            if key.lower() == wanted:
                return value.decode("latin-1")
        return None


OnResend = Callable[[str, float], None]


def environment_proxy(url: str) -> str | None:
    """The proxy ``HTTP(S)_PROXY`` / ``ALL_PROXY`` name for ``url``, unless ``NO_PROXY`` exempts it
    (self-hosted runners; what httpx would use)."""
    parts = urllib.parse.urlsplit(url)
    proxies = urllib.request.getproxies_environment()
    proxy = proxies.get(parts.scheme) or proxies.get("all")
    # The checker is wrong here: CPython's urllib.request has proxy_bypass_environment, but
    # typeshed leaves it out as undocumented.
    bypass = urllib.request.proxy_bypass_environment  # type: ignore[attr-defined]
    if not proxy or bypass(parts.hostname or "", proxies):
        return None
    proxy = proxy if "://" in proxy else f"http://{proxy}"
    if not proxy.startswith(("http://", "https://")):
        raise UsageError(
            f"proxy {proxy.split('://')[0]}:// from the environment is not supported for {url}: use an HTTP(S) proxy"
        )
    return proxy


class Connection(asyncio.Protocol):
    """One HTTP/1.1 connection; llhttp (httptools) parses what the server sends."""

    def __init__(self) -> None:
        self.transport: asyncio.Transport | None = None
        self.parser = httptools.HttpResponseParser(self)
        self.received = 0  # bytes of the current exchange's answer
        self.idle_since = 0.0
        self._waiter: asyncio.Future[Any] | None = None
        self._tunnel: bytearray | None = None  # a proxy's answer to CONNECT, while it comes in
        self._keep_alive = False
        self._closed = False
        self._reset_message()

    def _reset_message(self) -> None:
        self._headers: list[tuple[bytes, bytes]] = []
        self._body: list[bytes] = []
        self._status = 0
        self._until_eof = False  # a body without length or chunks ends when the server closes

    # ----------------------------------------------------------------------- asyncio callbacks

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # create_connection hands its protocol a Transport; asyncio.Protocol's signature says BaseTransport.
        self.transport = transport  # type: ignore[assignment]
        # Asks whether the idle socket has something to read: the server's EOF, a reset, or bytes
        # no request asked for — never something to send a request after. Made once per connection.
        self._poller = select.poll()
        self._poller.register(transport.get_extra_info("socket").fileno(), select.POLLIN)

    def data_received(self, data: bytes) -> None:
        if self._waiter is None:
            self.close()  # bytes no request asked for: this connection is not in a known state
            return
        if self._tunnel is not None:
            self._tunnel += data
            if b"\r\n\r\n" in self._tunnel:
                self._resolve(bytes(self._tunnel))
            return
        self.received += len(data)
        try:
            self.parser.feed_data(data)
        except httptools.HttpParserError as exc:
            self._fail(ProtocolError(f"malformed HTTP response: {exc}"))
            self.close()

    def eof_received(self) -> bool:
        if self._until_eof and self._waiter is not None:
            self._complete()
        return False  # close the transport

    def connection_lost(self, exc: Exception | None) -> None:
        self._closed = True
        if self._until_eof and self._waiter is not None:
            self._complete()
            return
        detail = f"{type(exc).__name__}: {exc}" if exc is not None else "the server closed the connection"
        self._fail(ConnectionLost(f"{detail} ({'after' if self.received else 'before'} any byte of an answer)"))

    # ------------------------------------------------------------------------ parser callbacks

    def on_message_begin(self) -> None:
        self._reset_message()

    def on_header(self, name: bytes, value: bytes) -> None:
        self._headers.append((name, value))

    def on_headers_complete(self) -> None:
        self._status = self.parser.get_status_code()
        framed = any(k.lower() in (b"content-length", b"transfer-encoding") for k, _ in self._headers)
        self._until_eof = not framed and self._status >= 200 and self._status not in (204, 304)

    def on_body(self, chunk: bytes) -> None:
        self._body.append(chunk)

    def on_message_complete(self) -> None:
        if self._status < 200:
            return  # an interim answer (100 Continue, 103 Early Hints): the real one follows
        self._complete()

    # ------------------------------------------------------------------------------------ use

    def _complete(self) -> None:
        self._keep_alive = not self._until_eof and self.parser.should_keep_alive()
        self._until_eof = False
        self._resolve(Reply(self._status, self._headers, b"".join(self._body)))

    def _resolve(self, value: Any) -> None:
        waiter, self._waiter = self._waiter, None
        if waiter is not None and not waiter.done():
            waiter.set_result(value)

    def _fail(self, exc: HTTPError) -> None:
        waiter, self._waiter = self._waiter, None
        if waiter is not None and not waiter.done():
            waiter.set_exception(exc)

    async def exchange(self, data: bytes) -> Reply:
        """Send one request (head and body in one write) and read its response."""
        assert self.transport is not None
        if self._closed:
            raise ConnectionLost("the connection is closed (before any byte of an answer)")
        self.received = 0
        self._keep_alive = False
        self._waiter = asyncio.get_running_loop().create_future()
        self.transport.write(data)
        return await self._waiter

    async def tunnel(self, request: bytes) -> int:
        """Send a proxy's CONNECT request; the status of its answer."""
        assert self.transport is not None
        self._tunnel = bytearray()
        self._waiter = asyncio.get_running_loop().create_future()
        self.transport.write(request)
        try:
            head: bytes = await self._waiter
        finally:
            self._tunnel = None
        status = head.split(b"\r\n", 1)[0].split(b" ", 2)
        if len(status) < 2 or not status[0].startswith(b"HTTP/") or not status[1].isdigit():
            raise ProtocolError(f"the proxy's answer to CONNECT is not HTTP: {head[:80]!r}")
        return int(status[1])

    @property
    def alive(self) -> bool:
        """Open, and the last answer allows another request on it."""
        return not self._closed and self._keep_alive and self.transport is not None and not self.transport.is_closing()

    def reusable(self) -> bool:
        """Alive, not idle too long, and no hang-up in flight. The loop shows a server's hang-up
        only once it has run since the FIN came in; a request sent right after the previous
        response would beat it. The socket tells now."""
        if not self.alive or time.monotonic() - self.idle_since > KEEPALIVE_S:
            return False
        return not self._poller.poll(0)

    def close(self) -> None:
        self._closed = True
        if self.transport is not None:
            self.transport.close()


class KeepAlivePool:
    """POSTs to ``url`` with fixed ``headers``; see the module doc."""

    def __init__(self, url: str, headers: dict[str, str], connect_timeout_s: float = CONNECT_TIMEOUT_S):
        parts = urllib.parse.urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise UsageError(f"{url!r} is not an http:// or https:// URL with a host")
        self.url = url
        self.connect_timeout_s = connect_timeout_s
        self.host = parts.hostname
        self.port = parts.port or (443 if parts.scheme == "https" else 80)
        authority = parts.netloc.rpartition("@")[2]
        fixed = {"host": ("Host", authority), "accept": ("Accept", "*/*")}
        fixed["user-agent"] = ("User-Agent", f"evalgate/{__version__}")
        fixed.update({k.lower(): (k, v) for k, v in headers.items()})
        target = urllib.parse.urlunsplit(("", "", parts.path or "/", parts.query, "")) or "/"

        proxy = environment_proxy(url)
        self._hop = (self.host, self.port, parts.scheme == "https")  # where connections go first
        self._tunnel: bytes | None = None
        if proxy is not None:
            p = urllib.parse.urlsplit(proxy)
            self._hop = (p.hostname or "", p.port or (443 if p.scheme == "https" else 80), p.scheme == "https")
            proxy_auth = []
            if p.username:
                credentials = f"{urllib.parse.unquote(p.username)}:{urllib.parse.unquote(p.password or '')}"
                proxy_auth = [("Proxy-Authorization", "Basic " + base64.b64encode(credentials.encode()).decode())]
            if parts.scheme == "https":
                lines = [f"CONNECT {self.host}:{self.port} HTTP/1.1", f"Host: {self.host}:{self.port}"]
                self._tunnel = "\r\n".join([*lines, *(f"{k}: {v}" for k, v in proxy_auth), "", ""]).encode("latin-1")
            else:
                target = urllib.parse.urlunsplit(parts._replace(netloc=authority, fragment=""))  # absolute form
                fixed.update({k.lower(): (k, v) for k, v in proxy_auth})
        for name, value in fixed.values():
            problem = (
                "holds non-ASCII text; HTTP/1.1 headers are ASCII"
                if not (name + value).isascii()
                else "is not a valid header name"
                if not _TOKEN.fullmatch(name)
                else "holds a line break"
                if any(c in value for c in "\r\n\0")
                else None
            )
            if problem:
                raise UsageError(f"HTTP header {name!r} for {url} {problem}")
        # Built once: all a request adds is its Content-Length and body.
        head = [f"POST {target} HTTP/1.1", *(f"{k}: {v}" for k, v in fixed.values()), "Content-Length: "]
        self._head = "\r\n".join(head).encode("ascii")
        self._tls: ssl.SSLContext | None = None
        if parts.scheme == "https" or self._hop[2]:
            # Only for https: httpx's context (certifi, or SSL_CERT_FILE/SSL_CERT_DIR) costs ~10 ms.
            import httpx

            self._tls = httpx.create_ssl_context()
            self._tls.set_alpn_protocols(["http/1.1"])
        self._idle: list[Connection] = []

    async def post(self, body: bytes, on_resend: OnResend | None = None) -> Reply:
        """The server's answer to ``body``. A request that got not a byte of an answer on a reused
        connection is sent once more on a new one; ``on_resend(message, latency_ms)`` hears of it."""
        data = b"%s%d\r\n\r\n%s" % (self._head, len(body), body)
        connection = self._idle_connection()
        if connection is not None:
            started = time.perf_counter()
            try:
                return await self._exchange(connection, data)
            except ConnectionLost as exc:
                if connection.received:
                    raise
                # The server closed the connection as the request went out (the poll in
                # ``reusable`` cannot see a FIN still in flight): the request never reached its
                # application. Sent again, as urllib3 and Go's net/http do — and said so.
                if on_resend is not None:
                    on_resend(
                        f"connection error: ConnectionLost: {exc} on a reused keep-alive connection; "
                        "sent again on a new connection",
                        (time.perf_counter() - started) * 1000.0,
                    )
        return await self._exchange(await self._connect(), data)

    def _idle_connection(self) -> Connection | None:
        while self._idle:
            connection = self._idle.pop()  # the most recently used: the likeliest to be alive
            if connection.reusable():
                return connection
            connection.close()  # idle too long, or the server hung up
        return None

    async def _exchange(self, connection: Connection, data: bytes) -> Reply:
        try:
            reply = await connection.exchange(data)
        except BaseException:
            connection.close()  # cancelled or broken mid-exchange: its state is unknown
            raise
        if connection.alive:
            connection.idle_since = time.monotonic()
            self._idle.append(connection)
        else:
            connection.close()
        return reply

    async def _connect(self) -> Connection:
        host, port, tls = self._hop
        loop = asyncio.get_running_loop()
        where = f"{host}:{port}" + (
            f" (proxy for {self.host}:{self.port})" if self._hop[:2] != (self.host, self.port) else ""
        )
        transport: asyncio.BaseTransport | None = None
        try:
            async with asyncio.timeout(self.connect_timeout_s):
                transport, connection = await loop.create_connection(
                    Connection, host, port, ssl=self._tls if tls else None, server_hostname=host if tls else None
                )
                if self._tunnel is not None:
                    status = await connection.tunnel(self._tunnel)
                    if not 200 <= status < 300:
                        raise ConnectError(
                            f"the proxy {host}:{port} refused a tunnel to {self.host}:{self.port}: HTTP {status}"
                        )
                    assert self._tls is not None
                    transport = await loop.start_tls(transport, connection, self._tls, server_hostname=self.host)
                    connection.transport = transport
            return connection
        except BaseException as exc:  # also a cancellation: no half-made connection stays open
            if transport is not None:
                transport.close()
            if isinstance(exc, TimeoutError):
                raise ConnectTimeout(f"no connection to {where} within {self.connect_timeout_s:g}s") from None
            if isinstance(exc, OSError):  # refused, unreachable, DNS, TLS (ssl.SSLError)
                raise ConnectError(f"{where}: {str(exc) or type(exc).__name__}") from None
            raise

    async def aclose(self) -> None:
        idle, self._idle = self._idle, []
        for connection in idle:
            connection.close()
