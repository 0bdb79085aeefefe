"""A local, stateful stand-in for the GitHub REST API, with a second host for asset storage and
scripted faults. Tests talk to it over real HTTP on 127.0.0.1.

Use it from a test module (pytest puts ``tests/`` on sys.path)::

    from fakes.github_server import GitHubServer, github_api_fixture  # noqa: F401  (registers the fixture)

    def test_something(github_api: GitHubServer):
        gh = github_api
        gh.api_url            # "http://127.0.0.1:<port>/api/v3" (GHES-style prefix; GitHubServer(prefix="") for none)
        gh.repo               # "octo/evals"
        gh.stranger_token     # a valid token for another repository: every /repos/octo/evals call is a 404
        gh.immutable_releases = True   # GitHub's immutable releases (see the endpoint list)
        gh.repo_permissions = "omitted"  # what GET /repos says of a token's permissions: "reported" (default),
                              # "omitted" or "push-false" (as GitHub answers for installation tokens that can write)
        gh.write_token        # installation token (like GITHUB_TOKEN with contents/pull-requests: write);
                              # login "github-actions[bot]", /user answers 403 like GitHub does
        gh.read_token         # same bot, read-only (a fork PR's token): every write answers 403
        gh.user_token         # a personal token of "octo-user" (/user works)
        gh.env(token=...)     # {"GITHUB_API_URL", "GITHUB_REPOSITORY", "GITHUB_TOKEN", fast EVALGATE_GITHUB_*}
        gh.client(token=...)  # an evals.github.client.GitHubClient with short timeouts; its waits are recorded
                              # in gh.sleeps instead of slept
        gh.faults.add("GET", r"/releases/assets/\\d+$", "500", times=1)   # see FAULT_KINDS
        gh.faults.add("GET", r"^/storage/", "truncate", server="storage")
        gh.faults.pending()   # faults that have not fired yet
        gh.add_release(tag), gh.add_asset(tag, name, data), gh.add_comment(pr, body, login)   # seed state
        gh.releases(), gh.assets(tag), gh.asset_data(tag, name), gh.comments(pr)               # inspect state
        gh.requests           # log: list[Request(server, method, path, query, auth, authorization_header,
                              # status, fault)]; ``auth`` is the token's label ("write", "read", "user",
                              # "bad") or None, never the token. gh.requests_to("storage") filters by host.
        gh.redirect_downloads = False   # serve asset bytes from the API with 200 (GitHub may do either)

Outside pytest: ``with GitHubServer() as gh: ...`` (or ``gh.start()`` / ``gh.stop()``).

Endpoints (as documented at docs.github.com/rest, paths under the prefix):
  GET  /user
  GET  /repos/{o}/{r}                                  (``permissions`` for an authenticated caller, as
                                                      ``repo_permissions`` says)
  POST /repos/{o}/{r}/git/refs                         (creates nothing: no git objects here, so a token that may
                                                      write gets 422 "Reference name is invalid" for a ref without
                                                      two slashes, else "Object does not exist"; read-only: 403)
  GET  /repos/{o}/{r}/immutable-releases               (user tokens: 200 enabled / 404; app tokens: 403)
  GET  /repos/{o}/{r}/releases                         (newest first; drafts only for tokens that can write)
  GET/PATCH/DELETE /repos/{o}/{r}/releases/{id}       (PATCH draft: false publishes; the tag must be free)
  GET  /repos/{o}/{r}/releases/tags/{tag}, GET /repos/{o}/{r}/releases/{id}, POST /repos/{o}/{r}/releases
  GET  /repos/{o}/{r}/releases/{id}/assets          (per_page ≤ 100, page; Link header)
  GET  /repos/{o}/{r}/releases/assets/{id}          (Accept: application/octet-stream → 302 to the storage
                                                      host, which rejects requests carrying Authorization)
  PATCH/DELETE /repos/{o}/{r}/releases/assets/{id}
  POST {upload host}/repos/{o}/{r}/releases/{id}/assets?name=   (the release's ``upload_url`` points here: a
       host of its own by default, like uploads.github.com; ``upload_host=False``: /api/uploads on the API host)
With ``immutable_releases`` on, a release is immutable once published: uploads answer 422 "Cannot upload
assets to an immutable release", its assets cannot be deleted, and its tag can never be used again.
  GET/POST /repos/{o}/{r}/issues/{n}/comments        (Link pagination; bodies > 65,536 characters → 422)
  GET/PATCH /repos/{o}/{r}/issues/comments/{id}
Link headers use ``/repositories/{id}/...`` URLs like github.com does; those are served too.
Every API response carries X-RateLimit-* headers. Unknown token → 401; read-only token on a write → 403.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import re
import secrets
import socket
import struct
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, quote, unquote, urlencode, urlsplit

import pytest

from evals.github.client import GitHubClient
from evals.github.models import ACTIONS_BOT_LOGIN

MAX_COMMENT_CHARS = 65_536
REPO_ID = 1296269
DOCS = "https://docs.github.com/rest"

# status kinds answer with that status; the rest break the connection in some way.
FAULT_KINDS = {
    "500": "answer 500 Internal Server Error",
    "502": "answer 502 Bad Gateway (an HTML body, like GitHub's front end)",
    "503": "answer 503 Service Unavailable",
    "429": "answer 429 with Retry-After: <retry_after>",
    "secondary": "answer 403 'You have exceeded a secondary rate limit' with Retry-After: <retry_after>",
    "ratelimit": "answer 403 with X-RateLimit-Remaining: 0 and X-RateLimit-Reset: now + <retry_after>",
    "reset": "read the request, then reset the connection (TCP RST) without doing anything",
    "reset-after": "do the request (state changes!), then reset the connection instead of answering",
    "starter": "uploads only: keep a half-finished asset (state 'starter'), then reset the connection",
    "moved": "answer 301 with a Location on the storage host (a client must not follow it with the token)",
    "expired": "storage: answer 403 AccessDenied 'Request has expired' (a signed URL that timed out)",
    "garbage": "answer 200 with an HTML body instead of JSON (a proxy's error page)",
    "hang": "wait <delay> seconds (past the client's timeout) without answering, then close",
    "truncate": "do the request, announce the full Content-Length, send half the body (none of an empty one), close",
    "404": "answer 404 Not Found (a host that does not serve the route: a proxy, an older GitHub Enterprise Server)",
}


@dataclass
class Fault:
    method: str
    path_regex: str
    kind: str
    times: int = 1
    server: str = "api"
    retry_after: int = 2
    delay: float = 3.0
    fired: int = 0


class Faults:
    """Scripted faults, matched in the order added: ``method`` ("*" for any), ``path_regex``
    (``re.search`` on the request path, prefix included), on ``server`` "api" (which includes the
    upload host) or "storage"."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._faults: list[Fault] = []

    def add(
        self,
        method: str,
        path_regex: str,
        kind: str,
        times: int = 1,
        *,
        server: str = "api",
        retry_after: int = 2,
        delay: float = 3.0,
    ) -> Fault:
        if kind not in FAULT_KINDS:
            raise ValueError(f"unknown fault kind {kind!r}; one of {sorted(FAULT_KINDS)}")
        fault = Fault(method.upper(), path_regex, kind, times, server, retry_after, delay)
        with self._lock:
            self._faults.append(fault)
        return fault

    def take(self, server: str, method: str, path: str) -> Fault | None:
        with self._lock:
            for fault in self._faults:
                if (
                    fault.fired < fault.times
                    and (fault.server == server or (fault.server, server) == ("api", "uploads"))
                    and fault.method in ("*", method)
                    and re.search(fault.path_regex, path)
                ):
                    fault.fired += 1
                    return fault
        return None

    def pending(self) -> list[Fault]:
        with self._lock:
            return [f for f in self._faults if f.fired < f.times]

    def clear(self) -> None:
        with self._lock:
            self._faults.clear()


