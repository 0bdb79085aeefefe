"""The report of a gate stopped before running the suite (docs/spec.md#data-flow): its out dir says that
verdict, not the previous gate's."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from evals.common.errors import EvalgateError, GateVerdict
from evals.common.escape import log_value
from evals.github.activity import Activity
from evals.report.files import write_report_files
from evals.results import console
from evals.results.model import Results, RunInfo
from evals.store.selection import Baselines
from evals.suite.config import SuiteConfig
from evals.suite.options import GateOptions

if TYPE_CHECKING:
    pass


def report_not_run(
    stop: GateVerdict,
    config: SuiteConfig,
    baselines: Baselines,
    options: GateOptions,
    activity: Activity,
    out_dir: Path,
) -> Path | None:
    """The out dir of a gate stopped before running the suite says that verdict, as the gate of a
    results file does: left alone, the previous gate's report.md, comment.md and comparison.json
    would be read as this gate's. The candidate is the config as it is now, with no case run.
    Where the baseline and the config cannot even be compared (a slice key or named score the
    baseline lacks), the stale files are removed instead. Returns the report written, if one was."""
    from evals.common.gitinfo import current_sha
    from evals.compare.analysis import compare
    from evals.compare.case_changes import CaseDiff

    loaded = baselines.baseline
    run = RunInfo(
        suite=config.suite,
        status="pending",
        total_cases=0,
        completed_cases=0,
        git_sha=options.sha or activity.candidate_sha or current_sha(),
        config_hash=config.config_hash(),
        definitions=config.definitions(),
        gate_settings=config.gate_settings(),
        message="not run: the gate stopped before running the suite",
    )
    stale = [out_dir / name for name in ("report.md", "comment.md", "comparison.json")]
    if options.html:
        stale.append(Path(options.html))
    try:
        assert loaded is not None
        found = compare(loaded.results, Results(run=run), config, baseline_ref=loaded.ref)
        comparison = found.model_copy(
            update={
                "verdict": stop.verdict,
                "reason": stop.reason,
                "exit_code": stop.exit_code,
                "units": [],
                "floors": [],
                "case_diff": CaseDiff(limit=found.case_diff.limit),
                "warnings": [],
                # Not "partial": nothing was started. What the config does not say is unknown, not changed.
                "candidate_run": found.candidate_run.model_copy(update={"status": "not run", "complete": True}),
                "provenance": [p for p in found.provenance if p.candidate is not None],
            }
        )
        report = write_report_files(comparison, config, out_dir)["report"]
        for path in stale[3:]:  # no HTML page is written without a run: an old one would be read as this
            path.unlink(missing_ok=True)
        return report
    except (EvalgateError, OSError) as exc:
        console.warning(f"no report of this verdict: {log_value(exc, limit=300)}", source="gate")
        for path in stale:
            path.unlink(missing_ok=True)
        return None
