"""``gate.fail_fast`` in the gate (docs/spec.md#fail-fast): where it applies, and what the suite
run needs for it.

Fail fast is for pull requests: a push to the default branch, a reset or a scheduled gate runs
every case (its run may become the baseline, and a baseline must be whole); so does an
informative smoke draw (its cases stand for the suite only with their weights). It needs the baseline
this gate read before running anything (``flows.run_gate`` reads the baselines first) and a suite
this gate runs itself: a results file brought in was run without it. Where it does not apply the
config's ``gate.fail_fast`` is turned off for this gate, so the fixed-sample rule keeps the whole α
(``evals.compare.plan.fixed_rule_alpha``). The suite runs in a child process without the token
(``candidate.run_suite``): the baseline's results are written to the out dir and the child reads
them from there (``evalgate run --fail-fast-baseline FILE``)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from evals.results import console
from evals.results.files import save_results
from evals.suite.config import SuiteConfig

if TYPE_CHECKING:
    from evals.github.activity import Activity
    from evals.store.baseline import LoadedBaseline

BASELINE_FILE = "fail-fast-baseline.json"


def fail_fast_applies(
    config: SuiteConfig, activity: Activity, baseline: LoadedBaseline | None, *, runs_suite: bool
) -> SuiteConfig:
    """``config``, with ``gate.fail_fast`` off where this gate cannot use it (said why)."""
    if not config.gate.fail_fast:
        return config
    why = None
    if not activity.is_pr:
        why = "it is for pull-request gates; this gate runs every case (its run may become the baseline)"
    elif not runs_suite:
        why = "this gate compares a results file it did not run"
    elif baseline is None:
        why = "there is no baseline to compare the cases with as they complete"
    elif activity.kind == "smoke" and config.smoke.select == "informative":
        why = "an informative smoke draw is weighted back to the suite, and fail fast's test is not"
    if why is None:
        return config
    console.info(f"gate.fail_fast is not used: {why}", source="gate")
    return config.model_copy(update={"gate": config.gate.model_copy(update={"fail_fast": False})})


def fail_fast_baseline(config: SuiteConfig, baseline: LoadedBaseline | None, out_dir: Path) -> Path | None:
    """The baseline's results where the suite run can read them, when this gate fails fast."""
    if not config.gate.fail_fast or baseline is None:
        return None
    path = out_dir / BASELINE_FILE
    save_results(baseline.results, path)
    return path