@dataclass
class Request:
    server: str
    method: str
    path: str
    query: dict[str, list[str]]
    auth: str | None  # label of the token used, "bad" for an unknown one; never the token itself
    authorization_header: bool
    status: int | None = None
    fault: str | None = None


@dataclass
class _Token:
    label: str
    login: str
    write: bool
    app: bool  # installation tokens cannot read /user
    sees_repo: bool = True


@dataclass
class _Response:
    status: int
    body: bytes = b""
    headers: dict[str, str] = field(default_factory=dict)


class GitHubServer:
    """Start with ``start()`` (or use as a context manager); ``stop()`` ends hung requests too."""

    def __init__(
        self,
        *,
        prefix: str = "/api/v3",
        repo: str = "octo/evals",
        redirect_downloads: bool = True,
        upload_host: bool = True,
        immutable_releases: bool = False,
    ):
        self.prefix = prefix.rstrip("/")
        # upload_host: uploads go to a host of their own (uploads.github.com, uploads.<x>.ghe.com),
        # named only by the `upload_url` the API returns; False: on the API host (GHES, /api/uploads).
        self.upload_host = upload_host
        self.upload_prefix = "" if upload_host else "/api/uploads" if self.prefix else "/uploads"
        self.repo = repo
        self.redirect_downloads = redirect_downloads  # False: serve bytes directly with 200 (also allowed)
        # GitHub's immutable releases: a published release's assets cannot change, and a tag a
        # release used can never be used again (even after that release is deleted).
        self.immutable_releases = immutable_releases
        # What GET /repos says of the caller's permissions. GitHub's answer for an installation token
        # (GITHUB_TOKEN) is no evidence: public reports show `push: false`, or no `permissions` at all,
        # for tokens that can write. "reported": the token's own; "omitted"; "push-false".
        self.repo_permissions = "reported"
        self.write_token = "ghs_" + secrets.token_hex(18)
        self.read_token = "ghs_" + secrets.token_hex(18)
        self.user_token = "ghp_" + secrets.token_hex(18)
        self.stranger_token = "ghs_" + secrets.token_hex(18)  # valid, for another repository: this one is a 404
        self._tokens = {
            self.write_token: _Token("write", ACTIONS_BOT_LOGIN, True, True),
            self.read_token: _Token("read", ACTIONS_BOT_LOGIN, False, True),
            self.user_token: _Token("user", "octo-user", True, False),
            self.stranger_token: _Token("stranger", ACTIONS_BOT_LOGIN, True, True, sees_repo=False),
        }
        self._burned_tags: set[str] = set()
        self.latest_release_id: int | None = None  # the repository's "Latest release"
        self.faults = Faults()
        self.requests: list[Request] = []
        self.sleeps: list[float] = []
        self._lock = threading.RLock()
        self._stopping = threading.Event()
        self._ids = iter(range(1000, 10**9))
        self._releases: dict[int, dict[str, Any]] = {}
        self._assets: dict[int, dict[str, Any]] = {}
        self._comments: dict[int, dict[str, Any]] = {}
        self._remaining: dict[str, int] = {}
        self._signing_key = secrets.token_bytes(16)
        self._api: ThreadingHTTPServer | None = None
        self._storage: ThreadingHTTPServer | None = None
        self._uploads: ThreadingHTTPServer | None = None
        self._threads: list[threading.Thread] = []
        self._clients: list[GitHubClient] = []

    # -- lifecycle -----------------------------------------------------------------------------

    def start(self) -> GitHubServer:
        self._api = self._serve("api")
        self._storage = self._serve("storage")
        if self.upload_host:
            self._uploads = self._serve("uploads")
        return self

    def stop(self) -> None:
        self._stopping.set()
        for client in self._clients:
            client.close()
        for server in (self._api, self._storage, self._uploads):
            if server is not None:
                server.shutdown()
                server.server_close()
        for thread in self._threads:
            thread.join(timeout=5)

    def __enter__(self) -> GitHubServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _serve(self, role: str) -> ThreadingHTTPServer:
        server = _Server(("127.0.0.1", 0), _Handler)
        server.gh = self
        server.role = role
        # A short poll interval keeps stop() (and so every test's teardown) quick.
        thread = threading.Thread(target=server.serve_forever, args=(0.02,), name=f"github-{role}", daemon=True)
        thread.start()
        self._threads.append(thread)
        return server

    @property
    def origin(self) -> str:
        assert self._api is not None, "start() the server first"
        return f"http://127.0.0.1:{self._api.server_address[1]}"

    @property
    def storage_origin(self) -> str:
        assert self._storage is not None, "start() the server first"
        return f"http://127.0.0.1:{self._storage.server_address[1]}"

    @property
    def upload_origin(self) -> str:
        """Where the `upload_url` of a release points: the upload host, or the API host."""
        if self._uploads is None:
            return self.origin
        return f"http://127.0.0.1:{self._uploads.server_address[1]}"

    @property
    def api_url(self) -> str:
        return self.origin + self.prefix

    def env(self, token: str | None = None) -> dict[str, str]:
        """Environment for a subprocess (or ``GitHubClient(env=...)``) aimed at this server, with
        short timeouts and backoff so fault tests stay fast (Retry-After waits are still real)."""
        return {
            "GITHUB_API_URL": self.api_url,
            "GITHUB_REPOSITORY": self.repo,
            "GITHUB_TOKEN": self.write_token if token is None else token,
            "EVALGATE_GITHUB_TIMEOUT": "1",
            "EVALGATE_GITHUB_BACKOFF": "0.05",
            "EVALGATE_GITHUB_MAX_WAIT": "10",
        }

    def client(self, token: str | None = None, **kwargs: Any) -> GitHubClient:
        """A client for this server; waits go to ``self.sleeps`` instead of sleeping."""
        options: dict[str, Any] = {"timeout": 1.0, "max_retries": 4, "sleep": self.sleeps.append}
        options.update(kwargs)
        client = GitHubClient(
            self.write_token if token is None else token, api_url=self.api_url, repo=self.repo, env={}, **options
        )
        self._clients.append(client)
        return client

    # -- seeding and inspecting ----------------------------------------------------------------

    def add_release(self, tag: str) -> dict[str, Any]:
        with self._lock:
            return self._release_json(self._create_release({"tag_name": tag}))

    def add_asset(self, tag: str, name: str, data: bytes, *, state: str = "uploaded") -> dict[str, Any]:
        with self._lock:
            release = self._release_by_tag(tag) or self._create_release({"tag_name": tag})
            return self._asset_json(self._create_asset(release["id"], name, data, "application/octet-stream", state))

    def add_comment(self, pr: int, body: str, login: str = "someone-else") -> dict[str, Any]:
        with self._lock:
            return self._comment_json(self._create_comment(pr, body, login))

    def releases(self) -> list[dict[str, Any]]:
        with self._lock:
            return [self._release_json(r) for r in self._releases.values()]

    def assets(self, tag: str) -> list[dict[str, Any]]:
        """Assets of the release with ``tag`` (id, name, size, state...), oldest first; [] if no release."""
        with self._lock:
            release = self._release_by_tag(tag)
            if release is None:
                return []
            return [self._asset_json(a) for a in self._assets.values() if a["release_id"] == release["id"]]

    def asset_data(self, tag: str, name: str) -> bytes | None:
        with self._lock:
            release = self._release_by_tag(tag)
            for asset in self._assets.values():
                if release and asset["release_id"] == release["id"] and asset["name"] == name:
                    return asset["data"]
            return None

    def comments(self, pr: int) -> list[dict[str, Any]]:
        """Comments on the PR, oldest first, as the API returns them (``user.login``, ``body``...)."""
        with self._lock:
            return [self._comment_json(c) for c in self._comments.values() if c["issue"] == pr]

    def requests_to(self, server: str) -> list[Request]:
        with self._lock:
            return [r for r in self.requests if r.server == server]

    # -- request handling (called by _Handler) --------------------------------------------------

    def _log(self, request: Request) -> None:
        with self._lock:
            self.requests.append(request)

    def _token(self, headers: Any) -> tuple[_Token | None, str | None]:
        value = headers.get("Authorization")
        if not value:
            return None, None
        scheme, _, token = value.partition(" ")
        info = self._tokens.get(token) if scheme.lower() in ("bearer", "token") else None
        return info, (info.label if info else "bad")

    def _handle_storage(self, method: str, path: str, query: dict[str, list[str]], headers: Any) -> _Response:
        # Like S3 with a presigned URL: a second auth mechanism is an error, not ignored.
        if headers.get("Authorization"):
            return _xml(400, "InvalidArgument", "Only one auth mechanism allowed")
        match = re.fullmatch(r"/storage/(\d+)/([^/]+)", path)
        if method != "GET" or not match:
            return _xml(404, "NoSuchKey", "The specified key does not exist.")
        asset_id = int(match.group(1))
        signature = (query.get("X-Amz-Signature") or [""])[0]
        if not hmac.compare_digest(signature, self._sign(asset_id)):
            return _xml(403, "SignatureDoesNotMatch", "The request signature we calculated does not match")
        with self._lock:
            asset = self._assets.get(asset_id)
            if asset is None or asset["state"] != "uploaded":
                return _xml(404, "NoSuchKey", "The specified key does not exist.")
            data = asset["data"]
        return _Response(200, data, {"Content-Type": "application/octet-stream"})

    def _handle_upload_host(
        self, method: str, path: str, query: dict[str, list[str]], headers: Any, body: bytes, fault: Fault | None
    ) -> _Response:
        """The upload host serves uploads only; without a token that may write, a 404 (as GitHub's does)."""
        token, _ = self._token(headers)
        upload = re.fullmatch(re.escape(f"/repos/{self.repo}/releases/") + r"(\d+)/assets", path)
        if not (upload and method == "POST") or token is None or not token.sees_repo:
            return _error(404, "Not Found")
        if not token.write:
            return _error(403, "Resource not accessible by integration")
        with self._lock:
            return self._upload(int(upload.group(1)), query, headers, body, fault)

    def _handle_api(
        self, method: str, path: str, query: dict[str, list[str]], headers: Any, body: bytes, fault: Fault | None
    ) -> _Response:
        token, _ = self._token(headers)
        if headers.get("Authorization") and token is None:
            return _error(401, "Bad credentials")
        if token is not None and not token.sees_repo and path.startswith(f"{self.prefix}/repos/"):
            return _error(404, "Not Found")
        path = re.sub(rf"^({re.escape(self.prefix)})/repositories/{REPO_ID}(?=/)", rf"\1/repos/{self.repo}", path)
        writes = method in ("POST", "PATCH", "PUT", "DELETE")
        if writes and token is None:
            return _error(401, "Requires authentication")
        if writes and not token.write:  # type: ignore[union-attr]
            return _error(403, "Resource not accessible by integration")
        with self._lock:
            return self._route(method, path, query, headers, body, token, fault)

    def _route(
        self,
        method: str,
        path: str,
        query: dict[str, list[str]],
        headers: Any,
        body: bytes,
        token: _Token | None,
        fault: Fault | None,
    ) -> _Response:
        repo = f"/repos/{self.repo}"
        if path == self.prefix + "/user" and method == "GET":
            if token is None:
                return _error(401, "Requires authentication")
            if token.app:
                return _error(403, "Resource not accessible by integration")
            return _ok({"login": token.login, "id": 1, "type": "User"})
        upload = re.fullmatch(re.escape(f"{self.upload_prefix}{repo}/releases/") + r"(\d+)/assets", path)
        if upload and method == "POST" and not self.upload_host:
            return self._upload(int(upload.group(1)), query, headers, body, fault)
        if path == self.prefix + repo and method == "GET":
            return _ok(self._repo_json(token))
        if not path.startswith(self.prefix + repo + "/"):
            return _error(404, "Not Found")
        rest = path[len(self.prefix + repo) :]
        payload = _json_body(body)
        if payload is _INVALID:
            return _error(400, "Problems parsing JSON")
        if rest == "/immutable-releases" and method == "GET":
            if token is None or token.app:
                return _error(403, "Resource not accessible by integration")  # needs administration: read
            enabled = {"enabled": True, "enforced_by_owner": False}
            return _ok(enabled) if self.immutable_releases else _error(404, "Not Found")
        if rest == "/releases" and method == "GET":
            visible = [r for r in self._releases.values() if not r["draft"] or (token is not None and token.write)]
            items = [self._release_json(r) for r in sorted(visible, key=lambda r: -r["id"])]  # newest first
            return self._page(items, query, "/releases")

        if m := re.fullmatch(r"/releases/tags/(.+)", rest):
            release = self._release_by_tag(unquote(m.group(1)))
            return _ok(self._release_json(release)) if release and method == "GET" else _error(404, "Not Found")
        if rest == "/releases" and method == "POST":
            tag = (payload or {}).get("tag_name")
            if not tag:
                return _validation("Release", "missing_field", "tag_name")
            if not payload.get("draft") and self._release_by_tag(tag) is not None:
                return _validation("Release", "already_exists", "tag_name")
            if not payload.get("draft") and tag in self._burned_tags:
                return _burned_tag()
            return _ok(self._release_json(self._create_release(payload)), 201)
        if m := re.fullmatch(r"/releases/(\d+)", rest):
            release = self._releases.get(int(m.group(1)))
            if release is None or (release["draft"] and not (token is not None and token.write)):
                return _error(404, "Not Found")
            if method == "GET":
                return _ok(self._release_json(release))
            if method == "DELETE":
                del self._releases[release["id"]]
                for asset_id in [a for a, v in self._assets.items() if v["release_id"] == release["id"]]:
                    del self._assets[asset_id]
                return _Response(204)
            if method == "PATCH":
                return self._update_release(release, payload or {})
            return _error(404, "Not Found")
        if (m := re.fullmatch(r"/releases/(\d+)/assets", rest)) and method == "GET":
            release_id = int(m.group(1))
            if release_id not in self._releases:
                return _error(404, "Not Found")
            items = [self._asset_json(a) for a in self._assets.values() if a["release_id"] == release_id]
            return self._page(items, query, f"/releases/{release_id}/assets")
        if m := re.fullmatch(r"/releases/assets/(\d+)", rest):
            return self._asset_route(method, int(m.group(1)), headers, payload)
        if rest == "/git/refs" and method == "POST":
            ref = str((payload or {}).get("ref") or "")
            if not ref.startswith("refs/") or ref.count("/") < 2:
                return _error(422, "Reference name is invalid")
            return _error(422, "Object does not exist")  # this fake holds no git objects
        if m := re.fullmatch(r"/issues/(\d+)/comments", rest):
            issue = int(m.group(1))
            if method == "GET":
                items = [self._comment_json(c) for c in self._comments.values() if c["issue"] == issue]
                return self._page(items, query, f"/issues/{issue}/comments")
            if method == "POST":
                text = (payload or {}).get("body")
                if not isinstance(text, str) or not text:
                    return _validation("IssueComment", "missing_field", "body")
                if len(text) > MAX_COMMENT_CHARS:
                    return _too_long()
                assert token is not None
                return _ok(self._comment_json(self._create_comment(issue, text, token.login)), 201)
        if m := re.fullmatch(r"/issues/comments/(\d+)", rest):
            comment = self._comments.get(int(m.group(1)))
            if comment is None:
                return _error(404, "Not Found")
            if method == "GET":
                return _ok(self._comment_json(comment))
            if method == "PATCH":
                text = (payload or {}).get("body")
                if not isinstance(text, str) or not text:
                    return _validation("IssueComment", "missing_field", "body")
                if len(text) > MAX_COMMENT_CHARS:
                    return _too_long()
                comment["body"] = text
                comment["updated_at"] = _now()
                return _ok(self._comment_json(comment))
        return _error(404, "Not Found")

    def _asset_route(self, method: str, asset_id: int, headers: Any, payload: Any) -> _Response:
        asset = self._assets.get(asset_id)
        if asset is None:
            return _error(404, "Not Found")
        if method == "GET":
            if "application/octet-stream" not in (headers.get("Accept") or ""):
                return _ok(self._asset_json(asset))
            if not self.redirect_downloads:
                return _Response(200, asset["data"], {"Content-Type": "application/octet-stream"})
            location = f"{self.storage_origin}/storage/{asset_id}/{quote(asset['name'])}?" + urlencode(
                {"X-Amz-Algorithm": "AWS4-HMAC-SHA256", "X-Amz-Signature": self._sign(asset_id)}
            )
            return _Response(302, b"", {"Location": location})
        if method in ("DELETE", "PATCH") and self._releases[asset["release_id"]].get("immutable"):
            return _error(422, "Cannot modify assets of an immutable release")
        if method == "DELETE":
            del self._assets[asset_id]
            return _Response(204)
        if method == "PATCH":
            new_name = (payload or {}).get("name")
            if new_name and new_name != asset["name"] and self._asset_named(asset["release_id"], new_name):
                return _validation("ReleaseAsset", "already_exists", "name")
            if new_name:
                asset["name"] = new_name
                asset["updated_at"] = _now()
            return _ok(self._asset_json(asset))
        return _error(404, "Not Found")

    def _upload(
        self, release_id: int, query: dict[str, list[str]], headers: Any, body: bytes, fault: Fault | None
    ) -> _Response:
        if release_id not in self._releases:
            return _error(404, "Not Found")
        if self._releases[release_id].get("immutable"):
            return _error(422, "Cannot upload assets to an immutable release")
        name = (query.get("name") or [""])[0]
        if not name:
            return _error(422, "name is required")
        if self._asset_named(release_id, name):
            return _validation("ReleaseAsset", "already_exists", "name")
        content_type = headers.get("Content-Type") or "application/octet-stream"
        if fault is not None and fault.kind == "starter":
            self._create_asset(release_id, name, body[: len(body) // 2], content_type, "starter")
            return _Response(0)  # the handler resets the connection
        return _ok(self._asset_json(self._create_asset(release_id, name, body, content_type, "uploaded")), 201)

    def _page(self, items: list[Any], query: dict[str, list[str]], rest: str) -> _Response:
        per_page = min(100, max(1, int((query.get("per_page") or ["30"])[0])))
        page = max(1, int((query.get("page") or ["1"])[0]))
        last = max(1, -(-len(items) // per_page))
        links = []
        base = f"{self.api_url}/repositories/{REPO_ID}{rest}"
        if page < last:
            links.append(f'<{base}?per_page={per_page}&page={page + 1}>; rel="next"')
            links.append(f'<{base}?per_page={per_page}&page={last}>; rel="last"')
        if page > 1:
            links.append(f'<{base}?per_page={per_page}&page={page - 1}>; rel="prev"')
            links.append(f'<{base}?per_page={per_page}&page=1>; rel="first"')
        response = _ok(items[(page - 1) * per_page : page * per_page])
        if links:
            response.headers["Link"] = ", ".join(links)
        return response

    def _rate_headers(self, token_label: str | None) -> dict[str, str]:
        with self._lock:
            key = token_label or "anonymous"
            limit = 5000 if token_label else 60
            self._remaining[key] = max(0, self._remaining.get(key, limit) - 1)
            remaining = self._remaining[key]
        return {
            "X-RateLimit-Limit": str(limit),
            "X-RateLimit-Remaining": str(remaining),
            "X-RateLimit-Used": str(limit - remaining),
            "X-RateLimit-Reset": str(int(time.time()) + 3600),
            "X-RateLimit-Resource": "core",
        }

    # -- state ---------------------------------------------------------------------------------

    def _sign(self, asset_id: int) -> str:
        return hmac.new(self._signing_key, str(asset_id).encode(), hashlib.sha256).hexdigest()

    def _create_release(self, payload: dict[str, Any]) -> dict[str, Any]:
        release_id = next(self._ids)
        release = {
            "id": release_id,
            "tag_name": payload["tag_name"],
            "name": payload.get("name") or payload["tag_name"],
            "body": payload.get("body") or "",
            "draft": bool(payload.get("draft")),
            "immutable": False,
            "prerelease": bool(payload.get("prerelease")),
            "target_commitish": payload.get("target_commitish") or "main",
            "created_at": _now(),
        }
        self._releases[release_id] = release
        if not release["draft"]:
            self._publish(release, payload)
        return release

    def _publish(self, release: dict[str, Any], payload: dict[str, Any]) -> None:
        release["draft"] = False
        # GitHub's make_latest defaults to "true" for a full (not pre-) release.
        if not release["prerelease"] and str(payload.get("make_latest", "true")).lower() != "false":
            self.latest_release_id = release["id"]
        if self.immutable_releases:
            release["immutable"] = True
            self._burned_tags.add(release["tag_name"])

    def _update_release(self, release: dict[str, Any], payload: dict[str, Any]) -> _Response:
        """PATCH a release: name/body always; tag and draft → published while it is a draft (the
        tag is created then, so publishing is where a tag clash shows: 422 already_exists)."""
        tag = payload.get("tag_name", release["tag_name"])
        publishing = release["draft"] and payload.get("draft") is False
        if tag != release["tag_name"] and not release["draft"] and self.immutable_releases:
            return _error(422, "Cannot change the tag of an immutable release")
        if publishing or (not release["draft"] and tag != release["tag_name"]):
            clash = any(r is not release and r["tag_name"] == tag and not r["draft"] for r in self._releases.values())
            if clash:
                return _validation("Release", "already_exists", "tag_name")
            if tag in self._burned_tags:
                return _burned_tag()
        release["tag_name"] = tag
        for key in ("name", "body", "prerelease"):
            if key in payload:
                release[key] = payload[key]
        if publishing:
            self._publish(release, payload)
        return _ok(self._release_json(release))

    def _repo_json(self, token: _Token | None) -> dict[str, Any]:
        data: dict[str, Any] = {
            "id": REPO_ID,
            "full_name": self.repo,
            "private": False,
            "default_branch": "main",
            "url": f"{self.api_url}/repos/{self.repo}",
        }
        if token is not None and self.repo_permissions != "omitted":  # an authenticated caller's permissions
            push = token.write and self.repo_permissions == "reported"
            data["permissions"] = {"admin": False, "maintain": False, "push": push, "triage": push, "pull": True}
        return data

    def _release_by_tag(self, tag: str) -> dict[str, Any] | None:
        return next((r for r in self._releases.values() if r["tag_name"] == tag and not r["draft"]), None)

    def _release_json(self, release: dict[str, Any]) -> dict[str, Any]:
        url = f"{self.api_url}/repos/{self.repo}/releases/{release['id']}"
        return {
            **release,
            "url": url,
            "html_url": f"{self.origin}/{self.repo}/releases/tag/{quote(release['tag_name'])}",
            "assets_url": url + "/assets",
            "upload_url": f"{self.upload_origin}{self.upload_prefix}/repos/{self.repo}/releases/{release['id']}"
            "/assets{?name,label}",
            "assets": [self._asset_json(a) for a in self._assets.values() if a["release_id"] == release["id"]],
        }

    def _create_asset(self, release_id: int, name: str, data: bytes, content_type: str, state: str) -> dict[str, Any]:
        asset_id = next(self._ids)
        asset = {
            "id": asset_id,
            "release_id": release_id,
            "name": name,
            "label": "",
            "state": state,
            "content_type": content_type,
            "data": data,
            "created_at": _now(),
            "updated_at": _now(),
        }
        self._assets[asset_id] = asset
        return asset

    def _asset_named(self, release_id: int, name: str) -> dict[str, Any] | None:
        return next((a for a in self._assets.values() if a["release_id"] == release_id and a["name"] == name), None)

    def _asset_json(self, asset: dict[str, Any]) -> dict[str, Any]:
        release = self._releases[asset["release_id"]]
        return {
            "id": asset["id"],
            "name": asset["name"],
            "label": asset["label"],
            "state": asset["state"],
            "content_type": asset["content_type"],
            "size": len(asset["data"]),
            "download_count": 0,
            "created_at": asset["created_at"],
            "updated_at": asset["updated_at"],
            "url": f"{self.api_url}/repos/{self.repo}/releases/assets/{asset['id']}",
            "browser_download_url": f"{self.origin}/{self.repo}/releases/download/"
            f"{quote(release['tag_name'])}/{quote(asset['name'])}",
        }

    def _create_comment(self, issue: int, body: str, login: str) -> dict[str, Any]:
        comment_id = next(self._ids)
        comment = {"id": comment_id, "issue": issue, "body": body, "login": login, "created_at": _now()}
        comment["updated_at"] = comment["created_at"]
        self._comments[comment_id] = comment
        return comment

    def _comment_json(self, comment: dict[str, Any]) -> dict[str, Any]:
        bot = comment["login"].endswith("[bot]")
        return {
            "id": comment["id"],
            "body": comment["body"],
            "user": {"login": comment["login"], "type": "Bot" if bot else "User"},
            # An app's bot comments through its installation; GITHUB_TOKEN's app is "github-actions".
            "performed_via_github_app": {"slug": comment["login"][: -len("[bot]")]} if bot else None,
            "html_url": f"{self.origin}/{self.repo}/pull/{comment['issue']}#issuecomment-{comment['id']}",
            "url": f"{self.api_url}/repos/{self.repo}/issues/comments/{comment['id']}",
            "created_at": comment["created_at"],
            "updated_at": comment["updated_at"],
        }


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    gh: GitHubServer
    role: str

    def handle_error(self, request: Any, client_address: Any) -> None:
        # Resets and hangs break sockets on purpose; their tracebacks are noise.
        pass


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # else every small response waits ~40 ms for a delayed ACK
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_GET(self) -> None:
        self._handle("GET")

    def do_POST(self) -> None:
        self._handle("POST")

    def do_PATCH(self) -> None:
        self._handle("PATCH")

    def do_DELETE(self) -> None:
        self._handle("DELETE")

    def do_PUT(self) -> None:
        self._handle("PUT")

    def _handle(self, method: str) -> None:
        gh, role = self.server.gh, self.server.role
        url = urlsplit(self.path)
        query = parse_qs(url.query)
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        _, label = gh._token(self.headers)
        record = Request(role, method, url.path, query, label, bool(self.headers.get("Authorization")))
        gh._log(record)
        fault = gh.faults.take(role, method, url.path)
        record.fault = fault.kind if fault else None
        if fault is not None and fault.kind in ("reset", "hang"):
            if fault.kind == "hang":
                gh._stopping.wait(fault.delay)
            self._reset()
            return
        if fault is not None and fault.kind == "moved":
            response = _Response(301, b"", {"Location": f"{gh.storage_origin}/moved{url.path}"})
        elif fault is not None and fault.kind == "expired":
            response = _xml(403, "AccessDenied", "Request has expired")
        elif fault is not None and fault.kind == "garbage":
            response = _Response(200, b"<html><body>Proxy error</body></html>", {"Content-Type": "text/html"})
        elif fault is not None and fault.kind in ("500", "502", "503", "429", "secondary", "ratelimit", "404"):
            response = _fault_response(fault)
        elif role == "storage":
            response = gh._handle_storage(method, url.path, query, self.headers)
        elif role == "uploads":
            response = gh._handle_upload_host(method, url.path, query, self.headers, body, fault)
        else:
            response = gh._handle_api(method, url.path, query, self.headers, body, fault)
        if fault is not None and fault.kind in ("reset-after", "starter"):
            self._reset()
            return
        record.status = response.status
        headers = dict(response.headers)
        if role in ("api", "uploads"):
            headers = {**gh._rate_headers(label), **headers}
            headers.setdefault("X-GitHub-Request-Id", secrets.token_hex(8).upper())
        if response.body and "Content-Type" not in headers:
            headers["Content-Type"] = "application/json; charset=utf-8"
        self.send_response(response.status)
        for key, value in headers.items():
            self.send_header(key, value)
        if fault is not None and fault.kind == "truncate":
            # An empty body (a 302) is announced as 32 bytes, so the cut is visible there too.
            self.send_header("Content-Length", str(len(response.body) or 32))
            self.send_header("Connection", "close")
            self.end_headers()
            self.wfile.write(response.body[: len(response.body) // 2])
            self.wfile.flush()
            self.close_connection = True
            return
        self.send_header("Content-Length", str(len(response.body)))
        self.end_headers()
        self.wfile.write(response.body)

    def _reset(self) -> None:
        # SO_LINGER 0 turns close() into a TCP RST: the client sees "connection reset by peer".
        try:
            self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            self.connection.close()
        except OSError:
            pass
        self.close_connection = True


_INVALID = object()


def _json_body(body: bytes) -> Any:
    if not body:
        return None
    try:
        return json.loads(body)
    except ValueError:
        return _INVALID


def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _ok(data: Any, status: int = 200) -> _Response:
    return _Response(status, json.dumps(data).encode())


def _error(status: int, message: str) -> _Response:
    return _ok({"message": message, "documentation_url": DOCS, "status": str(status)}, status)


def _burned_tag() -> _Response:
    """A tag an immutable release used (even one deleted since) can never be used again; GitHub
    answers with a ``custom`` error, not ``already_exists``."""
    return _ok(
        {
            "message": "Validation Failed",
            "errors": [
                {
                    "resource": "Release",
                    "code": "custom",
                    "field": "tag_name",
                    "message": "tag_name was used by an immutable release",
                }
            ],
            "documentation_url": DOCS,
            "status": "422",
        },
        422,
    )


def _validation(resource: str, code: str, field_name: str) -> _Response:
    return _ok(
        {
            "message": "Validation Failed",
            "errors": [{"resource": resource, "code": code, "field": field_name}],
            "documentation_url": DOCS,
            "status": "422",
        },
        422,
    )


def _too_long() -> _Response:
    error = {
        "resource": "IssueComment",
        "code": "custom",
        "field": "body",
        "message": f"body is too long (maximum is {MAX_COMMENT_CHARS} characters)",
    }
    return _ok({"message": "Validation Failed", "errors": [error], "documentation_url": DOCS, "status": "422"}, 422)


def _xml(status: int, code: str, message: str) -> _Response:
    body = f'<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>{code}</Code><Message>{message}</Message></Error>'
    return _Response(status, body.encode(), {"Content-Type": "application/xml"})


def _fault_response(fault: Fault) -> _Response:
    if fault.kind == "502":
        return _Response(502, b"<html><body><h1>502 Bad Gateway</h1></body></html>", {"Content-Type": "text/html"})
    if fault.kind in ("500", "503"):
        return _error(int(fault.kind), "Server Error")
    if fault.kind == "404":
        return _error(404, "Not Found")
    if fault.kind == "429":
        response = _error(429, "Too Many Requests")
        response.headers["Retry-After"] = str(fault.retry_after)
        return response
    if fault.kind == "secondary":
        response = _error(
            403,
            "You have exceeded a secondary rate limit. Please wait a few minutes before you try again.",
        )
        response.headers["Retry-After"] = str(fault.retry_after)
        return response
    response = _error(403, "API rate limit exceeded for installation ID 1.")
    response.headers.update(
        {"X-RateLimit-Remaining": "0", "X-RateLimit-Reset": str(int(time.time()) + fault.retry_after)}
    )
    return response


@pytest.fixture(name="github_api")
def github_api_fixture() -> Iterator[GitHubServer]:
    """A started ``GitHubServer`` (GHES-style ``/api/v3`` prefix), stopped after the test."""
    with GitHubServer() as server:
        yield server
