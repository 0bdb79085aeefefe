"""The report a pull request's gate stores beside its files (``comment.json``), and posting it later
from the base repository (``evalgate comment``, the action's ``mode: comment``): the second phase
of the fork flow. A fork's pull request is gated with a read-only token, so its gate stores the
report (``comment.json`` + ``comparison.json``) as an artifact; a ``workflow_run`` job in the base
repository downloads it and posts it.

The artifact was produced by the fork's code, so nothing in it is trusted:

- ``comment.json`` must match its schema; the PR number (``--pr``, if given) and the repository
  must be the ones it names;
- its head sha must be the head of the triggering run (``workflow_run.head_sha`` in the event) and
  the PR's current head (asked from the API); a report for an older push is not posted;
- the body is not taken from the artifact: it is re-rendered from ``comparison.json`` after
  validating it against the Comparison model, so the escaping of everything that came from a case
  is ours, and the size tiers keep it within GitHub's 65,536 characters;
- every value from it that reaches the log is escaped (``evals.common.escape.log_value``)."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from pydantic import BaseModel, Field, ValidationError

from evals.common.errors import EXIT_PASS, InputFileError, UsageError
from evals.common.escape import log_value
from evals.github.activity import Activity, github_client, read_event
from evals.results.model import atomic_write

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


def post_stored(report_dir: Path, activity: Activity, *, pr_number: int | None = None) -> int:
    from evals.github.publish import set_outputs_safely, upsert_sticky_comment
    from evals.github.transport import NotFound
    from evals.report.files import parse_comparison, render

    meta = load_meta(report_dir)
    where = report_dir / "comment.json"
    if pr_number is not None and pr_number != meta.pr_number:
        raise UsageError(f"{where} is the report of PR #{meta.pr_number}, not of #{pr_number}")
    if activity.repository and meta.repository and meta.repository != activity.repository:
        raise UsageError(
            f"{where} was made in {log_value(meta.repository, limit=100)}, this workflow runs in {activity.repository}"
        )
    run_head = _triggering_head_sha(activity)
    if run_head and run_head != meta.head_sha:
        raise UsageError(
            f"{where} is for commit {meta.head_sha[:12]}, the triggering run was for {run_head[:12]}: "
            "the artifact does not belong to this run"
        )
    comparison_path = report_dir / meta.comparison
    try:
        raw = comparison_path.read_bytes()
    except OSError as exc:
        raise InputFileError(comparison_path, f"cannot read: {exc}") from None
    comparison = parse_comparison(raw, comparison_path)
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
    if head != meta.head_sha:
        print(
            f"evalgate comment: not posted: PR #{meta.pr_number} is at {log_value(head, limit=12)}, the report is for "
            f"{meta.head_sha[:12]} (an older push, or the report names another PR)",
            file=sys.stderr,
        )
        set_outputs_safely({"verdict": comparison.verdict, "comment-url": ""})
        return EXIT_PASS
    result = upsert_sticky_comment(client, meta.pr_number, body, meta.gate_id)
    url = result.url or ""
    set_outputs_safely({"verdict": comparison.verdict, "comment-url": url})
    print(f"evalgate comment: PR #{meta.pr_number}: {comparison.verdict} {log_value(url)}".rstrip())
    return EXIT_PASS


def pull_request_head(client: GitHubClient, number: int) -> str | None:
    """The PR's current head commit, as the API reports it now."""
    data = client.get_pull_request(number)
    head = data.get("head") if isinstance(data, dict) else None
    sha = head.get("sha") if isinstance(head, dict) else None
    return sha if isinstance(sha, str) else None


def _triggering_head_sha(activity: Activity) -> str | None:
    """The commit of the run that produced the artifact, from the trusted event payload."""
    if activity.event_name != "workflow_run":
        return None
    run = read_event().get("workflow_run")
    head = run.get("head_sha") if isinstance(run, dict) else None
    return head if isinstance(head, str) else None
