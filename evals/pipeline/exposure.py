"""What a job that runs the suite exposes to the code under test (docs/spec.md#trust-boundaries;
threat model in docs/github-action.md).

The suite is code from the repository (a python target, a command, the cases' own helpers), and on
a pull request it is the PR author's code. It runs as the same user as evalgate, so nothing inside
the job keeps a token from it: it can rewrite evalgate's modules before the parent imports them,
drop a ``.pth`` file that runs even under ``python -I``, read the parent's memory (runners have
passwordless sudo), or read a git credential that actions/checkout persisted. The boundary is the
job: the shipped workflows run the suite in a job whose token can only read, and gate, comment and
promote in a second job that runs no suite code.

- ``guard_secret_events``: ``pull_request_target`` gives the base repository's write token and
  secrets to a job triggered by anyone's PR, and its working tree can hold the PR's code however
  HEAD looks (files checked out or applied from the PR, a clone in any folder, sources without
  ``.git``); ``workflow_run`` and ``issue_comment`` run in the same context, started by anyone's
  PR or comment. No check of commits can rule out PR code there, so no mode that runs the suite
  is allowed under them (``guard_run``: nor ``evalgate run`` itself); ``mode: comment`` (which
  runs none) is. The old opt-in is refused with what to do instead.
- ``guard_exposed``: in a job that runs the suite, a token not proven read-only (GitHub refusing
  a harmless write with 403; ``GitHubClient.write_access``) is refused unless the workflow accepts
  it (``allow-write-token-with-suite: true``), and then the step summary says so; a persisted git
  credential (``http.<url>.extraheader`` in a checkout's git config) is a warning.
- ``guard_install``: the same refusals, earlier: before the action installs the suite's own
  dependencies, whose build is the repository's code too."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from evals.common.errors import UsageError
from evals.results import console

if TYPE_CHECKING:
    from evals.github.activity import Activity
    from evals.github.client import GitHubClient
    from evals.suite.config import SuiteConfig

# The action's removed `allow-pull-request-target` input still reaches us, so a workflow that sets
# it learns that it no longer does anything rather than silently losing what it asked for.
OLD_OPT_IN_VAR = "EVALGATE_ALLOW_PULL_REQUEST_TARGET"
WRITE_OPT_IN_VAR = "EVALGATE_ALLOW_WRITE_TOKEN_WITH_SUITE"  # the action's `allow-write-token-with-suite`
RUN_KINDS = ("smoke", "full", "reset", "run")
# Events whose jobs run in the default branch's context with its secrets, and can be started by a
# pull request or a comment from anyone: no suite runs under them (docs/spec.md#trust-boundaries).
SECRET_EVENTS = ("pull_request_target", "workflow_run", "issue_comment")
TWO_PHASE = (
    "Gate pull requests on the pull_request event (a fork's token is read-only there) and post fork comments "
    "from a workflow_run job with mode: comment, which runs no code of the pull request (docs/github-action.md, "
    '"Pull requests from forks (two phases)")'
)


def guard_secret_events(activity: Activity, *, runs_suite: bool, env: Mapping[str, str] = os.environ) -> None:
    """Refuse (exit 2) the removed ``allow-pull-request-target`` input in any mode, and any mode
    that runs the suite under an event of :data:`SECRET_EVENTS`. Modes that run no suite code (a
    results file given, posting a stored report) are not affected by the event."""
    old = env.get(OLD_OPT_IN_VAR, "").strip()
    if old and old.lower() != "false":
        raise UsageError(
            f"the input allow-pull-request-target ({old!r}) was removed: evalgate no longer runs the suite under "
            "pull_request_target at all, opted in or not, because that job's working tree can hold the pull "
            "request's code whatever its HEAD is, with the base repository's token and secrets. Remove the input, "
            f"and move the suite off pull_request_target. {TWO_PHASE}; migration steps in the same document, "
            '"Migrating from allow-pull-request-target"'
        )
    if activity.event_name not in SECRET_EVENTS or not runs_suite:
        return
    raise UsageError(_refusal(activity.event_name, f"the suite ({activity.kind})"))


def guard_run(env: Mapping[str, str] = os.environ) -> None:
    """``evalgate run`` itself: it runs the suite, so it refuses the events of :data:`SECRET_EVENTS`
    as the action's modes do — a workflow's own ``run:`` step is no safer a place for the PR's code."""
    event = env.get("GITHUB_EVENT_NAME", "")
    if env.get("GITHUB_ACTIONS") == "true" and event in SECRET_EVENTS:
        raise UsageError(_refusal(event, "evalgate run"))


