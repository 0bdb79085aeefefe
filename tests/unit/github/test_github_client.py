"""evals.github.client against a local GitHub REST stand-in (tests/github_api.py): real HTTP, real
sockets, scripted faults."""

from __future__ import annotations

import logging
from concurrent.futures import ThreadPoolExecutor

import pytest
from fakes.github_server import GitHubServer, github_api_fixture  # noqa: F401

from evals.common.errors import UsageError
from evals.github.client import GitHubClient
from evals.github.models import ACTIONS_BOT_LOGIN, LoginMismatch
from evals.github.publish import set_outputs, upsert_sticky_comment_or_warn, write_step_summary
from evals.github.transport import (
    AssetExists,
    GitHubError,
    NotFound,
    PermissionDenied,
    RateLimited,
    RepositoryNotVisible,
    TransportFailed,
    Truncated,
    Unauthorized,
)

TAG = "eval-baseline"
ASSET_PATH = r"/releases/assets/\d+$"


def _release_with_asset(gh: GitHubServer, data: bytes = b"snapshot-bytes" * 100):
    client = gh.client()
    release = client.create_release(TAG)
    asset = client.upload_asset(release, "baseline-abc.json.gz", data, "application/gzip")
    return client, release, asset, data


def test_release_upload_download_roundtrip_never_sends_the_token_to_storage(github_api: GitHubServer):
    gh = github_api
    client, release, asset, data = _release_with_asset(gh)
    assert client.create_release(TAG).id == release.id  # exists already: the same release comes back
    assert [a.name for a in client.list_assets(release)] == ["baseline-abc.json.gz"]
    assert asset.size == len(data) and asset.state == "uploaded"
    assert client.download_asset(asset) == data
    assert gh.asset_data(TAG, "baseline-abc.json.gz") == data

    storage = gh.requests_to("storage")
    assert len(storage) == 1 and storage[0].status == 200
    assert not storage[0].authorization_header
    assert all(gh.write_token not in value for values in storage[0].query.values() for value in values)
    api_writes = [r for r in gh.requests_to("api") if r.method in ("POST", "PATCH", "DELETE")]
    assert api_writes and all(r.auth == "write" for r in api_writes)


def test_download_served_directly_with_200(github_api: GitHubServer):
    github_api.redirect_downloads = False
    client, _, asset, data = _release_with_asset(github_api)
    assert client.download_asset(asset.id) == data
    assert github_api.requests_to("storage") == []


def test_release_by_tag_missing_is_none_and_create_race_returns_existing(github_api: GitHubServer):
    client = github_api.client()
    assert client.get_release_by_tag(TAG) is None
    seeded = github_api.add_release(TAG)  # a concurrent job created it between our read and write
    assert client.create_release(TAG).id == seeded["id"]
    assert len(github_api.releases()) == 1


def test_tag_with_slash_is_one_path_segment(github_api: GitHubServer):
    client = github_api.client()
    created = client.create_release("baselines/nightly")
    assert client.get_release_by_tag("baselines/nightly").id == created.id


def test_asset_list_follows_link_pagination(github_api: GitHubServer):
    gh = github_api
    for i in range(250):
        gh.add_asset(TAG, f"a{i:03}", b"x")
    release = gh.client().get_release_by_tag(TAG)
    names = [a.name for a in gh.client().list_assets(release)]
    assert names == [f"a{i:03}" for i in range(250)]
    pages = [r for r in gh.requests if r.path.endswith("/assets") and r.method == "GET"]
    assert len(pages) == 3
    # Pages 2 and 3 come from the Link header, which names the repository by id like github.com does.
    assert [p.query.get("page") for p in pages] == [None, ["2"], ["3"]]
    assert "/repositories/" in pages[1].path


def test_github_com_style_api_url_without_prefix_from_env():
    with GitHubServer(prefix="") as gh:
        env = {"GITHUB_API_URL": gh.api_url, "GITHUB_REPOSITORY": gh.repo, "GITHUB_TOKEN": gh.write_token}
        with GitHubClient.from_env(env, sleep=gh.sleeps.append) as client:
            assert client.api_url == gh.origin
            release = client.create_release(TAG)
            asset = client.upload_asset(release, "x.bin", b"123")
            assert client.download_asset(asset) == b"123"
        assert all(r.path.startswith(("/repos/", "/uploads/", "/storage/", "/user")) for r in gh.requests)


def test_ghes_prefix_is_kept_on_every_request(github_api: GitHubServer):
    client, *_ = _release_with_asset(github_api)
    client.list_issue_comments(1)
    api_paths = [r.path for r in github_api.requests_to("api")]
    assert api_paths and all(p.startswith(("/api/v3/", "/api/uploads/")) for p in api_paths)


