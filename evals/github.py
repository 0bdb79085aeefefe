"""A small, explicit GitHub REST client (httpx, sync) for the baseline store and the PR comment.

Public API (C2 and C3 code against this):

    client = GitHubClient(token, api_url=None, repo=None)   # api_url: GITHUB_API_URL, else https://api.github.com
    client = GitHubClient.from_env(env)                      # token from GITHUB_TOKEN, repo from GITHUB_REPOSITORY
    client.get_repository() -> Repository                     # RepositoryNotVisible on a 404 (exit 3)
    client.token_can_write() -> bool | None                    # the repository's `permissions` for this token
    client.get_release_by_tag(tag) -> Release | None          # None when no (published) release has that tag;
                                                               # RepositoryNotVisible when the repo is not visible
    client.create_release(tag, name=None, body="", target_commitish=None) -> Release   # race-safe: 422 -> fetch
    client.list_releases() -> list[Release]                    # all pages, newest first
    client.create_draft_release(tag, name=...) -> Release      # immutable-releases layout: assets go in first,
    client.publish_release(release, tag) -> Release            # then publish (422 already_exists: tag taken)
    client.delete_release(release) -> bool
    client.list_assets(release) -> list[Asset]                 # all pages
    client.find_asset(release, name) -> Asset | None
    client.download_asset(asset_or_id, expected_size=None) -> bytes   # 302 -> storage host WITHOUT Authorization
    client.upload_asset(release, name, data, content_type) -> Asset   # AssetExists on a name clash
    client.delete_asset(asset_or_id) -> bool                   # False when it was already gone
    client.list_issue_comments(number) -> list[Comment]        # all pages, oldest first
    client.create_issue_comment(number, body) -> Comment
    client.update_issue_comment(comment_id, body) -> Comment
    client.whoami() -> str                                     # the token's login; "github-actions[bot]" for
                                                               # installation tokens (GITHUB_TOKEN)

Errors are all ``GitHubError`` (an ``InfraError``, exit 3) with ``status``; subclasses say what
happened: ``NotFound`` 404, ``Unauthorized`` 401, ``PermissionDenied`` 403 (``permission`` names
what the token lacks for that operation), ``ValidationFailed`` 422 (``AssetExists`` when the code
is ``already_exists``), ``RateLimited`` (still limited after retries or the reset is too far away),
``Truncated`` (the body was shorter than announced, after retries), ``TransportFailed``
(connection errors, resets, timeouts after retries).

Retries: connection errors, resets, timeouts, 5xx, 429 and rate limits (``Retry-After``,
``X-RateLimit-Remaining: 0`` + ``X-RateLimit-Reset``) with exponential backoff and jitter, the
waits the headers ask for honoured up to ``max_wait``. Requests that are not idempotent (creating
a comment, uploading an asset, creating a release) are re-sent only after checking that the
first attempt left no effect.

Tuning from the environment (constructor arguments win): EVALGATE_GITHUB_TIMEOUT (seconds per
request, 30), EVALGATE_GITHUB_RETRIES (5), EVALGATE_GITHUB_BACKOFF (first backoff, 1 s),
EVALGATE_GITHUB_MAX_WAIT (longest rate-limit wait honoured, 120 s).

The token is sent only to the API host and, for an upload, to the host of the ``upload_url`` the
API returned for that release (same scheme); never on a redirect to another host. It never
appears in a repr, a log line, an exception message or a file. Every retry prints one line to
stderr (the job log), and an error after retries says how many there were.
"""

from __future__ import annotations

import json
import os
import random
import re
import sys
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, TypeVar
from urllib.parse import quote, urlsplit

import httpx
from pydantic import BaseModel, ConfigDict, Field

from evals.errors import InfraError, UsageError
from evals.escape import log_value

DEFAULT_API_URL = "https://api.github.com"
# GITHUB_TOKEN is an app installation token: /user answers 403 and its comments carry this login.
ACTIONS_BOT_LOGIN = "github-actions[bot]"
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


# ---------------------------------------------------------------------------------------------
# What the API returns (only the fields we use; the rest is ignored)