def _refusal(event: str, what: str) -> str:
    why = {
        "pull_request_target": "its working tree can hold the pull request's code (files checked out or applied "
        "from the PR, a clone of it in any folder) that no check of commits can see",
        "workflow_run": "it is started by another workflow's run, which a pull request from anyone can trigger, "
        "and what it downloads or checks out can be that pull request's code",
        "issue_comment": "anyone who can comment starts it, and what it checks out for a pull request's comment "
        "is that pull request's code",
    }[event]
    return (
        f"{event}: evalgate does not run {what} under this event. This job runs in the default branch's context "
        f"with the base repository's token and secrets, and {why}. Under {event} only mode: comment runs "
        f"(it runs no code of the repository). {TWO_PHASE}"
    )


# ---------------------------------------------------------------------------------------------
# A job that runs the suite


def guard_exposed(
    activity: Activity, config: SuiteConfig, client: GitHubClient | None, env: Mapping[str, str] = os.environ
) -> list[str]:
    """Before the suite runs in Actions: refuse (exit 2) a token not proven read-only unless the workflow
    accepted it, and warn about a persisted git credential. Returns the warnings given (also
    said as warnings; an accepted write token is also said in the step summary)."""
    from evals.github.publish import write_step_summary

    found = []
    for folder in _suite_folders(config, env):
        if persisted_credential(folder):
            found.append(
                f"{folder} has a persisted git credential (actions/checkout without persist-credentials: false): "
                "the suite can read it and push with it. Set persist-credentials: false on the checkout"
            )
            break
    note = refuse_write_token(activity, client, env)
    if note:
        found.append(note)
        write_step_summary(f"> **evalgate:** {note}.\n", env)
    for message in found:
        console.warning(message)
    return found


def guard_install(
    activity: Activity, client: GitHubClient | None, *, runs_suite: bool, env: Mapping[str, str] = os.environ
) -> None:
    """Before the action installs the suite's own dependencies (its ``install`` input) into the
    virtualenv evalgate runs from: installing runs the repository's code (a build backend,
    ``setup.py``) and can leave a ``.pth`` file that every later start of that Python runs, ``-I``
    or not, with the token in the environment. So everything that would refuse the suite refuses
    here, before that: an event of :data:`SECRET_EVENTS`, a mode that runs no suite (nothing to install for),
    a token not proven read-only."""
    if activity.event_name in SECRET_EVENTS:
        raise UsageError(
            f"{activity.event_name}: the input install runs the repository's code (its build), and under this event "
            f"that can be a pull request's, with the base repository's token and secrets. {TWO_PHASE}"
        )
    if not runs_suite:
        raise UsageError(
            f"the input install is for the job that runs the suite; this one does not ({activity.why}): remove it"
        )
    refuse_write_token(activity, client, env)