# -- faults ---------------------------------------------------------------------------------------

HEADER_WAITS = ("429", "secondary", "ratelimit")


@pytest.mark.parametrize("kind", ["500", "502", "503", "429", "secondary", "ratelimit", "reset", "hang", "truncate"])
def test_every_fault_on_the_api_call_of_a_download_is_retried(github_api: GitHubServer, kind: str):
    gh = github_api
    client, _, asset, data = _release_with_asset(gh)
    gh.sleeps.clear()
    gh.faults.add("GET", ASSET_PATH, kind, delay=1.5, retry_after=5)
    fast = gh.client(timeout=0.3) if kind == "hang" else client
    assert fast.download_asset(asset) == data
    assert gh.faults.pending() == []
    assert len(gh.sleeps) == 1
    if (
        kind in HEADER_WAITS
    ):  # the wait GitHub asked for (5 s; X-RateLimit-Reset has 1 s steps), not our backoff (≤ 1 s)
        assert gh.sleeps[0] >= 3.5
    else:
        assert gh.sleeps[0] <= 1.0


@pytest.mark.parametrize("kind", ["500", "502", "expired", "reset", "hang", "truncate"])
def test_every_fault_on_the_storage_host_is_retried(github_api: GitHubServer, kind: str):
    gh = github_api
    client, _, asset, data = _release_with_asset(gh)
    gh.faults.add("GET", r"^/storage/", kind, server="storage", delay=1.5)
    fast = gh.client(timeout=0.3) if kind == "hang" else client
    assert fast.download_asset(asset) == data
    assert gh.faults.pending() == []
    # The retry asks the API again: signed storage URLs are short-lived.
    assert len([r for r in gh.requests_to("api") if r.method == "GET" and r.path.endswith(str(asset.id))]) == 2


@pytest.mark.e2e
@pytest.mark.parametrize(
    ("kind", "error"),
    [
        ("500", GitHubError),
        ("502", GitHubError),
        ("429", RateLimited),
        ("secondary", RateLimited),
        ("reset", TransportFailed),
        ("hang", TransportFailed),
        ("truncate", Truncated),
    ],
)
def test_a_fault_that_persists_ends_in_a_typed_error(github_api: GitHubServer, kind: str, error: type):
    gh = github_api
    _, _, asset, _ = _release_with_asset(gh)
    client = gh.client(max_retries=2, timeout=0.3)
    gh.faults.add("GET", ASSET_PATH, kind, times=3, retry_after=1, delay=1.0)
    with pytest.raises(error) as info:
        client.download_asset(asset)
    assert info.value.exit_code == 3
    assert gh.faults.pending() == []  # 1 try + 2 retries, then it gave up
    assert "download release asset" in str(info.value)


def test_api_redirect_to_another_host_is_not_followed(github_api: GitHubServer):
    gh = github_api
    gh.faults.add("GET", r"/releases/tags/", "moved")
    with pytest.raises(GitHubError, match="301"):
        gh.client().get_release_by_tag(TAG)
    assert gh.requests_to("storage") == []


def test_a_page_that_is_not_json_is_retried(github_api: GitHubServer):
    gh = github_api
    gh.add_comment(3, "hi")
    gh.faults.add("GET", r"/issues/3/comments$", "garbage")
    assert [c.body for c in gh.client().list_issue_comments(3)] == ["hi"]
    assert gh.faults.pending() == []


def test_truncated_json_page_is_retried(github_api: GitHubServer):
    gh = github_api
    for i in range(5):
        gh.add_comment(3, f"comment {i} " + "x" * 500)
    gh.faults.add("GET", r"/issues/3/comments$", "truncate")
    assert len(gh.client().list_issue_comments(3)) == 5
    assert gh.faults.pending() == []


def test_rate_limit_reset_too_far_away_fails_fast(github_api: GitHubServer):
    gh = github_api
    client = gh.client(max_wait=10)
    gh.faults.add("GET", r"/releases/tags/", "ratelimit", retry_after=3600)
    with pytest.raises(RateLimited, match="wait"):
        client.get_release_by_tag(TAG)
    assert gh.sleeps == []


def test_connection_refused_is_retried_then_transport_failed():
    with GitHubServer() as gh:
        url = gh.api_url
    sleeps: list[float] = []
    client = GitHubClient("t", api_url=url, repo="octo/evals", env={}, max_retries=2, sleep=sleeps.append)
    with pytest.raises(TransportFailed):
        client.get_release_by_tag(TAG)
    assert len(sleeps) == 2


