"""``evalgate comment --report-dir DIR [--pr N]`` (the action's ``mode: comment``): the second phase
of the fork flow. A fork's pull request is gated with a read-only token, so its gate stores the
report (``comment.json`` + ``comparison.json``) as an artifact; a ``workflow_run`` job in the base
repository downloads it and runs this.

The artifact was produced by the fork's code, so nothing in it is trusted:

- ``comment.json`` must match its schema; the PR number (``--pr``, if given) and the repository
  must be the ones it names;
- its head sha must be the head of the triggering run (``workflow_run.head_sha`` in the event) and
  the PR's current head (asked from the API); a report for an older push is not posted;
- the body is not taken from the artifact: it is re-rendered from ``comparison.json`` after
  validating it against the Comparison model, so the escaping of everything that came from a case
  is ours, and the size tiers keep it within GitHub's 65,536 characters."""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from pydantic import ValidationError

from evals.activity import Activity, detect, read_event
from evals.errors import EXIT_PASS, InputFileError, UsageError

if TYPE_CHECKING:
    from evals.gate import CommentMeta
    from evals.github import GitHubClient

MAX_BODY_CHARS = 65_536
_SHA = re.compile(r"^[0-9a-f]{40}$")
_GATE_ID = re.compile(r"^[^\x00-\x1f\x7f]{1,200}$")  # the comment marker percent-encodes the rest


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--report-dir", required=True, metavar="DIR", help="folder with comment.json + comparison.json")
    parser.add_argument("--pr", type=int, metavar="N", help="pull request number (must match comment.json)")


def main(args: argparse.Namespace) -> int:
    return post_stored(Path(args.report_dir), detect("comment", pr_number=args.pr), pr_number=args.pr)


def load_meta(report_dir: Path) -> CommentMeta:
    from evals.gate import COMMENT_SCHEMA, CommentMeta

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
        raise InputFileError(path, f"schema {meta.schema_!r} is not {COMMENT_SCHEMA!r}")
    if meta.pr_number < 1:
        raise InputFileError(path, f"pr_number {meta.pr_number} is not a pull request number")
    if not _SHA.match(meta.head_sha):
        raise InputFileError(path, "head_sha is not a 40-character commit sha")
    if not _GATE_ID.match(meta.gate_id):
        raise InputFileError(path, "gate_id is empty, too long or has control characters")
    for name in (meta.comparison, meta.body):
        if Path(name).name != name or name.startswith("."):
            raise InputFileError(path, f"{name!r} must be a plain file name in the report folder")
    return meta


def post_stored(report_dir: Path, activity: Activity, *, pr_number: int | None = None) -> int:
    from evals.gate import github_client, render, set_outputs_safely
    from evals.github import NotFound
    from evals.promote import parse_comparison
    from evals.publish import upsert_sticky_comment

    meta = load_meta(report_dir)
    where = report_dir / "comment.json"
    if pr_number is not None and pr_number != meta.pr_number:
        raise UsageError(f"{where} is the report of PR #{meta.pr_number}, not of #{pr_number}")
    if activity.repository and meta.repository and meta.repository != activity.repository:
        raise UsageError(f"{where} was made in {meta.repository}, this workflow runs in {activity.repository}")
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
        raise InputFileError(where, f"verdict {meta.verdict!r} disagrees with {meta.comparison} ({comparison.verdict})")
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
            f"evalgate comment: not posted: PR #{meta.pr_number} is at {str(head)[:12]}, the report is for "
            f"{meta.head_sha[:12]} (an older push, or the report names another PR)",
            file=sys.stderr,
        )
        set_outputs_safely({"verdict": comparison.verdict, "comment-url": ""})
        return EXIT_PASS
    result = upsert_sticky_comment(client, meta.pr_number, body, meta.gate_id)
    url = result.url or ""
    set_outputs_safely({"verdict": comparison.verdict, "comment-url": url})
    print(f"evalgate comment: PR #{meta.pr_number}: {comparison.verdict} {url}".rstrip())
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


if __name__ == "__main__":
    from evals.cli import module_main

    raise SystemExit(module_main("comment"))
