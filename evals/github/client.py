"""A small, explicit GitHub REST client (httpx, sync) for the baseline store and the PR comment.

Public API (C2 and C3 code against this):

    client = GitHubClient(token, api_url=None, repo=None)   # api_url: GITHUB_API_URL, else https://api.github.com
    client = GitHubClient.from_env(env)                      # token from GITHUB_TOKEN, repo from GITHUB_REPOSITORY
    client.get_repository() -> Repository                     # RepositoryNotVisible on a 404 (exit 3)
    client.write_access() -> WriteAccess                       # whether this token can write contents: proven
                                                               # read-only only by a 403 on a harmless write
    client.get_release_by_tag(tag) -> Release | None          # None when no (published) release has that tag;
                                                               # RepositoryNotVisible when the repo is not visible
    client.create_release(tag, name=None, body="", target_commitish=None) -> Release   # race-safe: 422 -> fetch
    client.list_releases() -> list[Release]                    # all pages, newest first
    client.create_draft_release(tag, name=...) -> Release      # immutable-releases layout: assets go in first,
    client.publish_release(release, tag, name=None, body=None) -> Release   # then publish (422 already_exists:
                                                               # tag taken)
    client.delete_release(release) -> bool
    client.list_assets(release) -> list[Asset]                 # all pages
    client.find_asset(release, name) -> Asset | None
    client.download_asset(asset_or_id, expected_size=None) -> bytes   # 302 -> storage host WITHOUT Authorization
    client.upload_asset(release, name, data, content_type) -> Asset   # AssetExists on a name clash
    client.delete_asset(asset_or_id) -> bool                   # False when it was already gone
    client.list_issue_comments(number) -> list[Comment]        # all pages, oldest first
    client.create_issue_comment(number, body) -> Comment
    client.update_issue_comment(comment_id, body) -> Comment
    client.identity() -> Identity                              # who this token comments as: GET /user's login
                                                               # (a personal token), else an app's bot:
                                                               # "github-actions[bot]" (GITHUB_TOKEN), or the
                                                               # bot EVALGATE_GITHUB_LOGIN names; LoginMismatch
                                                               # when that cannot be this token's
    client.whoami() -> str                                     # identity().login

The HTTP layer (retries, redirects, where the token goes, the errors) is ``evals.github.transport``.
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

import os
import re
from collections.abc import Mapping
from typing import Any

from evals.github.models import (
    ACTIONS_BOT_LOGIN,
    Asset,
    Comment,
    Identity,
    LoginMismatch,
    Release,
    Repository,
    User,
    WriteAccess,
)
from evals.github.transport import (
    AssetExists,
    GitHubError,
    NotFound,
    Op,
    PermissionDenied,
    RepositoryNotVisible,
    Retry,
    Transport,
    Truncated,
    ValidationFailed,
    error_message,
    origin,
    path_segment,
)

# The harmless write of ``write_access``: a ref name GitHub rejects ("refs" and at least two slashes
# are required) pointing at a sha no object has, so no token can ever create anything with it.
WRITE_PROBE_REF = "refs/evalgate-write-probe"
WRITE_PROBE_SHA = "0" * 40


class GitHubClient(Transport):
    """See the module docstring. ``sleep`` is the hook tests replace to skip the waits. ``login``
    (else EVALGATE_GITHUB_LOGIN) names the bot of a GitHub App whose installation token this is."""

    def __init__(self, token: str | None, *, login: str | None = None, **kwargs: Any):
        super().__init__(token, **kwargs)
        # EVALGATE_GITHUB_LOGIN: the login of another GitHub App's installation token (``my-app[bot]``),
        # which cannot read /user; without it, its own comments would not be recognised.
        env = kwargs.get("env")
        self._login = login or (os.environ if env is None else env).get("EVALGATE_GITHUB_LOGIN") or None
        self._identity: Identity | None = None
        self._repository: Repository | None = None

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None, **kwargs: Any) -> GitHubClient:
        """A client for the workflow's repository with ``GITHUB_TOKEN`` from ``env`` (the action
        passes its ``github-token`` input there). Missing token: anonymous (public reads only)."""
        env = os.environ if env is None else env
        return cls(env.get("GITHUB_TOKEN"), env=env, **kwargs)

    def __enter__(self) -> GitHubClient:
        return self

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
                data = self._json("GET", self._repo_url(""), Op(f"read repository {self.repo}"))
            except NotFound as exc:
                raise RepositoryNotVisible(
                    f"repository {self.repo} is not visible with this token (GET /repos/{self.repo}: 404): check "
                    "GITHUB_REPOSITORY and that the token is for this repository with contents: read",
                    status=exc.status,
                ) from None
            self._repository = Repository.model_validate(data)
        return self._repository

    def write_access(self) -> WriteAccess:
        """Whether this token can write to the repository's contents (docs/spec.md#trust-boundaries).
        ``permissions.push`` (or maintain, admin) on ``GET /repos/{owner}/{repo}`` is taken as "can
        write"; its absence is not taken as "cannot": GitHub leaves ``permissions`` out or says
        ``push: false`` for installation tokens that can write. So a write is tried that GitHub must
        reject whoever asks: ``POST /repos/{o}/{r}/git/refs`` with a ref name of one slash and a sha
        no object has. A token that may not write contents gets 403 before the body is looked at
        (read-only, proven); one that may gets 422 (the body is invalid, nothing is created). Any
        other answer (404, 5xx or a dropped connection after retries, 401) establishes nothing. The
        repository itself not visible (or GitHub unreachable) is that error, as for every call."""
        permissions = self.get_repository().permissions  # not visible, unreachable: that error (exit 3)
        if permissions is not None and (permissions.push or permissions.maintain or permissions.admin):
            answer = "permissions.push (or maintain, admin) is true"
            return WriteAccess(can_write=True, asked=f"GET /repos/{self.repo}", answer=answer)
        asked = (
            f"POST /repos/{self.repo}/git/refs with ref {WRITE_PROBE_REF!r} and sha {WRITE_PROBE_SHA} (a request "
            "GitHub rejects for any token, so nothing is created)"
        )
        body = {"ref": WRITE_PROBE_REF, "sha": WRITE_PROBE_SHA}
        try:
            self._json("POST", self._repo_url("/git/refs"), Op("probe write access (contents)"), json_body=body)
        except PermissionDenied as exc:
            return WriteAccess(can_write=False, asked=asked, answer=str(exc))
        except ValidationFailed as exc:
            return WriteAccess(
                can_write=True, asked=asked, answer=f"{exc} (GitHub validated the body: the token may write)"
            )
        except GitHubError as exc:
            return WriteAccess(can_write=None, asked=asked, answer=str(exc))
        return WriteAccess(can_write=True, asked=asked, answer="GitHub accepted it")

    def _not_found_means_missing(self) -> None:
        """A 404 on a resource of the repository is "no such thing" only if the repository itself is
        visible; otherwise every lookup would pass as empty (a store with no baseline)."""
        self.get_repository()

    # -- releases ------------------------------------------------------------------------------

    def get_release_by_tag(self, tag: str) -> Release | None:
        """The published release with this tag, or None (drafts are not found by tag on GitHub).
        ``RepositoryNotVisible`` when the 404 is the repository's, not the release's."""
        try:
            data = self._json("GET", self._repo_url(f"/releases/tags/{path_segment(tag)}"), Op(f"read release {tag!r}"))
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
        op = Op(f"create release {tag!r}", "contents: write")
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
        op = Op("list releases")
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

        op = Op(f"create draft release {tag!r}", "contents: write")
        return Release.model_validate(
            self._json("POST", self._repo_url("/releases"), op, json_body=payload, recover=recover)
        )

    def publish_release(
        self, release: Release, tag: str, *, name: str | None = None, body: str | None = None
    ) -> Release:
        """Publish a draft under ``tag`` (created now), never as the repository's latest release;
        ``name`` and ``body`` replace the draft's. ``ValidationFailed`` with ``already_exists`` when
        the tag is taken (by a release, or — with immutable releases — by one that was deleted):
        the tag is the compare-and-swap."""
        payload: dict[str, Any] = {"tag_name": tag, "draft": False, "make_latest": "false"}
        payload.update({k: v for k, v in (("name", name), ("body", body)) if v is not None})
        op = Op(f"publish release {tag!r}", "contents: write")

        def recover() -> dict[str, Any] | None:
            now = self._json("GET", self._repo_url(f"/releases/{release.id}"), Op(f"read release {release.id}"))
            done = not now.get("draft") and now.get("tag_name") == tag
            return now if done else None

        return Release.model_validate(
            self._json("PATCH", self._repo_url(f"/releases/{release.id}"), op, json_body=payload, recover=recover)
        )

    def delete_release(self, release: Release | int) -> bool:
        """Delete a release (its tag stays); False when it was already gone."""
        return self._delete(f"/releases/{_id(release)}", Op(f"delete release {_id(release)}", "contents: write"))

    # -- assets --------------------------------------------------------------------------------

    def list_assets(self, release: Release | int) -> list[Asset]:
        """Every asset of the release (all pages), in the order GitHub lists them."""
        url = self._repo_url(f"/releases/{_id(release)}/assets")
        return [Asset.model_validate(a) for a in self._paginate(url, Op("list release assets"))]

    def find_asset(self, release: Release | int, name: str) -> Asset | None:
        return next((a for a in self.list_assets(release) if a.name == name), None)

    def download_asset(self, asset: Asset | int, *, expected_size: int | None = None) -> bytes:
        """The asset's bytes. The API answers 302 to a storage host; that request carries no
        Authorization (and no token in any form). A body shorter than its Content-Length (or than
        ``expected_size``, defaulting to ``asset.size``) is retried, then ``Truncated``."""
        if expected_size is None and isinstance(asset, Asset):
            expected_size = asset.size
        url = self._repo_url(f"/releases/assets/{_id(asset)}")
        op = Op(f"download release asset {_name(asset)}")
        return self._with_retries(op, lambda: self._download_once(url, op, expected_size))

    def _download_once(self, url: str, op: Op, expected_size: int | None) -> bytes:
        response = self._send("GET", url, op, accept="application/octet-stream")
        hops = 0
        storage = False
        while response.status_code in (301, 302, 303, 307, 308):
            hops += 1
            location = response.headers.get("location")
            if not location or hops > 5:
                raise GitHubError(f"{op.what}: a redirect without a usable Location", status=response.status_code)
            target = str(response.url.join(location))
            # A redirect within the API (a renamed or transferred repository answers 301 to
            # /repositories/{id}/...) keeps the token: that is still the API. Anything else is the
            # storage host (S3, Azure blob) with a signed URL; a token there would leak it and S3
            # rejects the request anyway ("only one auth mechanism").
            storage = not self._is_api_url(target)
            response = self._send("GET", target, op, accept="application/octet-stream", storage=storage)
        if storage and 400 <= response.status_code < 500:
            # A signed URL that expired or an asset replaced meanwhile: ask the API again.
            message = error_message(response)
            raise Retry(GitHubError(f"{op.what}: the storage host answered {response.status_code} ({message})"))
        self._raise_for_status(response, op)
        data = response.content
        if expected_size and len(data) != expected_size:
            raise Retry(
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
        op = Op(f"upload release asset {name!r}", "contents: write")
        upload_origin = origin(upload_base)
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
        op = Op(f"delete release asset {_name(asset)}", "contents: write")
        return self._delete(f"/releases/assets/{_id(asset)}", op)

    def _delete(self, path: str, op: Op) -> bool:
        try:
            self._json("DELETE", self._repo_url(path), op)
        except NotFound:
            return False
        return True

    # -- issue comments ------------------------------------------------------------------------

    def list_issue_comments(self, number: int) -> list[Comment]:
        """Every comment on the issue or PR (all pages), oldest first."""
        url = self._repo_url(f"/issues/{int(number)}/comments")
        return [Comment.model_validate(c) for c in self._paginate(url, Op(f"list comments of #{number}"))]

    def create_issue_comment(self, number: int, body: str) -> Comment:
        """Post a comment. After an ambiguous failure the comments are re-read and our comment with
        the same body, if there, is returned instead of posting a duplicate."""
        op = Op(f"comment on #{number}", "pull-requests: write")

        def recover() -> dict[str, Any] | None:
            me = self.identity()
            mine = [c for c in self.list_issue_comments(number) if me.wrote(c) and c.body == body]
            return mine[-1].model_dump() if mine else None

        data = self._json(
            "POST", self._repo_url(f"/issues/{int(number)}/comments"), op, json_body={"body": body}, recover=recover
        )
        return Comment.model_validate(data)

    def update_issue_comment(self, comment_id: int, body: str) -> Comment:
        op = Op(f"update comment {comment_id}", "pull-requests: write")
        data = self._json("PATCH", self._repo_url(f"/issues/comments/{int(comment_id)}"), op, json_body={"body": body})
        return Comment.model_validate(data)

    def get_pull_request(self, number: int) -> dict[str, Any]:
        """The pull request as the API returns it (``head.sha``, ``base.sha``, ``head.repo``...)."""
        op = Op(f"read pull request #{int(number)}", "pull-requests: read")
        return self._json("GET", self._repo_url(f"/pulls/{int(number)}"), op)

    def identity(self) -> Identity:
        """Who comments by this token are by (read once). ``GET /user`` answers a personal token
        with its user; an installation token gets 403, and its comments are by its app's bot:
        ``github-actions[bot]`` for GITHUB_TOKEN, or the login named for another app. A named login
        is checked, never taken as given: it must be the personal token's own login, or a bot's
        (``<slug>[bot]``) for an installation token. ``LoginMismatch`` otherwise."""
        if self._identity is None:
            self._identity = self._read_identity()
        return self._identity

    def _read_identity(self) -> Identity:
        named = self._login
        try:
            user = User.model_validate(self._json("GET", f"{self.api_url}/user", Op("read /user")))
        except PermissionDenied:
            if named is None:
                return Identity(login=ACTIONS_BOT_LOGIN, app=True)
            if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9-]*\[bot\]", named):
                raise LoginMismatch(
                    f"EVALGATE_GITHUB_LOGIN is {named!r}, but this token is a GitHub App installation token (GET /user "
                    "answers 403), whose comments are posted by the app's bot, <app-slug>[bot]: evalgate never edits a "
                    "person's comment with it. Set EVALGATE_GITHUB_LOGIN to the app's bot login, or remove it for the "
                    "workflow's GITHUB_TOKEN (github-actions[bot])"
                ) from None
            return Identity(login=named, app=True)
        if named is not None and named != user.login:
            raise LoginMismatch(
                f"EVALGATE_GITHUB_LOGIN is {named!r}, but this token is {user.login!r}'s (GET /user): evalgate edits "
                "only comments of the token's own identity. Remove EVALGATE_GITHUB_LOGIN (a personal token needs none)"
            )
        return Identity(login=user.login, app=False)

    def whoami(self) -> str:
        """The login comments by this token carry (``identity().login``)."""
        return self.identity().login


def _id(obj: Release | Asset | int) -> int:
    return int(obj) if isinstance(obj, int) else obj.id


def _name(asset: Asset | int) -> str:
    return repr(asset.name) if isinstance(asset, Asset) else f"#{asset}"
