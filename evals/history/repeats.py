"""Which of the history's runs are repeats of the same code (docs/spec.md#repeated-runs): what flip rates, the
plan's discordance and the informative smoke draw read.

Flaky means that the same code gives different outcomes. A run's commit cannot say that alone:
the same commit runs different code when an environment variable, a dirty working tree or a
PR's merge changes it (``MYBOT_BREAK=es evalgate gate`` has the baseline's sha), so the history
tells the code apart by what was done with each run instead:

- a **baseline** (a promotion, seed or reset recorded it) is code the default branch accepted;
- a run **no gate or compare was asked about** (``evalgate run``, an import) is a re-run — what
  ``evalgate plan`` asks for to measure the noise;
- a **gated or compared candidate that never became a baseline** is proposed code: its outcomes
  say what the change did, not how noisy the target is, so it is left out. Counting it made every
  case a PR broke "flaky (flips 100% of runs)" and put the regression into the plan's ψ.

A reset accepts a change of behaviour (that is what its reason says), so the repeats start again
at the newest reset: the pair across it is a change, not a flip. The run being gated or compared
is left out by its digest (``leave_out``): it is the proposal, and it is already in the history
(the gate's ``evalgate run`` recorded it) when its case diff asks which cases are flaky."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

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
    same code (the module docstring), newest first, none older than the newest reset among them;
    ``leave_out``: the digest of the run being decided about."""
    if not config_hash:
        return []
    rows = engine.query(
        "SELECT id, git_sha, EXISTS (SELECT 1 FROM gates g WHERE g.candidate_run_id = r.id AND g.action = 'reset') "
        "FROM runs r WHERE suite = ? AND config_hash = ? AND subset IS NULL AND shard IS NULL "
        "AND status = 'success' AND completed_cases >= total_cases AND digest <> ? "
        "AND EXISTS (SELECT 1 FROM cases c WHERE c.run_id = r.id) "
        "AND (EXISTS (SELECT 1 FROM gates g WHERE g.candidate_run_id = r.id AND "
        f"{_among('g.action', BASELINE_ACTIONS)}) "
        "OR NOT EXISTS (SELECT 1 FROM gates g WHERE g.candidate_run_id = r.id AND "
        f"{_among('g.action', PROPOSAL_ACTIONS)})) "
        # A run with no start time is not the newest: PostgreSQL sorts NULL first when descending.
        "ORDER BY started_at IS NULL, started_at DESC, id DESC LIMIT ?",
        (suite, config_hash, leave_out or "", last),
    )
    runs = []
    for run_id, sha, reset in rows:
        runs.append(Repeat(run_id, sha))
        if reset:
            break
    return runs
