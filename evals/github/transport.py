"""The HTTP layer under ``evals.github.client.GitHubClient``: one API call with timeouts, retries (one
line per retry in the job log), redirects only on the API host, typed errors, and the rule for
where the token may go (the API host; for an upload, the host of the ``upload_url`` the API
returned, same scheme; never the storage host downloads redirect to). See evals/github/client.py for the
tuning variables and the public API."""

from __future__ import annotations

import json
import os
import random
import re
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import partial
from typing import Any, TypeVar
from urllib.parse import quote, urlsplit

import httpx

from evals.common.errors import InfraError, UsageError
from evals.common.escape import log_value
from evals.results import console

DEFAULT_API_URL = "https://api.github.com"
API_VERSION = "2022-11-28"
USER_AGENT = "evalgate"
PER_PAGE = 100

T = TypeVar("T")


# ---------------------------------------------------------------------------------------------
# Errors


class GitHubError(InfraError):
    """A GitHub API call failed (after retries where retrying made sense)."""

    def __init__(self, message: str, *, status: int | None = None):
        super().__init__(message)
        self.status = status


class NotFound(GitHubError):
    """404: no such release/asset/issue, or the token cannot see the repository."""


class Unauthorized(GitHubError):
    """401: the token is missing, malformed, expired or revoked."""


class PermissionDenied(GitHubError):
    """403 that is not a rate limit. ``permission`` is what the token lacks, e.g. ``contents: write``."""

    def __init__(self, message: str, *, status: int | None = 403, permission: str | None = None):
        super().__init__(message, status=status)
        self.permission = permission


class ValidationFailed(GitHubError):
    """422. ``codes`` are the ``errors[].code`` values GitHub sent (``already_exists``, ``custom``...)."""

    def __init__(self, message: str, *, status: int | None = 422, codes: tuple[str, ...] = ()):
        super().__init__(message, status=status)
        self.codes = codes


class AssetExists(ValidationFailed):
    """422 ``already_exists``: a release asset with that name exists (a concurrent writer, or a retry)."""


class ImmutableRelease(ValidationFailed):
    """422 "Cannot upload assets to an immutable release": the release is published and the
    repository (or its organisation) has immutable releases on."""


class RepositoryNotVisible(GitHubError):
    """404 on ``GET /repos/{owner}/{repo}``: the repository does not exist or the token cannot see it."""


class RateLimited(GitHubError):
    """Still rate limited after retries, or the limit resets later than we are willing to wait."""


class Truncated(GitHubError):
    """A response body ended before its announced Content-Length (after retries)."""


class TransportFailed(GitHubError):
    """Connection refused/reset or timed out (after retries)."""


@dataclass(frozen=True)
class Op:
    """What a request is for: named in errors, and the permission a 403 means is missing."""

    what: str
    permission: str | None = None


_RETRYABLE_TRANSPORT = (httpx.TransportError,)
_BEFORE_SEND = (httpx.ConnectError, httpx.ConnectTimeout, httpx.PoolTimeout)


class Retry(Exception):
    """Internal: this attempt failed in a way worth retrying; ``error`` is raised if retries run out."""

    def __init__(self, error: GitHubError, wait: float | None = None, *, sent: bool = True):
        super().__init__(str(error))
        self.error = error
        self.wait = wait
        self.sent = sent  # False when the request certainly never reached the server


