"""evalgate's GitHub side against an independent fake of GitHub's REST API
(tests/fakes/github_fake_independent.py, written from GitHub's documentation), driven as a workflow
drives it: the action's own Gate step (its ``run:`` script and ``env:`` from action.yml) in bash,
with the runner's variables (GITHUB_API_URL, GITHUB_REPOSITORY, GITHUB_EVENT_PATH, ...) pointing
at the fake, on a small suite in a real git repository.

Checked throughout: the token never reaches the storage host downloads are redirected to, and
never appears in a log, an output or a file; a fault ends in success after retries or exit 3,
never in a lost or corrupted baseline."""

from __future__ import annotations

import gzip
import hashlib
import json
import os
import re
import subprocess
import sys
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml
from fakes.github_fake_independent import FakeGitHub, Token
from fakes.paths import ROOT
from fakes.suites import git, read_output_file

ACTION = yaml.safe_load((ROOT / "action.yml").read_text(encoding="utf-8"))
GATE_STEP = next(step for step in ACTION["runs"]["steps"] if step.get("id") == "gate")
TAG = "eval-baseline"
PR = 7
WRITE = "ghs_writeTOKEN0123456789abcdefWRITE"  # the job's GITHUB_TOKEN (contents/pull-requests: write)
READ = "ghs_readonlyTOKEN0123456789abcdREAD"  # a fork PR's GITHUB_TOKEN
PAT = "github_pat_11ABCDEFG0123456789_patSECRET"  # a user's fine-grained token
BOT = "github-actions[bot]"
APP = "ghs_otherAppInstallationTOKEN0123456789"  # another GitHub App's installation token
TOKENS = (WRITE, READ, PAT, APP)

GOOD_BOT = "def answer(question):\n    return question\n"
# Wrong on every odd case: a clear regression.
BAD_BOT = "def answer(question):\n    return question if int(question[1:]) % 2 == 0 else 'nope'\n"
BETTER_NOTE = "# a harmless change\n"


def cases(n: int = 40) -> list[dict[str, Any]]:
    return [
        {"id": f"c{i:03d}", "input": f"q{i}", "expected": f"q{i}", "tags": {"language": ("en", "ko")[i % 2]}}
        for i in range(n)
    ]


# ------------------------------------------------------------------------------------------------ the world


@dataclass
class Run:
    code: int
    stdout: str
    stderr: str
    outputs: dict[str, str]
    summary: str
    home: Path

    @property
    def log(self) -> str:
        return self.stdout + self.stderr


@dataclass
class Origin:
    """The repository: main's first commit (a good bot), a regressing PR commit on top of it, and
    a fix on top of that; ``seeded`` is the fake's state after the first push seeded the store."""

    repo: Path
    main_sha: str
    bad_sha: str
    fixed_sha: str
    seeded: dict[str, Any]


def _commit(repo: Path, bot: str, message: str) -> str:
    (repo / "bot.py").write_text(bot, encoding="utf-8")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", message)
    return git(repo, "rev-parse", "HEAD")


