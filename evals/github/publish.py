"""Publishing a gate's result where people see it: one sticky PR comment per PR and gate id, the
job's step summary, the action's outputs, annotations.

None of this may change the verdict (docs/spec.md#publishing): ``upsert_sticky_comment_or_warn``
turns a failed comment into a warning (an annotation in Actions) naming what the token lacks, and
``write_step_summary`` warns instead of raising. Sizes are guarded here even though the report
renderer already renders in tiers: GitHub rejects comments over 65,536 characters and drops step
summaries over 1 MiB.
"""

from __future__ import annotations

import contextlib
import os
import re
import textwrap
import uuid
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Literal, TextIO
from urllib.parse import quote

from pydantic import BaseModel

from evals.common.errors import EvalgateError, InfraError, UsageError
from evals.common.logguard import command
from evals.github.client import GitHubClient
from evals.github.models import Comment, LoginMismatch
from evals.github.transport import GitHubError
from evals.results import console

if TYPE_CHECKING:
    from evals.compare.model import Comparison
    from evals.github.activity import Activity
    from evals.suite.config import SuiteConfig

MAX_COMMENT_CHARS = 65_536
MAX_SUMMARY_BYTES = 1024 * 1024

_TRIM_RESERVE = 400  # room for the trim note and the closing fence/details tags
_OUTPUT_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_-]*")


class CommentResult(BaseModel):
    action: Literal["created", "updated", "unchanged"]
    comment_id: int
    url: str | None = None
    trimmed: bool = False
    duplicates: int = 0  # further comments of ours with the same marker (a past race); left alone


# ---------------------------------------------------------------------------------------------
# Sticky comment


def comment_marker(gate_id: str) -> str:
    """The hidden line that identifies our comment for ``gate_id``. The id is percent-encoded
    (``-`` included) so no id can end the HTML comment early or contain another id's marker."""
    return f"<!-- evalgate:gate={quote(gate_id, safe='').replace('-', '%2D')} -->"


def sticky_body(body: str, gate_id: str) -> tuple[str, bool]:
    """The comment as posted: marker line + ``body``, cut to GitHub's limit with a note when it
    does not fit. Returns (text, trimmed)."""
    head = comment_marker(gate_id) + "\n"
    if len(head) + len(body) <= MAX_COMMENT_CHARS:
        return head + body, False
    return head + _trim_markdown(body, MAX_COMMENT_CHARS - len(head), unit="characters"), True


def find_sticky_comments(client: GitHubClient, pr_number: int, gate_id: str) -> list[Comment]:
    """Our comments for ``gate_id``, oldest first, searched across all pages: by this token's
    identity (``GitHubClient.identity``: login, and for an app its bot and the app GitHub says the
    comment was made via) and starting with the marker (where ``sticky_body`` puts it, so report
    text that happens to contain another gate's marker cannot match). Someone else's comment with
    the same marker (another bot, a user quoting ours) is not ours."""
    marker = comment_marker(gate_id)
    me = client.identity()
    return [c for c in client.list_issue_comments(pr_number) if me.wrote(c) and (c.body or "").startswith(marker)]


def upsert_sticky_comment(client: GitHubClient, pr_number: int, body: str, gate_id: str) -> CommentResult:
    """Create the PR's comment for ``gate_id`` or update it in place; a comment whose text is
    already ``body`` is not touched. Raises ``GitHubError`` (see ``upsert_sticky_comment_or_warn``)."""
    text, trimmed = sticky_body(body, gate_id)
    ours = find_sticky_comments(client, pr_number, gate_id)
    if not ours:
        created = client.create_issue_comment(pr_number, text)
        return CommentResult(action="created", comment_id=created.id, url=created.html_url, trimmed=trimmed)
    target, duplicates = ours[0], len(ours) - 1
    if _same_text(target.body or "", text):
        return CommentResult(
            action="unchanged", comment_id=target.id, url=target.html_url, trimmed=trimmed, duplicates=duplicates
        )
    updated = client.update_issue_comment(target.id, text)
    return CommentResult(
        action="updated",
        comment_id=updated.id,
        url=updated.html_url or target.html_url,
        trimmed=trimmed,
        duplicates=duplicates,
    )


