"""The report a pull request's gate stores beside its files (``comment.json``), and posting it later
from the base repository (``evalgate comment``, the action's ``mode: comment``): the second phase
of the fork flow. A fork's pull request is gated with a read-only token, so its gate stores the
report (``comment.json`` + ``comparison.json``) as an artifact; a ``workflow_run`` job in the base
repository downloads it and posts it.

The artifact was produced by the fork's code, so nothing in it is trusted:

- ``comment.json`` must match its schema; the PR number (``--pr``, if given) and the repository
  must be the ones it names;
- its gate id must be the one the workflow names (``--gate-id``, the action's ``gate-id``): the
  gate id picks which sticky comment is updated, and a fork's artifact could otherwise overwrite
  another gate's comment on its PR;
- its head sha must be the head of the triggering run (``workflow_run.head_sha`` in the event) and
  the PR's current head (asked from the API); a report for an older push is not posted;
- the PR it names must be the triggering run's: the PR's head repository, branch and sha (from the
  API) must all be the run's (``workflow_run.head_repository.full_name``, ``head_branch``,
  ``head_sha``). A sha alone does not say which PR: anyone can push the commit of someone else's PR
  to a fork of their own, open a PR, and have their gate name the other PR in its artifact;
- the body is not taken from the artifact: it is re-rendered from ``comparison.json`` after
  validating it against the Comparison model, so the escaping of everything that came from a case
  is ours, and the size tiers keep it within GitHub's 65,536 characters;
- every value from it that reaches the log is escaped (``evals.common.escape.log_value``)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import TYPE_CHECKING

from pydantic import BaseModel, Field, ValidationError

from evals.common.errors import EXIT_PASS, InputFileError, UsageError
from evals.common.escape import log_value
from evals.github.activity import Activity, github_client, read_event
from evals.results import console
from evals.results.files import atomic_write

if TYPE_CHECKING:
    from evals.compare.model import Comparison
    from evals.github.client import GitHubClient
    from evals.suite.config import SuiteConfig

COMMENT_SCHEMA = "evalgate.comment/1"
MAX_BODY_CHARS = 65_536
_SHA = re.compile(r"^[0-9a-f]{40}$")
_GATE_ID = re.compile(r"^[^\x00-\x1f\x7f]{1,200}$")  # the comment marker percent-encodes the rest


class CommentMeta(BaseModel):
    """``comment.json``: which PR and commit a stored report belongs to (the two-phase fork flow)."""

    schema_: str = Field(alias="schema")
    repository: str | None
    pr_number: int
    head_sha: str
    base_sha: str | None = None
    gate_id: str
    verdict: str
    comparison: str = "comparison.json"
    body: str = "comment.md"


def write_comment_meta(comparison: Comparison, config: SuiteConfig, activity: Activity, out_dir: Path) -> None:
    meta = CommentMeta(
        schema=COMMENT_SCHEMA,
        repository=activity.repository,
        pr_number=activity.pr_number or 0,
        head_sha=activity.head_sha or activity.sha or "",
        base_sha=activity.base_sha,
        gate_id=config.gate_id,
        verdict=comparison.verdict,
    )
    data = json.dumps(meta.model_dump(by_alias=True), indent=2) + "\n"
    atomic_write(out_dir / "comment.json", data.encode("utf-8"))


def load_meta(report_dir: Path) -> CommentMeta:
    path = report_dir / "comment.json"
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise InputFileError(
            path, "no stored report here", "download the gate's report artifact into this folder"
        ) from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise InputFileError(path, f"unreadable: {exc}") from None
    try:
        meta = CommentMeta.model_validate(data)
    except ValidationError as exc:
        first = exc.errors(include_url=False)[0]
        raise InputFileError(path, f"invalid: {'.'.join(map(str, first['loc']))}: {first['msg']}") from None
    if meta.schema_ != COMMENT_SCHEMA:
        raise InputFileError(path, f"schema {log_value(meta.schema_, limit=80)!r} is not {COMMENT_SCHEMA!r}")
    if meta.pr_number < 1:
        raise InputFileError(path, f"pr_number {meta.pr_number} is not a pull request number")
    if not _SHA.match(meta.head_sha):
        raise InputFileError(path, "head_sha is not a 40-character commit sha")
    if not _GATE_ID.match(meta.gate_id):
        raise InputFileError(path, "gate_id is empty, too long or has control characters")
    for name in (meta.comparison, meta.body):
        if Path(name).name != name or name.startswith("."):
            raise InputFileError(path, f"{log_value(name, limit=80)!r} must be a plain file name in the report folder")
    return meta


def post_stored(
    report_dir: Path, activity: Activity, *, pr_number: int | None = None, gate_id: str | None = None
) -> int:
    from evals.github.publish import set_outputs_safely, upsert_sticky_comment
    from evals.github.transport import NotFound
    from evals.report.files import parse_comparison, render

    meta = load_meta(report_dir)
    where = report_dir / "comment.json"
    if pr_number is not None and pr_number != meta.pr_number:
        raise UsageError(f"{where} is the report of PR #{meta.pr_number}, not of #{pr_number}")
    if not gate_id:
        raise UsageError(
            "mode comment posts the report of one gate: name its gate id (the config's gate.id, else its suite) with "
            "the action's input gate-id (--gate-id), set per triggering workflow (docs/github-action.md, \"Pull "
            'requests from forks (two phases)"); the artifact does not choose which comment it updates'
        )
    if meta.gate_id != gate_id:
        raise UsageError(
            f"{where} is the report of gate {log_value(meta.gate_id, limit=100)!r}, and this workflow posts gate "
            f"{log_value(gate_id, limit=100)!r} (input gate-id): an artifact does not choose which comment it "
            "updates. Nothing was posted, and the other gate's comment is unchanged"
        )
    if activity.repository and meta.repository and meta.repository != activity.repository:
        raise UsageError(
            f"{where} was made in {log_value(meta.repository, limit=100)}, this workflow runs in {activity.repository}"
        )
    trigger = _triggering_head(activity)
    if trigger is not None and trigger.sha != meta.head_sha:
        raise UsageError(
            f"{where} is for commit {meta.head_sha[:12]}, the triggering run was for "
            f"{log_value(trigger.sha or '(none in the event)', limit=40)}: the artifact does not belong to this run"
        )
    comparison_path = report_dir / meta.comparison
    try:
        raw = comparison_path.read_bytes()
    except OSError as exc:
        raise InputFileError(comparison_path, f"cannot read: {exc}") from None
    newer: list[str] = []
    comparison = parse_comparison(raw, comparison_path, newer)
    if newer:
        console.info(
            f"{comparison_path.name} has fields this evalgate does not know, left out (a newer "
            f"evalgate wrote it; the comment shows what this one can): {log_value(', '.join(newer), limit=300)}",
            source="comment",
        )
    if comparison.verdict != meta.verdict:
        raise InputFileError(
            where,
            f"verdict {log_value(meta.verdict, limit=40)!r} disagrees with {meta.comparison} ({comparison.verdict})",
        )
    body = render(comparison, None, "comment")
    if len(body) > MAX_BODY_CHARS:
        raise InputFileError(comparison_path, f"the rendered comment has {len(body)} characters, over {MAX_BODY_CHARS}")

    client = github_client(activity)
    if client is None:
        raise UsageError("evalgate comment posts to GitHub: run it inside GitHub Actions (GITHUB_ACTIONS=true)")
    try:
        head = pull_request_head(client, meta.pr_number)
    except NotFound:
        raise UsageError(f"{where}: pull request #{meta.pr_number} does not exist in this repository") from None
    if head.sha != meta.head_sha:
        console.info(
            f"not posted: PR #{meta.pr_number} is at {log_value(head.sha, limit=12)}, the report is "
            f"for {meta.head_sha[:12]} (an older push, or the report names another PR)",
            source="comment",
        )
        set_outputs_safely({"verdict": comparison.verdict, "comment-url": ""})
        return EXIT_PASS
    if trigger is not None and not trigger.matches(head):
        raise UsageError(
            f"{where} names PR #{meta.pr_number}, whose head is {head.describe()}, but the run that made the artifact "
            f"was for {trigger.describe()}: the artifact names a pull request it was not made for. Nothing was "
            f"posted and PR #{meta.pr_number}'s comment is unchanged"
        )
    result = upsert_sticky_comment(client, meta.pr_number, body, meta.gate_id)
    url = result.url or ""
    set_outputs_safely({"verdict": comparison.verdict, "comment-url": url})
    console.result(f"evalgate comment: PR #{meta.pr_number}: {comparison.verdict} {log_value(url)}".rstrip())
    return EXIT_PASS


class Head(BaseModel):
    """Where a pull request's (or a run's) code came from: repository, branch, commit; None where
    GitHub left a field out (a deleted fork's repository)."""

    repo: str | None
    branch: str | None
    sha: str | None

    def matches(self, other: Head) -> bool:
        """Repository, branch and commit all known and equal: a field left out proves nothing."""
        mine = (self.repo, self.branch, self.sha)
        return None not in mine and mine == (other.repo, other.branch, other.sha)

    def describe(self) -> str:
        where = f"{log_value(self.repo or '(no repository)', limit=100)}:{log_value(self.branch or '(no branch)')}"
        return f"{where} at {log_value((self.sha or '(no commit)')[:12])}"


def pull_request_head(client: GitHubClient, number: int) -> Head:
    """The PR's current head, as the API reports it now (``head.repo.full_name``, ``head.ref``,
    ``head.sha``)."""
    data = client.get_pull_request(number)
    return Head(
        repo=_text(data, "head", "repo", "full_name"), branch=_text(data, "head", "ref"), sha=_text(data, "head", "sha")
    )


def _triggering_head(activity: Activity) -> Head | None:
    """The head of the run that produced the artifact, from the trusted event payload: a
    ``workflow_run``'s ``head_repository.full_name``, ``head_branch``, ``head_sha``; None for
    other events (a maintainer naming the PR by hand)."""
    if activity.event_name != "workflow_run":
        return None
    run = read_event().get("workflow_run")
    return Head(
        repo=_text(run, "head_repository", "full_name"), branch=_text(run, "head_branch"), sha=_text(run, "head_sha")
    )


def _text(data: object, *keys: str) -> str | None:
    for key in keys:
        data = data.get(key) if isinstance(data, dict) else None
    return data if isinstance(data, str) else None