class World:
    def __init__(self, gh: FakeGitHub, origin: Origin, tmp: Path):
        self.gh = gh
        self.tmp = tmp
        self.origin = origin
        self.repo = origin.repo
        self.main_sha, self.bad_sha, self.fixed_sha = origin.main_sha, origin.bad_sha, origin.fixed_sha
        self.runs = 0
        self.lock = threading.Lock()

    def seeded(self) -> None:
        """The store as the first push to main left it (one blessed seed snapshot)."""
        self.gh.import_state(self.origin.seeded)

    def checkout(self, sha: str) -> None:
        git(self.repo, "checkout", "-q", sha)

    # -- events ----------------------------------------------------------------------------

    def repository(self) -> dict[str, Any]:
        return {"full_name": self.gh.repo, "default_branch": "main"}

    def push(self, sha: str, **kw: Any) -> Run:
        payload = {"ref": "refs/heads/main", "after": sha, "repository": self.repository()}
        return self.action("push", payload, sha=sha, ref="refs/heads/main", **kw)

    def pull_request(self, head: str, base: str, *, fork: bool = False, **kw: Any) -> Run:
        head_repo = "forker/app" if fork else self.gh.repo
        payload = {
            "number": PR,
            "pull_request": {
                "number": PR,
                "head": {"sha": head, "ref": "feature", "repo": {"full_name": head_repo}},
                "base": {"sha": base, "ref": "main", "repo": {"full_name": self.gh.repo}},
            },
            "repository": self.repository(),
        }
        kw.setdefault("token", READ if fork else WRITE)
        return self.action("pull_request", payload, sha=head, ref=f"refs/pull/{PR}/merge", **kw)

    def run_suite(self, sha: str) -> Path:
        """Job 1 of the two-job layout (``mode: run``, no token): the results file job 2 gates."""
        run = self.action(
            "push",
            {"repository": self.repository()},
            sha=sha,
            ref="refs/heads/feature",
            token="",
            inputs={"mode": "run"},
        )
        assert run.code == 0, run.log
        return run.home / "out" / "results.json"

    def dispatch(self, sha: str, reason: str, **kw: Any) -> Run:
        payload = {"ref": "refs/heads/main", "inputs": {"reason": reason}, "repository": self.repository()}
        inputs = {"reason": reason, **kw.pop("inputs", {})}
        return self.action("workflow_dispatch", payload, sha=sha, ref="refs/heads/main", inputs=inputs, **kw)

    # -- the action's Gate step ------------------------------------------------------------

    def action(
        self,
        event: str,
        payload: dict[str, Any],
        *,
        sha: str,
        ref: str,
        token: str = WRITE,
        inputs: dict[str, str] | None = None,
        env: dict[str, str] | None = None,
        checkout: bool = True,
    ) -> Run:
        if checkout:
            self.checkout(sha)
        with self.lock:
            self.runs += 1
            home = self.tmp / f"run{self.runs}"
            assert not home.exists()
        (home / "temp").mkdir(parents=True)
        (home / "event.json").write_text(json.dumps(payload), encoding="utf-8")
        given = {name: str(spec.get("default", "")) for name, spec in ACTION["inputs"].items()}
        given["github-token"] = token
        given["out-dir"] = str(home / "out")
        # These stories run the suite and gate in one job with a write token on purpose (they test the
        # store and the client, not the job boundary), so they accept what the action otherwise refuses.
        given["allow-write-token-with-suite"] = "true"
        given.update(inputs or {})
        step_env = {}
        for key, value in GATE_STEP["env"].items():
            match = re.fullmatch(r"\$\{\{\s*inputs\.([\w-]+)\s*\}\}", str(value))
            if match:
                step_env[key] = given[match.group(1)]
            elif "steps.install.outputs.python" in str(value):
                step_env[key] = sys.executable
            else:
                raise AssertionError(f"unexpected env value in action.yml: {key}: {value}")
        runner = {
            "PATH": os.environ["PATH"],
            "HOME": str(home),
            "LANG": "C.UTF-8",
            "CI": "true",
            "GITHUB_ACTIONS": "true",
            "GITHUB_EVENT_NAME": event,
            "GITHUB_EVENT_PATH": str(home / "event.json"),
            "GITHUB_OUTPUT": str(home / "output"),
            "GITHUB_STEP_SUMMARY": str(home / "summary.md"),
            "GITHUB_API_URL": self.gh.api_url,
            "GITHUB_SERVER_URL": "https://github.example",
            "GITHUB_REPOSITORY": self.gh.repo,
            "GITHUB_SHA": sha,
            "GITHUB_REF": ref,
            "GITHUB_ACTOR": "octo-dev",
            "GITHUB_WORKSPACE": str(self.repo),
            "GITHUB_ACTION_PATH": str(ROOT),
            "RUNNER_TEMP": str(home / "temp"),
            "EVALGATE_HISTORY": "off",
            # Fast retries: the waits are what is tuned, not what is retried.
            "EVALGATE_GITHUB_TIMEOUT": "1",
            "EVALGATE_GITHUB_BACKOFF": "0.01",
            "EVALGATE_GITHUB_MAX_WAIT": "3",
        }
        done = subprocess.run(
            ["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", GATE_STEP["run"]],
            cwd=self.repo,
            env=runner | step_env | (env or {}),
            capture_output=True,
            text=True,
            timeout=120,
        )
        summary = home / "summary.md"
        return Run(
            done.returncode,
            done.stdout,
            done.stderr,
            read_output_file(home / "output"),
            summary.read_text(encoding="utf-8") if summary.exists() else "",
            home,
        )

    # -- the store as GitHub holds it ------------------------------------------------------

    def manifest(self) -> dict[str, Any]:
        names = [n for n in self.gh.asset_names(TAG) if re.fullmatch(r"manifest-\d+\.json", n)]
        assert names, f"no manifest in the release: {self.gh.asset_names(TAG)}"
        return json.loads(self.gh.asset_bytes(TAG, max(names)))

    def assert_store_valid(self) -> dict[str, Any]:
        """The current manifest names snapshots that exist, match their digests and decode."""
        manifest = self.manifest()
        names = self.gh.asset_names(TAG)
        for snap in manifest["snapshots"]:
            assert snap["name"] in names, (snap["name"], names)
            data = self.gh.asset_bytes(TAG, snap["name"])
            assert "sha256:" + hashlib.sha256(data).hexdigest() == snap["digest"]
            json.loads(gzip.decompress(data))
        return manifest

    def assert_no_token_leak(self) -> None:
        assert not self.gh.storage_auth_seen, "a request to the storage host carried Authorization"
        assert not self.gh.tokens_seen["storage"]
        files = [*self.tmp.rglob("*"), *self.repo.rglob("*")]
        for path in files:
            if path.is_file() and ".git" not in path.parts:
                data = path.read_bytes()
                for token in TOKENS:
                    assert token.encode() not in data, f"token in {path}"


def assert_clean_log(run: Run) -> None:
    for token in TOKENS:
        assert token not in run.log
        assert token not in run.summary
        assert all(token not in value for value in run.outputs.values())
    # Signed storage URLs carry their credential in the query: never logged either.
    assert "X-Amz-" not in run.log and "X-Amz-" not in run.summary
    assert "Traceback" not in run.log, run.log


def _tokens() -> dict[str, Token]:
    return {
        WRITE: Token(BOT, installation=True),
        READ: Token(BOT, installation=True, write=False),
        PAT: Token("octo-dev"),
    }


