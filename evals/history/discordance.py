"""How often a case's outcome changes between two runs of the same code and config, as the history
saw it: what ``evalgate plan`` sizes a suite with (docs/spec.md#certifiable-band). Runs of the same
suite and config hash (the scorers and metrics), whole and complete, that repeat the same code
(``evals.history.repeats``: one clean commit, case set and target definition; baselines and
re-runs; a gated proposal's run, or a run of other code, would put the change it made into the
noise) are paired on case ids in the order they were made; the discordance is the mean squared
difference of their per-case pass rates (with one attempt per case, the share of shared cases
whose verdict differs), pooled over the latest pairs."""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import TYPE_CHECKING

from evals.history import read_history
from evals.history.engine import Engine
from evals.history.repeats import repeated_runs

if TYPE_CHECKING:
    from evals.suite.config import SuiteConfig

# Pairs of consecutive runs pooled: recent enough to describe today's target, enough to be stable.
PAIRS = 5


@dataclass(frozen=True)
class Observed:
    discordance: float
    cases: int  # paired cases pooled over the pairs
    pairs: list[tuple[str, str]]  # (earlier, later) run labels: git sha or run id

    def describe(self) -> str:
        shown = ", ".join(f"{a}→{b}" for a, b in self.pairs)
        return f"observed in the history: {self.cases} paired cases over {len(self.pairs)} pair(s) of runs ({shown})"


def observed_discordance(engine: Engine, suite: str, config_hash: str | None) -> Observed | None:
    """The pooled discordance of the latest ``PAIRS`` consecutive pairs of repeated runs of
    ``suite`` with ``config_hash``; None when the history holds fewer than two such runs with
    cases in common."""
    runs = [(run.id, run.git_sha) for run in repeated_runs(engine, suite, config_hash, PAIRS + 1)]
    runs.reverse()
    squares, cases, pairs = 0.0, 0, []
    for (early, early_sha), (late, late_sha) in itertools.pairwise(runs):
        rows = engine.query(
            "SELECT pa.pass_at_1, pb.pass_at_1 FROM cases a "
            "JOIN cases b ON b.run_id = ? AND b.case_id = a.case_id "
            "JOIN case_pass pa ON pa.run_id = a.run_id AND pa.case_no = a.case_no "
            "JOIN case_pass pb ON pb.run_id = b.run_id AND pb.case_no = b.case_no "
            "WHERE a.run_id = ? AND pa.pass_at_1 IS NOT NULL AND pb.pass_at_1 IS NOT NULL",
            (late, early),
        )
        if not rows:
            continue
        squares += sum((float(x) - float(y)) ** 2 for x, y in rows)
        cases += len(rows)
        pairs.append((_label(early, early_sha), _label(late, late_sha)))
    if not cases:
        return None
    return Observed(squares / cases, cases, pairs)


def _label(run_id: int, sha: str | None) -> str:
    return sha[:8] if sha else f"run {run_id}"


def discordance_for(config: SuiteConfig) -> Observed | None:
    """The history's discordance for this config's suite and config hash, or None: no history
    here, no two runs of this config, or a history that cannot be read (``read_history``)."""
    return read_history(config, lambda engine: observed_discordance(engine, config.suite, config.config_hash()))
