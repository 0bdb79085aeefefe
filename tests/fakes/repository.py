"""The repository the simulated runner (tests/fakes/actions.py) works on: an origin laid out like this
one with the quickstart at main's first commit, its clones and commits, the events a test starts
(a push to main, a pull request), and the fake GitHub server that also serves pulls."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from evals.results.files import load_results
from evals.store.baseline import GitHubReleaseStore
from evals.store.promotion import SEED_REASON
from fakes.actions import PR, TAG, Job, Runner
from fakes.github_server import GitHubServer, _error, _ok
from fakes.paths import ROOT
from fakes.suites import git


@dataclass
class Origin:
    path: Path
    main_sha: str
    baseline_results: Path  # the quickstart's full run at main_sha, for seeding stores directly


@pytest.fixture(scope="module")
def origin(tmp_path_factory: pytest.TempPathFactory) -> Origin:
    """A repository laid out like this one (examples/quickstart/...) with one commit on main. Its
    config differs from the shipped one only in the store section: the store is chosen by the
    environment (github-release in Actions) and the first full run seeds it."""
    repo = tmp_path_factory.mktemp("origin")
    git(repo, "init", "-q")
    target = repo / "examples" / "quickstart"
    shutil.copytree(
        ROOT / "examples" / "quickstart", target, ignore=shutil.ignore_patterns("baselines", "__pycache__", ".evalgate")
    )
    config = yaml.safe_load((target / "evalgate.yml").read_text(encoding="utf-8"))
    config["baseline"] = {"on_missing": "seed", "tag": TAG}
    (target / "evalgate.yml").write_text(yaml.safe_dump(config, sort_keys=False), encoding="utf-8")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "quickstart")
    sha = git(repo, "rev-parse", "HEAD")
    results = tmp_path_factory.mktemp("results") / "baseline.json"
    subprocess.run(
        [sys.executable, "-m", "evals", "run", "--config", str(target / "evalgate.yml"), "-o", str(results)],
        cwd=repo,
        env={k: v for k, v in os.environ.items() if not k.startswith("GITHUB_")},
        check=True,
        capture_output=True,
    )
    return Origin(repo, sha, results)


@dataclass
class World:
    gh: GitHubServer
    runner: Runner
    origin: Origin
    tmp: Path

    def checkout(self, name: str) -> Path:
        """A fresh clone (a runner's checkout with full history, like fetch-depth: 0)."""
        path = self.tmp / "checkouts" / name
        while path.exists():  # a second job with the same name gets its own runner
            path = path.with_name(path.name + "+")
        path.parent.mkdir(exist_ok=True)
        git(self.tmp, "clone", "-q", str(self.origin.path), str(path))
        return path

    def commit(self, repo: Path, message: str) -> str:
        (repo / "CHANGES.txt").open("a", encoding="utf-8").write(message + "\n")
        git(repo, "add", "-A")
        git(repo, "commit", "-q", "-m", message)
        return git(repo, "rev-parse", "HEAD")

    def seed(self) -> None:
        """The baseline of main's first commit, put in the release store directly, blessed as a
        seeding gate stores it (evals.store.promotion)."""
        store = GitHubReleaseStore(self.gh.client(), tag=TAG, repo=self.origin.path)
        results = load_results(self.origin.baseline_results)
        store.promote(results, sha=self.origin.main_sha, verdict="seed", reason=SEED_REASON, blessed=True)

    def manifest(self) -> dict[str, Any]:
        names = [a["name"] for a in self.gh.assets(TAG) if re.fullmatch(r"manifest-\d+\.json", a["name"])]
        assert names, "no manifest in the release"
        current = max(names, key=lambda n: int(re.findall(r"\d+", n)[0]))
        return json.loads(self.gh.asset_data(TAG, current) or b"{}")

    def latest_sha(self) -> str:
        return self.manifest()["snapshots"][-1]["sha"]

    def push(self, checkout: Path, sha: str, token: str | None = None) -> Job:
        payload = {
            "ref": "refs/heads/main",
            "after": sha,
            "repository": {"full_name": self.gh.repo, "default_branch": "main"},
        }
        return Job("push", payload, checkout, sha, "refs/heads/main", token or self.gh.write_token)

    def pull_request(
        self, checkout: Path, head: str, *, base: str | None = None, fork: bool = False, number: int = PR
    ) -> Job:
        head_repo = "forker/evals" if fork else self.gh.repo
        payload = {
            "number": number,
            "pull_request": {
                "number": number,
                "head": {"sha": head, "ref": "feature", "repo": {"full_name": head_repo}},
                "base": {"sha": base or self.origin.main_sha, "ref": "main", "repo": {"full_name": self.gh.repo}},
            },
            "repository": {"full_name": self.gh.repo, "default_branch": "main"},
        }
        self.gh.pulls[number] = payload["pull_request"]  # the PR as the API shows it now
        token = self.gh.read_token if fork else self.gh.write_token
        return Job("pull_request", payload, checkout, head, f"refs/pull/{number}/merge", token)


class PullsServer(GitHubServer):
    """The fake GitHub server plus ``GET /repos/{o}/{r}/pulls/{n}`` (docs.github.com/rest/pulls),
    which ``evalgate comment`` reads to check a stored report against the PR's current head.
    (tests/fakes/github_server.py does not serve it yet.)"""

    def __init__(self) -> None:
        super().__init__()
        self.pulls: dict[int, dict[str, Any]] = {}

    def _route(self, method: str, path: str, query: Any, headers: Any, body: bytes, token: Any, fault: Any) -> Any:
        match = re.fullmatch(re.escape(f"{self.prefix}/repos/{self.repo}/pulls/") + r"(\d+)", path)
        if not (match and method == "GET"):
            return super()._route(method, path, query, headers, body, token, fault)
        pull = self.pulls.get(int(match.group(1)))
        return _ok({**pull, "state": "open"}) if pull else _error(404, "Not Found")


@pytest.fixture
def world(origin: Origin, tmp_path: Path) -> Iterator[World]:
    with PullsServer() as gh:
        yield World(gh, Runner(gh, tmp_path), origin, tmp_path)


def regressed(job: Job) -> Job:
    """The quickstart bot with its Korean handling broken (QUICKSTART_REGRESS=ko, see bot.py)."""
    job.extra_env["QUICKSTART_REGRESS"] = "ko"
    return job


def our_comments(gh: GitHubServer, pr: int = PR) -> list[dict[str, Any]]:
    return [c for c in gh.comments(pr) if "evalgate:gate=" in (c.get("body") or "")]