@pytest.fixture(scope="module")
def origin(tmp_path_factory: pytest.TempPathFactory) -> Origin:
    repo = tmp_path_factory.mktemp("repo")
    git(repo, "init", "-q")
    with (repo / "cases.jsonl").open("w", encoding="utf-8") as fh:
        for case in cases():
            fh.write(json.dumps(case) + "\n")
    config = {
        "suite": "t",
        "cases": "cases.jsonl",
        "target": {"python": "bot:answer", "path": ["."]},
        "slices": ["language"],
        "concurrency": 4,
        "smoke": {"cases": 40, "per_slice_min": 5},
        "baseline": {"store": "github-release", "tag": TAG, "on_missing": "seed"},
        "history": {"enabled": False},
    }
    (repo / "evalgate.yml").write_text(yaml.safe_dump(config, sort_keys=False), encoding="utf-8")
    keep2 = {**config, "baseline": {**config["baseline"], "keep": 2}}
    (repo / "evalgate-keep2.yml").write_text(yaml.safe_dump(keep2, sort_keys=False), encoding="utf-8")
    (repo / ".gitignore").write_text("__pycache__/\n.evalgate/\n", encoding="utf-8")
    main_sha = _commit(repo, GOOD_BOT, "first")
    bad_sha = _commit(repo, BAD_BOT, "regress")
    fixed_sha = _commit(repo, GOOD_BOT + BETTER_NOTE, "fix")
    partial = Origin(repo, main_sha, bad_sha, fixed_sha, {})
    with FakeGitHub(tokens=_tokens()) as gh:
        world = World(gh, partial, tmp_path_factory.mktemp("seed"))
        run = world.push(main_sha)
        assert run.code == 0, run.log
        partial.seeded = gh.export_state()
    return partial


@pytest.fixture
def world(origin: Origin, tmp_path: Path) -> Iterator[World]:
    with FakeGitHub(tokens=_tokens()) as gh:
        yield World(gh, origin, tmp_path)


def ours(world: World) -> list[dict[str, Any]]:
    return [c for c in world.gh.comments.get(PR, []) if c["user"]["login"] == BOT]


# ------------------------------------------------------------------------------------------------ tests


def test_seed_pr_sticky_comment_promotion_and_reset(world: World) -> None:
    gh = world.gh
    # First push to main: no release yet (GET by tag / list: nothing), the run seeds the store.
    seed = world.push(world.main_sha)
    assert seed.code == 0, seed.log
    assert_clean_log(seed)
    assert seed.outputs.get("promoted") == "true", seed.outputs
    release = gh.release_by_tag(TAG)
    assert release is not None and release["prerelease"] and not release["draft"]
    manifest = world.assert_store_valid()
    assert [s["sha"] for s in manifest["snapshots"]] == [world.main_sha]
    assert gh.count("uploads", "POST") >= 2 and gh.count("api", "POST", "/assets") == 0

    # A busy PR: 150 comments of others (so ours lands on page 2 of 100), one quoting our marker.
    for i in range(150):
        gh.add_comment(PR, f"user{i % 3}", f"comment {i}")
    # Gated as job 2 of the two-job layout: the same results file, so the same comment text
    # (a suite run's latencies differ every time, and the comment shows them).
    bad = world.bad_sha
    results = {"results": str(world.run_suite(bad))}
    first = world.pull_request(bad, world.main_sha, inputs=results)
    assert first.code == 1, first.log
    assert first.outputs["verdict"] == "fail"
    assert_clean_log(first)
    mine = ours(world)
    assert len(mine) == 1
    marker = mine[0]["body"].splitlines()[0]
    assert marker.startswith("<!--") and "evalgate" in marker
    assert first.outputs["comment-url"] == mine[0]["html_url"]
    gh.add_comment(PR, "reviewer", marker + "\nquoting the bot: is this real?")
    for i in range(30):
        gh.add_comment(PR, "user9", f"later {i}")

    # The same PR again: found on page 2 across pages, unchanged -> not touched.
    posts, patches = gh.count("api", "POST", "/comments"), gh.count("api", "PATCH", "/comments")
    again = world.pull_request(bad, world.main_sha, inputs=results)
    assert again.code == 1, again.log
    assert gh.count("api", "POST", "/comments") == posts
    assert gh.count("api", "PATCH", "/comments") == patches, "an unchanged comment was rewritten"
    pages = [r for r in gh.requests if r.method == "GET" and r.path.endswith(f"/issues/{PR}/comments")]
    # Each run read both pages (100 + 82 comments): ours is on page 2, found by the Link header.
    assert sum("page=2" in r.query for r in pages) == 2 and not any("page=3" in r.query for r in pages)

    # The PR is fixed: the same comment is updated in place; the reviewer's quote is left alone.
    fixed = world.fixed_sha
    third = world.pull_request(fixed, world.main_sha)
    assert third.code == 0, third.log
    assert [c["id"] for c in ours(world)] == [mine[0]["id"]]
    assert gh.count("api", "PATCH", "/comments") == patches + 1
    assert "quoting the bot" in next(c["body"] for c in gh.comments[PR] if c["user"]["login"] == "reviewer")
    assert len(gh.comments[PR]) == 150 + 1 + 1 + 30

    # Merged: the push to main promotes the candidate.
    promoted = world.push(fixed)
    assert promoted.code == 0, promoted.log
    assert promoted.outputs.get("promoted") == "true", promoted.log
    manifest = world.assert_store_valid()
    assert [s["sha"] for s in manifest["snapshots"]][-1] == fixed

    # A reset on main, with a reason and the actor recorded.
    reset = world.dispatch(fixed, "new rubric")
    assert reset.code == 0, reset.log
    assert_clean_log(reset)
    manifest = world.assert_store_valid()
    last = manifest["snapshots"][-1]
    assert last["blessed"] and last["reason"] == "new rubric" and last["actor"] == "octo-dev"
    world.assert_no_token_leak()
    assert gh.tokens_seen["uploads"] == {WRITE} and gh.tokens_seen["api"] == {WRITE}


