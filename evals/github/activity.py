"""Which activity a gate run performs, chosen from the GitHub event (docs/spec.md#auto-mode), in the style of
python-coverage-comment-action: one action, one ``mode: auto`` input, and the event decides.

``auto``:
- ``pull_request`` / ``pull_request_target`` → smoke gate, no promotion (``pull_request_target``
  never runs the suite, only ``mode: comment`` or a given results file: see ``evals.pipeline.exposure``);
- ``push`` to the default branch (``repository.default_branch`` in the event payload) → full gate,
  promotion when it passes; a push to any other branch → smoke gate, no promotion (full runs are
  what main pays for);
- ``workflow_dispatch`` → reset, which needs a reason;
- ``workflow_run`` → comment: post the report a fork's gate stored (the two-phase flow);
- ``schedule`` / ``merge_group`` → full gate without promotion (a nightly or merge-queue check).

Explicit modes (``smoke``, ``full``, ``reset``, ``compare``, ``comment``) skip the choice; the event
still supplies the PR number, commits and actor. ``run`` only runs the suite (the smoke subset
where ``auto`` would gate one) and writes the results: the first job of the two-job layout.
Outside GitHub Actions nothing is read from the event and the gate runs against the local store."""

from __future__ import annotations

import getpass
import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeGuard

from pydantic import BaseModel

from evals.common.errors import InputFileError, UsageError
from evals.suite.options import MODES, Kind, Mode

if TYPE_CHECKING:
    from evals.github.client import GitHubClient

_PR_EVENTS = ("pull_request", "pull_request_target")


class Activity(BaseModel):
    """What to do, and the facts about the event the later stages need."""

    kind: Kind
    promote: bool = False
    why: str
    in_actions: bool = False
    event_name: str | None = None
    ref: str | None = None
    sha: str | None = None
    actor: str | None = None
    repository: str | None = None
    default_branch: str | None = None
    pr_number: int | None = None
    base_sha: str | None = None
    base_ref: str | None = None
    head_sha: str | None = None
    head_repo: str | None = None
    fork: bool = False
    reason: str | None = None
    smoke: bool = False  # kind "run": run the smoke subset (what auto would gate: a PR, a side branch)

    @property
    def is_pr(self) -> bool:
        return self.pr_number is not None

    @property
    def on_default_branch(self) -> bool:
        return bool(self.default_branch) and self.ref == f"refs/heads/{self.default_branch}"

    @property
    def candidate_sha(self) -> str | None:
        """The commit the candidate stands for: the PR head (GITHUB_SHA is a merge commit there)."""
        return self.head_sha or self.sha


def read_event(env: Mapping[str, str] = os.environ) -> dict[str, Any]:
    """The webhook payload at ``GITHUB_EVENT_PATH`` ({} when there is none)."""
    path = env.get("GITHUB_EVENT_PATH")
    if not path:
        return {}
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise InputFileError(path, "GITHUB_EVENT_PATH names a file that does not exist") from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise InputFileError(path, f"cannot read the event payload: {exc}") from None
    if not isinstance(data, dict):
        raise InputFileError(path, "the event payload is not a JSON object")
    return data


def _get(data: Any, *keys: str) -> Any:
    for key in keys:
        if not isinstance(data, dict):
            return None
        data = data.get(key)
    return data


def _is_mode(mode: str) -> TypeGuard[Mode]:
    return mode in MODES