class _ApiModel(BaseModel):
    model_config = ConfigDict(extra="ignore")


class Asset(_ApiModel):
    id: int
    name: str
    size: int = 0
    state: str = "uploaded"  # "starter" = an upload that never finished; it blocks the name until deleted
    content_type: str | None = None
    url: str | None = None
    browser_download_url: str | None = None
    created_at: str | None = None
    updated_at: str | None = None


class Release(_ApiModel):
    id: int
    tag_name: str
    name: str | None = None
    upload_url: str
    html_url: str | None = None
    draft: bool = False
    prerelease: bool = False
    immutable: bool = False
    created_at: str | None = None
    assets: list[Asset] = Field(default_factory=list)


class Permissions(_ApiModel):
    admin: bool = False
    maintain: bool = False
    push: bool = False
    triage: bool = False
    pull: bool = False


class Repository(_ApiModel):
    full_name: str
    private: bool = False
    default_branch: str | None = None
    permissions: Permissions | None = None  # what this token may do, when the API says


class User(_ApiModel):
    login: str
    type: str | None = None


class Comment(_ApiModel):
    id: int
    body: str | None = None
    html_url: str | None = None
    user: User | None = None
    created_at: str | None = None
    updated_at: str | None = None

    @property
    def login(self) -> str | None:
        return self.user.login if self.user else None


# ---------------------------------------------------------------------------------------------
# Client


@dataclass(frozen=True)
class _Op:
    """What a request is for: named in errors, and the permission a 403 means is missing."""

    what: str
    permission: str | None = None


_RETRYABLE_TRANSPORT = (httpx.TransportError,)
_BEFORE_SEND = (httpx.ConnectError, httpx.ConnectTimeout, httpx.PoolTimeout)


class _Retry(Exception):
    """Internal: this attempt failed in a way worth retrying; ``error`` is raised if retries run out."""

    def __init__(self, error: GitHubError, wait: float | None = None, *, sent: bool = True):
        super().__init__(str(error))
        self.error = error
        self.wait = wait
        self.sent = sent  # False when the request certainly never reached the server


