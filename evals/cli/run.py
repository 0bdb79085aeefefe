"""``evalgate run`` / ``python -m evals.run``: run the suite on the candidate, write the results file
(the work is in ``evals.run.execution``).

The file is written at the start (``running``, nothing done), every few seconds while cases finish,
and at the end, each time atomically with a status and counts that are true at that moment
(a partial run must never read as a whole one).

Exit codes: 0 when every case completed (``success``); 3 when the run is incomplete (``error``
— infra failures left after retries —, ``cancelled`` by SIGINT/SIGTERM or by ``limits.max_cost_usd``
/ ``max_tokens``, or ``timeout`` by ``limits.max_duration_s``; ``run.limit`` says which limit; ``pending``
when ``batch: true`` submitted the requests or they are still running, docs/spec.md#batch-pricing),
docs/spec.md#exit-codes; 2 for bad flags, config or cases."""

from __future__ import annotations

import argparse
import shlex
import sys
from pathlib import Path

from evals.cli.options import add_options, options_of
from evals.common.errors import EXIT_INFRA, EXIT_PASS, UsageError
from evals.history.live import LiveRecord, live_history
from evals.pipeline.exposure import guard_run
from evals.results import console
from evals.run.execution import execute
from evals.run.failfast import StopRulePlan
from evals.run.recorder import WrittenRun
from evals.run.shards import parse_shard
from evals.run.smoke import CaseHistory
from evals.suite.config import SuiteConfig
from evals.suite.flags import argv_of
from evals.suite.loading import load_config
from evals.suite.options import RunOptions
from evals.suite.overrides import with_overrides


def configure(parser: argparse.ArgumentParser) -> None:
    add_options(parser, RunOptions)


def read_ids(path: Path) -> list[str]:
    try:
        return [line.strip() for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    except OSError as exc:
        raise UsageError(f"--ids {path}: cannot read it ({exc.strerror or exc})") from None


def rerun_command(options: RunOptions) -> str:
    """This very command with ``--resume``, in backticks: the same config, output and choice of
    cases (a bare ``--resume`` would read ./evalgate.yml and ./results.json); how it shows progress
    and what it writes besides are left out."""
    again = options.model_copy(update={"resume": True})
    argv = argv_of(again, skip=("progress", "grace_s", "html", "summary", "fail_fast_baseline"))
    return f"`{shlex.join(['evalgate', 'run', *argv])}`"


def fail_fast_rule(config: SuiteConfig, baseline_path: Path) -> StopRulePlan:
    """``--fail-fast-baseline``: the stopping rule against that baseline (docs/spec.md#fail-fast)."""
    from evals.compare.failfast import FailFast
    from evals.results.files import load_results

    baseline = load_results(baseline_path)
    return lambda cases: FailFast.plan(config, baseline, cases)


def main(args: argparse.Namespace) -> int:
    guard_run()
    options = options_of(RunOptions, args)
    config = with_overrides(load_config(options.config), options)
    if options.attempt_offset < 0:
        raise UsageError(f"--attempt-offset must be >= 0, got {options.attempt_offset}")
    if options.grace_s < 0:
        raise UsageError(f"--grace-s must be >= 0, got {options.grace_s:g}")
    shard = parse_shard(options.shard) if options.shard else None
    progress = {"auto": None, "bar": True, "lines": False}[options.progress]
    history = None
    if options.smoke and config.smoke.select == "informative" and not config.smoke.tag:
        from evals.history.flaky import smoke_history

        history = smoke_history(config)
    # Forked before the run's event loop and threads start: the child that records the history
    # while the run runs (evals.history.live); not for the HTML page, which reads models (record_run).
    with live_history(config, wanted=not options.html) as live:
        return _run(options, config, shard, progress, history, live)


def _run(
    options: RunOptions,
    config: SuiteConfig,
    shard: tuple[int, int] | None,
    progress: bool | None,
    history: CaseHistory | None,
    live: LiveRecord | None,
) -> int:
    results = execute(
        config,
        Path(options.output),
        smoke=options.smoke,
        shard=shard,
        resume=options.resume,
        progress=progress,
        grace_s=options.grace_s,
        filters=options.filters,
        limit=options.limit,
        lean=True,
        history=history,
        ids=read_ids(Path(options.ids)) if options.ids else None,
        attempt_offset=options.attempt_offset,
        cache=not options.no_cache,
        rerun=rerun_command(options),
        fail_fast=fail_fast_rule(config, Path(options.fail_fast_baseline)) if options.fail_fast_baseline else None,
        sink=live,
    )
    assert isinstance(results, WrittenRun)  # lean=True
    if live is not None:  # a run that stopped before its end (a batch submitted): recorded from here
        live.end(results.run, results.case_ids)
    # Without the table (the gate's run) what went wrong is still said; a clean run is not read back.
    if options.summary or options.html or results.errored_cases:
        from evals.results.summary import error_lines, render_text, summarize

        # From what the run kept of each case for it, not the cases read back (docs/spec.md#performance-targets).
        summary = summarize(results.summary, config.slices or None)
        if options.summary:
            sys.stderr.write("\n" + render_text(summary))
        elif results.errored_cases:
            for line in error_lines(summary):
                console.info(line.strip(), source="run")
        if options.html:
            from evals.report.html import write_html

            write_html(Path(options.html), results=results, summary=summary)
            console.info(f"html report: {options.html}", source="run")
    from evals.history.settings import history_url

    if history_url(config) is not None:
        from evals.history import record_run, record_written

        # From the cases' JSON the run holds, each chunk parsed once, not as models (45 MB at
        # 10,000 cases: the default path's peak RSS past docs/spec.md#performance-targets) — by the
        # live record's child, which did that while the run ran; unless the HTML page has read them
        # as models already, which then hold them.
        if "cases" in results.__dict__:
            record_run(results, config=config)
        else:
            record_written(results, config=config, live=live)
    if results.run.is_complete:
        console.info(f"results written to {options.output}", source="run")
        return EXIT_PASS
    console.info(f"{options.output} is a partial run (status {results.run.status}): exit {EXIT_INFRA}", source="run")
    return EXIT_INFRA