# ------------------------------------------------------------------------------------------------ faults

ASSET = r"/releases/assets/\d+\?"
STORAGE = r"^/github-production-release-asset/"
LIST_RELEASES = r"/releases\?"
LIST_ASSETS = r"/releases/\d+/assets\?"


@pytest.mark.parametrize(
    "faults",
    [
        [("api", ASSET, "502"), ("storage", STORAGE, "expired"), ("api", LIST_RELEASES, "503")],
        [("api", ASSET, "429"), ("storage", STORAGE, "truncate"), ("api", LIST_ASSETS, "502html")],
        [("api", ASSET, "secondary"), ("api", ASSET, "primary"), ("api", LIST_ASSETS, "truncate")],
        [("api", ASSET, "reset_before"), ("storage", STORAGE, "reset_after"), ("api", ASSET, "hang")],
        [("storage", STORAGE, "truncate_chunked"), ("api", LIST_RELEASES, "truncate_chunked")],
    ],
    ids=["5xx-expired", "429-truncated", "rate-limits", "resets-hang", "chunked-cut"],
)
def test_faults_while_reading_the_baseline_are_retried(world: World, faults: list[tuple[str, str, str]]) -> None:
    world.seeded()
    for host, pattern, kind in faults:
        world.gh.fault(host, "GET", pattern, kind, hang_s=1.5)
    run = world.pull_request(world.bad_sha, world.main_sha)
    assert run.code == 1, run.log  # the regression is found against the real baseline
    assert run.outputs["baseline-sha"] == world.main_sha
    assert all(f.times == 0 for f in world.gh.faults), "a fault was not reached"
    assert run.log.count("; retry ") >= len(faults)
    assert len(ours(world)) == 1
    assert_clean_log(run)
    world.assert_no_token_leak()


@pytest.mark.parametrize(
    ("host", "pattern", "kind", "says"),
    [
        ("api", ASSET, "502", "gave up after 5 retries"),
        ("storage", STORAGE, "expired", "gave up after 5 retries"),
        ("api", LIST_RELEASES, "reset_before", "gave up after 5 retries"),
        ("api", LIST_ASSETS, "primary_hour", "asks to wait"),
    ],
    ids=["api-download", "storage", "list-releases", "hourly-quota-spent"],
)
def test_a_baseline_store_that_stays_down_is_exit_3(
    world: World, host: str, pattern: str, kind: str, says: str
) -> None:
    world.seeded()
    world.gh.fault(
        host, "GET", pattern, kind.removesuffix("_hour"), times=99, wait=3600 if kind.endswith("_hour") else 1
    )
    run = world.pull_request(world.bad_sha, world.main_sha)
    assert run.code == 3, run.log
    assert run.outputs.get("verdict") == "error"
    assert says in run.log
    assert_clean_log(run)
    world.assert_store_valid()
    world.assert_no_token_leak()


UPLOAD = r"/releases/\d+/assets\?name="


@pytest.mark.parametrize(
    "faults",
    [
        [("uploads", "POST", UPLOAD + "baseline", "502"), ("uploads", "POST", UPLOAD + "manifest", "503")],
        [
            ("uploads", "POST", UPLOAD + "baseline", "reset_after"),
            ("uploads", "POST", UPLOAD + "manifest", "reset_after"),
        ],
        [("uploads", "POST", UPLOAD + "baseline", "starter"), ("uploads", "POST", UPLOAD + "manifest", "truncate")],
        [("uploads", "POST", UPLOAD, "429"), ("uploads", "POST", UPLOAD, "secondary"), ("api", "DELETE", "", "502")],
        [("uploads", "POST", UPLOAD + "manifest", "hang"), ("uploads", "POST", UPLOAD + "baseline", "reset_before")],
        [("uploads", "POST", UPLOAD + "baseline", "502_after"), ("uploads", "POST", UPLOAD + "manifest", "502_after")],
    ],
    ids=["5xx", "answer-lost", "half-upload", "rate-limits", "hang", "applied-then-502"],
)
def test_faults_during_promotion_are_retried_and_leave_one_valid_baseline(
    world: World, faults: list[tuple[str, str, str, str]]
) -> None:
    world.seeded()
    for host, method, pattern, kind in faults:
        world.gh.fault(host, method, pattern, kind, hang_s=1.5)
    run = world.push(world.fixed_sha)
    assert run.code == 0, run.log
    assert run.outputs.get("promoted") == "true", run.log
    assert all(f.times == 0 for f in world.gh.faults if f.method == "POST"), "a fault was not reached"
    manifest = world.assert_store_valid()
    assert [s["sha"] for s in manifest["snapshots"]] == [world.main_sha, world.fixed_sha]
    names = world.gh.asset_names(TAG)
    assert len(names) == len(set(names))
    assert not [a for a in world.gh.assets.values() if a["state"] != "uploaded"], "a half-finished asset was left"
    assert_clean_log(run)
    world.assert_no_token_leak()


