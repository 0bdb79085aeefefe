"""evalgate's GitHub side against an independent fake of GitHub's REST API
(tests/github_fake_independent.py, written from GitHub's documentation), driven as a workflow
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
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml
from github_fake_independent import FakeGitHub, Token
from suites import git, read_output_file

ROOT = Path(__file__).resolve().parent.parent
ACTION = yaml.safe_load((ROOT / "action.yml").read_text(encoding="utf-8"))
GATE_STEP = next(step for step in ACTION["runs"]["steps"] if step.get("id") == "gate")
TAG = "eval-baseline"
PR = 7
WRITE = "ghs_writeTOKEN0123456789abcdefWRITE"  # the job's GITHUB_TOKEN (contents/pull-requests: write)
READ = "ghs_readonlyTOKEN0123456789abcdREAD"  # a fork PR's GITHUB_TOKEN
PAT = "github_pat_11ABCDEFG0123456789_patSECRET"  # a user's fine-grained token
BOT = "github-actions[bot]"
TOKENS = (WRITE, READ, PAT)

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


class World:
    def __init__(self, gh: FakeGitHub, tmp: Path):
        self.gh = gh
        self.tmp = tmp
        self.repo = tmp / "repo"
        self.repo.mkdir()
        git(self.repo, "init", "-q")
        with (self.repo / "cases.jsonl").open("w", encoding="utf-8") as fh:
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
        (self.repo / "evalgate.yml").write_text(yaml.safe_dump(config, sort_keys=False), encoding="utf-8")
        self.main_sha = self.commit(GOOD_BOT, "first")
        self.runs = 0

    def commit(self, bot: str, message: str) -> str:
        (self.repo / "bot.py").write_text(bot, encoding="utf-8")
        git(self.repo, "add", "-A")
        git(self.repo, "commit", "-q", "-m", message)
        return git(self.repo, "rev-parse", "HEAD")

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

    def dispatch(self, sha: str, reason: str, **kw: Any) -> Run:
        payload = {"ref": "refs/heads/main", "inputs": {"reason": reason}, "repository": self.repository()}
        return self.action("workflow_dispatch", payload, sha=sha, ref="refs/heads/main", inputs={"reason": reason}, **kw)

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
    ) -> Run:
        self.checkout(sha)
        self.runs += 1
        home = self.tmp / f"run{self.runs}"
        (home / "temp").mkdir(parents=True)
        (home / "event.json").write_text(json.dumps(payload), encoding="utf-8")
        given = {name: str(spec.get("default", "")) for name, spec in ACTION["inputs"].items()}
        given["github-token"] = token
        given["out-dir"] = str(home / "out")
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
        for path in self.tmp.rglob("*"):
            if path.is_file() and ".git" not in path.parts:
                data = path.read_bytes()
                for token in TOKENS:
                    assert token.encode() not in data, f"token in {path}"


def assert_clean_log(run: Run) -> None:
    for token in TOKENS:
        assert token not in run.log
        assert token not in run.summary
        assert all(token not in value for value in run.outputs.values())
    assert "Traceback" not in run.log, run.log


@pytest.fixture
def world(tmp_path: Path) -> Iterator[World]:
    tokens = {
        WRITE: Token(BOT, installation=True),
        READ: Token(BOT, installation=True, write=False),
        PAT: Token("octo-dev"),
    }
    with FakeGitHub(tokens=tokens) as gh:
        yield World(gh, tmp_path)


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
    bad = world.commit(BAD_BOT, "regress")
    first = world.pull_request(bad, world.main_sha)
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
    again = world.pull_request(bad, world.main_sha)
    assert again.code == 1, again.log
    assert gh.count("api", "POST", "/comments") == posts
    assert gh.count("api", "PATCH", "/comments") == patches, "an unchanged comment was rewritten"
    pages = [r for r in gh.requests if r.method == "GET" and r.path.endswith(f"/issues/{PR}/comments")]
    assert any("page=2" in r.query for r in pages) and any("page=3" not in r.query for r in pages)

    # The PR is fixed: the same comment is updated in place; the reviewer's quote is left alone.
    world.checkout(bad)
    fixed = world.commit(GOOD_BOT + BETTER_NOTE, "fix")
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