def upsert_sticky_comment_or_warn(
    client: GitHubClient,
    pr_number: int,
    body: str,
    gate_id: str,
    *,
    hint: str | None = None,
) -> CommentResult | None:
    """``upsert_sticky_comment`` that never raises a GitHub failure or a login that cannot be this
    token's: it gives a warning (naming the missing permission on a 403,
    e.g. a fork PR's read-only token; then ``hint``, what to do about it) and returns None, so the
    gate's exit code stays the verdict's."""
    try:
        return upsert_sticky_comment(client, pr_number, body, gate_id)
    except (GitHubError, LoginMismatch) as err:
        console.warning(failure_message(err, f"post the PR comment on #{pr_number}", hint))
        return None


def failure_message(err: GitHubError | LoginMismatch, what: str, hint: str | None = None) -> str:
    """What failed and why, and that the verdict is unaffected."""
    text = f"evalgate could not {what}: {err}. The gate's verdict is unaffected; the report is in the job summary."
    return f"{text} {hint}" if hint else text


def _same_text(old: str, new: str) -> bool:
    return old.replace("\r\n", "\n") == new.replace("\r\n", "\n")


# ---------------------------------------------------------------------------------------------
# Step summary, outputs, annotations


def write_step_summary(markdown: str, env: Mapping[str, str] = os.environ) -> bool:
    """Append ``markdown`` to the file ``GITHUB_STEP_SUMMARY`` names, within the 1 MiB a step's
    summary may hold (what is already there counts), cut with a note when it does not fit.
    False (and a ``::warning::`` line on a write error) when nothing was written; outside Actions
    there is no summary file and nothing happens."""
    target = env.get("GITHUB_STEP_SUMMARY")
    if not target:
        return False
    path = Path(target)
    try:
        used = path.stat().st_size if path.exists() else 0
        budget = MAX_SUMMARY_BYTES - used - 1
        text = markdown
        if len(text.encode()) > budget:
            if budget < _TRIM_RESERVE:
                return False  # earlier steps' output filled the summary
            text = _trim_markdown(text, budget, unit="bytes")
        with path.open("a", encoding="utf-8") as handle:
            handle.write(text if text.endswith("\n") else text + "\n")
    except OSError as err:
        console.warning(f"evalgate could not write the step summary ({target}): {err.strerror or err}")
        return False
    return True


def set_outputs(values: Mapping[str, object], env: Mapping[str, str] = os.environ) -> None:
    """Append step outputs to ``GITHUB_OUTPUT`` with the ``name<<DELIMITER`` form, so any value
    (multiline, containing ``=``) arrives intact; the delimiter is random and checked not to occur
    in the value. ``None`` values are written as empty. Outside Actions nothing happens."""
    target = env.get("GITHUB_OUTPUT")
    if not target:
        return
    chunks = []
    for name, value in values.items():
        if not _OUTPUT_NAME.fullmatch(name):
            raise UsageError(f"output name {name!r} is not a valid GitHub Actions output name")
        text = "" if value is None else str(value)
        delimiter = f"ghadelimiter_{uuid.uuid4()}"
        while delimiter in text:
            delimiter = f"ghadelimiter_{uuid.uuid4()}"
        chunks.append(f"{name}<<{delimiter}\n{text}\n{delimiter}\n")
    try:
        with open(target, "a", encoding="utf-8") as handle:
            handle.write("".join(chunks))
    except OSError as err:
        raise InfraError(f"cannot write step outputs to GITHUB_OUTPUT ({target}): {err.strerror or err}") from None


def emit_annotations(lines: Iterable[str], stream: TextIO | None = None) -> None:
    """Print workflow-command lines (``::error file=...::message``) as built by the report. A raw
    line break would end the command and let the rest run as another one, so any left is encoded."""
    for line in lines:
        command(line.replace("\r", "%0D").replace("\n", "%0A"), stream)


