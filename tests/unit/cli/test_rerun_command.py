"""The command a run that stopped early names to finish it (cancelled, stopped by a limit, cases
left with infra errors): the same config, output and choice of cases, with --resume."""

from __future__ import annotations

from evals.cli.run import rerun_command
from evals.suite.options import RunOptions


def test_the_resume_command_keeps_what_picks_the_run_and_its_cases():
    assert rerun_command(RunOptions()) == "`evalgate run --resume`"
    options = RunOptions(
        config="suites/chat/evalgate.yml",
        output="out/run 1.json",
        smoke=True,
        filters=["language=ko"],
        progress="lines",
        summary=True,
    )
    assert rerun_command(options) == (
        "`evalgate run --config suites/chat/evalgate.yml --output 'out/run 1.json' --smoke --resume "
        "--filter language=ko`"
    )