# -- uploads: retried only when safe ------------------------------------------------------------


@pytest.mark.parametrize("kind", ["reset", "reset-after", "starter", "502", "hang"])
def test_upload_fault_leaves_exactly_one_complete_asset(github_api: GitHubServer, kind: str):
    gh = github_api
    release = gh.client().create_release(TAG)
    gh.faults.add("POST", r"/assets$", kind, delay=1.5)
    data = bytes(range(256)) * 40
    asset = gh.client(timeout=0.5).upload_asset(release, "baseline-1.json.gz", data)
    assert asset.size == len(data)
    assets = gh.assets(TAG)
    assert [(a["name"], a["state"]) for a in assets] == [("baseline-1.json.gz", "uploaded")]
    assert gh.asset_data(TAG, "baseline-1.json.gz") == data
    uploads = [r for r in gh.requests if r.method == "POST" and r.path.endswith("/assets")]
    # "reset-after" and "hang" may or may not have stored the first attempt; a re-upload happens
    # only when the asset list showed it missing.
    assert len(uploads) == (1 if kind == "reset-after" else 2)


def test_upload_name_clash_is_asset_exists(github_api: GitHubServer):
    gh = github_api
    client = gh.client()
    release = client.create_release(TAG)
    client.upload_asset(release, "manifest.json", b"{}")
    with pytest.raises(AssetExists) as info:
        client.upload_asset(release, "manifest.json", b'{"other": 1}')
    assert info.value.status == 422 and "already_exists" in info.value.codes
    assert gh.asset_data(TAG, "manifest.json") == b"{}"


def test_concurrent_uploads_of_one_name_leave_one_asset_and_typed_clashes(github_api: GitHubServer):
    gh = github_api
    release = gh.client().create_release(TAG)
    clients = [gh.client() for _ in range(6)]

    def upload(i: int):
        try:
            return clients[i].upload_asset(release, "manifest.json", f"writer {i}".encode())
        except AssetExists as err:
            return err

    with ThreadPoolExecutor(6) as pool:
        outcomes = list(pool.map(upload, range(6)))
    winners = [o for o in outcomes if not isinstance(o, AssetExists)]
    assert len(winners) == 1 and len(outcomes) == 6
    assert [a["name"] for a in gh.assets(TAG)] == ["manifest.json"]
    assert gh.asset_data(TAG, "manifest.json") == f"writer {outcomes.index(winners[0])}".encode()
    assert all(isinstance(o, AssetExists) for o in outcomes if o is not winners[0])


def test_delete_and_find_assets(github_api: GitHubServer):
    gh = github_api
    client = gh.client()
    release = client.create_release(TAG)
    a = client.upload_asset(release, "new.json.tmp", b"1")
    b = client.upload_asset(release, "manifest.json", b"0")
    assert client.delete_asset(b) is True
    assert client.delete_asset(b) is False  # already gone: a retried delete is not an error
    assert [x["name"] for x in gh.assets(TAG)] == ["new.json.tmp"]
    assert client.find_asset(release, "new.json.tmp").id == a.id
    assert client.find_asset(release, "nope") is None


def test_comment_post_reset_after_success_does_not_duplicate(github_api: GitHubServer):
    gh = github_api
    gh.faults.add("POST", r"/issues/5/comments$", "reset-after")
    comment = gh.client().create_issue_comment(5, "hello")
    assert [c["body"] for c in gh.comments(5)] == ["hello"]
    assert comment.id == gh.comments(5)[0]["id"]


# -- auth -------------------------------------------------------------------------------------------


def test_bad_token_is_unauthorized(github_api: GitHubServer):
    with pytest.raises(Unauthorized) as info:
        github_api.client("ghp_not-a-real-token").get_release_by_tag(TAG)
    assert info.value.status == 401 and "github-token" in str(info.value)


@pytest.mark.parametrize(
    ("operation", "permission"),
    [
        (lambda c, r: c.create_release("other"), "contents: write"),
        (lambda c, r: c.upload_asset(r, "x", b"1"), "contents: write"),
        (lambda c, r: c.delete_asset(r.assets[0]), "contents: write"),
        (lambda c, r: c.create_issue_comment(1, "hi"), "pull-requests: write"),
    ],
)
def test_read_only_token_names_the_missing_permission(github_api: GitHubServer, operation, permission: str):
    gh = github_api
    gh.add_asset(TAG, "a", b"1")
    reader = gh.client(gh.read_token)
    release = reader.get_release_by_tag(TAG)  # reads work
    with pytest.raises(PermissionDenied) as info:
        operation(reader, release)
    assert info.value.permission == permission
    assert f"`{permission}`" in str(info.value) and "fork" in str(info.value)
    assert gh.sleeps == []  # a plain 403 is not a rate limit: no retry