class Transport:
    """Calls to one repository's API; ``evals.github.client.GitHubClient`` adds the endpoints. ``sleep``
    is the hook tests replace to skip the waits."""

    def __init__(
        self,
        token: str | None,
        *,
        api_url: str | None = None,
        repo: str | None = None,
        env: Mapping[str, str] | None = None,
        timeout: float | None = None,
        connect_timeout: float = 10.0,
        max_retries: int | None = None,
        backoff: float | None = None,
        max_backoff: float = 30.0,
        max_wait: float | None = None,
        sleep: Callable[[float], None] = time.sleep,
    ):
        env = os.environ if env is None else env
        self._token = token or None
        self.api_url = (api_url or env.get("GITHUB_API_URL") or DEFAULT_API_URL).rstrip("/")
        self.repo = repo or env.get("GITHUB_REPOSITORY") or ""
        if not re.fullmatch(r"[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+", self.repo):
            raise UsageError(f"GitHub repository {self.repo!r} is not 'owner/name' (set GITHUB_REPOSITORY)")
        timeout = timeout if timeout is not None else _env_number(env, "EVALGATE_GITHUB_TIMEOUT", 30.0)
        self.max_retries = int(
            max_retries if max_retries is not None else _env_number(env, "EVALGATE_GITHUB_RETRIES", 5)
        )
        self.backoff = backoff if backoff is not None else _env_number(env, "EVALGATE_GITHUB_BACKOFF", 1.0)
        self.max_backoff = max_backoff
        self.max_wait = max_wait if max_wait is not None else _env_number(env, "EVALGATE_GITHUB_MAX_WAIT", 120.0)
        self._sleep = sleep
        timeouts = httpx.Timeout(timeout, connect=connect_timeout)
        # One TLS context for both clients: loading the CA bundle is most of a client's start-up.
        # The environment is trusted for proxies and SSL_CERT_FILE (self-hosted runners); httpx
        # reads no credentials from it. Redirects are followed by hand: API redirects only on the
        # API host (with the token), asset redirects to storage always without it.
        tls = httpx.create_ssl_context()
        self._http = httpx.Client(timeout=timeouts, follow_redirects=False, verify=tls)
        self._storage = httpx.Client(timeout=timeouts, follow_redirects=False, verify=tls)
        api = urlsplit(self.api_url)
        self._api_origin = (api.scheme, api.netloc.lower())
        # The token goes to the API host, and for uploads to the host of the `upload_url` the API
        # itself returned (uploads.github.com, uploads.<subdomain>.ghe.com, the GHES host), same scheme.
        self._token_origins = {self._api_origin}

    # -- lifecycle -----------------------------------------------------------------------------

    def close(self) -> None:
        self._http.close()
        self._storage.close()

    def __enter__(self) -> Transport:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- plumbing ------------------------------------------------------------------------------

    def _is_api_url(self, url: str) -> bool:
        """On the API host and under the API's path (``/api/v3`` on GHES, whose storage URLs
        share the host but not the path)."""
        base = urlsplit(self.api_url).path.rstrip("/")
        return origin(url) == self._api_origin and (not base or urlsplit(url).path.startswith(base + "/"))

    def _repo_url(self, path: str) -> str:
        return f"{self.api_url}/repos/{self.repo}{path}"

    def _paginate(self, url: str, op: Op) -> Iterator[Any]:
        params: dict[str, Any] | None = {"per_page": PER_PAGE}
        next_url: str | None = url
        while next_url:
            response, page = self._with_retries(op, partial(self._get_page, next_url, op, params))
            if not isinstance(page, list):
                raise GitHubError(f"{op.what}: expected a list, got {type(page).__name__}", status=response.status_code)
            yield from page
            next_url = response.links.get("next", {}).get("url")
            params = None  # the Link URL carries per_page and page already
            if next_url and origin(next_url) != self._api_origin:
                raise GitHubError(f"{op.what}: the next page link points off the API host ({origin(next_url)[1]})")

    def _get_page(self, url: str, op: Op, params: dict[str, Any] | None) -> tuple[httpx.Response, Any]:
        response = self._checked("GET", url, op, params=params)
        return response, _parse_json(response, op)

    def _json(
        self,
        method: str,
        url: str,
        op: Op,
        *,
        json_body: Any = None,
        params: dict[str, Any] | None = None,
        content: bytes | None = None,
        content_type: str | None = None,
        recover: Callable[[], Any] | None = None,
        token_origin: tuple[str, str] | None = None,
    ) -> Any:
        """One API call with retries. ``recover`` marks a request that is not idempotent: before it
        is re-sent after an ambiguous failure, ``recover()`` is asked whether the first attempt took
        effect (returns that result) or not (None: send again)."""
        idempotent = recover is None
        attempted = False

        def attempt() -> Any:
            nonlocal attempted
            if attempted and not idempotent:
                assert recover is not None
                found = recover()
                if found is not None:
                    return found
            attempted = True
            try:
                response = self._checked(
                    method,
                    url,
                    op,
                    json_body=json_body,
                    params=params,
                    content=content,
                    content_type=content_type,
                    token_origin=token_origin,
                )
            except Retry as retry:
                attempted = retry.sent
                raise
            if response.status_code == 204 or not response.content:
                return None
            return _parse_json(response, op)

        return self._with_retries(op, attempt)

    def _checked(self, method: str, url: str, op: Op, **kwargs: Any) -> httpx.Response:
        response = self._send(method, url, op, **kwargs)
        hops = 0
        # A renamed/transferred repository answers 301/307 on the same API host.
        while response.status_code in (301, 302, 307, 308) and hops < 3:
            location = response.headers.get("location")
            target = str(response.url.join(location)) if location else ""
            if not target or origin(target) != self._api_origin:
                break
            hops += 1
            response = self._send(method, target, op, **kwargs)
        self._raise_for_status(response, op)
        return response

    def _send(
        self,
        method: str,
        url: str,
        op: Op,
        *,
        accept: str = "application/vnd.github+json",
        json_body: Any = None,
        params: dict[str, Any] | None = None,
        content: bytes | None = None,
        content_type: str | None = None,
        storage: bool = False,
        token_origin: tuple[str, str] | None = None,
    ) -> httpx.Response:
        headers = {"Accept": accept, "User-Agent": USER_AGENT}
        if accept == "application/octet-stream":
            # The exact stored bytes: no transparent decompression to change their size or digest.
            headers["Accept-Encoding"] = "identity"
        if not storage:
            headers["X-GitHub-Api-Version"] = API_VERSION
            if self._token and (origin(url) in self._token_origins or origin(url) == token_origin):
                headers["Authorization"] = f"Bearer {self._token}"
        if content_type:
            headers["Content-Type"] = content_type
        client = self._storage if storage else self._http
        try:
            response = client.request(method, url, headers=headers, params=params, json=json_body, content=content)
            response.read()
        except _BEFORE_SEND as err:
            raise Retry(TransportFailed(f"{op.what}: {_describe_transport(err)}"), sent=False) from None
        except httpx.RemoteProtocolError as err:
            # h11 raises this when the peer closes before Content-Length bytes arrived.
            kind = (
                Truncated if "incomplete" in str(err).lower() or "peer closed" in str(err).lower() else TransportFailed
            )
            raise Retry(kind(f"{op.what}: {_describe_transport(err)}")) from None
        except _RETRYABLE_TRANSPORT as err:
            raise Retry(TransportFailed(f"{op.what}: {_describe_transport(err)}")) from None
        declared = response.headers.get("content-length")
        short = declared and declared.isdigit() and len(response.content) < int(declared)
        if short and "content-encoding" not in response.headers:
            raise Retry(Truncated(f"{op.what}: body cut short ({len(response.content)} of {declared} bytes)"))
        return response

    def _raise_for_status(self, response: httpx.Response, op: Op) -> None:
        status = response.status_code
        if status < 300:
            return
        message = self._scrub(error_message(response))
        where = f"{op.what} ({response.request.method} {_path(response.request.url)})"
        wait = _rate_limit_wait(response, message)
        if wait is not None:
            raise Retry(RateLimited(f"{where}: rate limited by GitHub ({status}: {message})", status=status), wait)
        if status >= 500:
            raise Retry(GitHubError(f"{where}: GitHub answered {status} ({message})", status=status))
        if status == 401:
            raise Unauthorized(
                f"{where}: the token was rejected (401 {message}); check the github-token input / GITHUB_TOKEN",
                status=status,
            )
        if status == 403:
            need = op.permission
            hint = (
                f"the token lacks the `{need}` permission: grant it under `permissions:` in the job "
                "(a pull request from a fork only ever gets a read-only token)"
                if need
                else "the token is not allowed to do this"
            )
            raise PermissionDenied(f"{where}: 403 {message}: {hint}", status=status, permission=need)
        if status == 404:
            raise NotFound(
                f"{where}: 404 not found (or the token cannot see {self.repo}; check repo and token)", status=status
            )
        if status == 422:
            codes = _error_codes(response)
            cls = AssetExists if "already_exists" in codes else ValidationFailed
            if "immutable release" in message.lower():
                cls = ImmutableRelease
            raise cls(f"{where}: 422 {message}", status=status, codes=codes)
        raise GitHubError(f"{where}: GitHub answered {status} ({message})", status=status)

    def _with_retries(self, op: Op, attempt: Callable[[], T]) -> T:
        tries = 0
        while True:
            try:
                return attempt()
            except Retry as retry:
                tries += 1
                if tries > self.max_retries:
                    if self.max_retries:
                        retries = "1 retry" if self.max_retries == 1 else f"{self.max_retries} retries"
                        retry.error.args = (f"{retry.error} (gave up after {retries})",)
                    raise retry.error from None
                if retry.wait is not None:
                    if retry.wait > self.max_wait:
                        raise RateLimited(
                            f"{retry.error} — GitHub asks to wait {retry.wait:.0f}s, more than the "
                            f"{self.max_wait:.0f}s we wait; retry later",
                            status=retry.error.status,
                        ) from None
                    delay = retry.wait + random.uniform(0, 1)
                else:
                    delay = random.uniform(0, min(self.max_backoff, self.backoff * 2 ** (tries - 1)))
                # One line per retry in the job log: a run that survived faults shows them.
                console.info(
                    f"GitHub: {log_value(retry.error, limit=400)}; retry {tries}/{self.max_retries} in {delay:.1f}s"
                )
                self._sleep(delay)

    def _scrub(self, text: str) -> str:
        return text.replace(self._token, "***") if self._token else text