def detect(
    mode: str = "auto",
    *,
    env: Mapping[str, str] = os.environ,
    reason: str | None = None,
    pr_number: int | None = None,
) -> Activity:
    """Choose the activity for ``mode`` from the event in ``env``. ``pr_number`` overrides the
    payload's (``mode: comment`` in a ``workflow_run`` job names the PR explicitly)."""
    if not _is_mode(mode):
        raise UsageError(f"unknown mode {mode!r}: use one of {', '.join(MODES)}")
    in_actions = env.get("GITHUB_ACTIONS") == "true"
    event = read_event(env) if in_actions else {}
    event_name = env.get("GITHUB_EVENT_NAME") if in_actions else None
    pr = event.get("pull_request") if event_name in _PR_EVENTS else None
    head_repo = _get(pr, "head", "repo", "full_name")
    base_repo = _get(pr, "base", "repo", "full_name") or _get(event, "repository", "full_name")
    facts: dict[str, Any] = {
        "in_actions": in_actions,
        "event_name": event_name,
        "ref": env.get("GITHUB_REF") or None,
        "sha": env.get("GITHUB_SHA") or None,
        "actor": env.get("GITHUB_ACTOR") or None,
        "repository": env.get("GITHUB_REPOSITORY") or _get(event, "repository", "full_name"),
        "default_branch": _get(event, "repository", "default_branch"),
        "pr_number": pr_number if pr_number is not None else _get(pr, "number"),
        "base_sha": _get(pr, "base", "sha"),
        "base_ref": _get(pr, "base", "ref"),
        "head_sha": _get(pr, "head", "sha"),
        "head_repo": head_repo,
        # A deleted fork leaves head.repo null; its token is read-only all the same.
        "fork": pr is not None and (head_repo is None or head_repo != base_repo),
        "reason": (reason or "").strip() or None,
    }
    probe = Activity(kind="smoke", why="", **facts)
    if mode == "auto":
        kind, promote, why = _auto(probe)
    elif mode == "run":
        # The first job of the two-job layout: run the suite the second job's gate will judge.
        try:
            smoke = _auto(probe)[0] == "smoke"
        except UsageError:  # an event auto has no plan for (a release, a comment): the whole suite
            smoke = False
        return Activity(
            kind="run", why=f"mode: run ({'smoke subset' if smoke else 'full suite'})", smoke=smoke, **facts
        )
    else:
        kind = mode
        promote = mode in ("full", "compare") and probe.event_name == "push" and probe.on_default_branch
        why = f"mode: {mode}" + (" on a push to the default branch, promoting on pass" if promote else "")
    if kind == "reset" and not facts["reason"]:
        raise UsageError("a reset needs a reason (input `reason`, or --reason): it is recorded with the baseline")
    return Activity(kind=kind, promote=promote, why=why, **facts)


def _auto(facts: Activity) -> tuple[Kind, bool, str]:
    name = facts.event_name
    if not facts.in_actions:
        return "full", False, "outside GitHub Actions: full gate against the local store"
    if name in _PR_EVENTS:
        return "smoke", False, f"{name} #{facts.pr_number}: smoke gate"
    if name == "push":
        if facts.on_default_branch:
            return "full", True, f"push to the default branch {facts.default_branch}: full gate, promote on pass"
        return "smoke", False, f"push to {facts.ref} (not the default branch): smoke gate, no promotion"
    if name == "workflow_dispatch":
        return "reset", False, "workflow_dispatch: reset the baseline"
    if name == "workflow_run":
        return "comment", False, "workflow_run: post the stored report of the triggering run (fork flow)"
    if name in ("schedule", "merge_group"):
        return "full", False, f"{name}: full gate without promotion"
    raise UsageError(
        f"mode auto does not know what to do on the event {name or '(none)'!r}: "
        "set the action's `mode` input (smoke, full, reset, compare or comment)"
    )


def actor_name(explicit: str | None = None) -> str | None:
    """Who promotes or resets: ``explicit``, else GITHUB_ACTOR, else the OS user."""
    if explicit:
        return explicit
    if os.environ.get("GITHUB_ACTOR"):
        return os.environ["GITHUB_ACTOR"]
    try:
        return getpass.getuser()
    except (OSError, KeyError):
        return None


def github_client(activity: Activity, env: Mapping[str, str] = os.environ) -> GitHubClient | None:
    """Inside Actions, a client for the workflow's repository with the action's token; outside,
    None (the store builds one itself if the config asks for a github-release store)."""
    if not activity.in_actions:
        return None
    from evals.github.client import GitHubClient

    return GitHubClient.from_env(env)


def guard_reset_branch(activity: Activity) -> None:
    """A reset blesses its run as the latest baseline of the default branch, so inside Actions it
    runs only on that branch: a dispatch on a side branch would make that branch's code main's
    reference point."""
    if activity.kind != "reset" or not activity.in_actions or activity.on_default_branch:
        return
    default = activity.default_branch or "(unknown: the event payload has no repository.default_branch)"
    raise UsageError(
        f"a reset runs only on the default branch {default}, and this run is on {activity.ref or '(no GITHUB_REF)'}: "
        "it would bless that code as the default branch's baseline. Dispatch the workflow on the default branch"
    )