def test_whoami(github_api: GitHubServer):
    gh = github_api
    assert gh.client().whoami() == ACTIONS_BOT_LOGIN
    assert gh.client(gh.read_token).whoami() == ACTIONS_BOT_LOGIN
    assert gh.client(gh.user_token).whoami() == "octo-user"
    assert gh.client(login="my-app[bot]").whoami() == "my-app[bot]"
    assert gh.client(gh.user_token, login="octo-user").whoami() == "octo-user"  # its own login, named


def test_a_named_login_that_cannot_be_the_tokens_is_refused(github_api: GitHubServer):
    """An installation token (GET /user: 403) comments as an app's bot, never as a person; a
    personal token comments as the user GET /user returns, never as another."""
    gh = github_api
    with pytest.raises(LoginMismatch, match=r"installation token .* never edits a person's comment"):
        gh.client(login="octo-user").whoami()
    with pytest.raises(LoginMismatch, match="this token is 'octo-user''s"):
        gh.client(gh.user_token, login="my-app[bot]").whoami()


def test_missing_things_are_not_found(github_api: GitHubServer):
    client = github_api.client()
    with pytest.raises(NotFound):
        client.list_assets(424242)
    with pytest.raises(NotFound):
        client.update_issue_comment(424242, "x")


def test_tuning_from_the_environment():
    client = GitHubClient("t", env={"GITHUB_REPOSITORY": "o/r", "EVALGATE_GITHUB_RETRIES": "2"})
    assert (client.max_retries, client.api_url) == (2, "https://api.github.com")
    with pytest.raises(UsageError, match="EVALGATE_GITHUB_TIMEOUT"):
        GitHubClient("t", env={"GITHUB_REPOSITORY": "o/r", "EVALGATE_GITHUB_TIMEOUT": "soon"})


def test_bad_repository_is_a_clear_error():
    with pytest.raises(UsageError, match="owner/name"):
        GitHubClient("t", repo="not a repo", env={})


# -- the token never leaks -------------------------------------------------------------------------


def test_token_appears_in_no_output_log_exception_or_file(
    github_api: GitHubServer, tmp_path, capsys, caplog, monkeypatch
):
    gh = github_api
    caplog.set_level(logging.DEBUG)
    seen: list[str] = []
    client, release, asset, _ = _release_with_asset(gh)
    seen.append(repr(client))
    for kind in ("500", "reset", "secondary"):
        gh.faults.add("GET", ASSET_PATH, kind, retry_after=1)
    gh.faults.add("GET", r"^/storage/", "truncate", server="storage")
    client.download_asset(asset)
    failing = gh.client(max_retries=1)
    gh.faults.add("GET", ASSET_PATH, "502", times=2)
    for call in (
        lambda: failing.download_asset(asset),
        lambda: gh.client(gh.read_token).upload_asset(release, "z", b"1"),
        lambda: gh.client(gh.write_token + "x").list_assets(release),
        lambda: client.update_issue_comment(99, "x"),
    ):
        try:
            call()
        except GitHubError as err:
            seen += [str(err), repr(err), repr(err.args), str(err.__context__), str(err.__cause__)]
    env = {"GITHUB_STEP_SUMMARY": str(tmp_path / "summary.md"), "GITHUB_OUTPUT": str(tmp_path / "out")}
    reader = gh.client(gh.read_token)
    monkeypatch.setenv("GITHUB_ACTIONS", "true")  # the warning as a workflow command
    assert upsert_sticky_comment_or_warn(reader, 1, "report", "gate") is None
    write_step_summary("report", env)
    set_outputs({"verdict": "pass", "comment-url": ""}, env)

    out, err = capsys.readouterr()
    seen += [out, err, caplog.text, *(str(vars(r)) for r in gh.requests)]
    seen += [p.read_text() for p in tmp_path.iterdir()]
    assert "::warning" in err
    for token in (gh.write_token, gh.read_token):
        assert all(token not in text for text in seen)
        assert token[4:] not in "".join(seen)  # not even without its prefix


# ------------------------------------------------------------------------------- hardening (trust boundaries)


