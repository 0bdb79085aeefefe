"""An independent fake of the part of GitHub's REST API evalgate uses, written from GitHub's
documentation (not from ``tests/fakes/github_server.py`` nor from evalgate's client), stdlib only.

Three servers on 127.0.0.1, three origins (distinct ports), as on github.com:

- the **API** (``api_url``): releases, assets, issue comments, ``/user``, ``/repos/{o}/{r}``;
- the **uploads** host (``https://uploads.github.com`` on github.com), named only by a release's
  ``upload_url`` URI template ``.../repos/{o}/{r}/releases/{id}/assets{?name,label}``;
- the **storage** host an asset download (``Accept: application/octet-stream``) is redirected to
  with ``302`` and a signed, expiring URL. Like S3 it refuses a request that carries an
  ``Authorization`` header (400 "Only one auth mechanism allowed"), and every such request is
  recorded in ``storage_auth_seen`` so a test can assert that none happened.

With ``ghes=True`` the layout is GitHub Enterprise Server's: the API under ``/api/v3`` and uploads
under ``/api/uploads`` on the same host; storage is a separate host (subdomain isolation) or, with
``storage_on_api_host=True``, ``/storage/...`` on the API host itself (the token must not go there
either: it is not under ``/api/v3``).

``immutable_releases=True``: releases are immutable once published (422 "Cannot upload assets to
an immutable release", no asset deleted, the tag burned for good: 422 ``custom`` "tag_name was used
by an immutable release" even after the release is deleted); drafts stay mutable.

``renamed_from="owner/old"``: requests under the repository's former name are redirected to
``/repositories/{id}/...`` (301 for GET, 307 otherwise), as GitHub does after a rename or transfer.

Documented behaviour reproduced (docs.github.com/rest, API version 2022-11-28):

- errors are JSON ``{"message", "documentation_url", "status"}``; 422s carry
  ``errors: [{"resource", "code", "field"}]`` (``already_exists`` for a taken tag or asset name);
- ``GET /repos/{o}/{r}/releases/tags/{tag}``: 404 when missing and for drafts;
  ``POST /repos/{o}/{r}/releases``: 201; ``PATCH``/``DELETE /releases/{id}``; list releases shows
  drafts only to tokens with push access;
- lists are paginated: ``per_page`` default 30, max 100, ``page`` from 1; ``Link`` header with
  absolute URLs and ``rel="next"``, ``"last"``, ``"first"``, ``"prev"`` (in the
  ``/repositories/{id}/...`` form GitHub uses for many endpoints); issue comments oldest first;
- asset upload: ``Content-Type`` required, ``name`` query required, 201 with the asset, 422
  ``already_exists`` for a name the release already has; ``DELETE`` asset: 204;
- ``GET /user``: 403 "Resource not accessible by integration" for an installation token (the
  Actions ``GITHUB_TOKEN``), whose comments carry ``github-actions[bot]``; 401 without a token;
- a read-only token (a fork PR) gets 403 "Resource not accessible by integration" on writes;
- ``GET /repos/{o}/{r}``: ``permissions`` for a personal token only. The docs mark the field
  optional and do not say what it means for an installation token; public reports show it missing,
  or ``push: false``, for installation tokens that can write, so this fake gives them none;
- ``POST /repos/{o}/{r}/git/refs`` ("Create a reference"): a ref that does not start with
  ``refs`` and have at least two slashes is rejected, and so is a sha of no object (this fake
  holds none): 422 for a token that may write, 403 for a read-only one, nothing created;
- every response carries ``x-ratelimit-*`` headers.

Faults (``fault(...)``), matched by host (``api``/``uploads``/``storage``), method and a regular
expression searched in ``path?query`` (the path without the GHES prefix), each for ``times`` requests:

``500``/``502``/``503`` (JSON body; ``502html``: an HTML body from a proxy), ``429`` (with
``Retry-After``), ``secondary`` (403 secondary rate limit with ``Retry-After``), ``secondary_bare``
(403 secondary rate limit message, no header), ``abuse`` (the pre-2021 / older-GHES wording of a
secondary limit, no header), ``primary`` (403 with ``x-ratelimit-remaining: 0``
and ``x-ratelimit-reset``), ``reset_before`` (the connection is dropped before the request is
applied), ``reset_after`` (applied, then dropped: the client never sees the answer), ``502_after`` (applied,
then answered 502), ``truncate``
(the answer's body is cut, ``Content-Length`` says the full size; ``truncate_chunked``: a chunked
body that ends mid-chunk), ``hang`` (no answer for
``hang_s``), ``starter`` (uploads: the asset is left half-finished, ``state: starter``, and the
connection dropped), ``expired`` (storage: 403 like an expired signed URL).

``requests`` records every request (host, method, path, query, whether it carried a token);
``count(host, method, pattern)`` counts them. ``tokens_seen`` holds every token value received by
each host.

    with FakeGitHub(tokens={"tok": Token("github-actions[bot]", installation=True)}) as gh:
        env = {"GITHUB_API_URL": gh.api_url, "GITHUB_REPOSITORY": gh.repo, "GITHUB_TOKEN": "tok"}
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import json
import re
import socket
import struct
import threading
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, quote, unquote, urlencode, urlsplit

DOCS = "https://docs.github.com/rest"


@dataclass
class Token:
    login: str
    installation: bool = False  # GITHUB_TOKEN / app installation token: /user is 403
    write: bool = True  # contents: write, pull-requests: write


@dataclass
class Fault:
    host: str
    method: str
    pattern: re.Pattern[str]
    kind: str
    times: int
    hang_s: float = 2.0
    wait: int = 1


@dataclass
class Seen:
    host: str
    method: str
    path: str
    query: str
    auth: str | None
    status: int = 0


@dataclass
class _Reply:
    status: int
    body: bytes = b""
    headers: dict[str, str] = field(default_factory=dict)


class _Drop(Exception):
    """Close the connection without an answer (a reset)."""


def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


class FakeGitHub:
    def __init__(
        self,
        *,
        owner: str = "octo-org",
        name: str = "app",
        tokens: dict[str, Token] | None = None,
        ghes: bool = False,
        private: bool = True,
        renamed_from: str | None = None,
        storage_on_api_host: bool = False,
        immutable_releases: bool = False,
    ):
        self.owner, self.name = owner, name
        self.repo = f"{owner}/{name}"
        self.repo_id = 4242
        self.tokens = tokens or {}
        self.ghes = ghes
        self.private = private
        # The repository's former name: GitHub redirects its API URLs to /repositories/{id}/...
        # (301 for GET, 307 for other methods; docs.github.com/rest, "HTTP redirects").
        self.renamed_from = renamed_from
        # GHES without subdomain isolation serves release assets from https://HOST/storage/...
        self.storage_on_api_host = storage_on_api_host and ghes
        # Immutable releases (docs.github.com, "Immutable releases"): a release published while the
        # setting is on is immutable: no asset can be added or deleted, and its tag can never be
        # used again, even after the release is deleted. Drafts stay mutable.
        self.immutable_releases = immutable_releases
        self.burned_tags: set[str] = set()
        self.lock = threading.RLock()
        self.releases: dict[int, dict[str, Any]] = {}
        self.assets: dict[int, dict[str, Any]] = {}  # id -> asset json + "_data", "_release"
        self.comments: dict[int, list[dict[str, Any]]] = {}
        self.pulls: dict[int, dict[str, Any]] = {}  # number -> {"head": {"sha", "repo"}, "base": {...}}
        self._ids = iter(range(1000, 10**9))
        self.faults: list[Fault] = []
        self.requests: list[Seen] = []
        self.tokens_seen: dict[str, set[str]] = {"api": set(), "uploads": set(), "storage": set()}
        self.storage_auth_seen: list[Seen] = []
        self.signing_key = b"fake-signing-key"
        self._servers: list[ThreadingHTTPServer] = []
        self._threads: list[threading.Thread] = []

    # -- lifecycle -------------------------------------------------------------------------

    def __enter__(self) -> FakeGitHub:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def start(self) -> None:
        self._api = self._serve("api")
        self._storage = self._serve("storage")
        self._uploads = self._api if self.ghes else self._serve("uploads")

    def stop(self) -> None:
        for server in self._servers:
            server.shutdown()
            server.server_close()
        for thread in self._threads:
            thread.join(timeout=5)

    def _serve(self, kind: str) -> ThreadingHTTPServer:
        fake = self

        class Handler(_Handler):
            host_kind = kind
            gh = fake

        server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        server.daemon_threads = True
        thread = threading.Thread(target=server.serve_forever, daemon=True, name=f"fake-gh-{kind}")
        thread.start()
        self._servers.append(server)
        self._threads.append(thread)
        return server

    @staticmethod
    def _origin(server: ThreadingHTTPServer) -> str:
        return f"http://127.0.0.1:{server.server_address[1]}"

    @property
    def api_url(self) -> str:
        return self._origin(self._api) + ("/api/v3" if self.ghes else "")

    @property
    def uploads_url(self) -> str:
        return self._origin(self._uploads) + ("/api/uploads" if self.ghes else "")

    @property
    def storage_url(self) -> str:
        if self.storage_on_api_host:
            return self._origin(self._api) + "/storage"
        return self._origin(self._storage)

    # -- test helpers ----------------------------------------------------------------------

    def fault(
        self, host: str, method: str, pattern: str, kind: str, times: int = 1, *, hang_s: float = 2.0, wait: int = 1
    ) -> None:
        with self.lock:
            self.faults.append(Fault(host, method, re.compile(pattern), kind, times, hang_s, wait))

    def count(self, host: str, method: str, pattern: str = "") -> int:
        rx = re.compile(pattern)
        return sum(1 for r in self.requests if r.host == host and r.method == method and rx.search(r.path))

    def release_by_tag(self, tag: str) -> dict[str, Any] | None:
        return next((r for r in self.releases.values() if r["tag_name"] == tag), None)

    def asset_names(self, tag: str) -> list[str]:
        release = self.release_by_tag(tag)
        return [a["name"] for a in self._release_assets(release["id"])] if release else []

    def asset_bytes(self, tag: str, name: str) -> bytes:
        release = self.release_by_tag(tag)
        assert release is not None
        return next(a["_data"] for a in self._release_assets(release["id"]) if a["name"] == name)

    def export_state(self) -> dict[str, Any]:
        """The stored releases, assets and comments (to start another fake from them)."""
        import copy

        with self.lock:
            next_id = next(self._ids)
            self._ids = iter(range(next_id, 10**9))
            return copy.deepcopy(
                {"releases": self.releases, "assets": self.assets, "comments": self.comments, "next": next_id}
            )

    def import_state(self, state: dict[str, Any]) -> None:
        import copy

        with self.lock:
            state = copy.deepcopy(state)
            self.releases, self.assets, self.comments = state["releases"], state["assets"], state["comments"]
            self._ids = iter(range(state["next"], 10**9))

    def age(self, seconds: float) -> None:
        """Move every stored release's and asset's timestamps ``seconds`` into the past (a store
        written long ago)."""
        from datetime import timedelta

        def back(text: str | None) -> str | None:
            if not text:
                return text
            when = datetime.fromisoformat(text.replace("Z", "+00:00")) - timedelta(seconds=seconds)
            return when.strftime("%Y-%m-%dT%H:%M:%SZ")

        with self.lock:
            for item in [*self.releases.values(), *self.assets.values()]:
                for key in ("created_at", "updated_at", "published_at"):
                    if key in item:
                        item[key] = back(item[key])

    def add_release(self, tag: str, *, draft: bool = False) -> dict[str, Any]:
        """A release someone else made (the project's own versions)."""
        with self.lock:
            rid = next(self._ids)
            now = _now()
            self.releases[rid] = {
                "id": rid,
                "node_id": f"RE_{rid}",
                "tag_name": tag,
                "target_commitish": "main",
                "name": tag,
                "body": "",
                "draft": draft,
                "prerelease": False,
                "immutable": False,
                "created_at": now,
                "published_at": None if draft else now,
                "author": {"login": "maintainer", "id": 7, "type": "User"},
            }
            return self.releases[rid]

    def add_comment(self, number: int, login: str, body: str, *, bot: bool = False) -> dict[str, Any]:
        with self.lock:
            return self._new_comment(number, {"login": login, "type": "Bot" if bot else "User"}, body)

    # -- model -----------------------------------------------------------------------------

    def _release_assets(self, release_id: int) -> list[dict[str, Any]]:
        return sorted((a for a in self.assets.values() if a["_release"] == release_id), key=lambda a: a["id"])

    def _asset_json(self, asset: dict[str, Any]) -> dict[str, Any]:
        out = {k: v for k, v in asset.items() if not k.startswith("_")}
        release = self.releases[asset["_release"]]
        out["url"] = f"{self.api_url}/repos/{self.repo}/releases/assets/{asset['id']}"
        out["browser_download_url"] = (
            f"https://github.example/{self.repo}/releases/download/{quote(release['tag_name'])}/{quote(asset['name'])}"
        )
        return out

    def _release_json(self, release: dict[str, Any]) -> dict[str, Any]:
        out = dict(release)
        rid = release["id"]
        out["url"] = f"{self.api_url}/repos/{self.repo}/releases/{rid}"
        out["assets_url"] = f"{self.api_url}/repos/{self.repo}/releases/{rid}/assets"
        out["upload_url"] = f"{self.uploads_url}/repos/{self.repo}/releases/{rid}/assets{{?name,label}}"
        out["html_url"] = f"https://github.example/{self.repo}/releases/tag/{quote(release['tag_name'])}"
        out["assets"] = [self._asset_json(a) for a in self._release_assets(rid)]
        return out

    def _user(self, token: Token | None) -> dict[str, Any]:
        if token is None:
            return {"login": "ghost", "id": 1, "type": "User"}
        return {
            "login": token.login,
            "id": abs(hash(token.login)) % 10**6,
            "type": "Bot" if token.installation else "User",
        }

    def _new_comment(self, number: int, user: dict[str, Any], body: str) -> dict[str, Any]:
        cid = next(self._ids)
        now = _now()
        comment = {
            "id": cid,
            "node_id": f"IC_{cid}",
            "url": f"{self.api_url}/repos/{self.repo}/issues/comments/{cid}",
            "html_url": f"https://github.example/{self.repo}/pull/{number}#issuecomment-{cid}",
            "issue_url": f"{self.api_url}/repos/{self.repo}/issues/{number}",
            "body": body,
            "user": user,
            "created_at": now,
            "updated_at": now,
            "author_association": "NONE",
        }
        self.comments.setdefault(number, []).append(comment)
        return comment

    def sign(self, asset_id: int, expires: int) -> str:
        return hmac.new(self.signing_key, f"{asset_id}:{expires}".encode(), hashlib.sha256).hexdigest()


def _error(status: int, message: str, doc: str = "", errors: list[dict[str, str]] | None = None) -> _Reply:
    body: dict[str, Any] = {"message": message, "documentation_url": f"{DOCS}{doc}", "status": str(status)}
    if errors:
        body["errors"] = errors
    return _json(status, body)


def _tag_burned() -> _Reply:
    return _error(
        422,
        "Validation Failed",
        "/releases/releases#create-a-release",
        [
            {
                "resource": "Release",
                "code": "custom",
                "field": "tag_name",
                "message": "tag_name was used by an immutable release",
            }
        ],
    )


def _json(status: int, data: Any, headers: dict[str, str] | None = None) -> _Reply:
    return _Reply(
        status, json.dumps(data).encode(), {"Content-Type": "application/json; charset=utf-8", **(headers or {})}
    )


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    host_kind = "api"
    gh: FakeGitHub

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

    # -- dispatch --------------------------------------------------------------------------

    def _handle(self, method: str) -> None:
        gh = self.gh
        split = urlsplit(self.path)
        path = unquote(split.path)
        host = self.host_kind
        if gh.ghes and host == "api":
            if gh.storage_on_api_host and path.startswith("/storage/"):
                host, path = "storage", path[len("/storage") :]
            elif path.startswith("/api/uploads/"):
                host, path = "uploads", path[len("/api/uploads") :]
            elif path.startswith("/api/v3/"):
                path = path[len("/api/v3") :]
            else:
                path = "/__not_api__" + path
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        auth = self.headers.get("Authorization")
        seen = Seen(host, method, path, split.query, auth)
        with gh.lock:
            gh.requests.append(seen)
            if auth:
                gh.tokens_seen[host].add(auth.split(" ", 1)[-1])
                if host == "storage":
                    gh.storage_auth_seen.append(seen)
            fault = self._take_fault(host, method, f"{path}?{split.query}")
        try:
            reply = self._pre_fault(fault)
            if reply is None:
                with gh.lock:
                    reply = self._route(host, method, path, parse_qs(split.query), body, auth, fault)
            if fault and fault.kind == "reset_after":
                raise _Drop
            if fault and fault.kind == "502_after":
                # Applied, then a gateway error (uploads.github.com is known for this).
                reply = _error(502, "Bad Gateway")
            seen.status = reply.status
            kind = fault.kind if fault else ""
            self._send(reply, truncate=kind == "truncate", chunked=kind == "truncate_chunked")
        except _Drop:
            self._reset()

    def _take_fault(self, host: str, method: str, path: str) -> Fault | None:
        for fault in self.gh.faults:
            if fault.times > 0 and fault.host == host and fault.method == method and fault.pattern.search(path):
                fault.times -= 1
                return fault
        return None

    def _pre_fault(self, fault: Fault | None) -> _Reply | None:
        if fault is None:
            return None
        kind = fault.kind
        if kind in ("500", "502", "503"):
            return _error(int(kind), {"500": "Server Error", "502": "Bad Gateway", "503": "Service Unavailable"}[kind])
        if kind == "502html":
            return _Reply(502, b"<html><body><h1>502 Bad Gateway</h1></body></html>", {"Content-Type": "text/html"})
        if kind == "429":
            reply = _error(429, "Too Many Requests")
            reply.headers["Retry-After"] = str(fault.wait)
            return reply
        if kind == "abuse":
            # Secondary rate limits as GitHub named them until 2021 (and older GHES still does).
            return _error(
                403,
                "You have triggered an abuse detection mechanism and have been temporarily blocked from content "
                "creation. Please retry your request again later.",
                "/overview/resources-in-the-rest-api#abuse-rate-limits",
            )
        if kind in ("secondary", "secondary_bare"):
            reply = _error(
                403,
                "You have exceeded a secondary rate limit. Please wait a few minutes before you try again. If you "
                "reach out to GitHub Support for help, please include the request ID ABC:123.",
                "/overview/rate-limits-for-the-rest-api#about-secondary-rate-limits",
            )
            if kind == "secondary":
                reply.headers["Retry-After"] = str(fault.wait)
            return reply
        if kind == "primary":
            reply = _error(
                403,
                "API rate limit exceeded for installation ID 1. If you reach out to GitHub Support for help, please "
                "include the request ID ABC:123 and timestamp.",
                "/overview/rate-limits-for-the-rest-api",
            )
            reply.headers.update(
                {
                    "x-ratelimit-limit": "1000",
                    "x-ratelimit-remaining": "0",
                    "x-ratelimit-used": "1000",
                    "x-ratelimit-reset": str(int(time.time()) + fault.wait),
                    "x-ratelimit-resource": "core",
                }
            )
            return reply
        if kind == "reset_before":
            raise _Drop
        if kind == "hang":
            time.sleep(fault.hang_s)
            raise _Drop
        if kind == "expired":
            return _Reply(
                403,
                b"<?xml version='1.0'?><Error><Code>AccessDenied</Code><Message>Request has expired</Message></Error>",
                {"Content-Type": "application/xml"},
            )
        return None

    def _send(self, reply: _Reply, *, truncate: bool = False, chunked: bool = False) -> None:
        self.send_response(reply.status)
        headers = {
            "X-GitHub-Api-Version-Selected": "2022-11-28",
            "X-GitHub-Request-Id": "FAKE:0001",
            **reply.headers,
        }
        if self.host_kind != "storage":
            headers.setdefault("x-ratelimit-limit", "5000")
            headers.setdefault("x-ratelimit-remaining", "4999")
            headers.setdefault("x-ratelimit-reset", str(int(time.time()) + 3600))
            headers.setdefault("x-ratelimit-resource", "core")
        for key, value in headers.items():
            self.send_header(key, value)
        if chunked:
            self.send_header("Transfer-Encoding", "chunked")
            self.send_header("Connection", "close")
            self.end_headers()
            half = reply.body[: len(reply.body) // 2]
            self.wfile.write(f"{len(reply.body):x}\r\n".encode() + half)
            self.wfile.flush()
            self.close_connection = True
            return
        self.send_header("Content-Length", str(len(reply.body)))
        if truncate:
            self.send_header("Connection", "close")
        self.end_headers()
        if truncate:
            self.wfile.write(reply.body[: len(reply.body) // 2])
            self.wfile.flush()
            self.close_connection = True
            return
        self.wfile.write(reply.body)

    def _reset(self) -> None:
        with contextlib.suppress(OSError):
            self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        self.close_connection = True
        with contextlib.suppress(OSError):
            self.connection.close()

    # -- routes ----------------------------------------------------------------------------

    def _token(self, auth: str | None) -> tuple[bool, Token | None]:
        """(valid, token): no header is anonymous (valid, None); an unknown token is invalid."""
        if not auth:
            return True, None
        scheme, _, value = auth.partition(" ")
        if scheme.lower() not in ("bearer", "token"):
            return False, None
        token = self.gh.tokens.get(value)
        return token is not None, token

    def _route(
        self,
        host: str,
        method: str,
        path: str,
        query: dict[str, list[str]],
        body: bytes,
        auth: str | None,
        fault: Fault | None,
    ) -> _Reply:
        gh = self.gh
        if host == "storage":
            return self._storage(path, query)
        if not self.headers.get("User-Agent"):
            # "All API requests must include a valid User-Agent header" (docs.github.com/rest).
            return _error(
                403, "Request forbidden by administrative rules. Please make sure your request has a User-Agent header"
            )
        version = self.headers.get("X-GitHub-Api-Version")
        if version is not None and version not in ("2022-11-28", "2026-03-10"):
            return _error(400, f"API version {version} is not supported.")
        valid, token = self._token(auth)
        if not valid:
            return _error(401, "Bad credentials")
        if host == "uploads":
            m = re.fullmatch(rf"/repos/{re.escape(gh.repo)}/releases/(\d+)/assets", path)
            if method != "POST" or m is None:
                return _error(404, "Not Found")
            return self._upload(int(m.group(1)), query, body, token, fault)
        if path == "/user" and method == "GET":
            if token is None:
                return _error(401, "Requires authentication", "/users/users#get-the-authenticated-user")
            if token.installation:
                return _error(403, "Resource not accessible by integration", "/users/users#get-the-authenticated-user")
            return _json(200, gh._user(token))
        old = f"/repos/{gh.renamed_from}"
        if gh.renamed_from and (path == old or path.startswith(old + "/")):
            base = gh._origin(gh._api) + ("/api/v3" if gh.ghes else "")
            query_string = urlsplit(self.path).query
            target = f"{base}/repositories/{gh.repo_id}{path[len(old) :]}" + (
                f"?{query_string}" if query_string else ""
            )
            return _Reply(301 if method == "GET" else 307, b"", {"Location": target})
        # /repositories/{id}/... is the same repository (Link headers use that form).
        path = re.sub(rf"^/repositories/{gh.repo_id}(?=/|$)", f"/repos/{gh.repo}", path)
        prefix = f"/repos/{gh.repo}"
        if not (path == prefix or path.startswith(prefix + "/")):
            return _error(404, "Not Found")
        if gh.private and token is None:
            return _error(404, "Not Found")
        rest = path[len(prefix) :]
        if method in ("POST", "PATCH", "DELETE"):
            if token is None:
                return _error(401, "Requires authentication")
            if not token.write:
                return _error(403, "Resource not accessible by integration")
        return self._repo_route(method, rest, query, body, token)

    def _repo_route(
        self, method: str, rest: str, query: dict[str, list[str]], body: bytes, token: Token | None
    ) -> _Reply:
        gh = self.gh
        if rest == "" and method == "GET":
            data: dict[str, Any] = {
                "id": gh.repo_id,
                "name": gh.name,
                "full_name": gh.repo,
                "private": gh.private,
                "default_branch": "main",
            }
            if token is not None and not token.installation:
                data["permissions"] = {
                    "admin": False,
                    "maintain": False,
                    "push": token.write,
                    "triage": token.write,
                    "pull": True,
                }
            return _json(200, data)
        if rest == "/releases":
            if method == "GET":
                visible = [r for r in gh.releases.values() if not r["draft"] or (token and token.write)]
                visible.sort(key=lambda r: r["id"], reverse=True)  # newest first
                return self._page([gh._release_json(r) for r in visible], query, "/releases")
            if method == "POST":
                return self._create_release(body, token)
        m = re.fullmatch(r"/releases/tags/(.+)", rest)
        if m and method == "GET":
            release = gh.release_by_tag(m.group(1))
            if release is None or release["draft"]:
                return _error(404, "Not Found", "/releases/releases#get-a-release-by-tag-name")
            return _json(200, gh._release_json(release))
        m = re.fullmatch(r"/releases/(\d+)", rest)
        if m:
            release = gh.releases.get(int(m.group(1)))
            if release is None or (release["draft"] and not (token and token.write)):
                return _error(404, "Not Found", "/releases/releases#get-a-release")
            if method == "GET":
                return _json(200, gh._release_json(release))
            if method == "PATCH":
                return self._update_release(release, body)
            if method == "DELETE":
                for asset in gh._release_assets(release["id"]):
                    del gh.assets[asset["id"]]
                del gh.releases[release["id"]]
                return _Reply(204)
        m = re.fullmatch(r"/releases/(\d+)/assets", rest)
        if m and method == "GET":
            release = gh.releases.get(int(m.group(1)))
            if release is None:
                return _error(404, "Not Found", "/releases/assets#list-release-assets")
            items = [gh._asset_json(a) for a in gh._release_assets(release["id"])]
            return self._page(items, query, f"/releases/{release['id']}/assets")
        m = re.fullmatch(r"/releases/assets/(\d+)", rest)
        if m:
            asset = gh.assets.get(int(m.group(1)))
            if asset is None:
                return _error(404, "Not Found", "/releases/assets#get-a-release-asset")
            if method == "GET":
                if "application/octet-stream" in (self.headers.get("Accept") or ""):
                    expires = int(time.time()) + 300
                    sig = gh.sign(asset["id"], expires)
                    location = (
                        f"{gh.storage_url}/github-production-release-asset/{gh.repo_id}/{asset['id']}?"
                        + urlencode(
                            {
                                "X-Amz-Algorithm": "AWS4-HMAC-SHA256",
                                "X-Amz-Credential": "FAKEKEY/20260101/us-east-1/s3/aws4_request",
                                "X-Amz-Expires": "300",
                                "X-Amz-Signature": sig,
                                "expires": str(expires),
                                "response-content-disposition": f"attachment; filename={asset['name']}",
                                "response-content-type": "application/octet-stream",
                            }
                        )
                    )
                    return _Reply(302, b"", {"Location": location})
                return _json(200, gh._asset_json(asset))
            if method == "DELETE":
                if gh.releases[asset["_release"]]["immutable"]:
                    return _error(422, "Cannot delete assets from an immutable release")
                del gh.assets[asset["id"]]
                return _Reply(204)
            if method == "PATCH":
                data = json.loads(body or b"{}")
                if "name" in data:
                    asset["name"] = data["name"]
                return _json(200, gh._asset_json(asset))
        m = re.fullmatch(r"/pulls/(\d+)", rest)
        if m and method == "GET":
            pull = gh.pulls.get(int(m.group(1)))
            if pull is None:
                return _error(404, "Not Found", "/pulls/pulls#get-a-pull-request")
            return _json(200, {"number": int(m.group(1)), "state": "open", **pull})
        if rest == "/git/refs" and method == "POST":
            ref = str((json.loads(body or b"{}") or {}).get("ref") or "")
            doc = "/git/refs#create-a-reference"
            if not ref.startswith("refs/") or ref.count("/") < 2:
                return _error(422, "Reference name is invalid", doc)
            return _error(422, "Object does not exist", doc)
        m = re.fullmatch(r"/issues/(\d+)/comments", rest)
        if m:
            number = int(m.group(1))
            if method == "GET":
                return self._page(list(gh.comments.get(number, [])), query, f"/issues/{number}/comments")
            if method == "POST":
                text = (json.loads(body or b"{}") or {}).get("body")
                if not isinstance(text, str) or not text:
                    return _error(422, "Validation Failed", "", [{"resource": "IssueComment", "code": "missing_field"}])
                if len(text) > 65536:
                    return _error(
                        422,
                        "Validation Failed",
                        "/issues/comments#create-an-issue-comment",
                        [
                            {
                                "resource": "IssueComment",
                                "code": "custom",
                                "field": "body",
                                "message": "body is too long (maximum is 65536 characters)",
                            }
                        ],
                    )
                return _json(201, gh._new_comment(number, gh._user(token), text))
        m = re.fullmatch(r"/issues/comments/(\d+)", rest)
        if m:
            cid = int(m.group(1))
            comment = next((c for cs in gh.comments.values() for c in cs if c["id"] == cid), None)
            if comment is None:
                return _error(404, "Not Found", "/issues/comments#update-an-issue-comment")
            if method == "GET":
                return _json(200, comment)
            if method == "PATCH":
                text = (json.loads(body or b"{}") or {}).get("body")
                if not isinstance(text, str) or len(text) > 65536:
                    return _error(422, "Validation Failed")
                # Anyone with write access may edit any comment: GitHub does not check authorship.
                comment["body"] = text
                comment["updated_at"] = _now()
                return _json(200, comment)
        return _error(404, "Not Found")

    def _page(self, items: list[Any], query: dict[str, list[str]], rest: str) -> _Reply:
        try:
            per_page = int(query.get("per_page", ["30"])[0])
            page = int(query.get("page", ["1"])[0])
        except ValueError:
            per_page, page = 30, 1
        per_page = max(1, min(per_page, 100))
        page = max(1, page)
        last = max(1, -(-len(items) // per_page))
        chunk = items[(page - 1) * per_page : page * per_page]
        base = self.gh._origin(self.gh._api) + ("/api/v3" if self.gh.ghes else "")

        def link(p: int, rel: str) -> str:
            keep = {k: v[0] for k, v in query.items() if k not in ("page", "per_page")}
            q = urlencode({**keep, "per_page": per_page, "page": p})
            return f'<{base}/repositories/{self.gh.repo_id}{rest}?{q}>; rel="{rel}"'

        links = []
        if page > 1:
            links += [link(page - 1, "prev"), link(1, "first")]
        if page < last:
            links += [link(page + 1, "next"), link(last, "last")]
        headers = {"Link": ", ".join(links)} if links else {}
        return _json(200, chunk, headers)

    def _create_release(self, body: bytes, token: Token | None) -> _Reply:
        gh = self.gh
        try:
            data = json.loads(body or b"{}")
        except ValueError:
            return _error(400, "Problems parsing JSON")
        tag = data.get("tag_name")
        if not isinstance(tag, str) or not tag:
            return _error(
                422,
                "Validation Failed",
                "/releases/releases#create-a-release",
                [{"resource": "Release", "code": "missing_field", "field": "tag_name"}],
            )
        draft = bool(data.get("draft", False))
        if not draft and any(r["tag_name"] == tag and not r["draft"] for r in gh.releases.values()):
            return _error(
                422,
                "Validation Failed",
                "/releases/releases#create-a-release",
                [{"resource": "Release", "code": "already_exists", "field": "tag_name"}],
            )
        if not draft and tag in gh.burned_tags:
            return _tag_burned()
        rid = next(gh._ids)
        now = _now()
        gh.releases[rid] = {
            "id": rid,
            "node_id": f"RE_{rid}",
            "tag_name": tag,
            "target_commitish": data.get("target_commitish") or "main",
            "name": data.get("name") or tag,
            "body": data.get("body") or "",
            "draft": draft,
            "prerelease": bool(data.get("prerelease", False)),
            "immutable": not draft and gh.immutable_releases,
            "created_at": now,
            "published_at": None if draft else now,
            "author": gh._user(token),
        }
        if gh.releases[rid]["immutable"]:
            gh.burned_tags.add(tag)
        return _json(201, gh._release_json(gh.releases[rid]))

    def _update_release(self, release: dict[str, Any], body: bytes) -> _Reply:
        data = json.loads(body or b"{}")
        tag = data.get("tag_name", release["tag_name"])
        draft = bool(data.get("draft", release["draft"]))
        if release["immutable"] and (tag != release["tag_name"] or draft):
            return _error(
                422,
                "Validation Failed",
                "",
                [
                    {
                        "resource": "Release",
                        "code": "custom",
                        "field": "tag_name",
                        "message": "an immutable release cannot change its tag",
                    }
                ],
            )
        if not draft and any(
            r["tag_name"] == tag and not r["draft"] and r["id"] != release["id"] for r in self.gh.releases.values()
        ):
            return _error(
                422, "Validation Failed", "", [{"resource": "Release", "code": "already_exists", "field": "tag_name"}]
            )
        if not draft and release["draft"] and tag in self.gh.burned_tags:
            return _tag_burned()
        for key in ("name", "body", "prerelease", "target_commitish"):
            if key in data:
                release[key] = data[key]
        release["tag_name"], release["draft"] = tag, draft
        if not draft and release["published_at"] is None:
            release["published_at"] = _now()
            if self.gh.immutable_releases:
                release["immutable"] = True
                self.gh.burned_tags.add(tag)
        return _json(200, self.gh._release_json(release))

    def _upload(
        self, release_id: int, query: dict[str, list[str]], body: bytes, token: Token | None, fault: Fault | None
    ) -> _Reply:
        gh = self.gh
        if token is None:
            return _error(401, "Requires authentication")
        if not token.write:
            return _error(403, "Resource not accessible by integration", "/releases/assets#upload-a-release-asset")
        release = gh.releases.get(release_id)
        if release is None:
            return _error(404, "Not Found")
        if not self.headers.get("Content-Type"):
            return _error(422, "Bad Content-Type header value", "/releases/assets#upload-a-release-asset")
        name = (query.get("name") or [""])[0]
        if not name:
            return _error(
                422, "Validation Failed", "", [{"resource": "ReleaseAsset", "code": "missing_field", "field": "name"}]
            )
        # GitHub renames special characters to '.' and strips leading/trailing periods.
        name = re.sub(r"[^A-Za-z0-9._+@-]", ".", name).strip(".")
        if release["immutable"]:
            return _error(
                422, "Cannot upload assets to an immutable release", "/releases/assets#upload-a-release-asset"
            )
        if any(a["name"] == name for a in gh._release_assets(release_id)):
            return _error(
                422,
                "Validation Failed",
                "/releases/assets#upload-a-release-asset",
                [{"resource": "ReleaseAsset", "code": "already_exists", "field": "name"}],
            )
        aid = next(gh._ids)
        now = _now()
        starter = fault is not None and fault.kind == "starter"
        gh.assets[aid] = {
            "id": aid,
            "node_id": f"RA_{aid}",
            "name": name,
            "label": (query.get("label") or [""])[0],
            "uploader": gh._user(token),
            "content_type": self.headers.get("Content-Type"),
            "state": "starter" if starter else "uploaded",
            "size": 0 if starter else len(body),
            "download_count": 0,
            "created_at": now,
            "updated_at": now,
            "_data": b"" if starter else body,
            "_release": release_id,
        }
        if starter:
            raise _Drop
        return _json(201, gh._asset_json(gh.assets[aid]))

    def _storage(self, path: str, query: dict[str, list[str]]) -> _Reply:
        gh = self.gh
        if self.headers.get("Authorization"):
            return _Reply(
                400,
                b"<?xml version='1.0'?><Error><Code>InvalidArgument</Code><Message>Only one auth mechanism allowed; "
                b"only the X-Amz-Algorithm query parameter, Signature query string parameter or the Authorization "
                b"header should be specified</Message></Error>",
                {"Content-Type": "application/xml"},
            )
        m = re.fullmatch(rf"/github-production-release-asset/{gh.repo_id}/(\d+)", path)
        asset = gh.assets.get(int(m.group(1))) if m else None
        expires = (query.get("expires") or ["0"])[0]
        sig = (query.get("X-Amz-Signature") or [""])[0]
        if asset is None or not expires.isdigit() or not hmac.compare_digest(sig, gh.sign(asset["id"], int(expires))):
            return _Reply(
                403, b"<Error><Code>SignatureDoesNotMatch</Code></Error>", {"Content-Type": "application/xml"}
            )
        if int(expires) < time.time():
            return _Reply(403, b"<Error><Code>AccessDenied</Code><Message>Request has expired</Message></Error>")
        return _Reply(200, asset["_data"], {"Content-Type": "application/octet-stream", "ETag": '"etag"'})