@pytest.mark.parametrize("kind", ["502", "secondary_bare", "reset_before"])
def test_a_promotion_that_keeps_failing_is_exit_3_with_the_old_baseline_intact(world: World, kind: str) -> None:
    world.seeded()
    before = world.manifest()
    world.gh.fault("uploads", "POST", UPLOAD, kind, times=99)
    run = world.push(world.fixed_sha)
    assert run.code == 3, run.log
    assert world.manifest() == before
    world.assert_store_valid()
    assert_clean_log(run)
    world.assert_no_token_leak()


def test_first_seed_survives_a_lost_create_release_answer(world: World) -> None:
    world.gh.fault("api", "POST", r"/releases\?", "reset_after")
    world.gh.fault("api", "GET", r"/releases/tags/", "502")
    run = world.push(world.main_sha)
    assert run.code == 0, run.log
    assert [r["tag_name"] for r in world.gh.releases.values()] == [TAG]
    assert world.gh.count("api", "POST", r"/releases$") == 1
    world.assert_store_valid()
    world.assert_no_token_leak()


@pytest.mark.parametrize(
    "faults",
    [
        [("POST", r"/issues/\d+/comments", "reset_after"), ("GET", r"/issues/\d+/comments", "secondary")],
        [("POST", r"/issues/\d+/comments", "truncate"), ("GET", "/user", "502")],
        [("POST", r"/issues/\d+/comments", "hang")],
        [("POST", r"/issues/\d+/comments", "502_after")],
    ],
    ids=["answer-lost", "truncated", "hang", "applied-then-502"],
)
def test_faults_while_commenting_post_exactly_one_comment(world: World, faults: list[tuple[str, str, str]]) -> None:
    world.seeded()
    for method, pattern, kind in faults:
        world.gh.fault("api", method, pattern, kind, hang_s=1.5)
    run = world.pull_request(world.bad_sha, world.main_sha)
    assert run.code == 1, run.log
    assert len(ours(world)) == 1, [c["body"][:40] for c in ours(world)]
    assert run.outputs["comment-url"] == ours(world)[0]["html_url"]
    assert_clean_log(run)


def test_a_comment_that_cannot_be_posted_keeps_the_verdict(world: World) -> None:
    world.seeded()
    world.gh.fault("api", "POST", r"/issues/\d+/comments", "502", times=99)
    run = world.pull_request(world.bad_sha, world.main_sha)
    assert run.code == 1, run.log
    assert run.outputs["verdict"] == "fail"
    assert "::warning" in run.log and "comment" in run.log
    assert not ours(world)
    assert_clean_log(run)


def test_fork_pr_read_only_token_names_the_permission_and_keeps_the_verdict(world: World) -> None:
    world.seeded()
    run = world.pull_request(world.bad_sha, world.main_sha, fork=True)
    assert run.code == 1, run.log
    assert "pull-requests: write" in run.log
    assert not ours(world)
    assert (run.home / "out" / "comment.md").exists()
    assert_clean_log(run)
    world.assert_no_token_leak()


def test_a_personal_token_finds_its_own_comment_by_its_login(world: World) -> None:
    world.seeded()
    world.gh.add_comment(PR, BOT, "unrelated bot comment", bot=True)
    first = world.pull_request(world.bad_sha, world.main_sha, token=PAT)
    second = world.pull_request(world.bad_sha, world.main_sha, token=PAT)
    assert first.code == second.code == 1, second.log
    mine = [c for c in world.gh.comments[PR] if c["user"]["login"] == "octo-dev"]
    assert len(mine) == 1
    assert world.gh.count("api", "GET", "^/user$") >= 1


@pytest.mark.parametrize("storage_on_api_host", [False, True], ids=["storage-subdomain", "storage-same-host"])
def test_ghes_layout(origin: Origin, tmp_path: Path, storage_on_api_host: bool) -> None:
    with FakeGitHub(tokens=_tokens(), ghes=True, storage_on_api_host=storage_on_api_host) as gh:
        world = World(gh, origin, tmp_path)
        seed = world.push(world.main_sha)
        assert seed.code == 0, seed.log
        pr = world.pull_request(world.bad_sha, world.main_sha)
        assert pr.code == 1, pr.log
        assert len(ours(world)) == 1
        assert not [r for r in gh.requests if r.path.startswith("/__not_api__")]
        assert gh.count("uploads", "POST") >= 2
        assert gh.count("storage", "GET") >= 2
        world.assert_store_valid()
        world.assert_no_token_leak()


