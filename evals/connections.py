"""HTTP/1.1 keep-alive connections to one endpoint, for the OpenAI target's hot path.

httpx's pool (httpcore's ``AsyncConnectionPool``) re-examines every pooled connection — a
readability poll each — whenever a request starts or ends: with 50 connections that was ~4 ms of
CPU per request, and httpx's client layer (URL merging, cookies, header models) added ~0.15 ms.
Here a call takes an idle connection (or opens one) and gives it back once the response is read:
a flat cost per request, and as many connections as calls in flight. The connections are
httpcore's HTTP/1.1 ones (h11; TLS; proxy forwarding and tunnels) on asyncio streams, and so are
the errors they raise: ``httpcore.TimeoutException``, ``NetworkError``, ``ProtocolError``,
``ProxyError``. Measured at concurrency 50 against a local server, a request now costs ~0.17 ms of
CPU, where httpx took ~0.5 ms (with several small pools) and ~4.5 ms (with one)."""

from __future__ import annotations

import asyncio
import contextvars
import select
import ssl
import urllib.parse
import urllib.request
from collections.abc import Awaitable, Iterable
from typing import Any, NamedTuple, TypeVar

import httpcore
import httpx

from evals import __version__
from evals.errors import UsageError

KEEPALIVE_S = 5.0  # httpx's default: an idle connection older than this is not reused
CONNECT_TIMEOUT_S = 10.0  # TCP connect (and TLS handshake) of one connection, at most
FLUSH_BYTES = 64 * 1024  # a larger request body is sent as it is written, not held back
T = TypeVar("T")


class _Received:
    """Response bytes read during one exchange."""

    count = 0


# Counted by AsyncioStream.read for the exchange running in this task. A context variable
# because a proxied connection's stream is opened inside httpcore, out of the pool's reach.
_RECEIVED: contextvars.ContextVar[_Received | None] = contextvars.ContextVar("evalgate_received", default=None)


def socket_readable(sock: Any) -> bool:
    """Whether ``sock`` has something to read (or is gone): on an idle HTTP/1.1 connection that is
    the server's EOF, a reset, or bytes no request asked for — never something to send a request after."""
    fd = sock.fileno() if sock is not None else -1
    if fd < 0:
        return True
    poller = select.poll()
    poller.register(fd, select.POLLIN)
    return bool(poller.poll(0))


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


def environment_proxy(url: str) -> str | None:
    """The proxy ``HTTP(S)_PROXY`` / ``ALL_PROXY`` name for ``url``, unless ``NO_PROXY`` exempts it
    (self-hosted runners; what httpx would use)."""
    parts = urllib.parse.urlsplit(url)
    proxies = urllib.request.getproxies_environment()
    proxy = proxies.get(parts.scheme) or proxies.get("all")
    if not proxy or urllib.request.proxy_bypass_environment(parts.hostname or "", proxies):
        return None
    proxy = proxy if "://" in proxy else f"http://{proxy}"
    if not proxy.startswith(("http://", "https://")):
        raise UsageError(
            f"proxy {proxy.split('://')[0]}:// from the environment is not supported for {url}: use an HTTP(S) proxy"
        )
    return proxy


async def _within(timeout: float | None, step: Awaitable[T]) -> T:
    if timeout is None:
        return await step
    async with asyncio.timeout(timeout):
        return await step