class GitHubClient:
    """See the module docstring. ``sleep`` is the hook tests replace to skip the waits. ``login``
    overrides ``whoami()`` (a GitHub App token whose bot login is known)."""

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
        login: str | None = None,
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
        self._login = login
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
        self._repository: Repository | None = None

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None, **kwargs: Any) -> GitHubClient:
        """A client for the workflow's repository with ``GITHUB_TOKEN`` from ``env`` (the action
        passes its ``github-token`` input there). Missing token: anonymous (public reads only)."""
        env = os.environ if env is None else env
        return cls(env.get("GITHUB_TOKEN"), env=env, **kwargs)

    # -- lifecycle -----------------------------------------------------------------------------

    def close(self) -> None:
        self._http.close()
        self._storage.close()

    def __enter__(self) -> GitHubClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"GitHubClient(api_url={self.api_url!r}, repo={self.repo!r}, token={'set' if self._token else 'none'})"

    @property
    def has_token(self) -> bool:
        return self._token is not None

    # -- the repository ------------------------------------------------------------------------

    def get_repository(self) -> Repository:
        """The repository as this token sees it (read once). ``RepositoryNotVisible`` on a 404:
        it does not exist, or the token cannot see it (another repository's token, an app not
        installed on it, no ``contents: read``)."""
        if self._repository is None:
            try:
                data = self._json("GET", self._repo_url(""), _Op(f"read repository {self.repo}"))
            except NotFound as exc:
                raise RepositoryNotVisible(
                    f"repository {self.repo} is not visible with this token (GET /repos/{self.repo}: 404): check "
                    "GITHUB_REPOSITORY and that the token is for this repository with contents: read",
                    status=exc.status,
                ) from None
            self._repository = Repository.model_validate(data)
        return self._repository

    def token_can_write(self) -> bool | None:
        """Whether this token can write to the repository's contents: the ``permissions`` the API
        reports for the caller on ``GET /repos/{owner}/{repo}`` (push, maintain or admin). None
        when the answer has no ``permissions`` (an anonymous call) or the repository is not visible."""
        try:
            permissions = self.get_repository().permissions
        except RepositoryNotVisible:
            return None
        if permissions is None:
            return None
        return permissions.push or permissions.maintain or permissions.admin

    def _not_found_means_missing(self) -> None:
        """A 404 on a resource of the repository is "no such thing" only if the repository itself is
        visible; otherwise every lookup would pass as empty (a store with no baseline)."""
        self.get_repository()

    # -- releases ------------------------------------------------------------------------------

    def get_release_by_tag(self, tag: str) -> Release | None:
        """The published release with this tag, or None (drafts are not found by tag on GitHub).
        ``RepositoryNotVisible`` when the 404 is the repository's, not the release's."""
        try:
            data = self._json("GET", self._repo_url(f"/releases/tags/{_seg(tag)}"), _Op(f"read release {tag!r}"))
        except NotFound:
            self._not_found_means_missing()
            return None
        return Release.model_validate(data)

    def create_release(
        self,
        tag: str,
        *,
        name: str | None = None,
        body: str = "",
        target_commitish: str | None = None,
        prerelease: bool = False,
    ) -> Release:
        """Create a published release (and its tag). A concurrent creator's 422 ``already_exists``
        returns the existing release; so does a retry after an ambiguous failure. Marked
        ``make_latest: false`` so a baseline store never becomes the repository's "latest" release."""
        payload: dict[str, Any] = {
            "tag_name": tag,
            "name": name or tag,
            "body": body,
            "draft": False,
            "prerelease": prerelease,
            "make_latest": "false",
        }
        if target_commitish:
            payload["target_commitish"] = target_commitish
        op = _Op(f"create release {tag!r}", "contents: write")
        try:
            data = self._json(
                "POST", self._repo_url("/releases"), op, json_body=payload, recover=lambda: self._release_json(tag)
            )
        except ValidationFailed as err:
            if "already_exists" not in err.codes:
                raise
            existing = self.get_release_by_tag(tag)
            if existing is None:
                raise GitHubError(
                    f"GitHub says a release with tag {tag!r} exists but it cannot be read by tag "
                    "(is it a draft? publish or delete it)",
                    status=422,
                ) from None
            return existing
        return Release.model_validate(data)

    def _release_json(self, tag: str) -> dict[str, Any] | None:
        release = self.get_release_by_tag(tag)
        return release.model_dump() if release else None

    def list_releases(self) -> list[Release]:
        """Every release, newest first (all pages); drafts only when the token can write.
        ``RepositoryNotVisible`` when the 404 is the repository's."""
        op = _Op("list releases")
        try:
            return [Release.model_validate(r) for r in self._paginate(self._repo_url("/releases"), op)]
        except NotFound:
            self._not_found_means_missing()
            raise

    def create_draft_release(self, tag: str, *, name: str, body: str = "") -> Release:
        """A draft (no tag is created until it is published; its assets can still change). Not
        retried blindly: after an ambiguous failure the drafts are listed for one with this tag."""
        payload = {"tag_name": tag, "name": name, "body": body, "draft": True, "prerelease": True}

        def recover() -> dict[str, Any] | None:
            found = [r for r in self.list_releases() if r.draft and r.tag_name == tag]
            return found[0].model_dump() if found else None

        op = _Op(f"create draft release {tag!r}", "contents: write")
        return Release.model_validate(
            self._json("POST", self._repo_url("/releases"), op, json_body=payload, recover=recover)
        )

    def publish_release(self, release: Release, tag: str) -> Release:
        """Publish a draft under ``tag`` (created now), never as the repository's latest release.
        ``ValidationFailed`` with ``already_exists`` when the tag is taken (by a release, or — with
        immutable releases — by one that was deleted): the tag is the compare-and-swap."""
        payload = {"tag_name": tag, "draft": False, "make_latest": "false"}
        op = _Op(f"publish release {tag!r}", "contents: write")

        def recover() -> dict[str, Any] | None:
            now = self._json("GET", self._repo_url(f"/releases/{release.id}"), _Op(f"read release {release.id}"))
            done = not now.get("draft") and now.get("tag_name") == tag
            return now if done else None

        return Release.model_validate(
            self._json("PATCH", self._repo_url(f"/releases/{release.id}"), op, json_body=payload, recover=recover)
        )

    def delete_release(self, release: Release | int) -> bool:
        """Delete a release (its tag stays); False when it was already gone."""
        return self._delete(f"/releases/{_id(release)}", _Op(f"delete release {_id(release)}", "contents: write"))

    # -- assets --------------------------------------------------------------------------------

    def list_assets(self, release: Release | int) -> list[Asset]:
        """Every asset of the release (all pages), in the order GitHub lists them."""
        url = self._repo_url(f"/releases/{_id(release)}/assets")
        return [Asset.model_validate(a) for a in self._paginate(url, _Op("list release assets"))]

    def find_asset(self, release: Release | int, name: str) -> Asset | None:
        return next((a for a in self.list_assets(release) if a.name == name), None)

    def download_asset(self, asset: Asset | int, *, expected_size: int | None = None) -> bytes:
        """The asset's bytes. The API answers 302 to a storage host; that request carries no
        Authorization (and no token in any form). A body shorter than its Content-Length (or than
        ``expected_size``, defaulting to ``asset.size``) is retried, then ``Truncated``."""
        if expected_size is None and isinstance(asset, Asset):
            expected_size = asset.size
        url = self._repo_url(f"/releases/assets/{_id(asset)}")
        op = _Op(f"download release asset {_name(asset)}")
        return self._with_retries(op, lambda: self._download_once(url, op, expected_size))

    def _download_once(self, url: str, op: _Op, expected_size: int | None) -> bytes:
        response = self._send("GET", url, op, accept="application/octet-stream")
        hops = 0
        while response.status_code in (301, 302, 303, 307, 308):
            hops += 1
            location = response.headers.get("location")
            if not location or hops > 5:
                raise GitHubError(f"{op.what}: a redirect without a usable Location", status=response.status_code)
            target = str(response.url.join(location))
            # Storage hosts (S3, Azure blob) take a signed URL; a token there would leak it and
            # S3 rejects the request anyway ("only one auth mechanism").
            response = self._send("GET", target, op, accept="application/octet-stream", storage=True)
        if hops and 400 <= response.status_code < 500:
            # A signed URL that expired or an asset replaced meanwhile: ask the API again.
            message = _error_message(response)
            raise _Retry(GitHubError(f"{op.what}: the storage host answered {response.status_code} ({message})"))
        self._raise_for_status(response, op)
        data = response.content
        if expected_size and len(data) != expected_size:
            raise _Retry(
                Truncated(
                    f"{op.what}: got {len(data)} bytes, the asset has {expected_size}", status=response.status_code
                )
            )
        return data

    def upload_asset(
        self, release: Release, name: str, data: bytes, content_type: str = "application/octet-stream"
    ) -> Asset:
        """Upload ``data`` as a new asset named ``name``. ``AssetExists`` when the name is taken.
        After an ambiguous failure (reset, timeout, 5xx) the asset list is checked first: a complete
        asset with our name and size is taken as our upload, a half-finished ("starter") one is
        deleted and the upload re-sent."""
        upload_base = re.sub(r"\{[^}]*\}$", "", release.upload_url)
        op = _Op(f"upload release asset {name!r}", "contents: write")
        upload_origin = _origin(upload_base)
        if upload_origin[0] != self._api_origin[0]:
            raise GitHubError(
                f"{op.what}: the release's upload_url is {upload_origin[0]}:// but the API is "
                f"{self._api_origin[0]}://; not sending the token there"
            )

        def recover() -> dict[str, Any] | None:
            existing = self.find_asset(release, name)
            if existing is None:
                return None
            if existing.state == "uploaded" and existing.size == len(data):
                return existing.model_dump()
            if existing.state != "uploaded":
                self.delete_asset(existing)
                return None
            raise AssetExists(
                f"{op.what}: an asset with that name and a different size exists ({existing.size} bytes)",
                codes=("already_exists",),
            )

        result = self._json(
            "POST",
            upload_base,
            op,
            params={"name": name},
            content=data,
            content_type=content_type,
            recover=recover,
            token_origin=upload_origin,
        )
        return Asset.model_validate(result)

    def delete_asset(self, asset: Asset | int) -> bool:
        """Delete it; False when it was already gone (so a retried delete is not an error)."""
        op = _Op(f"delete release asset {_name(asset)}", "contents: write")
        return self._delete(f"/releases/assets/{_id(asset)}", op)

    def _delete(self, path: str, op: _Op) -> bool:
        try:
            self._json("DELETE", self._repo_url(path), op)
        except NotFound:
            return False
        return True

    # -- issue comments ------------------------------------------------------------------------

    def list_issue_comments(self, number: int) -> list[Comment]:
        """Every comment on the issue or PR (all pages), oldest first."""
        url = self._repo_url(f"/issues/{int(number)}/comments")
        return [Comment.model_validate(c) for c in self._paginate(url, _Op(f"list comments of #{number}"))]

    def create_issue_comment(self, number: int, body: str) -> Comment:
        """Post a comment. After an ambiguous failure the comments are re-read and our comment with
        the same body, if there, is returned instead of posting a duplicate."""
        op = _Op(f"comment on #{number}", "pull-requests: write")

        def recover() -> dict[str, Any] | None:
            me = self.whoami()
            mine = [c for c in self.list_issue_comments(number) if c.login == me and c.body == body]
            return mine[-1].model_dump() if mine else None

        data = self._json(
            "POST", self._repo_url(f"/issues/{int(number)}/comments"), op, json_body={"body": body}, recover=recover
        )
        return Comment.model_validate(data)

    def update_issue_comment(self, comment_id: int, body: str) -> Comment:
        op = _Op(f"update comment {comment_id}", "pull-requests: write")
        data = self._json("PATCH", self._repo_url(f"/issues/comments/{int(comment_id)}"), op, json_body={"body": body})
        return Comment.model_validate(data)

    def get_pull_request(self, number: int) -> dict[str, Any]:
        """The pull request as the API returns it (``head.sha``, ``base.sha``, ``head.repo``...)."""
        op = _Op(f"read pull request #{int(number)}", "pull-requests: read")
        return self._json("GET", self._repo_url(f"/pulls/{int(number)}"), op)

    def whoami(self) -> str:
        """The login comments by this token carry. GITHUB_TOKEN (an app installation token) gets
        403 on /user: that is ``github-actions[bot]``."""
        if self._login is None:
            try:
                self._login = User.model_validate(self._json("GET", f"{self.api_url}/user", _Op("read /user"))).login
            except PermissionDenied:
                self._login = ACTIONS_BOT_LOGIN
        return self._login

    # -- plumbing ------------------------------------------------------------------------------

    def _repo_url(self, path: str) -> str:
        return f"{self.api_url}/repos/{self.repo}{path}"

    def _paginate(self, url: str, op: _Op) -> Iterator[Any]:
        params: dict[str, Any] | None = {"per_page": PER_PAGE}
        next_url: str | None = url
        while next_url:
            response, page = self._with_retries(op, lambda u=next_url, p=params: self._get_page(u, op, p))
            if not isinstance(page, list):
                raise GitHubError(f"{op.what}: expected a list, got {type(page).__name__}", status=response.status_code)
            yield from page
            next_url = response.links.get("next", {}).get("url")
            params = None  # the Link URL carries per_page and page already
            if next_url and _origin(next_url) != self._api_origin:
                raise GitHubError(f"{op.what}: the next page link points off the API host ({_origin(next_url)[1]})")

    def _get_page(self, url: str, op: _Op, params: dict[str, Any] | None) -> tuple[httpx.Response, Any]:
        response = self._checked("GET", url, op, params=params)
        return response, _parse_json(response, op)

    def _json(
        self,
        method: str,
        url: str,
        op: _Op,
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
            except _Retry as retry:
                attempted = retry.sent
                raise
            if response.status_code == 204 or not response.content:
                return None
            return _parse_json(response, op)

        return self._with_retries(op, attempt)

    def _checked(self, method: str, url: str, op: _Op, **kwargs: Any) -> httpx.Response:
        response = self._send(method, url, op, **kwargs)
        hops = 0
        # A renamed/transferred repository answers 301/307 on the same API host.
        while response.status_code in (301, 302, 307, 308) and hops < 3:
            location = response.headers.get("location")
            target = str(response.url.join(location)) if location else ""
            if not target or _origin(target) != self._api_origin:
                break
            hops += 1
            response = self._send(method, target, op, **kwargs)
        self._raise_for_status(response, op)
        return response

    def _send(
        self,
        method: str,
        url: str,
        op: _Op,
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
            if self._token and (_origin(url) in self._token_origins or _origin(url) == token_origin):
                headers["Authorization"] = f"Bearer {self._token}"
        if content_type:
            headers["Content-Type"] = content_type
        client = self._storage if storage else self._http
        try:
            response = client.request(method, url, headers=headers, params=params, json=json_body, content=content)
            response.read()
        except _BEFORE_SEND as err:
            raise _Retry(TransportFailed(f"{op.what}: {_describe_transport(err)}"), sent=False) from None
        except httpx.RemoteProtocolError as err:
            # h11 raises this when the peer closes before Content-Length bytes arrived.
            kind = (
                Truncated if "incomplete" in str(err).lower() or "peer closed" in str(err).lower() else TransportFailed
            )
            raise _Retry(kind(f"{op.what}: {_describe_transport(err)}")) from None
        except _RETRYABLE_TRANSPORT as err:
            raise _Retry(TransportFailed(f"{op.what}: {_describe_transport(err)}")) from None
        declared = response.headers.get("content-length")
        short = declared and declared.isdigit() and len(response.content) < int(declared)
        if short and "content-encoding" not in response.headers:
            raise _Retry(Truncated(f"{op.what}: body cut short ({len(response.content)} of {declared} bytes)"))
        return response

    def _raise_for_status(self, response: httpx.Response, op: _Op) -> None:
        status = response.status_code
        if status < 300:
            return
        message = self._scrub(_error_message(response))
        where = f"{op.what} ({response.request.method} {_path(response.request.url)})"
        wait = _rate_limit_wait(response, message)
        if wait is not None:
            raise _Retry(RateLimited(f"{where}: rate limited by GitHub ({status}: {message})", status=status), wait)
        if status >= 500:
            raise _Retry(GitHubError(f"{where}: GitHub answered {status} ({message})", status=status))
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

    def _with_retries(self, op: _Op, attempt: Callable[[], T]) -> T:
        tries = 0
        while True:
            try:
                return attempt()
            except _Retry as retry:
                tries += 1
                if tries > self.max_retries:
                    if self.max_retries:
                        retry.error.args = (f"{retry.error} (gave up after {self.max_retries} retries)",)
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
                print(
                    f"evalgate: GitHub: {log_value(retry.error, limit=400)}; retry {tries}/{self.max_retries} in "
                    f"{delay:.1f}s",
                    file=sys.stderr,
                    flush=True,
                )
                self._sleep(delay)

    def _scrub(self, text: str) -> str:
        return text.replace(self._token, "***") if self._token else text


# ---------------------------------------------------------------------------------------------
# helpers


def _id(obj: Release | Asset | int) -> int:
    return int(obj) if isinstance(obj, int) else obj.id


def _name(asset: Asset | int) -> str:
    return repr(asset.name) if isinstance(asset, Asset) else f"#{asset}"


def _seg(text: str) -> str:
    return quote(text, safe="")


def _origin(url: str) -> tuple[str, str]:
    parts = urlsplit(url)
    return parts.scheme, parts.netloc.lower()


def _path(url: httpx.URL) -> str:
    # Never the query: signed storage URLs carry credentials there.
    return url.path


def _parse_json(response: httpx.Response, op: _Op) -> Any:
    try:
        return json.loads(response.content)
    except ValueError:
        raise _Retry(
            GitHubError(f"{op.what}: GitHub sent a body that is not JSON", status=response.status_code)
        ) from None


def _error_message(response: httpx.Response) -> str:
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
    if status == 429 or "rate limit" in message.lower():
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