def test_a_renamed_repository_is_followed_with_the_token_on_the_api_host(origin: Origin, tmp_path: Path) -> None:
    """GitHub answers requests under a repository's former name with 301 (GET) / 307 to
    /repositories/{id}/...; an asset download's redirect on the API host is such a redirect, not
    the storage host's signed URL, and needs the token (a private repository answers 404 without)."""
    from evals.github.client import GitHubClient

    with FakeGitHub(tokens=_tokens(), renamed_from="octo-org/old-name") as gh:
        gh.import_state(origin.seeded)
        client = GitHubClient(WRITE, api_url=gh.api_url, repo="octo-org/old-name", max_retries=1, sleep=lambda s: None)
        release = client.get_release_by_tag(TAG)
        assert release is not None
        asset = next(a for a in client.list_assets(release) if a.name.startswith("manifest-"))
        assert json.loads(client.download_asset(asset))["snapshots"]
        # Writes are redirected with 307 and re-sent with their method and body.
        uploaded = client.upload_asset(release, "extra.json", b"{}", "application/json")
        assert client.delete_asset(uploaded)
        comment = client.create_issue_comment(PR, "hello")
        assert client.update_issue_comment(comment.id, "hello again").body == "hello again"
        assert [c.body for c in client.list_issue_comments(PR)] == ["hello again"]
        assert gh.count("api", "POST", "^/repos/octo-org/old-name/") == 1
        assert not gh.storage_auth_seen and not gh.tokens_seen["storage"]


def _generation_store(gh: FakeGitHub) -> tuple[dict[str, Any], dict[str, bytes]]:
    """The immutable layout as GitHub holds it: the highest manifest over the published
    ``<tag>-g<n>`` releases (and the main release), and every asset by name."""
    blobs: dict[str, bytes] = {}
    for release in gh.releases.values():
        if not release["draft"] and (release["tag_name"] == TAG or re.fullmatch(rf"{TAG}-g\d+", release["tag_name"])):
            for asset in gh._release_assets(release["id"]):
                blobs.setdefault(asset["name"], asset["_data"])
    manifests = sorted(n for n in blobs if re.fullmatch(r"manifest-\d+\.json", n))
    assert manifests, blobs.keys()
    manifest = json.loads(blobs[manifests[-1]])
    for snap in manifest["snapshots"]:
        assert "sha256:" + hashlib.sha256(blobs[snap["name"]]).hexdigest() == snap["digest"]
    return manifest, blobs


def test_immutable_releases_one_release_per_promotion(origin: Origin, tmp_path: Path) -> None:
    keep2 = {"config": "evalgate-keep2.yml"}
    with FakeGitHub(tokens=_tokens(), immutable_releases=True) as gh:
        world = World(gh, origin, tmp_path)
        seed = world.push(world.main_sha, inputs=keep2)
        assert seed.code == 0, seed.log
        assert seed.outputs.get("promoted") == "true", seed.log
        manifest, _ = _generation_store(gh)
        assert [s["sha"] for s in manifest["snapshots"]] == [world.main_sha]

        pr = world.pull_request(world.bad_sha, world.main_sha, inputs=keep2)
        assert pr.code == 1, pr.log
        assert pr.outputs["baseline-sha"] == world.main_sha

        promoted = world.push(world.fixed_sha, inputs=keep2)
        assert promoted.code == 0 and promoted.outputs.get("promoted") == "true", promoted.log
        for i in range(3):
            reset = world.dispatch(world.fixed_sha, f"rubric {i}", inputs=keep2)
            assert reset.code == 0, reset.log
            assert_clean_log(reset)
        manifest, _ = _generation_store(gh)
        assert manifest["snapshots"][-1]["reason"] == "rubric 2"
        published = sorted(r["tag_name"] for r in gh.releases.values() if not r["draft"])
        assert not [r for r in gh.releases.values() if r["draft"]], "a draft was left behind"
        assert all(r["immutable"] for r in gh.releases.values() if not r["draft"])

        # Two hours later, two more resets: old generations are pruned as whole releases, and their
        # tags stay burned (the next generation never reuses one).
        gh.age(2 * 3600)
        for reason in ("rubric 3", "rubric 4"):
            reset = world.dispatch(world.fixed_sha, reason, inputs=keep2)
            assert reset.code == 0, reset.log
        manifest, _ = _generation_store(gh)
        assert manifest["snapshots"][-1]["reason"] == "rubric 4"
        published = {r["tag_name"] for r in gh.releases.values() if not r["draft"]}
        assert f"{TAG}-g00000003" not in published and f"{TAG}-g00000003" in gh.burned_tags, published
        assert f"{TAG}-g00000007" in published, published
        # The first write published its draft as the main release, holding generation 1 (never an
        # empty release); being immutable, it stays.
        assert TAG in published and f"{TAG}-g00000001" not in gh.burned_tags, published

        again = world.pull_request(world.bad_sha, world.main_sha, inputs=keep2)
        assert again.code == 1, again.log
        assert len(ours(world)) == 1
        world.assert_no_token_leak()


