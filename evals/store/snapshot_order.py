"""Whether a candidate may replace the latest baseline (docs/spec.md#promotion: "a promotion never replaces a
baseline with one from an older commit"), and the words that say why not.

What "older" means depends on where the writer stands (docs/baseline-store.md, "Promotion"):

- in a git repository, git ancestry decides, else the commit dates; when neither can, a promotion
  is refused (a reset goes ahead, noted) and the hint fits the place: `fetch-depth: 0` in GitHub
  Actions, `--sha` or a reset locally;
- outside any git repository (docs/spec.md#outside-git), runs are named by ``--sha`` or a content digest and have
  no commits to order, so time does: the runs' start times (else their end times, else the
  snapshots' ``created_at``). Inside GitHub Actions a job without a checkout is a set-up to fix
  (check the repository out), not a reason to trust the clock: a re-run of an old workflow run
  starts late but tests old code."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import cached_property
from pathlib import Path

from evals.common.gitinfo import in_repository
from evals.results.manifest import SnapshotInfo
from evals.results.model import RunInfo
from evals.store import ancestry

RESET = "`evalgate reset --reason TEXT`"


@dataclass
class Checkout:
    """Where the writer stands: the git checkout used for ancestry (None: none) and whether it runs
    inside GitHub Actions."""

    repo: Path | None
    in_actions: bool = False

    @cached_property
    def in_git(self) -> bool:
        return in_repository(self.repo)

    @property
    def by_time(self) -> bool:
        """No repository to ask, and not in Actions: runs are ordered by time."""
        return not self.in_actions and not self.in_git


@dataclass
class Order:
    """The verdict on one candidate against the latest entry."""

    refusal: str | None = None
    same: SnapshotInfo | None = None  # the latest entry, when it is this very snapshot
    note: str | None = None  # a caveat for the job log
    basis: str | None = None  # how "newer" was decided, when git ancestry did not


def parse_time(text: str | None) -> datetime | None:
    if not text:
        return None
    try:
        value = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None
    return value if value.tzinfo else value.replace(tzinfo=UTC)


def order(
    latest: SnapshotInfo | None,
    *,
    earlier: bool,
    sha: str,
    digest: str,
    blessed: bool,
    commit_date: datetime | None,
    candidate: RunInfo,
    latest_run: Callable[[], RunInfo | None],
    where: Checkout,
) -> Order:
    """May the snapshot of ``sha`` (bytes ``digest``, run ``candidate``) follow ``latest``?
    ``earlier``: an entry before the latest has ``sha`` too. A reset (``blessed``) may re-bless the
    latest's own commit, never an older one. ``latest_run`` reads
    the latest snapshot's run, only needed (and only called) when time decides."""
    if latest is None:
        return Order()
    # Time orders free labels (`--sha v2`, content digests) only: a run named by a commit is ordered
    # by git, and where git cannot be read (not installed, a repository it refuses, a job without
    # a checkout) a re-run of an old commit that started late must not win.
    by_time = where.by_time and not (_commit_like(sha) or _commit_like(latest.sha))
    if latest.sha.lower() == sha.lower():
        if latest.digest == digest:
            return Order(same=latest)
        if blessed:
            return Order()
        if by_time:
            return Order(
                f"{sha[:12]} already has a baseline snapshot from another run; a promotion never replaces it "
                "(name this run with a new --sha, or a reset re-blesses it)"
            )
        return Order(
            f"commit {sha[:12]} already has a baseline snapshot from another run; a promotion never replaces "
            "it (a reset re-blesses a new run of the same commit)"
        )
    if by_time:
        if earlier and not blessed:
            # A name is a free label here: one an earlier snapshot already has is taken for good.
            return Order(
                f"{sha[:12]} already names an earlier baseline snapshot, and snapshots are never overwritten "
                "(name this run with a new --sha)"
            )
        return _by_time(latest, sha, blessed, candidate, latest_run())
    return _by_git(latest, sha, blessed, commit_date, where)