# ---------------------------------------------------------------------------------------------
# helpers


def path_segment(text: str) -> str:
    return quote(text, safe="")


def origin(url: str) -> tuple[str, str]:
    parts = urlsplit(url)
    return parts.scheme, parts.netloc.lower()


def _path(url: httpx.URL) -> str:
    # Never the query: signed storage URLs carry credentials there.
    return url.path


def _parse_json(response: httpx.Response, op: Op) -> Any:
    try:
        return json.loads(response.content)
    except ValueError:
        raise Retry(
            GitHubError(f"{op.what}: GitHub sent a body that is not JSON", status=response.status_code)
        ) from None


def error_message(response: httpx.Response) -> str:
    try:
        data = json.loads(response.content)
    except ValueError:
        return response.reason_phrase or "no message"
    if not isinstance(data, dict):
        return "no message"
    message = str(data.get("message") or response.reason_phrase or "no message")
    details = [str(e.get("message") or e.get("code")) for e in data.get("errors") or [] if isinstance(e, dict)]
    return f"{message}: {'; '.join(details)}" if details else message


def _error_codes(response: httpx.Response) -> tuple[str, ...]:
    try:
        data = json.loads(response.content)
    except ValueError:
        return ()
    errors = data.get("errors") if isinstance(data, dict) else None
    return tuple(str(e.get("code")) for e in errors or [] if isinstance(e, dict) and e.get("code"))