def test_immutable_releases_a_deleted_generation_burns_its_tag_and_the_next_promotion_goes_above_it(
    origin: Origin, tmp_path: Path
) -> None:
    """Someone deletes the newest ``-g<n>`` release by hand: with immutable releases its tag can
    never be used again (422 ``custom`` "tag_name was used by an immutable release"). The next
    promotion must publish generation n+1, not fail on every push from then on."""
    keep2 = {"config": "evalgate-keep2.yml"}
    with FakeGitHub(tokens=_tokens(), immutable_releases=True) as gh:
        world = World(gh, origin, tmp_path)
        assert world.push(world.main_sha, inputs=keep2).code == 0
        reset = world.dispatch(world.main_sha, "first rubric", inputs=keep2)
        assert reset.code == 0, reset.log
        newest = next(r for r in gh.releases.values() if r["tag_name"] == f"{TAG}-g00000002")
        for asset in gh._release_assets(newest["id"]):
            del gh.assets[asset["id"]]
        del gh.releases[newest["id"]]

        promoted = world.push(world.fixed_sha, inputs=keep2)
        assert promoted.code == 0, promoted.log
        assert promoted.outputs.get("promoted") == "true", promoted.log
        manifest, _ = _generation_store(gh)
        assert manifest["generation"] == 3
        assert manifest["snapshots"][-1]["sha"] == world.fixed_sha
        assert not [r for r in gh.releases.values() if r["draft"]], "a draft was left behind"
        assert_clean_log(promoted)


def test_fork_two_phase_flow_posts_the_stored_report_once(world: World) -> None:
    """Phase 1: the fork PR's gate (read-only token) cannot comment and stores the report.
    Phase 2: a ``workflow_run`` job with a write token posts it (``mode: comment``), once."""
    world.seeded()
    head = {"sha": world.bad_sha, "ref": "feature", "repo": {"full_name": "forker/app"}}
    world.gh.pulls[PR] = {"head": head, "base": {"sha": world.main_sha, "repo": {"full_name": world.gh.repo}}}
    fork = world.pull_request(world.bad_sha, world.main_sha, fork=True)
    assert fork.code == 1, fork.log
    assert not ours(world)
    report = fork.home / "out"

    def phase2() -> Run:
        payload = {
            "workflow_run": {
                "id": 99,
                "event": "pull_request",
                "head_sha": world.bad_sha,
                "head_branch": "feature",
                "head_repository": {"full_name": "forker/app"},
                "conclusion": "failure",
            },
            "repository": world.repository(),
        }
        inputs = {"mode": "comment", "report-dir": str(report), "gate-id": "t"}
        return world.action("workflow_run", payload, sha=world.main_sha, ref="refs/heads/main", inputs=inputs)

    first = phase2()
    assert first.code == 0, first.log
    assert len(ours(world)) == 1 and first.outputs["comment-url"] == ours(world)[0]["html_url"]
    second = phase2()
    assert second.code == 0, second.log
    assert len(ours(world)) == 1
    assert world.gh.count("api", "PATCH", "/comments") == 0
    # The fork pushed again: the old report is not posted over the PR's new state.
    world.gh.pulls[PR]["head"]["sha"] = world.fixed_sha
    ours(world)[0]["body"] = "stale"
    third = phase2()
    assert third.code == 0 and "not posted" in third.log, third.log
    assert ours(world)[0]["body"] == "stale"
    for run in (fork, first, second, third):
        assert_clean_log(run)
    world.assert_no_token_leak()


@pytest.mark.parametrize(
    "faults",
    [
        [("POST", r"/releases\?", "reset_after"), ("PATCH", r"/releases/\d+\?", "reset_after")],
        [("POST", r"/releases\?", "502"), ("PATCH", r"/releases/\d+\?", "truncate"), ("GET", r"/releases\?", "429")],
    ],
    ids=["answers-lost", "5xx-truncated"],
)
def test_immutable_releases_faults_while_drafting_and_publishing(
    origin: Origin, tmp_path: Path, faults: list[tuple[str, str, str]]
) -> None:
    keep2 = {"config": "evalgate-keep2.yml"}
    with FakeGitHub(tokens=_tokens(), immutable_releases=True) as gh:
        world = World(gh, origin, tmp_path)
        assert world.push(world.main_sha, inputs=keep2).code == 0
        for method, pattern, kind in faults:
            gh.fault("api", method, pattern, kind)
        promoted = world.push(world.fixed_sha, inputs=keep2)
        assert promoted.code == 0, promoted.log
        assert promoted.outputs.get("promoted") == "true", promoted.log
        assert all(f.times == 0 for f in gh.faults), "a fault was not reached"
        manifest, _ = _generation_store(gh)
        assert [s["sha"] for s in manifest["snapshots"]] == [world.main_sha, world.fixed_sha]
        assert not [r for r in gh.releases.values() if r["draft"]], "a draft was left behind"
        assert_clean_log(promoted)