def _by_git(latest: SnapshotInfo, sha: str, blessed: bool, commit_date: datetime | None, where: Checkout) -> Order:
    repo = where.repo
    if ancestry.is_ancestor(latest.sha, sha, repo=repo):
        return Order()
    if ancestry.is_ancestor(sha, latest.sha, repo=repo):
        return Order(f"commit {sha[:12]} is older than the current baseline's {latest.sha[:12]} (an ancestor of it)")
    latest_date = parse_time(latest.commit_date) or ancestry.commit_date(latest.sha, repo=repo)
    if commit_date is not None and latest_date is not None:
        # A tie is refused: "never older" must hold even for two commits made in the same second.
        if commit_date <= latest_date:
            fetch = "fetch-depth: 0" if where.in_actions else "`git fetch --unshallow`"
            return Order(
                f"commit {sha[:12]} ({commit_date:%Y-%m-%d %H:%M:%S}) is not newer than the current baseline's "
                f"{latest.sha[:12]} ({latest_date:%Y-%m-%d %H:%M:%S}); git could not relate them (shallow "
                f"history? {fetch} lets ancestry decide), so commit dates decide"
            )
        return Order(note="git could not relate the commits; ordered them by commit date")
    unknown = (
        f"cannot tell whether {sha[:12]} is newer than the current baseline's {latest.sha[:12]} (no shared git "
        "history or commit dates)"
    )
    if blessed:  # a reset is a person's explicit choice of this run: it goes ahead, noted
        return Order(note=f"{unknown}; reset anyway")
    # "Never older" cannot be shown, so it is not risked.
    return Order(f"{unknown}; {_settle_hint(latest, sha, where)}")


def _settle_hint(latest: SnapshotInfo, sha: str, where: Checkout) -> str:
    """What lets git decide next time, where the writer stands."""
    if where.in_actions:
        return "check the repository out with fetch-depth: 0 so git ancestry can decide, or run a reset"
    if ancestry.resolve(where.repo, sha) is None:
        return (
            f"{sha[:12]} is not a commit of the git repository at {where.repo}: pass --sha COMMIT naming one of "
            f"its commits, or bless this run with {RESET}"
        )
    if ancestry.resolve(where.repo, latest.sha) is None:
        return (
            f"the current baseline's {latest.sha[:12]} is not a commit of the git repository at {where.repo} "
            f"(named before git was set up, or history since rewritten): bless this run with {RESET}"
        )
    return f"fetch the missing history (`git fetch --unshallow`) so git ancestry can decide, or run {RESET}"


def _commit_like(name: str) -> bool:
    """A git object name (7 to 40 hex digits), not a label or a content digest."""
    return re.fullmatch(r"[0-9a-fA-F]{7,40}", name) is not None


def _run_time(run: RunInfo | None) -> tuple[datetime, str] | None:
    for text, label in ((run.started_at, "run start"), (run.ended_at, "run end")) if run else ():
        when = parse_time(text)
        if when is not None:
            return when, label
    return None


def _by_time(latest: SnapshotInfo, sha: str, blessed: bool, candidate: RunInfo, latest_run: RunInfo | None) -> Order:
    """Outside git: the candidate is newer when its run started strictly later than the latest's
    (a tie is refused, as for commit dates). A candidate with no run times cannot be ordered; a
    latest without them counts from its promotion."""
    mine = _run_time(candidate)
    if mine is None:  # "now" would put any old run, promoted under a new name, after every baseline
        unknown = (
            f"cannot tell whether {sha[:12]} is newer than the current baseline's {latest.sha[:12]}: there is no "
            "git repository and the run records no start or end time"
        )
        # A reset is an explicit choice of that run, as where git cannot order two commits.
        return Order(note=f"{unknown}; reset anyway") if blessed else Order(f"{unknown}; bless this run with {RESET}")
    created = parse_time(latest.created_at)
    theirs = _run_time(latest_run) or ((created, "promotion") if created else None)
    if theirs is None:
        return Order(
            f"cannot tell whether {sha[:12]} is newer than the current baseline's {latest.sha[:12]}: there is no "
            f"git repository and the baseline records no time; bless this run with {RESET}"
        )
    newer = mine[0] > theirs[0]
    compared = (
        f"{sha[:12]}: {mine[1]} {mine[0]:%Y-%m-%d %H:%M:%S} UTC, {'after' if newer else 'not after'} the current "
        f"baseline {latest.sha[:12]}: {theirs[1]} {theirs[0]:%Y-%m-%d %H:%M:%S} UTC"
    )
    if newer:
        return Order(basis=f"no git repository, so ordered by time ({compared})")
    return Order(
        f"{sha[:12]} is not newer than the current baseline {latest.sha[:12]}: with no git repository, runs are "
        f"ordered by time ({compared}); a run started later replaces it"
    )