class AsyncioStream(httpcore.AsyncNetworkStream):
    """One connection as asyncio streams; OS and TLS errors become httpcore's, as with its own backends."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter):
        self._reader = reader
        self._writer = writer
        self._unsent: list[bytes] = []

    async def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        if self._unsent:
            await self._flush(timeout)
        try:
            data = await _within(timeout, self._reader.read(max_bytes))
        except TimeoutError:
            raise httpcore.ReadTimeout(f"no data within {timeout:g}s") from None
        except OSError as exc:
            raise httpcore.ReadError(str(exc) or type(exc).__name__) from exc
        received = _RECEIVED.get()
        if received is not None:
            received.count += len(data)
        return data

    async def write(self, buffer: bytes, timeout: float | None = None) -> None:
        # httpcore writes a request's head and body separately, and the socket has TCP_NODELAY:
        # held until the response is read, they leave in one send (one segment, one wake-up).
        if buffer:
            self._unsent.append(buffer)
        if sum(map(len, self._unsent)) >= FLUSH_BYTES:
            await self._flush(timeout)

    async def _flush(self, timeout: float | None) -> None:
        data, self._unsent = b"".join(self._unsent), []
        try:
            self._writer.write(data)
            await _within(timeout, self._writer.drain())
        except TimeoutError:
            raise httpcore.WriteTimeout(f"could not send within {timeout:g}s") from None
        except OSError as exc:
            raise httpcore.WriteError(str(exc) or type(exc).__name__) from exc

    async def aclose(self) -> None:
        # Not waiting for the close to complete: it runs from cleanup after a timeout or a
        # cancellation, where a peer that stopped reading must not hold it up.
        self._writer.close()

    async def start_tls(
        self, ssl_context: ssl.SSLContext, server_hostname: str | None = None, timeout: float | None = None
    ) -> httpcore.AsyncNetworkStream:
        if self._unsent:
            await self._flush(timeout)
        try:
            await _within(timeout, self._writer.start_tls(ssl_context, server_hostname=server_hostname))
        except TimeoutError:
            raise httpcore.ConnectTimeout(f"TLS handshake not done within {timeout:g}s") from None
        except (OSError, ssl.SSLError) as exc:
            raise httpcore.ConnectError(str(exc) or type(exc).__name__) from exc
        return self

    def get_extra_info(self, info: str) -> Any:
        if info == "is_readable":
            # The loop shows a server's hang-up as EOF only once it has run since the FIN came in;
            # a request sent right after the previous response would beat it. The socket tells now.
            return (
                self._reader.at_eof()
                or self._writer.is_closing()
                or socket_readable(self._writer.get_extra_info("socket"))
            )
        name = {"ssl_object": "ssl_object", "client_addr": "sockname", "server_addr": "peername", "socket": "socket"}
        return self._writer.get_extra_info(name[info]) if info in name else None


class AsyncioBackend(httpcore.AsyncNetworkBackend):
    """httpcore's network layer on plain asyncio streams. Its default (anyio) wraps every read and
    write in cancel scopes and checkpoints; this one (with a request's writes sent together) takes
    ~0.06 ms less CPU per request, a quarter of the total."""

    async def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore.AsyncNetworkStream:
        try:
            reader, writer = await _within(
                timeout,
                asyncio.open_connection(host, port, local_addr=(local_address, 0) if local_address else None),
            )
        except TimeoutError:
            raise httpcore.ConnectTimeout(f"no connection to {host}:{port} within {timeout:g}s") from None
        except OSError as exc:
            raise httpcore.ConnectError(str(exc) or type(exc).__name__) from exc
        sock = writer.get_extra_info("socket")
        for option in socket_options or ():
            sock.setsockopt(*option)
        return AsyncioStream(reader, writer)

    async def sleep(self, seconds: float) -> None:
        await asyncio.sleep(seconds)


class KeepAlivePool:
    """POSTs to ``url`` with fixed ``headers``. The caller bounds each call (the runner's
    per-attempt timeout cancels it, and a cancelled exchange closes its connection); the pool's
    only timeout is ``connect_timeout_s`` for opening a connection (``httpcore.ConnectTimeout``),
    so an endpoint that cannot be reached shows as that, not as a slow answer."""

    def __init__(self, url: str, headers: dict[str, str], connect_timeout_s: float = CONNECT_TIMEOUT_S):
        parts = urllib.parse.urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise UsageError(f"{url!r} is not an http:// or https:// URL with a host")
        self.url = httpcore.URL(url)
        host = parts.netloc.rpartition("@")[2]
        fixed = {
            "host": ("Host", host),
            "accept": ("Accept", "*/*"),
            "user-agent": ("User-Agent", f"evalgate/{__version__}"),
        }
        fixed.update({k.lower(): (k, v) for k, v in headers.items()})
        bad = [k for k, v in fixed.values() if not (k + v).isascii()]
        if bad:
            raise UsageError(f"HTTP header {bad[0]!r} for {url} holds non-ASCII text; HTTP/1.1 headers are ASCII")
        # Built once: header validation and encoding are a noticeable part of a request's cost.
        self.headers = [(k.encode("ascii"), v.encode("ascii")) for k, v in fixed.values()]
        self.connect_timeout_s = connect_timeout_s
        # httpcore reads it for the connections it opens itself (through a proxy); read and
        # write have none (None), as above.
        self._extensions = {"timeout": {"connect": connect_timeout_s}}
        self._backend = AsyncioBackend()
        proxy = environment_proxy(url)
        # The CA bundle (certifi, or SSL_CERT_FILE as httpx reads it) is loaded only for https.
        self._tls = (
            httpx.create_ssl_context() if url.startswith("https:") or (proxy or "").startswith("https:") else None
        )
        if self._tls is not None:
            self._tls.set_alpn_protocols(["http/1.1"])
        self._proxy: httpcore.AsyncHTTPProxy | None = None
        if proxy is not None:
            parts = urllib.parse.urlsplit(proxy)
            auth = (
                (urllib.parse.unquote(parts.username), urllib.parse.unquote(parts.password or ""))
                if parts.username
                else None
            )
            # Used only to make connections through the proxy (forwarding, or a CONNECT tunnel).
            self._proxy = httpcore.AsyncHTTPProxy(
                proxy_url=parts._replace(netloc=parts.netloc.rpartition("@")[2]).geturl(),
                proxy_auth=auth,
                ssl_context=self._tls,
                proxy_ssl_context=self._tls if parts.scheme == "https" else None,
                keepalive_expiry=KEEPALIVE_S,
                network_backend=self._backend,
            )
        self._idle: list[httpcore.AsyncConnectionInterface] = []

    async def _idle_connection(self) -> httpcore.AsyncConnectionInterface | None:
        while self._idle:
            connection = self._idle.pop()  # the most recently used: the likeliest to be alive
            if connection.is_available() and not connection.has_expired():
                return connection
            await connection.aclose()  # idle too long, or the server hung up
        return None

    async def _new_connection(self) -> httpcore.AsyncConnectionInterface:
        if self._proxy is not None:
            return self._proxy.create_connection(self.url.origin)
        return await self._connect()

    async def _connect(self) -> httpcore.AsyncHTTP11Connection:
        origin = self.url.origin
        host = origin.host.decode("ascii")
        stream = await self._backend.connect_tcp(host, origin.port, timeout=self.connect_timeout_s)
        if self._tls is not None:
            try:
                stream = await stream.start_tls(self._tls, server_hostname=host, timeout=self.connect_timeout_s)
            except BaseException:
                await stream.aclose()
                raise
        connection = httpcore.AsyncHTTP11Connection(origin, stream, keepalive_expiry=KEEPALIVE_S)
        # httpcore guards a connection's state with an anyio Lock, and every acquire of one yields
        # to the event loop (twice per request, and once more in httpcore's connection wrapper,
        # not used here): together ~20% of a request's CPU. asyncio's Lock gives the same guarantee
        # and takes a free lock at once. Should httpcore rename the attribute, this line does
        # nothing and only the speed-up is lost.
        connection._state_lock = asyncio.Lock()
        return connection

    async def post(self, body: bytes) -> Reply:
        headers = [*self.headers, (b"Content-Length", str(len(body)).encode())]
        request = httpcore.Request(b"POST", self.url, headers=headers, content=body, extensions=self._extensions)
        connection = await self._idle_connection()
        if connection is None:
            return await self._exchange(await self._new_connection(), request)
        received = _Received()
        token = _RECEIVED.set(received)
        try:
            return await self._exchange(connection, request)
        except (httpcore.NetworkError, httpcore.ProtocolError):
            if received.count:
                raise
        finally:
            _RECEIVED.reset(token)
        # Not a byte of an answer on a reused connection: the server closed it as the request
        # went out (the poll above cannot see a FIN still in flight), so the request never reached
        # its application. Sent once more on a new connection, as urllib3 and Go's net/http do.
        return await self._exchange(await self._new_connection(), request)

    async def _exchange(self, connection: httpcore.AsyncConnectionInterface, request: httpcore.Request) -> Reply:
        reusable = False
        try:
            response = await connection.handle_async_request(request)
            try:
                data = await response.aread()
            finally:
                await response.aclose()
            reusable = True
        finally:
            if reusable:
                self._idle.append(connection)
            else:
                await connection.aclose()
        return Reply(response.status, response.headers, data)

    async def aclose(self) -> None:
        idle, self._idle = self._idle, []
        for connection in idle:
            await connection.aclose()