def test_uploads_carry_the_token_to_the_upload_url_the_api_returned_and_nowhere_else(github_api: GitHubServer):
    """A separate upload host (GHE.com data residency: uploads.<subdomain>.ghe.com) is named only by
    the release's ``upload_url``: the upload gets the token there, the storage host never does."""
    gh = github_api
    client, release, asset, data = _release_with_asset(gh)
    assert release.upload_url.startswith(gh.upload_origin) and gh.upload_origin != gh.origin
    uploads = gh.requests_to("uploads")
    assert len(uploads) == 1 and uploads[0].auth == "write" and uploads[0].status == 201
    assert gh.asset_data(TAG, asset.name) == data
    assert client.download_asset(asset) == data
    assert not any(r.authorization_header for r in gh.requests_to("storage"))


def test_an_upload_url_with_another_scheme_gets_no_token(github_api: GitHubServer):
    client = github_api.client()
    release = client.create_release(TAG)
    plain = release.model_copy(update={"upload_url": release.upload_url.replace("http://", "https://", 1)})
    with pytest.raises(GitHubError, match="not sending the token"):
        client.upload_asset(plain, "x.json", b"{}", "application/json")
    assert github_api.requests_to("uploads") == []


def test_a_release_404_when_the_repository_is_not_visible_is_an_error_not_an_empty_store(github_api: GitHubServer):
    gh = github_api
    gh.add_release(TAG)
    assert gh.client().get_release_by_tag("no-such-tag") is None  # the repository is visible: no such release
    stranger = gh.client(token=gh.stranger_token)
    with pytest.raises(RepositoryNotVisible, match="not visible with this token") as caught:
        stranger.get_release_by_tag(TAG)
    assert caught.value.exit_code == 3


def test_a_token_is_read_only_only_when_github_refuses_a_harmless_write(github_api: GitHubServer):
    """``permissions.push: true`` is taken as "can write", at once. Its absence is not taken as
    "cannot": GitHub leaves ``permissions`` out, or says ``push: false``, for installation tokens
    that can write. Then the client tries a write no token can carry out (a ref name without two
    slashes, a sha of no object): 403 proves the token read-only, 422 (GitHub validated the body)
    shows it may write, anything else establishes nothing. Nothing is ever created."""
    gh = github_api
    assert gh.client().write_access().can_write is True
    assert gh.client(token=gh.user_token).write_access().can_write is True
    assert [r.path for r in gh.requests] == [f"/api/v3/repos/{gh.repo}"] * 2  # push: true decides, no probe
    for answer in ("omitted", "push-false"):
        gh.repo_permissions = answer
        access = gh.client().write_access()
        assert access.can_write is True, access
        assert "POST /repos/octo/evals/git/refs" in access.asked and "422" in access.answer
        reader = gh.client(token=gh.read_token).write_access()
        assert reader.can_write is False and "403 Resource not accessible by integration" in reader.answer
    probes = [r for r in gh.requests if r.method == "POST"]
    assert {r.path for r in probes} == {f"/api/v3/repos/{gh.repo}/git/refs"} and gh.releases() == []

    gh.faults.add("POST", r"/git/refs$", "404")
    unknown = gh.client().write_access()
    assert unknown.can_write is None and "404" in unknown.answer
    gh.faults.add("POST", r"/git/refs$", "503", times=5)
    unknown = gh.client().write_access()
    assert unknown.can_write is None and "503" in unknown.answer and "gave up after 4 retries" in unknown.answer
    with pytest.raises(RepositoryNotVisible):  # the repository itself: the error every call gives (exit 3)
        gh.client(token=gh.stranger_token).write_access()
    gh.repo_permissions = "reported"
    assert gh.client(token=gh.read_token).write_access().can_write is False


def test_every_retry_is_one_line_in_the_log_and_the_final_error_counts_them(github_api: GitHubServer, capsys):
    gh = github_api
    client, _, asset, data = _release_with_asset(gh)
    capsys.readouterr()
    gh.faults.add("GET", ASSET_PATH, "500", times=2)
    assert client.download_asset(asset) == data
    lines = [line for line in capsys.readouterr().err.splitlines() if line.startswith("evalgate: GitHub:")]
    assert len(lines) == 2 and "retry 1/4" in lines[0] and "retry 2/4" in lines[1] and "500" in lines[0]

    gh.faults.add("GET", ASSET_PATH, "503", times=100)
    with pytest.raises(GitHubError, match=r"gave up after 4 retries"):
        client.download_asset(asset)
    assert len([line for line in capsys.readouterr().err.splitlines() if "retry" in line]) == 4
    with pytest.raises(GitHubError, match=r"gave up after 1 retry\)"):
        gh.client(max_retries=1).download_asset(asset)