@pytest.mark.parametrize("immutable", [False, True], ids=["one-release", "release-per-promotion"])
def test_two_concurrent_resets_both_land(origin: Origin, tmp_path: Path, immutable: bool) -> None:
    """Two writers at once: the manifest name (or the generation tag) is the compare-and-swap; the
    loser rebuilds on top of the winner, so neither entry is lost."""
    keep = {"config": "evalgate.yml"}
    with FakeGitHub(tokens=_tokens(), immutable_releases=immutable) as gh:
        world = World(gh, origin, tmp_path)
        assert world.push(world.main_sha, inputs=keep).code == 0
        runs: dict[str, Run] = {}

        def reset(reason: str) -> None:
            # Each writer its own runner folder; the checkout is already at main.
            runs[reason] = world.action(
                "workflow_dispatch",
                {"ref": "refs/heads/main", "repository": world.repository()},
                sha=world.main_sha,
                ref="refs/heads/main",
                inputs={**keep, "reason": reason, "out-dir": str(tmp_path / reason)},
                checkout=False,
            )

        threads = [threading.Thread(target=reset, args=(r,)) for r in ("left", "right")]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        for run in runs.values():
            assert run.code == 0, run.log
        manifest = _generation_store(gh)[0] if immutable else world.assert_store_valid()
        assert {s.get("reason") for s in manifest["snapshots"]} >= {"left", "right"}, manifest


def test_the_store_is_found_behind_pages_of_the_projects_own_releases(world: World) -> None:
    world.seeded()
    for i in range(250):
        world.gh.add_release(f"v1.{i}.0", draft=i % 50 == 0)
    run = world.pull_request(world.bad_sha, world.main_sha)
    assert run.code == 1, run.log
    assert run.outputs["baseline-sha"] == world.main_sha
    pages = [r.query for r in world.gh.requests if r.method == "GET" and r.path.endswith("/releases")]
    assert len(pages) >= 3, pages


def test_the_baseline_cli_outside_actions_reads_the_release_store(world: World) -> None:
    """A developer's shell: GITHUB_API_URL, GITHUB_REPOSITORY and GITHUB_TOKEN set by hand."""
    world.seeded()
    env = {
        "PATH": os.environ["PATH"],
        "HOME": str(world.tmp),
        "GITHUB_API_URL": world.gh.api_url,
        "GITHUB_REPOSITORY": world.gh.repo,
        "GITHUB_TOKEN": PAT,
        "EVALGATE_HISTORY": "off",
        "EVALGATE_GITHUB_BACKOFF": "0.01",
    }
    world.gh.fault("storage", "GET", STORAGE, "truncate")

    def cli(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "evals", "baseline", *args, "--config", str(world.repo / "evalgate.yml")],
            cwd=world.tmp,
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
        )

    listed = cli("list")
    assert listed.returncode == 0, listed.stderr
    assert world.main_sha[:12] in listed.stdout
    out = world.tmp / "fetched.json"
    fetched = cli("fetch", world.main_sha[:8], "-o", str(out))
    assert fetched.returncode == 0, fetched.stderr
    assert json.loads(out.read_text(encoding="utf-8"))
    for done in (listed, fetched):
        assert PAT not in done.stdout + done.stderr
    assert not world.gh.storage_auth_seen
    assert world.gh.tokens_seen["api"] == {PAT}


@pytest.mark.parametrize(
    ("token", "env", "says"),
    [
        ("ghs_revokedTOKEN000000000000000000", {}, "401"),
        (WRITE, {"GITHUB_REPOSITORY": "octo-org/not-this-one"}, "not visible with this token"),
    ],
    ids=["revoked-token", "repository-not-visible"],
)
def test_a_token_that_cannot_read_the_store_is_exit_3_never_an_empty_store(
    world: World, token: str, env: dict[str, str], says: str
) -> None:
    world.seeded()
    before = world.gh.export_state()
    run = world.push(world.fixed_sha, token=token, env=env)
    assert run.code == 3, run.log
    assert says in run.log
    assert "no-baseline" not in run.log
    assert token not in run.log
    assert world.gh.count("uploads", "POST") == 0 and world.gh.count("api", "POST") == 0
    assert world.gh.export_state()["assets"] == before["assets"]


def test_an_abuse_detection_403_is_a_rate_limit_not_a_missing_permission(origin: Origin) -> None:
    """GitHub called secondary rate limits "abuse rate limits" until 2021 (older GHES still does):
    403 "You have triggered an abuse detection mechanism…", often without Retry-After. It is waited
    out (a minute at least), not reported as a missing permission."""
    from evals.github.client import GitHubClient

    waits: list[float] = []
    with FakeGitHub(tokens=_tokens(), ghes=True) as gh:
        gh.import_state(origin.seeded)
        gh.fault("api", "POST", r"/issues/\d+/comments", "abuse")
        client = GitHubClient(WRITE, api_url=gh.api_url, repo=gh.repo, sleep=waits.append)
        comment = client.create_issue_comment(PR, "hello")
        assert comment.user is not None and comment.user.login == BOT
        assert len(waits) == 1 and waits[0] >= 60
        assert [c["body"] for c in gh.comments[PR]] == ["hello"]


def test_another_apps_installation_token_with_its_login_named_keeps_one_sticky_comment(
    origin: Origin, tmp_path: Path
) -> None:
    with FakeGitHub(tokens={**_tokens(), APP: Token("evalgate-app[bot]", installation=True)}) as gh:
        world = World(gh, origin, tmp_path)
        world.seeded()
        for _ in range(2):
            run = world.pull_request(
                world.bad_sha, world.main_sha, token=APP, env={"EVALGATE_GITHUB_LOGIN": "evalgate-app[bot]"}
            )
            assert run.code == 1, run.log
        assert len([c for c in gh.comments[PR] if c["user"]["login"] == "evalgate-app[bot]"]) == 1
