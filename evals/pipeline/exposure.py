"""What a job that runs the suite exposes to the code under test (issue 11 items 1 and 2, threat
model in docs/github-action.md).

The suite is code from the repository (a python target, a command, the cases' own helpers), and on
a pull request it is the PR author's code. It runs as the same user as evalgate, so nothing inside
the job keeps a token from it: it can rewrite evalgate's modules before the parent imports them,
read the parent's memory (runners have passwordless sudo), or read a git credential that
actions/checkout persisted. The boundary is the job: the shipped workflows run the suite in a job
whose token can only read, and gate/comment/promote in a second job that runs no suite code.

- ``guard_pull_request_target``: that event gives the base repository's write token and secrets
  to a job triggered by anyone's PR. Run modes are refused there unless the workflow opts in
  (``allow-pull-request-target: true``); with the opt-in, every checkout under the workspace,
  the config's folder, the target's import paths and working folder, and the current folder
  must be provably without the PR's head commit.
- ``warn_exposed``: in a job that runs the suite, a token that can write (the repository's
  ``permissions`` as the API reports them for this token) or a persisted git credential
  (``http.<url>.extraheader`` in a checkout's git config) is a warning naming what to change."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from evals.common.errors import UsageError

if TYPE_CHECKING:
    from evals.github.activity import Activity
    from evals.github.client import GitHubClient
    from evals.suite.config import SuiteConfig

OPT_IN_VAR = "EVALGATE_ALLOW_PULL_REQUEST_TARGET"  # the action's `allow-pull-request-target` input
RUN_KINDS = ("smoke", "full", "reset", "run")
_SKIP_DIRS = {"node_modules", ".venv", "venv", ".tox", "__pycache__", ".mypy_cache", ".pytest_cache", ".git"}
MAX_SCAN_DIRS = 20_000
MAX_SCAN_DEPTH = 6


def guard_pull_request_target(
    activity: Activity, config_path: Path, *, runs_suite: bool, env: Mapping[str, str] = os.environ
) -> None:
    """Refuse (exit 2) to run the suite under ``pull_request_target`` unless the workflow opted in
    and no folder the suite can run from holds the PR's code. Modes that run no suite code (a
    results file given, posting a stored report) are not affected."""
    if activity.event_name != "pull_request_target" or not runs_suite:
        return
    refusal = (
        "Gate pull requests on the pull_request event (its token is read-only for forks) and post fork comments "
        "from a workflow_run job with mode: comment (the two-job layout in docs/github-action.md)"
    )
    if env.get(OPT_IN_VAR) != "true":
        raise UsageError(
            "pull_request_target: this job holds the base repository's token and secrets, and the suite evalgate "
            "would run here is code from the repository; evalgate does not run it under this event unless the "
            f"workflow opts in with the input allow-pull-request-target: true. {refusal}"
        )
    head = activity.head_sha or ""
    from evals.suite.config import load_config

    folders = suite_folders(load_config(config_path), env)
    for folder in folders:
        contains = _contains_commit(folder, head)
        if contains:
            raise UsageError(
                f"pull_request_target: {folder} holds the PR's head {head[:12]}, and the suite would run it with "
                f"this job's token and secrets. {refusal}"
            )
        if contains is None:
            raise UsageError(
                f"pull_request_target: cannot rule out that {folder} holds the PR's code (head "
                f"{head[:12] or '(unknown)'}): it is not in a git checkout, or a shallow one without that commit. "
                f"Check out the base branch with fetch-depth: 0 to gate it. {refusal}"
            )
    from evals.github.publish import warn

    warn(
        f"pull_request_target (opted in): none of the {len(folders)} folder(s) the suite can run from holds the PR's "
        f"head {head[:12]}, so this gates the base branch's code, not the pull request's. This job's token and "
        "secrets are still readable by that code."
    )


def suite_folders(config: SuiteConfig, env: Mapping[str, str] = os.environ) -> list[Path]:
    """Every folder whose code the suite can run: the current folder, the config's, the target's
    import paths and working folder, and every git checkout under the workspace."""
    found: list[Path] = [Path.cwd().resolve(), config.root.resolve()]
    target = config.target
    for extra in getattr(target, "path", None) or []:
        found.append(config.resolve(extra).resolve())
    cwd = getattr(target, "cwd", None)
    if cwd:
        found.append(config.resolve(cwd).resolve())
    workspace = env.get("GITHUB_WORKSPACE")
    if workspace:
        found.extend(_checkouts_under(Path(workspace)))
    return list(dict.fromkeys(found))


def _checkouts_under(root: Path) -> Iterator[Path]:
    """Folders under ``root`` (itself included) that hold a ``.git`` (a clone, a worktree, a
    submodule). Too many folders to look through is a refusal, never a partial answer."""
    seen = 0
    stack = [(root.resolve(), 0)]
    while stack:
        folder, depth = stack.pop()
        seen += 1
        if seen > MAX_SCAN_DIRS:
            raise UsageError(
                f"pull_request_target: more than {MAX_SCAN_DIRS} folders under {root}; cannot check every checkout"
            )
        if (folder / ".git").exists():
            yield folder
        if depth >= MAX_SCAN_DEPTH:
            continue
        try:
            children = [p for p in folder.iterdir() if p.is_dir() and not p.is_symlink() and p.name not in _SKIP_DIRS]
        except OSError:
            continue
        stack.extend((child, depth + 1) for child in children)


def _contains_commit(folder: Path, sha: str) -> bool | None:
    """Whether the checkout holding ``folder`` is at ``sha`` or descends from it; None when git
    cannot tell. A commit missing from a complete (not shallow) history is not an ancestor of HEAD."""
    from evals.store import ancestry

    if not sha or not folder.is_dir() or ancestry.resolve(folder, "HEAD") is None:
        return None
    found = ancestry.is_ancestor(sha, "HEAD", repo=folder)
    if found is None and ancestry.resolve(folder, sha) is None and not ancestry.is_shallow(folder):
        return False
    return found


# ---------------------------------------------------------------------------------------------
# A job that runs the suite


def warn_exposed(
    activity: Activity, config: SuiteConfig, client: GitHubClient | None, env: Mapping[str, str] = os.environ
) -> list[str]:
    """Warnings (also printed as ``::warning``) for a job about to run the suite while holding
    something the suite could use to write to the repository. Returns them."""
    from evals.github.publish import warn

    found = []
    for folder in suite_folders(config, env):
        if persisted_credential(folder):
            found.append(
                f"{folder} has a persisted git credential (actions/checkout without persist-credentials: false): "
                "the suite can read it and push with it. Set persist-credentials: false on the checkout"
            )
            break
    if client is not None and client.has_token:
        can = client.token_can_write()
        if can:
            found.append(
                f"this job runs the suite with a token that can write to {client.repo}: the suite's code can use it "
                "(a process cannot hide a token from code running as the same user). Run the suite in a job with "
                "contents: read and gate in a second job (the two-job layout in docs/github-action.md)"
            )
        elif can is None:
            print(
                "evalgate: could not tell whether this job's token can write (the API did not say); if it can, run "
                "the suite in a job of its own with contents: read",
                file=sys.stderr,
            )
    for message in found:
        warn(message)
    return found


def persisted_credential(folder: Path) -> bool:
    """Whether git, run in ``folder``, would send a stored Authorization header (actions/checkout
    keeps one as ``http.<url>.extraheader``, in .git/config or a file it includes). The value is
    never read out."""
    from evals.common.gitinfo import git

    done = git(folder, "config", "--includes", "--get-regexp", r"^http\..*extraheader$", timeout=10)
    if done is None or done.returncode != 0:
        return False
    return "authorization" in done.stdout.lower()