# ---------------------------------------------------------------------------------------------
# A gate's result, all of it


def publish_result(
    comparison: Comparison,
    config: SuiteConfig | None,
    activity: Activity,
    client: GitHubClient | None,
    *,
    comment: bool,
    out_dir: Path,
    headline: str = "",
) -> dict[str, str]:
    """Step summary (after ``headline``, markdown the caller escaped), annotations and the sticky
    comment. Each may fail; none changes the verdict."""
    from evals.report.ci_outputs import annotation_lines
    from evals.report.files import render
    from evals.report.markdown import SUMMARY_MAX_CHARS

    outputs: dict[str, str] = {}
    try:
        room = SUMMARY_MAX_CHARS - len(headline.encode("utf-8"))
        write_step_summary(headline + render(comparison, config, "summary", max_chars=room))
    except (OSError, EvalgateError) as exc:
        console.warning(f"could not write the step summary: {exc}")
    emit_annotations(annotation_lines(comparison))
    if not (comment and activity.is_pr and client is not None):
        return outputs
    body = (out_dir / "comment.md").read_text(encoding="utf-8")
    gate_id = config.gate_id if config else comparison.candidate_run.suite
    where = f"{out_dir / 'comment.md'} (with comment.json)"
    hint = (
        f"A pull request from a fork gets a read-only token. The comment is in {where}; post it with the "
        "two-phase workflow_run flow (mode: comment)."
        if activity.fork
        else f"The comment is in {where}."
    )
    result = upsert_sticky_comment_or_warn(client, activity.pr_number or 0, body, gate_id, hint=hint)
    if result is None:
        return outputs
    outputs["comment-url"] = result.url or ""
    return outputs


def set_outputs_safely(outputs: dict[str, str]) -> None:
    try:
        set_outputs(outputs)
    except EvalgateError as exc:
        console.warning(f"could not write the step outputs: {exc}")


def report_failure(exc: EvalgateError, activity: Activity) -> None:
    """Inside Actions, a gate that could not decide still says why on the run page and in the
    ``verdict`` output ("error", or the verdict a gate reached before running the suite), so a
    workflow's later steps can tell it from a regression."""
    if not activity.in_actions:
        return
    from evals.common.escape import code_block

    # The message can quote user files (case ids, values): a code block keeps it inert. Wrapped,
    # since a code block cuts long lines.
    message = "\n".join(textwrap.fill(line, 110, break_on_hyphens=False) for line in str(exc).splitlines())
    verdict = getattr(exc, "verdict", "error")
    with contextlib.suppress(OSError, EvalgateError):
        write_step_summary(f"## evalgate: {verdict} (exit {exc.exit_code})\n\n{code_block(message)}\n")
    set_outputs_safely({"verdict": verdict})


# ---------------------------------------------------------------------------------------------
# helpers


def _trim_markdown(text: str, limit: int, *, unit: Literal["characters", "bytes"]) -> str:
    """``text`` cut to at most ``limit`` characters or UTF-8 bytes, at a line break when one is
    near, with open code fences and ``<details>`` closed and a note saying how much was cut."""

    def size(s: str) -> int:
        return len(s.encode()) if unit == "bytes" else len(s)

    total = size(text)
    budget = max(0, limit - _TRIM_RESERVE)
    cut = text.encode()[:budget].decode("utf-8", errors="ignore") if unit == "bytes" else text[:budget]
    newline = cut.rfind("\n")
    if newline > len(cut) - 2000:
        cut = cut[: newline + 1]
    closers = ""
    if sum(1 for line in cut.splitlines() if line.lstrip().startswith("```")) % 2:
        closers += "\n```"
    open_details = len(re.findall(r"<details\b", cut)) - len(re.findall(r"</details>", cut))
    closers += "\n</details>" * max(0, open_details)
    note = (
        f"\n\n> **Trimmed by evalgate:** {total - size(cut):,} of {total:,} {unit} cut to fit GitHub's limit. "
        "The full report is in the job summary and the report artifact.\n"
    )
    return cut + closers + note