def _rate_limit_wait(response: httpx.Response, message: str) -> float | None:
    """Seconds GitHub asks us to wait, or None when this is not a rate limit. Per GitHub's docs:
    honour Retry-After; else, with X-RateLimit-Remaining 0, wait until X-RateLimit-Reset; a
    secondary limit without either header means at least a minute."""
    status = response.status_code
    if status not in (403, 429):
        return None
    headers = response.headers
    retry_after = headers.get("retry-after")
    if retry_after:
        try:
            return max(0.0, float(retry_after))
        except ValueError:
            try:
                when = datetime.strptime(retry_after, "%a, %d %b %Y %H:%M:%S GMT").replace(tzinfo=UTC)
                return max(0.0, (when - datetime.now(UTC)).total_seconds())
            except ValueError:
                return 60.0
    if headers.get("x-ratelimit-remaining") == "0" and (headers.get("x-ratelimit-reset") or "").isdigit():
        return max(0.0, int(headers["x-ratelimit-reset"]) - time.time())
    # "abuse detection mechanism": what secondary rate limits were called before 2021, and still
    # are on older GitHub Enterprise Server versions.
    if status == 429 or "rate limit" in message.lower() or "abuse detection" in message.lower():
        return 60.0
    return None


def _env_number(env: Mapping[str, str], name: str, default: float) -> float:
    raw = env.get(name)
    if not raw:
        return default
    try:
        value = float(raw)
    except ValueError:
        raise UsageError(f"{name}={raw!r} is not a number") from None
    if value < 0:
        raise UsageError(f"{name}={raw!r} must not be negative")
    return value


def _describe_transport(err: httpx.TransportError) -> str:
    kind = type(err).__name__
    text = str(err) or "no detail"
    return f"{kind} ({text})"