def refuse_write_token(
    activity: Activity, client: GitHubClient | None, env: Mapping[str, str] = os.environ
) -> str | None:
    """Refuse (exit 2) a job that runs the suite unless its token is proven read-only
    (``GitHubClient.write_access``: only GitHub's 403 on a harmless write proves it) or the
    workflow set allow-write-token-with-suite: true. A job without a token has nothing to prove.
    Returns the note for the step summary when the opt-in let the suite run, else None."""
    accepted = _opt_in(env)
    if client is None or not client.has_token:
        return None
    access = client.write_access()
    if access.can_write is False:
        return None
    if access.can_write:
        what = f"this job's token can write to {client.repo} ({access.asked}: {access.answer})"
        note = f"the suite ran in a job whose token can write to {client.repo}"
    else:
        what = (
            f"evalgate could not establish that this job's token cannot write to {client.repo}: it asked "
            f"{access.asked}, and GitHub answered: {access.answer}. Only GitHub refusing that write (403) proves a "
            "token read-only; what GET /repos reports as permissions is not enough (GitHub leaves them out, or says "
            "push: false, for installation tokens that can write)"
        )
        note = f"the suite ran in a job whose token was not proven read-only ({access.asked}: {access.answer})"
    if accepted:
        return f"allow-write-token-with-suite: {note}; the suite's code could reach that token"
    raise UsageError(
        f"{what}; evalgate would run the suite ({activity.kind}) in this job, where its code can reach the token (a "
        "process cannot hide it from code running as the same user). Run the suite in a job with permissions "
        'contents: read and github-token: "" (mode: run) and gate its results in a second job (docs/github-action.md, '
        '"Threat model"), or set allow-write-token-with-suite: true on the action to accept that the suite can use '
        "this token"
    )


def confine_pr_history(
    activity: Activity, config: SuiteConfig, client: GitHubClient | None, env: Mapping[str, str] = os.environ
) -> str | None:
    """A job that gates a pull request's results file with a token not proven read-only reads
    nothing from the PR's config that can leak (docs/spec.md#trust-boundaries): a ``history.url``
    naming a database server (PostgreSQL) would send the history's rows, the cases among them, to
    a server the PR chose. It is not used there (``EVALGATE_HISTORY_URL`` from the workflow still
    is); a SQLite one is a file confined to the workspace like every other path. Returns the
    warning given."""
    from evals.history.url import is_postgres, redact_url

    url = config.history.url
    if activity.event_name not in ("pull_request", "pull_request_target") or not url or not is_postgres(url):
        return None
    if env.get("EVALGATE_HISTORY_URL", "").strip() or client is None or not client.has_token:
        return None  # the workflow's URL wins anyway; a job without a token has nothing to prove
    if client.write_access().can_write is False:
        return None
    config.history.url = None
    warning = (
        f"{config.where('history', 'url')}: history.url ({redact_url(url)}) comes from the pull request's config and "
        "is not used in this job, whose token is not proven read-only: set EVALGATE_HISTORY_URL in the workflow "
        "to record this gate's history"
    )
    console.warning(warning)
    return warning


def _opt_in(env: Mapping[str, str]) -> bool:
    value = env.get(WRITE_OPT_IN_VAR, "").strip().lower()
    if value not in ("", "true", "false"):
        raise UsageError(f"allow-write-token-with-suite is {value!r}: use true or false")
    return value == "true"


def _suite_folders(config: SuiteConfig, env: Mapping[str, str]) -> list[Path]:
    """The folders whose git config the suite's code runs under: the current folder, the
    config's, the target's import paths and working folder, and the workspace."""
    found: list[Path] = [Path.cwd().resolve(), config.root.resolve()]
    target = config.target
    found.extend(config.resolve(extra).resolve() for extra in getattr(target, "path", None) or [])
    cwd = getattr(target, "cwd", None)
    if cwd:
        found.append(config.resolve(cwd).resolve())
    workspace = env.get("GITHUB_WORKSPACE")
    if workspace:
        found.append(Path(workspace).resolve())
    return list(dict.fromkeys(found))


def persisted_credential(folder: Path) -> bool:
    """Whether git, run in ``folder``, would send a stored Authorization header (actions/checkout
    keeps one as ``http.<url>.extraheader``, in .git/config or a file it includes). The value is
    never read out."""
    from evals.common.gitinfo import git

    done = git(folder, "config", "--includes", "--get-regexp", r"^http\..*extraheader$", timeout=10)
    if done is None or done.returncode != 0:
        return False
    return "authorization" in done.stdout.lower()


def guard_suite_job(activity: Activity, config: SuiteConfig, client: GitHubClient | None) -> None:
    """Inside Actions, before the suite runs: refuse a token that can write unless the workflow
    accepted it, warn about a persisted git credential."""
    if activity.in_actions:
        guard_exposed(activity, config, client)
