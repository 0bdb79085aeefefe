"""Which of the history's runs are repeats of the same code (docs/spec.md#repeated-runs): what flip rates, the
plan's discordance and the informative smoke draw read.

Flaky means that the same code gives different outcomes, so a flip counts only between two runs of
the same code. Runs are grouped by what they ran: the commit, with a clean tree (a run of
uncommitted changes, or of an unknown commit, is of code nobody can name, and never a repeat), the
case set (ids with their hashes) and the target definition (kind, model, parameters), within the
suite and config hash. Only a group of two or more runs holds a flip; the newest such group is read.
A change of code is then never a flip: the quickstart's baseline is of the commit before the one
that holds it, and a broken bot run as ``evalgate run`` is of a dirty tree or of its own commit.

What was done with each run still matters, since the same commit runs different code when an
environment variable or a PR's merge changes it (``MYBOT_BREAK=es evalgate gate`` has the baseline's
sha and a clean tree):

- a **baseline** (a promotion, seed or reset recorded it) is code the default branch accepted;
- a run **no gate or compare was asked about** (``evalgate run``, an import) is a re-run — what
  ``evalgate plan`` asks for to measure the noise;
- a **gated or compared candidate that never became a baseline** is proposed code: its outcomes
  say what the change did, not how noisy the target is, so it is left out.

A reset accepts a change of behaviour (that is what its reason says), so the repeats start again
at the newest reset: the pair across it is a change, not a flip. The run being gated or compared
is left out by its digest (``leave_out``): it is the proposal, and it is already in the history
(the gate's ``evalgate run`` recorded it) when its case diff asks which cases are flaky."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from evals.history.engine import Engine

# The actions whose candidate became the stored baseline (the gates table's action column).
BASELINE_ACTIONS = ("promote", "seed", "reset")
PROPOSAL_ACTIONS = ("gate", "compare")


@dataclass(frozen=True)
class Repeat:
    id: int
    git_sha: str | None


def _among(column: str, values: tuple[str, ...]) -> str:
    return f"{column} IN ({', '.join(repr(v) for v in values)})"


def repeated_runs(
    engine: Engine, suite: str, config_hash: str | None, last: int, *, leave_out: str | None = None
) -> list[Repeat]:
    """The latest ``last`` whole, complete runs of ``suite`` with ``config_hash`` that repeat the
    same code (the module docstring), newest first, none older than the newest reset among them:
    those of the newest group of two or more runs, else the newest run alone (it holds no flip);
    ``leave_out``: the digest of the run being decided about."""
    if not config_hash:
        return []
    rows = engine.query(
        "SELECT id, git_sha, EXISTS (SELECT 1 FROM gates g WHERE g.candidate_run_id = r.id AND g.action = 'reset'), "
        "case_set, target_kind, model, params "
        "FROM runs r WHERE suite = ? AND config_hash = ? AND subset IS NULL AND shard IS NULL "
        "AND status = 'success' AND completed_cases >= total_cases AND digest <> ? "
        "AND git_sha IS NOT NULL AND git_dirty = 0 AND case_set IS NOT NULL "
        "AND EXISTS (SELECT 1 FROM cases c WHERE c.run_id = r.id) "
        "AND (EXISTS (SELECT 1 FROM gates g WHERE g.candidate_run_id = r.id AND "
        f"{_among('g.action', BASELINE_ACTIONS)}) "
        "OR NOT EXISTS (SELECT 1 FROM gates g WHERE g.candidate_run_id = r.id AND "
        f"{_among('g.action', PROPOSAL_ACTIONS)})) "
        # A run with no start time is not the newest: PostgreSQL sorts NULL first when descending.
        "ORDER BY started_at IS NULL, started_at DESC, id DESC",
        (suite, config_hash, leave_out or ""),
    )
    groups: dict[tuple[Any, ...], list[Repeat]] = {}
    paired = None  # the first group to hold a pair, scanning newest first: the code repeated most recently
    for run_id, sha, reset, *code in rows:
        group = groups.setdefault((sha, *code), [])
        group.append(Repeat(run_id, sha))
        if paired is None and len(group) == 2:
            paired = group
        if reset:
            break
    if paired is not None:
        return paired[:last]
    return next(iter(groups.values()), [])[:1]
