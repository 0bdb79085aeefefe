"""What must hold before two runs are compared at all (docs/spec.md#decision-rule): the candidate is of the config's
suite, every named score is recorded by some case, ``pass@k`` has k attempts to read, and every
slice key of the config is carried. Each is a ``UsageError`` (exit 2) saying what to change; what
the verdict can express instead (a partial run, another baseline) is the ladder's
(``evals.compare.ladder``)."""

from __future__ import annotations

import numpy as np

from evals.common.errors import UsageError
from evals.compare.metrics import MetricDef, RunTable, slice_keys_of
from evals.compare.runs import Run
from evals.suite.config import SuiteConfig
from evals.suite.slices import require_slice_keys


def require_comparable(
    config: SuiteConfig, defs: list[MetricDef], candidate: Run, baseline: Run | None, tables: list[RunTable]
) -> None:
    _require_same_suite(config, candidate, baseline)
    _require_named_scores(config, defs, tables)
    _require_attempts_for_pass_at_k(config, defs, tables, [candidate, baseline])
    # Results files (from `run` or imported) get the check `run` makes on the case files.
    filled = [t for t in tables if t.ids]
    if filled and config.slices:
        require_slice_keys(config.slices, slice_keys_of(filled), where=config.where("slices"))


def _require_same_suite(config: SuiteConfig, candidate: Run, baseline: Run | None) -> None:
    """A candidate of another suite than the config's and its baseline's is the wrong file, not
    a change a reset should accept (a reset refuses it): exit 2, as the reset says."""
    suite = candidate.run.suite
    if config.path is None or baseline is None or suite == config.suite or baseline.run.suite != config.suite:
        return
    raise UsageError(
        f"the candidate is a run of suite {suite!r} but {config.path.name} (and its baseline) is suite "
        f"{config.suite!r}: compare a run of this suite, or name the run after it "
        f"(`evalgate import --suite {config.suite} ...`)"
    )


def _require_named_scores(config: SuiteConfig, defs: list[MetricDef], tables: list[RunTable]) -> None:
    """A named score that no case of either run records compares nothing: a typo, or a scorer that
    does not record it. The config check cannot see this for ``python:`` scorers; the runs can."""
    filled = [t for t in tables if t.ids]
    for d in defs:
        if filled and d.column.startswith("score:") and all(np.isnan(t.values(d)).all() for t in filled):
            raise UsageError(
                f"{config.where('metrics', d.name)}: metric {d.name!r} is a named score that no case of the runs "
                "records (check the spelling against the keys your scorers put in `scores`)"
            )


def _require_attempts_for_pass_at_k(
    config: SuiteConfig, defs: list[MetricDef], tables: list[RunTable], runs: list[Run | None]
) -> None:
    """``pass@k`` needs k judged attempts of a case; with fewer in every case of both runs, and
    runs made with fewer than k attempts a case, it has no value to compare, and a gate on it would
    be ``inconclusive`` whatever the runs did. (Runs made with k attempts whose attempts failed as
    infra are the verdict's to judge: ``incomplete``.)"""
    filled = [t for t in tables if t.ids]
    declared = max((r.run.attempts_per_case or 0 for r in runs if r is not None), default=0)
    for d in defs:
        if not (filled and d.column.startswith("pass@")):
            continue
        k = int(d.column.removeprefix("pass@"))
        most = max((int(np.nanmax(t.columns["pass_n"], initial=0)) for t in filled), default=0)
        if most < k and declared < k:
            raise UsageError(
                f"{config.where('metrics', d.name)}: metric {d.name!r} needs at least {k} judged attempts of a "
                f"case, and no case of the runs has more than {most}: set attempts: {k} (or more) and run again, "
                "or gate on pass@1"
            )
